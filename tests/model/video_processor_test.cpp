// The video processor (golden_video/README.md steps 1-10): config, frame sampling, the common
// size, time stamps, the prompt text of a video, and pixel_values_videos against the goldens.
#include "model/video_processor.h"

#include <cmath>
#include <cstdio>
#include <cstring>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "support/test_data.h"
#include "support/video_goldens.h"

namespace qwen35 {
namespace {

using test::kVideoPanGolden;

nlohmann::json manifest_case(const std::string& name) { return test::golden_video_case(name); }

// The golden's resized frames [T, 3, h, w] as images.
std::vector<RgbImage> golden_resized_frames(const test::Golden& g) {
  const TensorView& v = g.view("video0.resized_u8");
  const int64_t T = v.shape[0], h = v.shape[2], w = v.shape[3];
  std::vector<RgbImage> frames;
  for (int64_t t = 0; t < T; ++t) {
    RgbImage f{int(w), int(h)};
    for (int64_t c = 0; c < 3; ++c)
      for (int64_t y = 0; y < h; ++y)
        for (int64_t x = 0; x < w; ++x) f.row(int(y))[x * 3 + c] = v.as<uint8_t>()[((t * 3 + c) * h + y) * w + x];
    frames.push_back(std::move(f));
  }
  return frames;
}

size_t count_differing(const std::vector<float>& a, const std::vector<float>& b) {
  size_t n = 0;
  for (size_t i = 0; i < a.size(); ++i) n += a[i] != b[i];
  return n;
}

// ---- Config ----------------------------------------------------------------------------------------

TEST(VideoProcessorConfig, PublishedFileEqualsTheDefaults) {
  const VideoProcessorConfig d;
  const VideoProcessorConfig c = VideoProcessorConfig::parse(
      test::read_text_file(test::data_path("tiny-qwen35/golden_video/video_preprocessor_config.json")), "published");
  for (const VideoProcessorConfig* x : {&d, &c}) {
    EXPECT_EQ(x->min_pixels, 4096);
    EXPECT_EQ(x->max_pixels, 25165824);
    EXPECT_EQ(x->patch_size, 16);
    EXPECT_EQ(x->temporal_patch_size, 2);
    EXPECT_EQ(x->merge_size, 2);
    EXPECT_EQ(x->sample_fps, 2);
    EXPECT_EQ(x->min_frames, 4);
    EXPECT_EQ(x->max_frames, 768);
    EXPECT_EQ(x->image_mean, (std::array<double, 3>{0.5, 0.5, 0.5}));
    EXPECT_EQ(x->image_std, (std::array<double, 3>{0.5, 0.5, 0.5}));
    EXPECT_EQ(x->factor(), 32);
    EXPECT_EQ(x->patch_dim(), 1536);
  }
  // The tiny model folder has no video_preprocessor_config.json: the defaults.
  EXPECT_EQ(VideoProcessorConfig::load(test::tiny_model_dir()).max_pixels, 25165824);
  const VideoProcessorConfig base = VideoProcessorConfig::parse(
      R"({"size": {"shortest_edge": 1000, "longest_edge": 234881024}, "fps": 1.5, "max_frames": 64})", "base");
  EXPECT_EQ(base.min_pixels, 1000);
  EXPECT_EQ(base.max_pixels, 234881024);
  EXPECT_EQ(base.sample_fps, 1.5);
  EXPECT_EQ(base.max_frames, 64);
}

TEST(VideoProcessorConfig, RejectsBadValues) {
  for (const char* bad : {R"(not json)", R"([1])", R"({"fps": 0})", R"({"fps": "2"})", R"({"min_frames": 0})",
                          R"({"min_frames": 8, "max_frames": 4})", R"({"size": {"shortest_edge": 9, "longest_edge": 8}})",
                          R"({"resample": 2})", R"({"num_frames": 16})", R"({"image_std": 0})",
                          R"({"do_sample_frames": 1})"}) {
    EXPECT_THROW(VideoProcessorConfig::parse(bad, "video.json"), Error) << bad;
  }
}

// ---- Sampling, sizes, stamps ---------------------------------------------------------------------------

TEST(VideoSampling, GoldenIndices) {
  const VideoProcessorConfig c;
  const test::Golden g(kVideoPanGolden);
  EXPECT_EQ(sample_frame_indices(60, 12.0, c), g.i64("video0.frame_indices"));
  EXPECT_EQ(sample_frame_indices(60, 12.0, c), (std::vector<int64_t>{0, 7, 13, 20, 26, 33, 39, 46, 52, 59}));
}

TEST(VideoSampling, CountRulesAndRounding) {
  VideoProcessorConfig c;
  EXPECT_EQ(sample_frame_indices(59, 12.0, c).size(), 9u);   // int(9.83) truncates
  EXPECT_EQ(sample_frame_indices(10, 30.0, c), (std::vector<int64_t>{0, 3, 6, 9}));  // at least 4
  EXPECT_EQ(sample_frame_indices(3, 30.0, c), (std::vector<int64_t>{0, 1, 2}));      // fewer: all of them
  EXPECT_EQ(sample_frame_indices(1, 30.0, c), (std::vector<int64_t>{0}));
  // Unknown frame rate: 24 assumed, int(96 / 24 * 2) = 8.
  EXPECT_EQ(sample_frame_indices(96, 0, c), (std::vector<int64_t>{0, 14, 27, 41, 54, 68, 81, 95}));
  // linspace(0, 5, 5) = 0, 1.25, 2.5, 3.75, 5: 2.5 rounds to even.
  c.max_frames = 5;
  EXPECT_EQ(sample_frame_indices(6, 1.0, c), (std::vector<int64_t>{0, 1, 2, 4, 5}));
  c = {};
  c.max_frames = 768;
  EXPECT_EQ(sample_frame_indices(100000, 25.0, c).size(), 768u);
  c.do_sample_frames = false;
  EXPECT_EQ(sample_frame_indices(7, 25.0, c), (std::vector<int64_t>{0, 1, 2, 3, 4, 5, 6}));
  EXPECT_THROW(sample_frame_indices(0, 25.0, c), Error);
}

TEST(VideoSmartResize, ReferenceValues) {
  struct Case {
    int64_t t, h, w, want_h, want_w;
  };
  // From the reference Python function (factor 32, temporal 2, 4096..25165824 pixels for the clip).
  for (const Case& c : std::initializer_list<Case>{{10, 150, 200, 160, 192},
                                                   {768, 1080, 1920, 128, 224},  // over the budget
                                                   {1, 32, 32, 64, 64},          // under it (t_bar = 2)
                                                   {4, 32, 32, 32, 32},
                                                   {3, 40, 40, 32, 32},
                                                   {2, 80, 1000, 64, 992},       // 2.5 -> 2
                                                   {2, 112, 1000, 128, 992},     // 3.5 -> 4
                                                   {3, 2560, 2560, 2880, 2880},  // budget by t_bar 4, scale by T 3
                                                   {4, 2560, 2560, 2496, 2496},
                                                   {5, 33, 6000, 32, 6016}}) {
    const ResizedSize s = video_smart_resize(c.t, c.h, c.w, 32, 2, 4096, 25165824);
    EXPECT_EQ(s.height, c.want_h) << c.t << " x " << c.h << "x" << c.w;
    EXPECT_EQ(s.width, c.want_w) << c.t << " x " << c.h << "x" << c.w;
  }
  EXPECT_THROW(video_smart_resize(4, 31, 100, 32, 2, 4096, 25165824), Error);
  EXPECT_THROW(video_smart_resize(4, 100, 31, 32, 2, 4096, 25165824), Error);
  EXPECT_THROW(video_smart_resize(4, 32, 6433, 32, 2, 4096, 25165824), Error);  // aspect above 200
  EXPECT_THROW(video_smart_resize(0, 64, 64, 32, 2, 4096, 25165824), Error);
}

TEST(VideoTimestamps, GoldenPairsAndOddCounts) {
  const test::Golden g(kVideoPanGolden);
  const auto indices = g.i64("video0.frame_indices");
  // Exact doubles: the same operations as the reference.
  EXPECT_EQ(pair_timestamps(indices, 12.0, 2), g.f64("video0.pair_timestamps"));
  // Odd count: the last index repeats, so the last pair's time is that frame's own.
  EXPECT_EQ(pair_timestamps(std::vector<int64_t>{0, 5, 10}, 10.0, 2), (std::vector<double>{0.25, 1.0}));
  EXPECT_EQ(pair_timestamps(std::vector<int64_t>{0, 48}, 0, 2), (std::vector<double>{1.0}));  // 24 fps assumed
}

TEST(VideoTimestamps, TextAsPythonFormatsIt) {
  const auto video = manifest_case("video_pan").at("videos")[0];
  const auto stamps = video.at("stamps").get<std::vector<std::string>>();
  const auto times = video.at("pair_timestamps_s").get<std::vector<double>>();
  ASSERT_EQ(stamps.size(), times.size());
  for (size_t i = 0; i < stamps.size(); ++i) EXPECT_EQ(timestamp_text(times[i]), stamps[i]);
  // f"{t:.1f}" rounds the double's exact value: 0.25 -> 0.2, 0.35 (0.3499...) -> 0.3, 2.45 (2.4500...1) -> 2.5.
  EXPECT_EQ(timestamp_text(0.25), "<0.2 seconds>");
  EXPECT_EQ(timestamp_text(0.35), "<0.3 seconds>");
  EXPECT_EQ(timestamp_text(2.45), "<2.5 seconds>");
  EXPECT_EQ(timestamp_text(12.25), "<12.2 seconds>");
  EXPECT_EQ(timestamp_text(0.0), "<0.0 seconds>");
}

TEST(VideoPrompt, PlaceholderExpandsAsTheProcessorDoes) {
  for (const char* name : {"video_pan", "image_video"}) {
    SCOPED_TRACE(name);
    const auto c = manifest_case(name);
    const auto video = c.at("videos")[0];
    const std::string tag = "<|vision_start|><|video_pad|><|vision_end|>";
    std::string rendered = c.at("rendered").get<std::string>();
    const size_t at = rendered.find(tag);
    ASSERT_NE(at, std::string::npos);
    const auto times = video.at("pair_timestamps_s").get<std::vector<double>>();
    rendered.replace(at, tag.size(), expand_video_placeholder(times, video.at("tokens_per_pair").get<int64_t>()));
    // The processor expands an image's pad in the text too (the runtime does it in the ids).
    const std::string image_pad = "<|image_pad|>";
    if (const size_t pad = rendered.find(image_pad); pad != std::string::npos) {
      std::string pads;
      for (int64_t i = 0; i < c.at("num_image_tokens").get<int64_t>(); ++i) pads += image_pad;
      rendered.replace(pad, image_pad.size(), pads);
    }
    EXPECT_EQ(rendered, c.at("expanded").get<std::string>());
  }
}

// ---- Pixels ------------------------------------------------------------------------------------------

TEST(VideoPatchify, GoldenResizedFramesGiveThePixelValuesBitForBit) {
  const test::Golden g(kVideoPanGolden);
  const ProcessedVideo v = patchify_video(golden_resized_frames(g), VideoProcessorConfig{});
  EXPECT_EQ(g.i64("video_grid_thw"), (std::vector<int64_t>{v.grid.t, v.grid.h, v.grid.w}));
  EXPECT_EQ(v.grid.t, 5);
  EXPECT_EQ(v.tokens_per_pair, 30);
  EXPECT_EQ(v.num_tokens(), 150);
  ASSERT_EQ(v.pairs.size(), 5u);
  for (const ProcessedImage& p : v.pairs) {
    EXPECT_EQ(p.grid.t, 1);
    EXPECT_EQ(p.num_tokens, 30);
  }
  const std::vector<float> got = v.pixel_values();
  const std::vector<float> want = g.f32("pixel_values_videos");
  ASSERT_EQ(got.size(), want.size());
  const size_t differing = count_differing(got, want);
  std::printf("[pixel_values_videos from resized_u8] %zu of %zu differ\n", differing, want.size());
  EXPECT_EQ(differing, 0u);
  EXPECT_EQ(got[0], (float(g.view("video0.resized_u8").as<uint8_t>()[0]) - 127.5f) / 127.5f);
}

TEST(VideoPatchify, OddFrameCountRepeatsTheLastFrame) {
  const test::Golden g(kVideoPanGolden);
  std::vector<RgbImage> frames = golden_resized_frames(g);
  frames.resize(3);
  const ProcessedVideo v = patchify_video(frames, VideoProcessorConfig{});
  ASSERT_EQ(v.grid.t, 2);
  // Pair 1 is (frame 2, frame 2): in every row the second frame's 256 values equal the first's.
  const ProcessedImage& last = v.pairs[1];
  for (int64_t r = 0; r < last.num_patches; ++r)
    for (int c = 0; c < 3; ++c) {
      const float* row = last.pixel_values.data() + r * last.patch_dim + c * 512;
      ASSERT_EQ(std::memcmp(row, row + 256, 256 * sizeof(float)), 0) << r;
    }
  // ... and pair 0 is the first two frames of the ten-frame video.
  const ProcessedVideo full = patchify_video(golden_resized_frames(g), VideoProcessorConfig{});
  EXPECT_EQ(v.pairs[0].pixel_values, full.pairs[0].pixel_values);
  EXPECT_THROW(patchify_video(std::vector<RgbImage>{}, VideoProcessorConfig{}), Error);
  std::vector<RgbImage> mixed = {frames[0], RgbImage(64, 64)};
  EXPECT_THROW(patchify_video(mixed, VideoProcessorConfig{}), Error);
  EXPECT_THROW(patchify_video(std::vector<RgbImage>{RgbImage(48, 64)}, VideoProcessorConfig{}), Error);
}

TEST(VideoProcessor, DecodedClipToPixelValues) {
  const test::Golden g(kVideoPanGolden);
  const test::GoldenClip clip = test::golden_video_clip();
  const ProcessedVideo v = preprocess_video({clip.rgb, clip.frames, clip.height, clip.width, clip.fps}, VideoProcessorConfig{});
  EXPECT_EQ(v.frame_indices, g.i64("video0.frame_indices"));
  EXPECT_EQ(v.timestamps, g.f64("video0.pair_timestamps"));
  EXPECT_EQ((std::vector<int64_t>{v.grid.t, v.grid.h, v.grid.w}), g.i64("video_grid_thw"));
  const std::vector<float> got = v.pixel_values();
  const std::vector<float> want = g.f32("pixel_values_videos");
  ASSERT_EQ(got.size(), want.size());
  const size_t differing = count_differing(got, want);
  const double max_abs = test::max_abs_error(got, want);
  std::printf("[pixel_values_videos from the decoded frames] %zu of %zu differ, max abs error %g\n", differing,
              want.size(), max_abs);
  // The resize's 4 samples one level off at .5 ties (tests/io TorchResize.VideoGoldenFrames), each
  // one value 1/127.5 off here; everything after the resize is bit-exact (the test above).
  EXPECT_LE(differing, 4u);
  EXPECT_LE(max_abs, 1.0001 / 127.5);
}

TEST(VideoProcessor, RejectsBadClips) {
  std::vector<uint8_t> rgb(size_t(4 * 64 * 64 * 3));
  const VideoProcessorConfig c;
  EXPECT_NO_THROW(preprocess_video({rgb, 4, 64, 64, 30.0}, c));
  EXPECT_THROW(preprocess_video({rgb, 5, 64, 64, 30.0}, c), Error);  // too few bytes
  EXPECT_THROW(preprocess_video({rgb, 0, 64, 64, 30.0}, c), Error);
  EXPECT_THROW(preprocess_video({rgb, 4, 64, 64, -1.0}, c), Error);
  EXPECT_THROW(preprocess_video({rgb, 4, 64, 64, std::nan("")}, c), Error);
  std::vector<uint8_t> small(size_t(4 * 16 * 256 * 3));
  EXPECT_THROW(preprocess_video({small, 4, 16, 256, 30.0}, c), Error);  // a side under 32
}

}  // namespace
}  // namespace qwen35
