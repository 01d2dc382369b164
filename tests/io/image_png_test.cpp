// PNG decoding: every colour type, 1..16-bit depths, tRNS, Adam7, eXIf orientation, and the
// alpha rules (composite onto white like Pillow's alpha_composite, or drop like convert("RGB")).
#include <random>

#include <gtest/gtest.h>

#include "core/error.h"
#include "io/image.h"
#include "io/image_test_encoders.h"

namespace qwen35 {
namespace {

using test::Bytes;
using test::composite_alpha;
using test::pixel_near;

Bytes random_bytes(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  Bytes b(n);
  for (auto& v : b) v = uint8_t(rng());
  return b;
}

ImageDecodeOptions drop_alpha() {
  ImageDecodeOptions o;
  o.alpha = AlphaMode::kDrop;
  return o;
}

TEST(ImagePng, Rgb8RoundTripsExactly) {
  test::PngSpec s;
  s.width = 37;
  s.height = 23;
  s.rows = random_bytes(37 * 23 * 3, 1);
  const RgbImage img = decode_image(test::encode_png(s), composite_alpha());
  ASSERT_EQ(img.width, 37);
  ASSERT_EQ(img.height, 23);
  EXPECT_EQ(img.pixels, s.rows);
}

TEST(ImagePng, Adam7InterlacedRoundTripsExactly) {
  test::PngSpec s;
  s.width = 19;
  s.height = 13;
  s.interlace = true;
  s.rows = random_bytes(19 * 13 * 3, 2);
  const Bytes png = test::encode_png(s);
  ASSERT_EQ(png[28], 1);  // IHDR interlace method byte
  EXPECT_EQ(decode_image(png, composite_alpha()).pixels, s.rows);
}

TEST(ImagePng, PaletteWithTrnsCompositesOntoWhite) {
  test::PngSpec s;
  s.width = 4;
  s.height = 1;
  s.color_type = PNG_COLOR_TYPE_PALETTE;
  s.palette = {{10, 20, 30}, {200, 100, 50}, {0, 128, 255}, {90, 80, 70}};
  s.trns_alpha = {255, 0, 128};  // entry 3 has no tRNS value: opaque
  s.rows = {0, 1, 2, 3};
  const RgbImage img = decode_image(test::encode_png(s), composite_alpha());
  ASSERT_EQ(img.width, 4);
  EXPECT_TRUE(pixel_near(img, 0, 0, {10, 20, 30}));
  EXPECT_TRUE(pixel_near(img, 1, 0, {255, 255, 255}));
  EXPECT_TRUE(pixel_near(img, 2, 0,
                         {test::over_white_reference(0, 128), test::over_white_reference(128, 128),
                          test::over_white_reference(255, 128)}));
  EXPECT_TRUE(pixel_near(img, 2, 0, {127, 191, 255}));
  EXPECT_TRUE(pixel_near(img, 3, 0, {90, 80, 70}));

  // PIL convert("RGB") shows the palette colours and ignores tRNS.
  const RgbImage dropped = decode_image(test::encode_png(s), drop_alpha());
  EXPECT_TRUE(pixel_near(dropped, 1, 0, {200, 100, 50}));
  EXPECT_TRUE(pixel_near(dropped, 2, 0, {0, 128, 255}));
}

TEST(ImagePng, LowBitDepthPaletteAndGray) {
  test::PngSpec s;
  s.width = 4;
  s.height = 2;
  s.color_type = PNG_COLOR_TYPE_PALETTE;
  s.bit_depth = 2;
  s.palette = {{1, 2, 3}, {40, 50, 60}, {200, 201, 202}, {255, 0, 255}};
  s.rows = {0b00011011, 0b11100100};  // row 0: 0 1 2 3, row 1: 3 2 1 0
  RgbImage img = decode_image(test::encode_png(s), composite_alpha());
  EXPECT_TRUE(pixel_near(img, 1, 0, {40, 50, 60}));
  EXPECT_TRUE(pixel_near(img, 3, 0, {255, 0, 255}));
  EXPECT_TRUE(pixel_near(img, 0, 1, {255, 0, 255}));
  EXPECT_TRUE(pixel_near(img, 2, 1, {40, 50, 60}));

  test::PngSpec g;
  g.width = 8;
  g.height = 1;
  g.color_type = PNG_COLOR_TYPE_GRAY;
  g.bit_depth = 1;
  g.rows = {0b10100000};
  img = decode_image(test::encode_png(g), composite_alpha());
  EXPECT_TRUE(pixel_near(img, 0, 0, {255, 255, 255}));
  EXPECT_TRUE(pixel_near(img, 1, 0, {0, 0, 0}));
  EXPECT_TRUE(pixel_near(img, 2, 0, {255, 255, 255}));

  g.bit_depth = 4;
  g.width = 2;
  g.rows = {0x5F};  // 5 -> 85, 15 -> 255
  img = decode_image(test::encode_png(g), composite_alpha());
  EXPECT_TRUE(pixel_near(img, 0, 0, {85, 85, 85}));
  EXPECT_TRUE(pixel_near(img, 1, 0, {255, 255, 255}));
}

TEST(ImagePng, SixteenBitKeepsTheHighByte) {
  test::PngSpec s;
  s.width = 3;
  s.height = 1;
  s.bit_depth = 16;
  s.rows = {0x12, 0x34, 0xFF, 0xFF, 0x00, 0xFF,   // (0x1234, 0xFFFF, 0x00FF)
            0x80, 0x00, 0x7F, 0xFF, 0xAB, 0xCD,   // (0x8000, 0x7FFF, 0xABCD)
            0x00, 0x00, 0x01, 0x00, 0xFE, 0xFF};  // (0, 0x0100, 0xFEFF)
  const RgbImage img = decode_image(test::encode_png(s), composite_alpha());
  EXPECT_TRUE(pixel_near(img, 0, 0, {0x12, 0xFF, 0x00}));
  EXPECT_TRUE(pixel_near(img, 1, 0, {0x80, 0x7F, 0xAB}));
  EXPECT_TRUE(pixel_near(img, 2, 0, {0x00, 0x01, 0xFE}));

  // 16-bit gray: high byte too (Pillow would clip the 16-bit value to 255; we do not).
  test::PngSpec g;
  g.width = 2;
  g.height = 1;
  g.color_type = PNG_COLOR_TYPE_GRAY;
  g.bit_depth = 16;
  g.rows = {0xAB, 0xCD, 0x00, 0x10};
  const RgbImage gray = decode_image(test::encode_png(g), composite_alpha());
  EXPECT_TRUE(pixel_near(gray, 0, 0, {0xAB, 0xAB, 0xAB}));
  EXPECT_TRUE(pixel_near(gray, 1, 0, {0, 0, 0}));

  // 16-bit RGBA: high bytes, then the composite.
  test::PngSpec a;
  a.width = 1;
  a.height = 1;
  a.color_type = PNG_COLOR_TYPE_RGBA;
  a.bit_depth = 16;
  a.rows = {0x40, 0x11, 0x80, 0x22, 0xC0, 0x33, 0x80, 0x44};
  const RgbImage rgba = decode_image(test::encode_png(a), composite_alpha());
  EXPECT_TRUE(pixel_near(rgba, 0, 0,
                         {test::over_white_reference(0x40, 0x80), test::over_white_reference(0x80, 0x80),
                          test::over_white_reference(0xC0, 0x80)}));
}

TEST(ImagePng, GrayAlphaEveryCombinationMatchesPillowComposite) {
  // 256 x 256 gray+alpha image holding every (gray, alpha) pair once.
  test::PngSpec s;
  s.width = 256;
  s.height = 256;
  s.color_type = PNG_COLOR_TYPE_GRAY_ALPHA;
  s.rows.resize(256 * 256 * 2);
  for (int a = 0; a < 256; ++a)
    for (int c = 0; c < 256; ++c) {
      s.rows[size_t(a * 256 + c) * 2] = uint8_t(c);
      s.rows[size_t(a * 256 + c) * 2 + 1] = uint8_t(a);
    }
  const Bytes png = test::encode_png(s);
  const RgbImage img = decode_image(png, composite_alpha());
  int mismatches = 0;
  for (int a = 0; a < 256; ++a)
    for (int c = 0; c < 256; ++c) {
      const int want = test::over_white_reference(c, a);
      const uint8_t* p = img.at(c, a);
      if (p[0] != want || p[1] != want || p[2] != want) ++mismatches;
    }
  EXPECT_EQ(mismatches, 0);
  const RgbImage dropped = decode_image(png, drop_alpha());
  EXPECT_TRUE(pixel_near(dropped, 77, 0, {77, 77, 77}));
  EXPECT_TRUE(pixel_near(dropped, 77, 200, {77, 77, 77}));
}

TEST(ImagePng, RgbaComposite) {
  test::PngSpec s;
  s.width = 3;
  s.height = 1;
  s.color_type = PNG_COLOR_TYPE_RGBA;
  s.rows = {10, 20, 30, 255, 10, 20, 30, 0, 100, 150, 200, 64};
  const RgbImage img = decode_image(test::encode_png(s), composite_alpha());
  EXPECT_TRUE(pixel_near(img, 0, 0, {10, 20, 30}));
  EXPECT_TRUE(pixel_near(img, 1, 0, {255, 255, 255}));
  EXPECT_TRUE(pixel_near(img, 2, 0,
                         {test::over_white_reference(100, 64), test::over_white_reference(150, 64),
                          test::over_white_reference(200, 64)}));
  const RgbImage dropped = decode_image(test::encode_png(s), drop_alpha());
  EXPECT_TRUE(pixel_near(dropped, 1, 0, {10, 20, 30}));
  EXPECT_TRUE(pixel_near(dropped, 2, 0, {100, 150, 200}));
}

TEST(ImagePng, ColourKeyTrnsBecomesTransparent) {
  test::PngSpec g;
  g.width = 3;
  g.height = 1;
  g.color_type = PNG_COLOR_TYPE_GRAY;
  g.rows = {50, 51, 50};
  g.trns_color = true;
  g.trns_value.gray = 50;
  RgbImage img = decode_image(test::encode_png(g), composite_alpha());
  EXPECT_TRUE(pixel_near(img, 0, 0, {255, 255, 255}));
  EXPECT_TRUE(pixel_near(img, 1, 0, {51, 51, 51}));
  EXPECT_TRUE(pixel_near(img, 2, 0, {255, 255, 255}));

  test::PngSpec c;
  c.width = 2;
  c.height = 1;
  c.rows = {1, 2, 3, 1, 2, 4};
  c.trns_color = true;
  c.trns_value.red = 1, c.trns_value.green = 2, c.trns_value.blue = 3;
  img = decode_image(test::encode_png(c), composite_alpha());
  EXPECT_TRUE(pixel_near(img, 0, 0, {255, 255, 255}));
  EXPECT_TRUE(pixel_near(img, 1, 0, {1, 2, 4}));
  img = decode_image(test::encode_png(c), drop_alpha());
  EXPECT_TRUE(pixel_near(img, 0, 0, {1, 2, 3}));
}

TEST(ImagePng, ExifOrientationFromEXifChunk) {
  test::PngSpec s;
  s.width = 3;
  s.height = 2;
  s.rows = {1, 1, 1, 2, 2, 2, 3, 3, 3,  //
            4, 4, 4, 5, 5, 5, 6, 6, 6};
  s.exif = test::exif_block(6, /*big_endian=*/true);
  const RgbImage img = decode_image(test::encode_png(s), composite_alpha());
  ASSERT_EQ(img.width, 2);
  ASSERT_EQ(img.height, 3);
  // 90 degrees clockwise: rows become columns, read bottom-up.
  const std::array<int, 6> want = {4, 1, 5, 2, 6, 3};
  for (int i = 0; i < 6; ++i) EXPECT_EQ(img.pixels[size_t(i) * 3], want[size_t(i)]) << i;
}

TEST(ImagePng, ChelseaPhoto) {
  const RgbImage img = load_image_file(std::string(QWEN35_TEST_DATA) + "/tiny-qwen35/chelsea.png");
  EXPECT_EQ(img.width, 451);
  EXPECT_EQ(img.height, 300);
  EXPECT_EQ(img.pixels.size(), 451u * 300u * 3u);
}

TEST(ImagePng, ZeroWidthHeaderIsAnError) {
  test::PngSpec s;
  s.width = 1;
  s.height = 1;
  s.rows = {1, 2, 3};
  Bytes png = test::encode_png(s);
  // IHDR data starts at byte 16: width (4 bytes BE), height; the CRC covers type + data.
  png[16] = png[17] = png[18] = png[19] = 0;
  const uint32_t crc = test::crc32_of(png.data() + 12, 17);
  png[29] = uint8_t(crc >> 24), png[30] = uint8_t(crc >> 16), png[31] = uint8_t(crc >> 8), png[32] = uint8_t(crc);
  EXPECT_THROW(decode_image(png, composite_alpha()), Error);
}

}  // namespace
}  // namespace qwen35
