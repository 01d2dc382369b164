// Interleaved multimodal RoPE of the text decoder (spec 5.3): frequency slot j takes its
// position from the temporal, height or width axis; the leading rotary_dim dims of each head
// rotate in rotate-half pairs (d, d + rotary_dim/2) (the kernel table's rope), the rest pass through.
#pragma once

#include <cstdint>
#include <vector>

#include "model/config.h"

namespace qwen35 {

class MRope {
 public:
  explicit MRope(const TextConfig& cfg);

  // Fills cos/sin [rotary_dim / 2] for one token at positions (t, h, w).
  void angles(int64_t pos_t, int64_t pos_h, int64_t pos_w, float* cos_out, float* sin_out) const;
  int half() const { return half_; }

 private:
  int half_ = 0;
  std::vector<float> inv_freq_;  // [half]
  std::vector<int> axis_;        // [half]: 0 temporal, 1 height, 2 width
};

}  // namespace qwen35
