// The video goldens (tests/data/tiny-qwen35/golden_video): the manifest's cases and the decoded clip
// they started from, for the processor, model and runtime tests.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace qwen35::test {

inline constexpr const char* kVideoPanGolden = "tiny-qwen35/golden_video/video_pan.safetensors";
inline constexpr const char* kImageVideoGolden = "tiny-qwen35/golden_video/image_video.safetensors";

// The manifest's entry of case `name` ("video_pan", "image_video").
nlohmann::json golden_video_case(const std::string& name);

// The decoded clip as far as the goldens keep it: 60 frames of 200x150 at 12 fps whose sampled
// frames (video_pan's video0.frames_sampled_u8, at video0.frame_indices) are the stored ones and
// every other frame a pattern the processor must never pick. Both cases use this clip.
struct GoldenClip {
  std::vector<uint8_t> rgb;  // [frames, height, width, 3]
  int frames = 0;
  int height = 0;
  int width = 0;
  double fps = 0;
};
GoldenClip golden_video_clip();

}  // namespace qwen35::test
