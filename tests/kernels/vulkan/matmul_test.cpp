// The matrix shaders against the scalar reference on odd shapes: int8 activation quantization and
// the block-format matmuls bit for bit, dequantization exactly, float matmuls within the CPU
// tables' tolerance.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>

#include "core/half.h"
#include "kernels/kernels.h"
#include "kernels/quant/quant_ref.h"
#include "kernels/quant_testing.h"
#include "vk_testing.h"

namespace qwen35::vk {
namespace {

using kernels::ActLayout;
using kernels::ActRows;
using kernels::act_format_for;
using kernels::act_layout;
using kernels::testing::random_block_rows;
using kernels::testing::random_floats;
using testing::from_device;
using testing::to_device;
using testing::zeros;

const std::vector<DType> kFormats = {DType::Q8_0, DType::Q4_0, DType::Q4_K, DType::Q6_K, DType::Q5_K, DType::IQ4_XS};

struct CpuActs {
  std::vector<uint8_t> bytes;
  ActRows rows;
};

CpuActs cpu_quantize(ActFormat fmt, const std::vector<float>& x, int64_t T, int64_t x_stride, int64_t n) {
  CpuActs a;
  a.rows.fmt = fmt;
  a.rows.T = T;
  a.rows.n = n;
  a.rows.layout = act_layout(fmt, n);
  a.bytes.resize(a.rows.layout.row_bytes * size_t(T));
  kernels::quantize_act_ref(fmt, x.data(), T, x_stride, n, a.bytes.data());
  a.rows.data = a.bytes.data();
  return a;
}

uint32_t bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

TEST(VulkanMatmul, QuantizedActivationsAreTheReferenceBytes) {
  QWEN35_NEED_VULKAN();
  std::mt19937 rng(11);
  for (ActFormat fmt : {ActFormat::kQ8x32, ActFormat::kQ8x256}) {
    const int64_t B = act_block(fmt), n = 3 * B, T = 5, stride = n + 3;
    std::vector<float> x = random_floats(size_t(T * stride), rng, 2.0f);
    for (int64_t j = 0; j < B; ++j) x[size_t(stride + j)] = 0.0f;              // row 1, block 0: zeros
    x[size_t(2 * stride + B + 7)] = std::nanf("");                            // row 2, block 1: NaN
    x[size_t(3 * stride + 2 * B)] = 127.5f;                                   // a tie at the top
    x[size_t(3 * stride + 2 * B + 1)] = 0.5f;
    const CpuActs want = cpu_quantize(fmt, x, T, stride, n);
    auto xd = to_device(*dev, x);
    auto q = zeros<uint8_t>(*dev, act_q_bytes(T, n));
    auto d = zeros<uint8_t>(*dev, act_d_bytes(fmt, T, n));
    Pass p(*dev);
    quantize_act(p, fmt, xd->address(), T, stride, n, q->address(), d->address());
    p.run();
    const auto gq = from_device<int8_t>(*dev, *q, size_t(T * n));
    const auto gd = from_device<float>(*dev, *d, size_t(T * (n / B)));
    for (int64_t t = 0; t < T; ++t) {
      for (int64_t i = 0; i < n; ++i) ASSERT_EQ(gq[size_t(t * n + i)], want.rows.q(t)[i]) << "t=" << t << " i=" << i;
      for (int64_t b = 0; b < n / B; ++b) {
        const float w = want.rows.d(t)[b], g = gd[size_t(t * (n / B) + b)];
        if (std::isnan(w)) EXPECT_TRUE(std::isnan(g)) << t << " " << b;
        else EXPECT_EQ(bits(g), bits(w)) << "t=" << t << " b=" << b;
      }
    }
  }
}

// y from the GPU's quantize_act + qmatmul against ref quantize_act + qmatmul, bit for bit.
TEST(VulkanMatmul, BlockFormatsGiveTheReferenceBits) {
  QWEN35_NEED_VULKAN();
  std::mt19937 rng(5);
  for (DType dt : kFormats) {
    const int64_t B = int64_t(dtype_info(dt).block_elems);
    const int64_t cols = B == 32 ? 32 * 7 : 256 * 3, rows = 37;
    const DTypeInfo& info = dtype_info(dt);
    const size_t row_bytes = size_t(cols / B) * info.block_bytes;
    const std::vector<uint8_t> wbytes = random_block_rows(dt, rows, cols, rng);
    const ActFormat fmt = act_format_for(dt);
    for (int64_t T : {1, 3}) {
      const int64_t x_stride = cols + 5, y_stride = rows + 2;
      const std::vector<float> x = random_floats(size_t(T * x_stride), rng);
      const CpuActs acts = cpu_quantize(fmt, x, T, x_stride, cols);
      std::vector<float> want(size_t(T * y_stride), 0.0f);
      kernels::WeightMatrix wm;
      wm.dtype = dt;
      wm.data = wbytes.data();
      wm.rows = rows;
      wm.cols = cols;
      wm.row_bytes = row_bytes;
      kernels::ref_table().qmatmul[size_t(dt)](acts.rows, wm, 0, rows, want.data(), y_stride);

      auto wd = to_device(*dev, wbytes);
      auto xd = to_device(*dev, x);
      auto q = zeros<uint8_t>(*dev, act_q_bytes(T, cols));
      auto d = zeros<uint8_t>(*dev, act_d_bytes(fmt, T, cols));
      auto y = zeros<float>(*dev, want.size());
      Pass p(*dev);
      quantize_act(p, fmt, xd->address(), T, x_stride, cols, q->address(), d->address());
      qmatmul(p, {dt, wd->address(), rows, cols, row_bytes}, q->address(), d->address(), T, y->address(), y_stride);
      p.run();
      const auto got = from_device<float>(*dev, *y, want.size());
      for (int64_t t = 0; t < T; ++t)
        for (int64_t o = 0; o < rows; ++o) {
          const size_t i = size_t(t * y_stride + o);
          ASSERT_EQ(bits(got[i]), bits(want[i])) << dtype_name(dt) << " T=" << T << " t=" << t << " o=" << o << " got "
                                                 << got[i] << " want " << want[i];
        }
    }
  }
}

TEST(VulkanMatmul, DequantizedRowsAreGgmlsValues) {
  QWEN35_NEED_VULKAN();
  std::mt19937 rng(9);
  for (DType dt : kFormats) {
    const int64_t B = int64_t(dtype_info(dt).block_elems), cols = 2 * B, rows = 9;
    const size_t row_bytes = size_t(cols / B) * dtype_info(dt).block_bytes;
    const std::vector<uint8_t> wbytes = random_block_rows(dt, rows, cols, rng);
    const std::vector<uint32_t> ids = {4, 0, 8, 4};
    auto wd = to_device(*dev, wbytes);
    auto idd = to_device(*dev, ids);
    auto y = zeros<float>(*dev, ids.size() * size_t(cols));
    Pass p(*dev);
    dequant_rows(p, {dt, wd->address(), rows, cols, row_bytes}, idd->address(), int64_t(ids.size()), y->address());
    p.run();
    const auto got = from_device<float>(*dev, *y, ids.size() * size_t(cols));
    std::vector<float> want(static_cast<size_t>(cols));
    for (size_t r = 0; r < ids.size(); ++r) {
      kernels::quant::dequantize_row(dt, wbytes.data() + ids[r] * row_bytes, want.data(), cols);
      for (int64_t i = 0; i < cols; ++i)
        ASSERT_EQ(bits(got[r * size_t(cols) + size_t(i)]), bits(want[size_t(i)])) << dtype_name(dt) << " r=" << r << " i=" << i;
    }
  }
}

TEST(VulkanMatmul, FloatRowsAreLookedUpExactly) {
  QWEN35_NEED_VULKAN();
  std::mt19937 rng(10);
  const int64_t rows = 7, cols = 37;
  const std::vector<float> wf = random_floats(size_t(rows * cols), rng);
  const std::vector<uint32_t> ids = {6, 0, 3};
  auto idd = to_device(*dev, ids);
  for (DType dt : {DType::F32, DType::F16, DType::BF16}) {
    const size_t es = dt == DType::F32 ? 4 : 2, row_bytes = size_t(cols) * es;
    std::vector<uint8_t> wbytes(row_bytes * size_t(rows) + 2);
    for (size_t i = 0; i < wf.size(); ++i) {
      if (dt == DType::F32) std::memcpy(wbytes.data() + 4 * i, &wf[i], 4);
      else {
        const uint16_t h = dt == DType::F16 ? f32_to_f16(wf[i]) : f32_to_bf16(wf[i]);
        std::memcpy(wbytes.data() + 2 * i, &h, 2);
      }
    }
    auto wd = to_device(*dev, wbytes);
    auto y = zeros<float>(*dev, ids.size() * size_t(cols));
    Pass p(*dev);
    dequant_rows(p, {dt, wd->address(), rows, cols, row_bytes}, idd->address(), int64_t(ids.size()), y->address());
    p.run();
    const auto got = from_device<float>(*dev, *y, ids.size() * size_t(cols));
    std::vector<float> want(static_cast<size_t>(cols));
    for (size_t r = 0; r < ids.size(); ++r) {
      kernels::ref_table().row_to_f32(dt, wbytes.data() + ids[r] * row_bytes, want.data(), cols);
      for (int64_t i = 0; i < cols; ++i)
        ASSERT_EQ(bits(got[r * size_t(cols) + size_t(i)]), bits(want[size_t(i)])) << dtype_name(dt) << " r=" << r;
    }
  }
}

TEST(VulkanMatmul, FloatWeightsMatchTheReference) {
  QWEN35_NEED_VULKAN();
  std::mt19937 rng(3);
  for (DType dt : {DType::F32, DType::F16, DType::BF16})
    for (int64_t cols : {203, 301}) {  // a thread per row, and the workgroup's tree
      const int64_t rows = 29, T = 3, x_stride = cols + 1, y_stride = rows + 3;
      const std::vector<float> wf = random_floats(size_t(rows * cols), rng);
      std::vector<uint8_t> wbytes;
      const size_t es = dt == DType::F32 ? 4 : 2;
      const size_t row_bytes = (size_t(cols) * es + 3) / 4 * 4;  // rows start on words
      wbytes.resize(row_bytes * size_t(rows));
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t i = 0; i < cols; ++i) {
          const float v = wf[size_t(r * cols + i)];
          uint8_t* at = wbytes.data() + size_t(r) * row_bytes + size_t(i) * es;
          if (dt == DType::F32) std::memcpy(at, &v, 4);
          else {
            const uint16_t h = dt == DType::F16 ? f32_to_f16(v) : f32_to_bf16(v);
            std::memcpy(at, &h, 2);
          }
        }
      const std::vector<float> x = random_floats(size_t(T * x_stride), rng);
      std::vector<float> want(size_t(T * y_stride), 0.0f);
      kernels::WeightMatrix wm;
      wm.dtype = dt;
      wm.data = wbytes.data();
      wm.rows = rows;
      wm.cols = cols;
      wm.row_bytes = row_bytes;
      kernels::ref_table().matmul[size_t(dt)](x.data(), T, x_stride, wm, 0, rows, want.data(), y_stride);
      auto wd = to_device(*dev, wbytes);
      auto xd = to_device(*dev, x);
      auto y = zeros<float>(*dev, want.size());
      Pass p(*dev);
      matmul(p, {dt, wd->address(), rows, cols, row_bytes}, xd->address(), T, x_stride, y->address(), y_stride);
      p.run();
      const auto got = from_device<float>(*dev, *y, want.size());
      for (int64_t t = 0; t < T; ++t)
        for (int64_t o = 0; o < rows; ++o) {
          const size_t i = size_t(t * y_stride + o);
          EXPECT_NEAR(got[i], want[i], 1e-5f * float(cols) + 1e-5f * std::fabs(want[i])) << dtype_name(dt) << " " << o;
        }
    }
}

}  // namespace
}  // namespace qwen35::vk
