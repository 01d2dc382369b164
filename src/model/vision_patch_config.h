// What the image and video processors share: the patch geometry, the pixel budget and the
// normalisation, spelled alike in preprocessor_config.json and video_preprocessor_config.json
// (processor_json.h reads and checks them for both).
#pragma once

#include <array>
#include <cstdint>

namespace qwen35 {

struct VisionPatchConfig {
  int patch_size = 16;
  int temporal_patch_size = 2;
  int merge_size = 2;
  // The pixel budget (size.shortest_edge and size.longest_edge): of one image, or of a whole clip
  // (all sampled frames together). Each processor sets its own defaults.
  int64_t min_pixels = 0;
  int64_t max_pixels = 0;
  std::array<double, 3> image_mean{0.5, 0.5, 0.5};
  std::array<double, 3> image_std{0.5, 0.5, 0.5};
  double rescale_factor = 1.0 / 255.0;
  bool do_resize = true;
  bool do_rescale = true;
  bool do_normalize = true;

  // Side of the square a merged token covers (32 for Qwen3.5); resized sides are multiples.
  int factor() const { return patch_size * merge_size; }
  int64_t patch_dim() const { return int64_t(3) * temporal_patch_size * patch_size * patch_size; }
};

}  // namespace qwen35
