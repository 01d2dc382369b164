#include "io/gguf_writer.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>

#include "core/error.h"

namespace qwen35 {
namespace {

void put_bytes(std::vector<uint8_t>& out, const void* p, size_t n) {
  const size_t at = out.size();
  out.resize(at + n);
  if (n) std::memcpy(out.data() + at, p, n);
}
template <typename T>
void put(std::vector<uint8_t>& out, T v) {
  put_bytes(out, &v, sizeof v);
}
void put_string(std::vector<uint8_t>& out, std::string_view s) {
  put<uint64_t>(out, s.size());
  put_bytes(out, s.data(), s.size());
}

}  // namespace

bool GgufWriter::has(const std::string& key) const { return std::find(keys_.begin(), keys_.end(), key) != keys_.end(); }

void GgufWriter::begin_key(const std::string& key, GgufType type) {
  if (key.empty()) fail("GgufWriter: empty key");
  if (has(key)) fail("GgufWriter: key '", key, "' set twice");
  keys_.push_back(key);
  put_string(kv_, key);
  put<uint32_t>(kv_, uint32_t(type));
}

void GgufWriter::scalar(const std::string& key, GgufType type, const void* v, size_t size) {
  begin_key(key, type);
  put_bytes(kv_, v, size);
}

void GgufWriter::set_string(const std::string& key, std::string_view v) {
  begin_key(key, GgufType::kString);
  put_string(kv_, v);
}

void GgufWriter::set_array_i32(const std::string& key, const std::vector<int32_t>& v) {
  begin_key(key, GgufType::kArray);
  put<uint32_t>(kv_, uint32_t(GgufType::kI32));
  put<uint64_t>(kv_, v.size());
  for (int32_t x : v) put(kv_, x);
}

void GgufWriter::set_array_f32(const std::string& key, const std::vector<float>& v) {
  begin_key(key, GgufType::kArray);
  put<uint32_t>(kv_, uint32_t(GgufType::kF32));
  put<uint64_t>(kv_, v.size());
  for (float x : v) put(kv_, x);
}

void GgufWriter::set_array_bool(const std::string& key, const std::vector<bool>& v) {
  begin_key(key, GgufType::kArray);
  put<uint32_t>(kv_, uint32_t(GgufType::kBool));
  put<uint64_t>(kv_, v.size());
  for (bool x : v) put<uint8_t>(kv_, x ? 1 : 0);
}

void GgufWriter::set_array_strings(const std::string& key, const std::vector<std::string>& v) {
  begin_key(key, GgufType::kArray);
  put<uint32_t>(kv_, uint32_t(GgufType::kString));
  put<uint64_t>(kv_, v.size());
  for (const std::string& s : v) put_string(kv_, s);
}

void GgufWriter::set_value(const std::string& key, const GgufValue& v) {
  begin_key(key, v.type);
  if (v.is_array()) {
    put<uint32_t>(kv_, uint32_t(v.elem_type));
    put<uint64_t>(kv_, v.count);
  }
  if (v.elem_type == GgufType::kString) {
    for (std::string_view s : v.strings) put_string(kv_, s);
    return;
  }
  size_t size = 0;
  switch (v.elem_type) {
    case GgufType::kU8: case GgufType::kI8: case GgufType::kBool: size = 1; break;
    case GgufType::kU16: case GgufType::kI16: size = 2; break;
    case GgufType::kU32: case GgufType::kI32: case GgufType::kF32: size = 4; break;
    default: size = 8; break;
  }
  put_bytes(kv_, v.data, size_t(v.count) * size);
}

void GgufWriter::add_tensor(const std::string& name, DType dtype, const Shape& shape, Fill fill) {
  if (name.empty() || name.size() > 63) fail("GgufWriter: tensor name '", name, "' must have 1 to 63 bytes");
  if (shape.ndim < 1 || shape.ndim > 4) fail("GgufWriter: tensor '", name, "' has ", shape.ndim, " dimensions (1 to 4)");
  const DTypeInfo& info = dtype_info(dtype);
  if (info.ggml_type < 0) fail("GgufWriter: tensor '", name, "': dtype ", info.name, " has no GGUF type");
  if (shape[shape.ndim - 1] % int64_t(info.block_elems) != 0)
    fail("GgufWriter: tensor '", name, "' has rows of ", shape[shape.ndim - 1], " elements, not a multiple of the ",
         info.name, " block size ", info.block_elems);
  for (const Tensor& t : tensors_)
    if (t.name == name) fail("GgufWriter: tensor '", name, "' added twice");
  tensors_.push_back({name, dtype, shape, dtype_bytes(dtype, size_t(shape.numel())), std::move(fill)});
}

void GgufWriter::add_tensor_bytes(const std::string& name, DType dtype, const Shape& shape, const void* data,
                                  size_t nbytes) {
  if (dtype_bytes(dtype, size_t(shape.numel())) != nbytes)
    fail("GgufWriter: tensor '", name, "' of shape ", shape.to_string(), " needs ",
         dtype_bytes(dtype, size_t(shape.numel())), " bytes, got ", nbytes);
  auto bytes = std::make_shared<std::vector<uint8_t>>(static_cast<const uint8_t*>(data),
                                                      static_cast<const uint8_t*>(data) + nbytes);
  add_tensor(name, dtype, shape, [bytes](uint8_t* out) { std::memcpy(out, bytes->data(), bytes->size()); });
}

std::vector<uint8_t> GgufWriter::header() const {
  std::vector<uint8_t> h = {'G', 'G', 'U', 'F'};
  put<uint32_t>(h, 3);
  put<uint64_t>(h, tensors_.size());
  put<uint64_t>(h, keys_.size());
  put_bytes(h, kv_.data(), kv_.size());
  uint64_t offset = 0;
  for (const Tensor& t : tensors_) {
    put_string(h, t.name);
    put<uint32_t>(h, uint32_t(t.shape.ndim));
    for (int d = t.shape.ndim - 1; d >= 0; --d) put<uint64_t>(h, uint64_t(t.shape[d]));  // ne0 = innermost
    put<uint32_t>(h, uint32_t(dtype_info(t.dtype).ggml_type));
    put<uint64_t>(h, offset);
    offset += (t.nbytes + kAlignment - 1) / kAlignment * kAlignment;
  }
  h.resize((h.size() + kAlignment - 1) / kAlignment * kAlignment, 0);
  return h;
}

template <typename Sink>
void GgufWriter::emit(Sink& sink, const std::function<void(size_t, size_t)>& progress) const {
  const std::vector<uint8_t> h = header();
  sink(h.data(), h.size());
  std::vector<uint8_t> buf;
  for (size_t i = 0; i < tensors_.size(); ++i) {
    const Tensor& t = tensors_[i];
    const size_t padded = (t.nbytes + kAlignment - 1) / kAlignment * kAlignment;
    buf.assign(padded, 0);
    t.fill(buf.data());
    sink(buf.data(), buf.size());
    if (progress) progress(i + 1, tensors_.size());
  }
}

void GgufWriter::write(const std::string& path, const std::function<void(size_t, size_t)>& progress) const {
  const std::string tmp = path + ".part";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) fail("cannot write ", tmp);
    auto sink = [&](const uint8_t* p, size_t n) {
      out.write(reinterpret_cast<const char*>(p), std::streamsize(n));
      if (!out) fail("error while writing ", tmp, " (disk full?)");
    };
    try {
      emit(sink, progress);
    } catch (...) {
      out.close();
      std::error_code ec;
      std::filesystem::remove(tmp, ec);
      throw;
    }
    out.close();
    if (!out) fail("error while writing ", tmp);
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) fail("cannot rename ", tmp, " to ", path, ": ", ec.message());
}

std::vector<uint8_t> GgufWriter::to_bytes() const {
  std::vector<uint8_t> out;
  auto sink = [&](const uint8_t* p, size_t n) { out.insert(out.end(), p, p + n); };
  emit(sink, {});
  return out;
}

}  // namespace qwen35
