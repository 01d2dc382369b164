// WebP (lossy, lossless with alpha, EXIF, animation) and GIF (palette, transparency, interlace,
// partial frames, several frames) decoding.
#include <gtest/gtest.h>

#include "core/error.h"
#include "io/image.h"
#include "io/image_test_encoders.h"

namespace qwen35 {
namespace {

using test::Bytes;
using test::composite_alpha;
using test::pixel_near;

Bytes flat_rgb(int w, int h, std::array<int, 3> c) {
  Bytes b(size_t(w) * size_t(h) * 3);
  for (size_t i = 0; i < b.size(); ++i) b[i] = uint8_t(c[i % 3]);
  return b;
}

// 8x8 RGBA: opaque gradient, a transparent column 0, a half-transparent row 7.
Bytes test_rgba() {
  Bytes b(8 * 8 * 4);
  for (int y = 0; y < 8; ++y)
    for (int x = 0; x < 8; ++x) {
      uint8_t* p = &b[size_t(y * 8 + x) * 4];
      p[0] = uint8_t(30 * x), p[1] = uint8_t(30 * y), p[2] = uint8_t(100 + x + y);
      p[3] = x == 0 ? 0 : y == 7 ? 96 : 255;
    }
  return b;
}

TEST(ImageWebp, LossyRgb) {
  const Bytes webp = test::encode_webp_lossy_rgb(flat_rgb(32, 24, {40, 160, 220}), 32, 24, 100);
  EXPECT_EQ(sniff_image_format(webp), ImageFormat::kWebp);
  const RgbImage img = decode_image(webp, composite_alpha());
  ASSERT_EQ(img.width, 32);
  ASSERT_EQ(img.height, 24);
  EXPECT_TRUE(pixel_near(img, 16, 12, {40, 160, 220}, 4));
  EXPECT_TRUE(pixel_near(img, 0, 0, {40, 160, 220}, 4));
}

TEST(ImageWebp, LosslessWithAlpha) {
  const Bytes rgba = test_rgba();
  const Bytes webp = test::encode_webp_lossless_rgba(rgba, 8, 8);
  const RgbImage img = decode_image(webp, composite_alpha());
  ASSERT_EQ(img.width, 8);
  ASSERT_EQ(img.height, 8);
  for (int y = 0; y < 8; ++y)
    for (int x = 0; x < 8; ++x) {
      const uint8_t* p = &rgba[size_t(y * 8 + x) * 4];
      std::array<int, 3> want;
      for (int c = 0; c < 3; ++c) want[size_t(c)] = test::over_white_reference(p[c], p[3]);
      ASSERT_TRUE(pixel_near(img, x, y, want)) << x << "," << y;
    }
  ImageDecodeOptions drop;
  drop.alpha = AlphaMode::kDrop;
  const RgbImage dropped = decode_image(webp, drop);
  EXPECT_TRUE(pixel_near(dropped, 3, 7, {90, 210, 110}));  // alpha 96, colour kept
  EXPECT_TRUE(pixel_near(dropped, 5, 2, {150, 60, 107}));
}

TEST(ImageWebp, ExifOrientation) {
  const Bytes rgba = test_rgba();
  const Bytes webp = test::webp_with_exif(test::encode_webp_lossless_rgba(rgba, 8, 8), 8, 8, true, test::exif_block(3));
  const RgbImage img = decode_image(webp, composite_alpha());
  ASSERT_EQ(img.width, 8);
  // Rotated 180 degrees: source (5, 2) lands on (2, 5).
  EXPECT_TRUE(pixel_near(img, 2, 5, {150, 60, 107}));
  // Some writers keep the "Exif\0\0" prefix inside the WebP chunk.
  const Bytes prefixed =
      test::webp_with_exif(test::encode_webp_lossless_rgba(rgba, 8, 8), 8, 8, true, test::exif_block(3, false, true));
  EXPECT_TRUE(pixel_near(decode_image(prefixed, composite_alpha()), 2, 5, {150, 60, 107}));
}

TEST(ImageWebp, AnimatedKeepsTheFirstFrame) {
  Bytes red(6 * 4 * 4), blue(10 * 8 * 4);
  for (size_t i = 0; i < red.size(); i += 4) red[i] = 255, red[i + 3] = 255;
  for (size_t i = 0; i < blue.size(); i += 4) blue[i + 2] = 255, blue[i + 3] = 255;
  const Bytes anim = test::animated_webp(10, 8,
                                         {{test::encode_webp_lossless_rgba(red, 6, 4), 2, 2, 6, 4},
                                          {test::encode_webp_lossless_rgba(blue, 10, 8), 0, 0, 10, 8}});
  const RgbImage img = decode_image(anim, composite_alpha());
  ASSERT_EQ(img.width, 10);
  ASSERT_EQ(img.height, 8);
  EXPECT_TRUE(pixel_near(img, 4, 4, {255, 0, 0}));
  EXPECT_TRUE(pixel_near(img, 0, 0, {255, 255, 255}));  // canvas outside frame 1: transparent
  EXPECT_TRUE(pixel_near(img, 9, 7, {255, 255, 255}));
}

TEST(ImageWebp, TruncatedIsAnError) {
  const Bytes webp = test::encode_webp_lossy_rgb(flat_rgb(64, 64, {10, 20, 30}), 64, 64, 90);
  EXPECT_THROW(decode_image(Bytes(webp.begin(), webp.begin() + long(webp.size() / 2)), composite_alpha()), Error);
  EXPECT_THROW(decode_image(Bytes(webp.begin(), webp.begin() + 16), composite_alpha()), Error);
  ImageDecodeOptions small;
  small.max_pixels = 1000;
  try {
    decode_image(webp, small);
    FAIL() << "limit ignored";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("exceeds the limit"), std::string::npos) << e.what();
  }
}

test::GifSpec four_colour_gif() {
  test::GifSpec s;
  s.screen_width = s.width = 8;
  s.screen_height = s.height = 4;
  s.palette = {255, 0, 0, 0, 255, 0, 0, 0, 255, 20, 40, 60};
  s.indices.resize(32);
  for (int i = 0; i < 32; ++i) s.indices[size_t(i)] = uint8_t((i % 8) / 2);
  return s;
}

TEST(ImageGif, PaletteColours) {
  const Bytes gif = test::encode_gif(four_colour_gif());
  EXPECT_EQ(sniff_image_format(gif), ImageFormat::kGif);
  const RgbImage img = decode_image(gif, composite_alpha());
  ASSERT_EQ(img.width, 8);
  ASSERT_EQ(img.height, 4);
  EXPECT_TRUE(pixel_near(img, 0, 0, {255, 0, 0}));
  EXPECT_TRUE(pixel_near(img, 3, 1, {0, 255, 0}));
  EXPECT_TRUE(pixel_near(img, 5, 2, {0, 0, 255}));
  EXPECT_TRUE(pixel_near(img, 7, 3, {20, 40, 60}));
}

TEST(ImageGif, TransparentIndex) {
  test::GifSpec s = four_colour_gif();
  s.transparent = 1;
  const Bytes gif = test::encode_gif(s);
  EXPECT_TRUE(pixel_near(decode_image(gif, composite_alpha()), 3, 1, {255, 255, 255}));
  EXPECT_TRUE(pixel_near(decode_image(gif, composite_alpha()), 0, 1, {255, 0, 0}));
  ImageDecodeOptions drop;
  drop.alpha = AlphaMode::kDrop;
  EXPECT_TRUE(pixel_near(decode_image(gif, drop), 3, 1, {0, 255, 0}));
}

TEST(ImageGif, InterlacedRowsLandInPlace) {
  test::GifSpec s;
  s.screen_width = s.width = 3;
  s.screen_height = s.height = 19;
  s.interlace = true;
  s.palette.resize(256 * 3);
  for (int i = 0; i < 256; ++i) s.palette[size_t(i) * 3] = uint8_t(i), s.palette[size_t(i) * 3 + 1] = uint8_t(255 - i);
  s.indices.resize(3 * 19);
  for (int y = 0; y < 19; ++y)
    for (int x = 0; x < 3; ++x) s.indices[size_t(y * 3 + x)] = uint8_t(y * 10 + x);
  const RgbImage img = decode_image(test::encode_gif(s), composite_alpha());
  for (int y = 0; y < 19; ++y)
    for (int x = 0; x < 3; ++x) ASSERT_TRUE(pixel_near(img, x, y, {y * 10 + x, 255 - (y * 10 + x), 0}));
}

TEST(ImageGif, PartialFrameAndLocalPalette) {
  test::GifSpec s = four_colour_gif();
  s.screen_width = 12;
  s.screen_height = 7;
  s.left = 3;
  s.top = 2;
  s.local_palette = true;
  RgbImage img = decode_image(test::encode_gif(s), composite_alpha());
  ASSERT_EQ(img.width, 12);
  ASSERT_EQ(img.height, 7);
  EXPECT_TRUE(pixel_near(img, 3, 2, {255, 0, 0}));
  EXPECT_TRUE(pixel_near(img, 10, 5, {20, 40, 60}));
  EXPECT_TRUE(pixel_near(img, 0, 0, {255, 0, 0}));  // outside the frame: palette entry 0
  s.transparent = 2;
  img = decode_image(test::encode_gif(s), composite_alpha());
  EXPECT_TRUE(pixel_near(img, 0, 0, {255, 255, 255}));  // outside the frame: transparent
  EXPECT_TRUE(pixel_near(img, 11, 6, {255, 255, 255}));
  EXPECT_TRUE(pixel_near(img, 3, 2, {255, 0, 0}));
}

TEST(ImageGif, OnlyTheFirstFrameIsDecoded) {
  test::GifSpec s = four_colour_gif();
  s.frames = 3;  // frames 2 and 3 are all index 0
  const RgbImage img = decode_image(test::encode_gif(s), composite_alpha());
  EXPECT_TRUE(pixel_near(img, 7, 3, {20, 40, 60}));
}

TEST(ImageGif, TruncatedAndOversizedAreErrors) {
  const Bytes gif = test::encode_gif(four_colour_gif());
  for (size_t n : {size_t(6), size_t(13), gif.size() / 2, gif.size() - 3})
    EXPECT_THROW(decode_image(Bytes(gif.begin(), gif.begin() + long(n)), composite_alpha()), Error) << n;
  Bytes huge = gif;
  huge[6] = huge[8] = 0x30, huge[7] = huge[9] = 0x75;  // 30000 x 30000 logical screen
  try {
    decode_image(huge, composite_alpha());
    FAIL() << "30000x30000 GIF accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("exceeds the limit"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace qwen35
