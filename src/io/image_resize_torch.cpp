// torchvision's float bicubic resize (see image_resize.h). Every expression keeps torch's operand
// types: where torch mixes float and double (a float times `i + 0.5`, a float plus 0.5) the double
// is computed and then stored to float exactly as the C++ there does, because the rounded values
// of a few pixels depend on it.
//
// Multiply-adds are written as std::fma where torch's release builds contract them: its CPU
// kernels are compiled per ISA with FMA enabled (x86 AVX2 / AVX-512, aarch64) and GCC's default
// -ffp-contract=fast, so the filter polynomials and the tap sums run as fused multiply-adds there.
// Against the video golden (921600 samples) this gives 4 samples one level off, all within 3e-5 of
// a .5 tie; without fusing, 11 (the golden was not made with our compiler, so the last few ties
// are not reproducible). std::fma is exact on every target, and this file is built with
// -ffp-contract=off, so the result does not depend on compiler flags.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "core/error.h"
#include "io/image_resize.h"

namespace qwen35 {
namespace {

// torch's HelperInterpCubic::aa_filter<float> (a = -0.5 with antialiasing, to match Pillow):
// cubic_convolution1 ((a + 2) * x - (a + 3)) * x * x + 1 and cubic_convolution2
// ((a * x - 5 * a) * x + 8 * a) * x - 4 * a, contracted as a compiler contracts them.
float cubic_filter(float x) {
  constexpr float a = -0.5f;
  x = std::abs(x);
  if (x < 1.0f) return std::fma(std::fma(a + 2, x, -(a + 3)) * x, x, 1.0f);
  if (x < 2.0f) return std::fma(std::fma(std::fma(a, x, -5 * a), x, 8 * a), x, -4 * a);
  return 0.0f;
}

// For each output index along one axis: the first input index, the tap count and the taps.
struct FloatTaps {
  int ksize = 0;
  std::vector<int> first;
  std::vector<int> count;
  std::vector<float> weights;  // [out_size, ksize]

  const float* row(int i) const { return weights.data() + size_t(i) * size_t(ksize); }
};

// HelperInterpBase::_compute_index_ranges_weights + _compute_indices_min_size_weights_aa with
// scalar_t = float, interp_size 4, antialias on.
FloatTaps make_taps(int in_size, int out_size) {
  const float scale = float(in_size) / float(out_size);  // area_pixel_compute_scale, no explicit scale
  const float support = scale >= 1.0f ? float(2.0 * double(scale)) : 2.0f;  // (interp_size * 0.5) * scale
  const float invscale = scale >= 1.0f ? float(1.0 / double(scale)) : 1.0f;
  FloatTaps t;
  t.ksize = int(std::ceil(support)) * 2 + 1;
  t.first.resize(size_t(out_size));
  t.count.resize(size_t(out_size));
  t.weights.assign(size_t(out_size) * size_t(t.ksize), 0.0f);
  for (int i = 0; i < out_size; ++i) {
    const float center = float(double(scale) * (i + 0.5));
    // float - float, then + 0.5 in double, truncated toward zero (int64 casts in torch).
    const int64_t lo = std::max<int64_t>(int64_t(double(center - support) + 0.5), 0);
    int64_t n = std::min<int64_t>(int64_t(double(center + support) + 0.5), in_size) - lo;
    n = std::clamp<int64_t>(n, 0, t.ksize);
    float* w = t.weights.data() + size_t(i) * size_t(t.ksize);
    float total = 0.0f;
    for (int64_t j = 0; j < n; ++j) {
      // (j + xmin - center + 0.5) * invscale: int64 - float is float, then double, then the
      // filter's float parameter.
      const float x = float((double(float(j + lo) - center) + 0.5) * double(invscale));
      w[j] = cubic_filter(x);
      total += w[j];
    }
    if (total != 0.0f)
      for (int64_t j = 0; j < n; ++j) w[j] /= total;
    t.first[size_t(i)] = int(lo);
    t.count[size_t(i)] = int(n);
  }
  return t;
}

// interpolate_aa_single_dim: the first tap's product, then the others multiply-added in order.
inline float apply_taps(const float* src, size_t stride, const float* w, int n) {
  float out = src[0] * w[0];
  for (int j = 1; j < n; ++j) out = std::fma(src[size_t(j) * stride], w[j], out);
  return out;
}

// A float image [height, width, 3]; channels stay interleaved (each is resampled on its own, so the
// layout does not change a value).
struct FloatImage {
  int width = 0;
  int height = 0;
  std::vector<float> v;
  float* row(int y) { return v.data() + size_t(y) * size_t(width) * 3; }
  const float* row(int y) const { return v.data() + size_t(y) * size_t(width) * 3; }
};

FloatImage horizontal(const FloatImage& src, int out_width) {
  const FloatTaps taps = make_taps(src.width, out_width);
  FloatImage dst{out_width, src.height, std::vector<float>(size_t(out_width) * size_t(src.height) * 3)};
  for (int y = 0; y < src.height; ++y) {
    const float* in = src.row(y);
    float* out = dst.row(y);
    for (int x = 0; x < out_width; ++x)
      for (int c = 0; c < 3; ++c)
        out[size_t(x) * 3 + size_t(c)] =
            apply_taps(in + size_t(taps.first[size_t(x)]) * 3 + size_t(c), 3, taps.row(x), taps.count[size_t(x)]);
  }
  return dst;
}

FloatImage vertical(const FloatImage& src, int out_height) {
  const FloatTaps taps = make_taps(src.height, out_height);
  const size_t line = size_t(src.width) * 3;
  FloatImage dst{src.width, out_height, std::vector<float>(line * size_t(out_height))};
  for (int y = 0; y < out_height; ++y) {
    const float* in = src.row(taps.first[size_t(y)]);
    float* out = dst.row(y);
    for (size_t i = 0; i < line; ++i) out[i] = apply_taps(in + i, line, taps.row(y), taps.count[size_t(y)]);
  }
  return dst;
}

}  // namespace

RgbImage resize_bicubic_torch(const RgbImage& src, int out_width, int out_height) {
  if (out_width <= 0 || out_height <= 0) fail("cannot resize to ", out_width, "x", out_height);
  if (src.width <= 0 || src.height <= 0) fail("cannot resize an empty ", src.width, "x", src.height, " image");
  if (src.pixels.size() != size_t(src.width) * size_t(src.height) * 3)
    fail("RgbImage of ", src.width, "x", src.height, " holds ", src.pixels.size(), " bytes");
  if (out_width == src.width && out_height == src.height) return src;  // torch copies; clamp and round keep it

  FloatImage f{src.width, src.height, std::vector<float>(src.pixels.begin(), src.pixels.end())};
  if (out_width != src.width) f = horizontal(f, out_width);
  if (out_height != src.height) f = vertical(f, out_height);

  RgbImage out(out_width, out_height);
  for (size_t i = 0; i < out.pixels.size(); ++i) {
    // clamp_(0, 255) then round_() (half to even: nearbyint in the default rounding mode).
    const float v = std::clamp(f.v[i], 0.0f, 255.0f);
    out.pixels[i] = uint8_t(std::nearbyint(v));
  }
  return out;
}

}  // namespace qwen35
