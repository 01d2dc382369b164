#include "io/image_resize.h"

#include <cmath>
#include <cstring>
#include <vector>

#include "core/error.h"

namespace qwen35 {
namespace {

constexpr int kPrecisionBits = 32 - 8 - 2;  // 8 bits of result, 2 of headroom for negative lobes

// Pillow's bicubic kernel with a = -0.5, written with the same operation order so the doubles
// (and therefore the rounded fixed-point taps) come out identical.
double cubic(double x) {
  constexpr double a = -0.5;
  if (x < 0.0) x = -x;
  if (x < 1.0) return ((a + 2.0) * x - (a + 3.0)) * x * x + 1;
  if (x < 2.0) return (((x - 5) * x + 8) * x - 4) * a;
  return 0.0;
}

// For each output index along one axis: the first input index, the tap count and the taps.
struct Taps {
  int ksize = 0;
  std::vector<int> first;
  std::vector<int> count;
  std::vector<int32_t> weights;  // [out_size, ksize], fixed point

  const int32_t* row(int i) const { return weights.data() + size_t(i) * size_t(ksize); }
};

Taps make_taps(int in_size, int out_size) {
  const double scale = double(in_size) / out_size;
  const double filter_scale = scale < 1.0 ? 1.0 : scale;
  const double support = 2.0 * filter_scale;
  Taps t;
  t.ksize = int(std::ceil(support)) * 2 + 1;
  t.first.resize(size_t(out_size));
  t.count.resize(size_t(out_size));
  t.weights.assign(size_t(out_size) * size_t(t.ksize), 0);
  std::vector<double> k(size_t(t.ksize));
  for (int i = 0; i < out_size; ++i) {
    const double center = (i + 0.5) * scale;
    const double inv = 1.0 / filter_scale;
    // Casts truncate toward zero, as in Pillow; "+ 0.5" is its rounding of the window ends.
    int lo = int(center - support + 0.5);
    if (lo < 0) lo = 0;
    int hi = int(center + support + 0.5);
    if (hi > in_size) hi = in_size;
    const int n = hi - lo;
    double sum = 0.0;
    for (int x = 0; x < n; ++x) {
      const double w = cubic((x + lo - center + 0.5) * inv);
      k[size_t(x)] = w;
      sum += w;
    }
    int32_t* dst = t.weights.data() + size_t(i) * size_t(t.ksize);
    for (int x = 0; x < n; ++x) {
      const double w = sum != 0.0 ? k[size_t(x)] / sum : k[size_t(x)];
      const double scaled = w * (1 << kPrecisionBits);
      dst[x] = w < 0 ? int32_t(-0.5 + scaled) : int32_t(0.5 + scaled);
    }
    t.first[size_t(i)] = lo;
    t.count[size_t(i)] = n;
  }
  return t;
}

inline uint8_t clip8(int32_t acc) {
  const int32_t v = acc >> kPrecisionBits;  // arithmetic shift, floor
  return uint8_t(v < 0 ? 0 : v > 255 ? 255 : v);
}

// dst row y = horizontal resample of src row (y + row_offset).
void horizontal_pass(const RgbImage& src, int row_offset, const Taps& taps, RgbImage& dst) {
  for (int y = 0; y < dst.height; ++y) {
    const uint8_t* in = src.row(y + row_offset);
    uint8_t* out = dst.row(y);
    for (int x = 0; x < dst.width; ++x, out += 3) {
      const int32_t* k = taps.row(x);
      const uint8_t* p = in + size_t(taps.first[size_t(x)]) * 3;
      int32_t s0 = 1 << (kPrecisionBits - 1), s1 = s0, s2 = s0;
      for (int j = 0, n = taps.count[size_t(x)]; j < n; ++j, p += 3) {
        s0 += p[0] * k[j];
        s1 += p[1] * k[j];
        s2 += p[2] * k[j];
      }
      out[0] = clip8(s0);
      out[1] = clip8(s1);
      out[2] = clip8(s2);
    }
  }
}

// dst row y = vertical resample of src rows (taps.first[y] - row_offset ...). Integer sums are
// exact, so accumulating row by row over a whole line gives Pillow's per-pixel sums.
void vertical_pass(const RgbImage& src, int row_offset, const Taps& taps, RgbImage& dst) {
  const size_t n = dst.row_bytes();
  std::vector<int32_t> acc(n);
  for (int y = 0; y < dst.height; ++y) {
    std::fill(acc.begin(), acc.end(), int32_t(1) << (kPrecisionBits - 1));
    const int32_t* k = taps.row(y);
    for (int j = 0, cnt = taps.count[size_t(y)]; j < cnt; ++j) {
      const uint8_t* in = src.row(taps.first[size_t(y)] - row_offset + j);
      const int32_t w = k[j];
      for (size_t i = 0; i < n; ++i) acc[i] += in[i] * w;
    }
    uint8_t* out = dst.row(y);
    for (size_t i = 0; i < n; ++i) out[i] = clip8(acc[i]);
  }
}

}  // namespace

RgbImage resize_bicubic(const RgbImage& src, int out_width, int out_height) {
  if (out_width <= 0 || out_height <= 0) fail("cannot resize to ", out_width, "x", out_height);
  if (src.width <= 0 || src.height <= 0) fail("cannot resize an empty ", src.width, "x", src.height, " image");
  if (src.pixels.size() != size_t(src.width) * size_t(src.height) * 3)
    fail("RgbImage of ", src.width, "x", src.height, " holds ", src.pixels.size(), " bytes");
  const bool need_h = out_width != src.width;
  const bool need_v = out_height != src.height;
  if (!need_h && !need_v) return src;

  const Taps vtaps = make_taps(src.height, out_height);
  if (!need_h) {
    RgbImage out(out_width, out_height);
    vertical_pass(src, 0, vtaps, out);
    return out;
  }
  // The horizontal pass covers only the source rows the vertical taps touch.
  const int first_row = vtaps.first.front();
  const int last_row = vtaps.first.back() + vtaps.count.back();
  const Taps htaps = make_taps(src.width, out_width);
  RgbImage tmp(out_width, need_v ? last_row - first_row : src.height);
  horizontal_pass(src, need_v ? first_row : 0, htaps, tmp);
  if (!need_v) return tmp;
  RgbImage out(out_width, out_height);
  vertical_pass(tmp, first_row, vtaps, out);
  return out;
}

}  // namespace qwen35
