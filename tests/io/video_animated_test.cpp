// Animated GIF (FFmpeg's gif demuxer and decoder, through VideoDecoder) and animated WebP
// (libwebp, through AnimatedWebpDecoder) as short videos: frame counts, times from the files' own
// delays, the exact palette or lossless colours of every frame, frames drawn over the canvas, the
// cost of a pass, hostile files; and still GIF/WebP files staying images (is_animated_image).
#include <array>
#include <functional>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "core/error.h"
#include "io/image.h"
#include "io/image_test_encoders.h"
#include "io/video.h"
#include "io/video_webp.h"

namespace qwen35 {
namespace {

using test::Bytes;

constexpr int kW = 16, kH = 8;
// Palette entry f is frame f's colour.
const std::vector<uint8_t> kPalette = {200, 30, 40, 20, 180, 60, 10, 40, 220, 250, 250, 0};

std::array<int, 3> colour(int entry) {
  return {kPalette[size_t(3 * entry)], kPalette[size_t(3 * entry + 1)], kPalette[size_t(3 * entry + 2)]};
}

// `frames` full-screen frames, frame f filled with palette entry f % 4, with these delays.
Bytes flat_gif(int frames, std::vector<int> delays_cs) {
  test::GifSpec s;
  s.screen_width = s.width = kW;
  s.screen_height = s.height = kH;
  s.palette = kPalette;
  s.frames = frames;
  s.indices = Bytes(size_t(kW * kH), 0);
  for (int f = 1; f < frames; ++f) s.later_indices.push_back(Bytes(size_t(kW * kH), uint8_t(f % 4)));
  s.delays_cs = std::move(delays_cs);
  return test::encode_gif(s);
}

bool flat(const RgbImage& image, std::array<int, 3> c) {
  for (int y = 0; y < image.height; ++y)
    for (int x = 0; x < image.width; ++x)
      if (!test::pixel_near(image, x, y, c)) return false;
  return true;
}

Bytes rgba_fill(int w, int h, std::array<uint8_t, 4> c) {
  Bytes b(size_t(w) * size_t(h) * 4);
  for (size_t i = 0; i < b.size(); ++i) b[i] = c[i % 4];
  return b;
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  ADD_FAILURE() << "no error";
  return {};
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

TEST(VideoGif, FramesAndTimesComeFromTheFile) {
  const Bytes gif = flat_gif(3, {10, 20, 30});
  EXPECT_TRUE(is_animated_image(gif));
  VideoDecoder decoder(gif);
  const VideoInfo& info = decoder.info();
  EXPECT_EQ(info.container, "gif");
  EXPECT_EQ(info.codec, "gif");
  EXPECT_EQ(info.width, kW);
  EXPECT_EQ(info.height, kH);
  EXPECT_EQ(info.frame_count, 3);
  EXPECT_DOUBLE_EQ(info.duration_seconds, 0.6);  // 0.1 + 0.2 + 0.3
  EXPECT_DOUBLE_EQ(info.fps_from_content(), 5.0);
  const std::vector<RgbImage> frames = decoder.decode_all_frames();
  ASSERT_EQ(frames.size(), 3u);
  for (int f = 0; f < 3; ++f) EXPECT_TRUE(flat(frames[size_t(f)], colour(f))) << "frame " << f;
}

TEST(VideoGif, ShortDelaysCountAsATenthOfASecond) {
  // 0 and 1/100 s are below FFmpeg's min_delay (as browsers, they show for 1/10 s); 2/100 s is kept.
  const Bytes gif = flat_gif(3, {0, 1, 2});
  VideoDecoder decoder(gif);
  EXPECT_DOUBLE_EQ(decoder.info().duration_seconds, 0.22);
}

TEST(VideoGif, FramesAskedOutOfOrderAndTwice) {
  const Bytes gif = flat_gif(4, {10, 10, 10, 10});
  VideoDecoder decoder(gif);
  const int64_t asked[] = {3, 1, 3, 0};
  const std::vector<RgbImage> frames = decoder.decode_frames(asked);
  ASSERT_EQ(frames.size(), 4u);
  EXPECT_TRUE(flat(frames[0], colour(3)));
  EXPECT_TRUE(flat(frames[1], colour(1)));
  EXPECT_TRUE(flat(frames[2], colour(3)));
  EXPECT_TRUE(flat(frames[3], colour(0)));
  // Going back to frame 1 after frame 3 starts again from the first frame (the only keyframe).
  const int64_t again[] = {1};
  EXPECT_TRUE(flat(decoder.decode_frames(again)[0], colour(1)));
}

TEST(VideoGif, APartialFrameIsDrawnOverTheOnesBefore) {
  // Frame 1 covers only the 4x4 block at (8, 2) of the 16x8 screen.
  test::GifSpec s;
  s.screen_width = kW, s.screen_height = kH;
  s.width = kW, s.height = kH;
  s.palette = kPalette;
  s.indices = Bytes(size_t(kW * kH), 2);
  const Bytes first = test::encode_gif(s);
  s.left = 8, s.top = 2, s.width = 4, s.height = 4;
  s.indices = Bytes(16, 1);
  const Bytes second = test::encode_gif(s);
  // Splice: the first file up to its trailer, then the second file's image records.
  const size_t header = 13 + 3 * 4;  // screen descriptor + 4-entry global palette
  Bytes gif(first.begin(), first.end() - 1);
  gif.insert(gif.end(), second.begin() + long(header), second.end());
  ASSERT_TRUE(is_animated_image(gif));
  VideoDecoder decoder(gif);
  ASSERT_EQ(decoder.info().frame_count, 2);
  const std::vector<RgbImage> frames = decoder.decode_all_frames();
  EXPECT_TRUE(flat(frames[0], colour(2)));
  for (int y = 0; y < kH; ++y)
    for (int x = 0; x < kW; ++x) {
      const bool inside = x >= 8 && x < 12 && y >= 2 && y < 6;
      ASSERT_TRUE(test::pixel_near(frames[1], x, y, colour(inside ? 1 : 2))) << x << "," << y;
    }
}

TEST(VideoGif, AStillGifIsAnImageAndAOneFrameVideo) {
  const Bytes gif = flat_gif(1, {});
  EXPECT_FALSE(is_animated_image(gif));
  EXPECT_TRUE(flat(decode_image(gif), colour(0)));
  VideoDecoder decoder(gif);
  EXPECT_EQ(decoder.info().frame_count, 1);
  EXPECT_TRUE(flat(decoder.decode_all_frames().at(0), colour(0)));
}

TEST(VideoGif, HostileFilesAreErrors) {
  const Bytes gif = flat_gif(6, {10, 10, 10, 10, 10, 10});
  // Every cut after the header: an error or fewer frames, never a crash.
  for (size_t cut = 6; cut < gif.size(); cut += 3) {
    try {
      VideoDecoder decoder(std::span<const uint8_t>(gif.data(), cut));
      const std::vector<RgbImage> frames = decoder.decode_all_frames();
      EXPECT_LE(frames.size(), 6u);
    } catch (const Error&) {
    }
  }
  // The pass over all frames is bounded before anything is decoded.
  VideoDecodeOptions tight;
  tight.max_animation_pixels = int64_t(kW) * kH * 5;
  EXPECT_TRUE(contains(error_of([&] { VideoDecoder d(gif, tight); }), "exceed the limit")) << error_of([&] { VideoDecoder d(gif, tight); });
  tight.max_animation_pixels = int64_t(kW) * kH * 6;
  EXPECT_EQ(VideoDecoder(gif, tight).info().frame_count, 6);
  VideoDecodeOptions small;
  small.max_pixels = kW * kH - 1;
  EXPECT_TRUE(contains(error_of([&] { VideoDecoder d(gif, small); }), "exceed the limit"));
}

Bytes webp_frame(std::array<uint8_t, 4> c, int w, int h) { return test::encode_webp_lossless_rgba(rgba_fill(w, h, c), w, h); }

TEST(VideoWebp, FramesAndTimesComeFromTheFile) {
  const Bytes anim = test::animated_webp(kW, kH,
                                         {{webp_frame({200, 30, 40, 255}, kW, kH), 0, 0, kW, kH, 100},
                                          {webp_frame({20, 180, 60, 255}, kW, kH), 0, 0, kW, kH, 200},
                                          {webp_frame({10, 40, 220, 255}, kW, kH), 0, 0, kW, kH, 300}});
  EXPECT_TRUE(is_animated_image(anim));
  AnimatedWebpDecoder decoder(anim);
  const VideoInfo& info = decoder.info();
  EXPECT_EQ(info.container, "webp");
  EXPECT_EQ(info.width, kW);
  EXPECT_EQ(info.height, kH);
  EXPECT_EQ(info.frame_count, 3);
  EXPECT_DOUBLE_EQ(info.duration_seconds, 0.6);
  EXPECT_DOUBLE_EQ(info.fps_from_content(), 5.0);
  const int64_t all[] = {0, 1, 2};
  const std::vector<RgbImage> frames = decoder.decode_frames(all);
  for (int f = 0; f < 3; ++f) EXPECT_TRUE(flat(frames[size_t(f)], colour(f))) << "frame " << f;
  EXPECT_EQ(decoder.stats().frames_decoded, 3);
  // Backwards: a new pass from the first frame.
  const int64_t back[] = {1, 1};
  const std::vector<RgbImage> again = decoder.decode_frames(back);
  EXPECT_TRUE(flat(again[0], colour(1)) && flat(again[1], colour(1)));
  EXPECT_EQ(decoder.stats().restarts, 2);
  EXPECT_EQ(decoder.stats().frames_decoded, 5);
}

TEST(VideoWebp, ShortDurationsCountAsATenthOfASecond) {
  const Bytes anim = test::animated_webp(kW, kH,
                                         {{webp_frame({1, 2, 3, 255}, kW, kH), 0, 0, kW, kH, 0},
                                          {webp_frame({4, 5, 6, 255}, kW, kH), 0, 0, kW, kH, 19},
                                          {webp_frame({7, 8, 9, 255}, kW, kH), 0, 0, kW, kH, 20}});
  EXPECT_DOUBLE_EQ(AnimatedWebpDecoder(anim).info().duration_seconds, 0.22);
}

TEST(VideoWebp, FramesAreComposedOnTheCanvasAndLoseTheirAlpha) {
  // Frame 0 fills the canvas, frame 1 (not blended) replaces the 4x4 block at (8, 2) with a
  // half-transparent colour: the colour is kept, the alpha dropped.
  const Bytes anim = test::animated_webp(kW, kH,
                                         {{webp_frame({200, 30, 40, 255}, kW, kH), 0, 0, kW, kH, 100},
                                          {webp_frame({20, 180, 60, 128}, 4, 4), 8, 2, 4, 4, 100}});
  AnimatedWebpDecoder decoder(anim);
  const int64_t both[] = {0, 1};
  const std::vector<RgbImage> frames = decoder.decode_frames(both);
  EXPECT_TRUE(flat(frames[0], colour(0)));
  for (int y = 0; y < kH; ++y)
    for (int x = 0; x < kW; ++x) {
      const bool inside = x >= 8 && x < 12 && y >= 2 && y < 6;
      ASSERT_TRUE(test::pixel_near(frames[1], x, y, colour(inside ? 1 : 0))) << x << "," << y;
    }
}

TEST(VideoWebp, AStillWebpIsAnImageAndAOneFrameVideo) {
  const Bytes still = webp_frame({10, 40, 220, 255}, kW, kH);
  EXPECT_FALSE(is_animated_image(still));
  AnimatedWebpDecoder decoder(still);
  EXPECT_EQ(decoder.info().frame_count, 1);
  EXPECT_EQ(decoder.info().duration_seconds, 0.0);
  const int64_t first[] = {0};
  EXPECT_TRUE(flat(decoder.decode_frames(first)[0], colour(2)));
  // One frame in an animation container is still one picture.
  EXPECT_FALSE(is_animated_image(test::animated_webp(kW, kH, {{still, 0, 0, kW, kH, 100}})));
}

TEST(VideoWebp, HostileFilesAreErrors) {
  const Bytes anim = test::animated_webp(kW, kH,
                                         {{webp_frame({200, 30, 40, 255}, kW, kH), 0, 0, kW, kH, 100},
                                          {webp_frame({20, 180, 60, 255}, kW, kH), 0, 0, kW, kH, 100}});
  for (size_t cut = 0; cut < anim.size(); cut += 5) {
    const Bytes part(anim.begin(), anim.begin() + long(cut));
    EXPECT_FALSE(is_animated_image(part)) << cut;
    try {
      AnimatedWebpDecoder decoder(part);
      const int64_t all[] = {0, 1};
      if (decoder.info().frame_count == 2) decoder.decode_frames(all);
    } catch (const Error&) {
    }
  }
  EXPECT_TRUE(contains(error_of([&] { AnimatedWebpDecoder d(std::span<const uint8_t>(anim.data(), anim.size() - 7)); }),
                       "truncated"));
  VideoDecodeOptions tight;
  tight.max_animation_pixels = int64_t(kW) * kH;
  EXPECT_TRUE(contains(error_of([&] { AnimatedWebpDecoder d(anim, tight); }), "exceed the limit"));
  VideoDecodeOptions small;
  small.max_pixels = kW * kH - 1;
  EXPECT_TRUE(contains(error_of([&] { AnimatedWebpDecoder d(anim, small); }), "exceed the limit"));
  AnimatedWebpDecoder decoder(anim);
  const int64_t out_of_range[] = {2};
  EXPECT_TRUE(contains(error_of([&] { decoder.decode_frames(out_of_range); }), "out of range"));
  const Bytes junk{1, 2, 3};
  EXPECT_TRUE(contains(error_of([&] { AnimatedWebpDecoder d(junk); }), "not a WebP"));
  // FFmpeg's libraries are not used for WebP: VideoDecoder names the decoder that is.
  EXPECT_TRUE(contains(error_of([&] { VideoDecoder d(anim); }), "AnimatedWebpDecoder"));
}

TEST(AnimatedImage, OnlyGifsAndWebpsOfSeveralFramesAreAnimated) {
  EXPECT_TRUE(is_animated_image(flat_gif(2, {10, 10})));
  EXPECT_FALSE(is_animated_image(flat_gif(1, {10})));
  const Bytes gif = flat_gif(2, {10, 10});
  EXPECT_FALSE(is_animated_image(Bytes(gif.begin(), gif.begin() + 30)));
  EXPECT_FALSE(is_animated_image(Bytes{'G', 'I', 'F', '8', '9', 'a'}));
  EXPECT_FALSE(is_animated_image(Bytes{}));
  EXPECT_FALSE(is_animated_image(test::encode_webp_lossy_rgb(Bytes(size_t(kW * kH * 3), 9), kW, kH, 80)));
}

}  // namespace
}  // namespace qwen35
