#include "support/video_goldens.h"

#include <cstring>

#include "core/error.h"
#include "support/test_data.h"

namespace qwen35::test {

nlohmann::json golden_video_case(const std::string& name) {
  const auto m = nlohmann::json::parse(read_text_file(data_path("tiny-qwen35/golden_video/manifest.json")));
  for (const auto& c : m.at("cases"))
    if (c.at("name") == name) return c;
  fail("no case ", name, " in golden_video/manifest.json");
}

GoldenClip golden_video_clip() {
  const Golden g(kVideoPanGolden);
  const auto video = golden_video_case("video_pan").at("videos")[0];
  const TensorView& sampled = g.view("video0.frames_sampled_u8");  // [T, H, W, 3]
  GoldenClip clip;
  clip.frames = video.at("n_frames").get<int>();
  clip.height = int(sampled.shape[1]);
  clip.width = int(sampled.shape[2]);
  clip.fps = video.at("fps").get<double>();
  const size_t frame_bytes = size_t(clip.height) * size_t(clip.width) * 3;
  clip.rgb.resize(size_t(clip.frames) * frame_bytes);
  for (size_t i = 0; i < clip.rgb.size(); ++i) clip.rgb[i] = uint8_t(i * 37 % 251);
  const auto indices = g.i64("video0.frame_indices");
  for (size_t t = 0; t < indices.size(); ++t)
    std::memcpy(clip.rgb.data() + size_t(indices[t]) * frame_bytes, sampled.as<uint8_t>() + t * frame_bytes, frame_bytes);
  return clip;
}

}  // namespace qwen35::test
