// A request's video from its three sources (an encoded file, frames as images, decoded frames):
// only the sampled frames are decoded, and they are the golden clip's decoded frames exactly; a
// long clip costs its sampled frames; the per-video caps (fps, frames, tokens); bad videos.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>

#include "core/error.h"
#include "runtime/video_source.h"
#include "runtime_harness.h"
#include "support/test_data.h"
#include "support/video_goldens.h"
#include "support/video_test_encoders.h"

namespace qwen35::test {
namespace {

const std::string kClip = "tiny-qwen35/golden_video/pan_200x150_12fps.mp4";

VideoProcessorConfig default_config() { return VideoProcessorConfig{}; }

// A 24-bit BMP of an RGB frame (bottom-up rows padded to 4 bytes), the simplest file decode_image reads.
std::vector<uint8_t> bmp_of(const uint8_t* rgb, int width, int height) {
  const uint32_t stride = (uint32_t(width) * 3 + 3) & ~3u, data = stride * uint32_t(height);
  std::vector<uint8_t> out(54 + data);
  auto put = [&](size_t at, uint32_t v, int n) {
    for (int i = 0; i < n; ++i) out[at + size_t(i)] = uint8_t(v >> (8 * i));
  };
  out[0] = 'B', out[1] = 'M';
  put(2, uint32_t(out.size()), 4), put(10, 54, 4), put(14, 40, 4), put(18, uint32_t(width), 4);
  put(22, uint32_t(height), 4), put(26, 1, 2), put(28, 24, 2), put(34, data, 4);
  for (int y = 0; y < height; ++y)
    for (int x = 0; x < width; ++x)
      for (int c = 0; c < 3; ++c)
        out[54 + size_t(height - 1 - y) * stride + size_t(x) * 3 + size_t(2 - c)] =
            rgb[(size_t(y) * size_t(width) + size_t(x)) * 3 + size_t(c)];
  return out;
}

ChatRequest video_request(VideoInput video, const std::string& text = "Describe this video.") {
  ChatMessage u;
  u.role = "user";
  u.content.push_back(ContentPart::Video(std::move(video)));
  u.content.push_back(ContentPart::Text(text));
  ChatRequest r;
  r.messages.push_back(u);
  r.enable_thinking = false;
  return r;
}

TEST(VideoSource, GoldenFileDecodesOnlyTheSampledFramesAndThoseExactly) {
  const VideoInput input = VideoInput::File(read_file_bytes(data_path(kClip)));
  RequestVideo video(input);
  const VideoFrameSource& source = video.source();
  EXPECT_EQ(source.frames, 60);
  EXPECT_EQ(source.fps, 12.0);
  const Golden g(kVideoPanGolden);
  const auto indices = g.i64("video0.frame_indices");
  ASSERT_EQ(sample_frame_indices(source.frames, source.fps, default_config()), indices);
  const std::vector<uint8_t> sampled = g.u8("video0.frames_sampled_u8");
  const size_t frame_bytes = size_t(source.width) * size_t(source.height) * 3;
  for (size_t t = 0; t < indices.size(); ++t) {
    const RgbImage frame = source.frame(indices[t]);
    ASSERT_EQ(frame.pixels.size(), frame_bytes);
    EXPECT_TRUE(std::equal(frame.pixels.begin(), frame.pixels.end(), sampled.begin() + ptrdiff_t(t * frame_bytes)))
        << "frame " << indices[t];
  }
  EXPECT_EQ(video.decode_stats().restarts, 1);

  // The processor over the file gives what it gives over the decoded clip, and decoding stops at
  // the last sampled frame.
  RequestVideo fresh(input);
  const ProcessedVideo from_file = preprocess_video(fresh.source(), default_config());
  const GoldenClip clip = golden_video_clip();
  const ProcessedVideo from_frames =
      preprocess_video(VideoClipView{clip.rgb, clip.frames, clip.height, clip.width, clip.fps}, default_config());
  EXPECT_EQ(from_file.pixel_values(), from_frames.pixel_values());
  EXPECT_EQ(from_file.timestamps, from_frames.timestamps);
  EXPECT_EQ(fresh.decode_stats().frames_decoded, indices.back() + 1);
}

TEST(VideoSource, LongClipCostsItsSampledFramesNotItsLength) {
  // 2400 frames at 60 fps (40 s), a keyframe every 12: 80 frames sampled, 30 apart.
  VideoSpec spec;
  spec.muxer = "mp4", spec.encoder = "mpeg4", spec.frames = 2400, spec.fps = 60, spec.keyframe_interval = 12;
  const VideoInput input = VideoInput::File(encode_video(spec));
  RequestVideo video(input);
  const std::vector<int64_t> indices = sample_frame_indices(video.source().frames, video.source().fps, default_config());
  ASSERT_EQ(indices.size(), 80u);
  const ProcessedVideo sparse = preprocess_video(video.source(), default_config());
  const VideoDecodeStats stats = video.decode_stats();
  // Each sampled frame costs at most the group of pictures before it.
  EXPECT_LE(stats.frames_decoded, int64_t(indices.size()) * spec.keyframe_interval);
  EXPECT_LT(stats.frames_decoded, spec.frames / 2);
  EXPECT_GE(stats.seeks, int64_t(indices.size()) / 2);

  // The same pixels as decoding every frame and sampling afterwards.
  VideoDecoder all(input.file);
  const std::vector<RgbImage> frames = all.decode_all_frames();
  std::vector<uint8_t> rgb;
  for (const RgbImage& f : frames) rgb.insert(rgb.end(), f.pixels.begin(), f.pixels.end());
  const ProcessedVideo dense = preprocess_video(
      VideoClipView{rgb, int64_t(frames.size()), spec.height, spec.width, all.info().fps_from_content()}, default_config());
  EXPECT_EQ(sparse.pixel_values(), dense.pixel_values());
  EXPECT_EQ(sparse.timestamps, dense.timestamps);
}

TEST(VideoSource, AnimatedGifAndWebpAreSampledLikeAnyVideo) {
  // 25 frames at 10 per second (the files' own delays): 5 sampled, as for any 2.5 s clip.
  for (const std::string kind : {"gif", "webp"}) {
    VideoSpec spec;
    spec.muxer = kind, spec.encoder = kind == "gif" ? "gif" : "libwebp_anim", spec.frames = 25, spec.fps = 10;
    const VideoInput input = VideoInput::File(encode_video(spec));
    ASSERT_EQ(sniff_image_format(input.file), kind == "gif" ? ImageFormat::kGif : ImageFormat::kWebp);
    EXPECT_TRUE(is_animated_image(input.file));
    RequestVideo video(input);
    const VideoFrameSource& source = video.source();
    EXPECT_EQ(source.frames, 25) << kind;
    EXPECT_NEAR(source.fps, 10.0, 1e-9) << kind;
    EXPECT_EQ(sample_frame_indices(source.frames, source.fps, default_config()), (std::vector<int64_t>{0, 6, 12, 18, 24}));
    const ProcessedVideo sparse = preprocess_video(source, default_config());
    std::vector<std::string> stamps;
    for (const double t : sparse.timestamps) stamps.push_back(timestamp_text(t));
    EXPECT_EQ(stamps, (std::vector<std::string>{"<0.3 seconds>", "<1.5 seconds>", "<2.4 seconds>"})) << kind;

    // Every frame decoded, then sampled: the same pixels.
    std::vector<RgbImage> frames;
    if (kind == "gif") {
      frames = VideoDecoder(input.file).decode_all_frames();
    } else {
      std::vector<int64_t> all(25);
      for (int64_t i = 0; i < 25; ++i) all[size_t(i)] = i;
      frames = AnimatedWebpDecoder(input.file).decode_frames(all);
    }
    std::vector<uint8_t> rgb;
    for (const RgbImage& f : frames) rgb.insert(rgb.end(), f.pixels.begin(), f.pixels.end());
    const ProcessedVideo dense =
        preprocess_video(VideoClipView{rgb, int64_t(frames.size()), spec.height, spec.width, source.fps}, default_config());
    EXPECT_EQ(sparse.pixel_values(), dense.pixel_values()) << kind;
  }
}

TEST(VideoSource, FramesAsImagesDecodeOnlyTheSampledOnes) {
  // The golden clip as 60 images, where every frame the processor does not sample is not even an
  // image: the request still gives the golden prompt and answer.
  const GoldenClip clip = golden_video_clip();
  const auto indices = Golden(kVideoPanGolden).i64("video0.frame_indices");
  const size_t frame_bytes = size_t(clip.width) * size_t(clip.height) * 3;
  std::vector<std::vector<uint8_t>> images(size_t(clip.frames), std::vector<uint8_t>{'n', 'o', 't'});
  for (int64_t i : indices) images[size_t(i)] = bmp_of(clip.rgb.data() + size_t(i) * frame_bytes, clip.width, clip.height);

  const Engine& engine = tiny_engine();
  Status st;
  auto prepared = engine.prepare_chat(video_request(VideoInput::Images(images, clip.fps)), &st);
  ASSERT_TRUE(prepared) << st.message;
  const auto golden_ids = Golden(kVideoPanGolden).i64("prompt_ids");
  EXPECT_EQ(prepared->tokens(), std::vector<int32_t>(golden_ids.begin(), golden_ids.end()));

  images[size_t(indices[3])] = {'b', 'a', 'd'};  // a sampled frame that is broken is an error
  EXPECT_FALSE(engine.prepare_chat(video_request(VideoInput::Images(images, clip.fps)), &st));
  EXPECT_EQ(st.code, StatusCode::kInvalidArgument);
  EXPECT_NE(st.message.find("video frame " + std::to_string(indices[3])), std::string::npos) << st.message;
}

TEST(VideoSource, FileGivesTheGoldenPromptAndAnswer) {
  const Engine& engine = tiny_engine();
  const auto c = golden_video_case("video_pan");
  const Golden g(kVideoPanGolden);
  Status st;
  const ChatRequest req = video_request(VideoInput::File(read_file_bytes(data_path(kClip))));
  auto prepared = engine.prepare_chat(req, &st);
  ASSERT_TRUE(prepared) << st.message;
  const auto golden_ids = g.i64("prompt_ids");
  EXPECT_EQ(prepared->tokens(), std::vector<int32_t>(golden_ids.begin(), golden_ids.end()));
  GenerationResult r = engine.new_session()->chat(req, greedy(8, SpecMode::kOff), nullptr, &st);
  ASSERT_TRUE(st.ok()) << st.message;
  const auto want = g.i64("generated_ids");
  EXPECT_EQ(r.tokens, std::vector<int32_t>(want.begin(), want.end()));
}

TEST(VideoSource, SamplingCapsChangeOnlyWhatTheyCap) {
  const VideoFrameSource source{60, 150, 200, 12.0, nullptr};
  const VideoProcessorConfig base;
  // fps: 1 frame per second of a 5 s clip, at least 4 frames -> 5.
  EXPECT_EQ(sample_frame_indices(60, 12.0, video_config_for(base, {1.0, 0, 0}, 60, 150, 200, 12.0)).size(), 5u);
  // max_frames under the processor's minimum of 4.
  EXPECT_EQ(sample_frame_indices(60, 12.0, video_config_for(base, {0, 3, 0}, 60, 150, 200, 12.0)).size(), 3u);
  // No cap: the golden's 150 tokens; a cap lowers the budget until the tokens fit.
  EXPECT_EQ(video_pad_tokens(source, video_config_for(base, {}, 60, 150, 200, 12.0)), 150);
  // A cap the clip does not reach leaves the processor's settings as they are.
  EXPECT_EQ(video_config_for(base, {0, 0, 150}, 60, 150, 200, 12.0).max_pixels, base.max_pixels);
  for (int64_t cap : {149, 100, 60, 31, 7}) {
    const int64_t tokens = video_pad_tokens(source, video_config_for(base, {0, 0, cap}, 60, 150, 200, 12.0));
    EXPECT_LE(tokens, cap) << "cap " << cap;
    EXPECT_GT(tokens, 0);
  }
  // An odd frame count pads its last pair: the cap still holds (3 frames -> 2 pairs).
  for (int64_t cap : {20, 33, 64})
    EXPECT_LE(video_pad_tokens(source, video_config_for(base, {0, 3, cap}, 60, 150, 200, 12.0)), cap) << "cap " << cap;
  // The server's default cap (16384) is above what the official budget gives a clip of 3 frames or
  // more: 3 frames of 4096 x 4096 come out at 2880 x 2880, 2 pairs of 8100 tokens.
  const VideoFrameSource big{3, 4096, 4096, 24.0, nullptr};
  EXPECT_EQ(video_pad_tokens(big, base), 16200);
  EXPECT_EQ(video_config_for(base, {0, 0, 16384}, 3, 4096, 4096, 24.0).max_pixels, base.max_pixels);
  EXPECT_LE(video_pad_tokens(big, video_config_for(base, {0, 0, 12288}, 3, 4096, 4096, 24.0)), 12288);
  EXPECT_THROW(video_config_for(base, {-1.0, 0, 0}, 60, 150, 200, 12.0), Error);
  EXPECT_THROW(video_config_for(base, {0, -2, 0}, 60, 150, 200, 12.0), Error);
}

TEST(VideoSource, TokenCapThatCannotHoldThePairsIsAnError) {
  // 10 frames -> 5 pairs of at least one token each.
  const Engine& engine = tiny_engine();
  Status st;
  VideoSampling s;
  s.max_tokens = 4;
  EXPECT_FALSE(engine.prepare_chat(video_request(VideoInput::File(read_file_bytes(data_path(kClip)), s)), &st));
  EXPECT_EQ(st.code, StatusCode::kInvalidArgument);
  EXPECT_NE(st.message.find("over its limit of 4"), std::string::npos) << st.message;
  s.max_tokens = 40;
  auto prepared = engine.prepare_chat(video_request(VideoInput::File(read_file_bytes(data_path(kClip)), s)), &st);
  ASSERT_TRUE(prepared) << st.message;
  const auto pad = engine.tokenize("<|video_pad|>");
  EXPECT_LE(std::count(prepared->tokens().begin(), prepared->tokens().end(), pad.at(0)), 40);
}

TEST(VideoSource, BadFilesAreInvalidArguments) {
  const Engine& engine = tiny_engine();
  std::vector<uint8_t> clip = read_file_bytes(data_path(kClip));
  std::vector<std::vector<uint8_t>> bad = {{}, {'j', 'u', 'n', 'k'}, std::vector<uint8_t>(clip.begin(), clip.begin() + 2000),
                                           encode_audio_only("matroska")};
  for (auto& bytes : bad) {
    Status st;
    EXPECT_FALSE(engine.prepare_chat(video_request(VideoInput::File(bytes)), &st));
    EXPECT_EQ(st.code, StatusCode::kInvalidArgument) << st.message;
    EXPECT_FALSE(st.message.empty());
  }
  Status st;
  EXPECT_FALSE(engine.prepare_chat(video_request(VideoInput::Images({}, 2.0)), &st));
  EXPECT_EQ(st.code, StatusCode::kInvalidArgument) << st.message;
}

}  // namespace
}  // namespace qwen35::test
