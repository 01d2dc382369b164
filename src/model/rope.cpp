#include "model/rope.h"

#include <cmath>

namespace qwen35 {

MRope::MRope(const TextConfig& cfg) : half_(cfg.rotary_dim / 2) {
  inv_freq_.resize(size_t(half_));
  axis_.resize(size_t(half_));
  for (int j = 0; j < half_; ++j) {
    // As the reference: base ** (2j / dim) in fp32, then its reciprocal.
    const float exponent = float(2 * j) / float(cfg.rotary_dim);
    inv_freq_[size_t(j)] = 1.0f / std::pow(float(cfg.rope_theta), exponent);
    int axis = 0;
    if (j % 3 == 1 && j < 3 * cfg.mrope_section[1]) axis = 1;
    else if (j % 3 == 2 && j < 3 * cfg.mrope_section[2]) axis = 2;
    axis_[size_t(j)] = axis;
  }
}

void MRope::angles(int64_t pos_t, int64_t pos_h, int64_t pos_w, float* cos_out, float* sin_out) const {
  const int64_t pos[3] = {pos_t, pos_h, pos_w};
  for (int j = 0; j < half_; ++j) {
    // fp32 product as the reference; cos/sin of that fp32 angle.
    const float angle = float(pos[axis_[size_t(j)]]) * inv_freq_[size_t(j)];
    cos_out[j] = float(std::cos(double(angle)));
    sin_out[j] = float(std::sin(double(angle)));
  }
}

}  // namespace qwen35
