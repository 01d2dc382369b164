#include "core/tensor.h"

#include "core/error.h"
#include "core/half.h"

namespace qwen35 {

std::string Shape::to_string() const {
  std::string s = "[";
  for (int i = 0; i < ndim; ++i) {
    if (i) s += ", ";
    s += std::to_string(dims[size_t(i)]);
  }
  return s + "]";
}

float read_float(const TensorView& t, int64_t i) {
  switch (t.dtype) {
    case DType::F32: return t.as<float>()[i];
    case DType::BF16: return bf16_to_f32(t.as<uint16_t>()[i]);
    case DType::F16: return f16_to_f32(t.as<uint16_t>()[i]);
    default: fail("read_float: unsupported dtype ", dtype_name(t.dtype));
  }
}

std::vector<float> to_f32(const TensorView& t) {
  std::vector<float> out(size_t(t.numel()));
  for (int64_t i = 0; i < t.numel(); ++i) out[size_t(i)] = read_float(t, i);
  return out;
}

}  // namespace qwen35
