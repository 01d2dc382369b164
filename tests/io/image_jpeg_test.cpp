// JPEG decoding: baseline, progressive, grayscale, Adobe CMYK/YCCK, EXIF orientation.
#include <gtest/gtest.h>

#include "core/error.h"
#include "io/image.h"
#include "io/image_test_encoders.h"

namespace qwen35 {
namespace {

using test::Bytes;
using test::pixel_near;

// 32x16 with four flat 16x8 quadrants; with 4:4:4 sampling at quality 100 every 8x8 block is
// flat, so the decode is within a grey level or two of the input.
constexpr std::array<int, 3> kTL{200, 30, 40}, kTR{20, 180, 60}, kBL{30, 40, 220}, kBR{240, 240, 240};

Bytes quadrant_pixels(int w, int h) {
  Bytes px(size_t(w) * size_t(h) * 3);
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x) {
      const auto& c = y < h / 2 ? (x < w / 2 ? kTL : kTR) : (x < w / 2 ? kBL : kBR);
      for (int k = 0; k < 3; ++k) px[(size_t(y) * size_t(w) + size_t(x)) * 3 + size_t(k)] = uint8_t(c[size_t(k)]);
    }
  return px;
}

test::JpegSpec quadrant_spec() {
  test::JpegSpec s;
  s.width = 32;
  s.height = 16;
  s.pixels = quadrant_pixels(32, 16);
  return s;
}

RgbImage decode(const Bytes& b, const ImageDecodeOptions& o = {}) { return decode_image(b, o); }

TEST(ImageJpeg, SniffsFormat) {
  const Bytes jpeg = test::encode_jpeg(quadrant_spec());
  EXPECT_EQ(sniff_image_format(jpeg), ImageFormat::kJpeg);
  EXPECT_EQ(image_format_name(ImageFormat::kJpeg), "JPEG");
}

TEST(ImageJpeg, BaselineRgb) {
  const RgbImage img = decode(test::encode_jpeg(quadrant_spec()));
  ASSERT_EQ(img.width, 32);
  ASSERT_EQ(img.height, 16);
  ASSERT_EQ(img.pixels.size(), 32u * 16u * 3u);
  EXPECT_TRUE(pixel_near(img, 4, 3, kTL, 2));
  EXPECT_TRUE(pixel_near(img, 27, 3, kTR, 2));
  EXPECT_TRUE(pixel_near(img, 4, 12, kBL, 2));
  EXPECT_TRUE(pixel_near(img, 27, 12, kBR, 2));
}

TEST(ImageJpeg, ProgressiveDecodesLikeBaseline) {
  // Progressive scans carry the same quantised coefficients, so the pixels are identical.
  test::JpegSpec spec = quadrant_spec();
  spec.quality = 80;
  spec.full_chroma = false;
  // Non-flat content so the AC refinement scans matter.
  for (size_t i = 0; i < spec.pixels.size(); ++i) spec.pixels[i] = uint8_t((spec.pixels[i] + i * 37) & 0xFF);
  const RgbImage baseline = decode(test::encode_jpeg(spec));
  spec.progressive = true;
  const Bytes prog = test::encode_jpeg(spec);
  // SOF2 marks a progressive frame.
  bool has_sof2 = false;
  for (size_t i = 0; i + 1 < prog.size(); ++i) has_sof2 |= prog[i] == 0xFF && prog[i + 1] == 0xC2;
  ASSERT_TRUE(has_sof2);
  const RgbImage progressive = decode(prog);
  ASSERT_EQ(progressive.width, baseline.width);
  ASSERT_EQ(progressive.height, baseline.height);
  EXPECT_EQ(progressive.pixels, baseline.pixels);
}

TEST(ImageJpeg, GrayscaleIsReplicated) {
  test::JpegSpec s;
  s.width = 16;
  s.height = 16;
  s.components = 1;
  s.in_space = JCS_GRAYSCALE;
  s.pixels.resize(256);
  for (int y = 0; y < 16; ++y)
    for (int x = 0; x < 16; ++x) s.pixels[size_t(y * 16 + x)] = uint8_t(x < 8 ? (y < 8 ? 10 : 90) : (y < 8 ? 170 : 250));
  const RgbImage img = decode(test::encode_jpeg(s));
  ASSERT_EQ(img.width, 16);
  EXPECT_TRUE(pixel_near(img, 3, 3, {10, 10, 10}, 1));
  EXPECT_TRUE(pixel_near(img, 12, 3, {170, 170, 170}, 1));
  EXPECT_TRUE(pixel_near(img, 3, 12, {90, 90, 90}, 1));
  EXPECT_TRUE(pixel_near(img, 12, 12, {250, 250, 250}, 1));
  for (size_t i = 0; i < img.pixels.size(); i += 3) {
    ASSERT_EQ(img.pixels[i], img.pixels[i + 1]);
    ASSERT_EQ(img.pixels[i], img.pixels[i + 2]);
  }
}

// Pillow reads CMYK JPEGs as Adobe-inverted ("CMYK;I") and converts with cmyk2rgb.
int pillow_cmyk_channel(int raw_c, int raw_k) {
  const int c = 255 - raw_c, nk = raw_k;
  const int t = c * nk + 128;
  return std::clamp(nk - (((t >> 8) + t) >> 8), 0, 255);
}

void check_cmyk(J_COLOR_SPACE file_space) {
  // Raw (as stored, Adobe-inverted) CMYK values of four 8x8 blocks.
  const std::array<std::array<int, 4>, 4> raw = {{{255, 0, 0, 255},       // pure red ink
                                                  {255, 255, 255, 127},   // half black
                                                  {155, 205, 255, 225},   // a mixed colour
                                                  {255, 255, 255, 255}}}; // no ink: white
  test::JpegSpec s;
  s.width = 16;
  s.height = 16;
  s.components = 4;
  s.in_space = JCS_CMYK;
  s.file_space = file_space;
  s.pixels.resize(16 * 16 * 4);
  for (int y = 0; y < 16; ++y)
    for (int x = 0; x < 16; ++x)
      for (int k = 0; k < 4; ++k) s.pixels[size_t((y * 16 + x) * 4 + k)] = uint8_t(raw[size_t((y / 8) * 2 + x / 8)][size_t(k)]);
  const RgbImage img = decode(test::encode_jpeg(s));
  ASSERT_EQ(img.width, 16);
  for (int b = 0; b < 4; ++b) {
    const auto& r = raw[size_t(b)];
    const std::array<int, 3> expected{pillow_cmyk_channel(r[0], r[3]), pillow_cmyk_channel(r[1], r[3]),
                                      pillow_cmyk_channel(r[2], r[3])};
    EXPECT_TRUE(pixel_near(img, (b % 2) * 8 + 4, (b / 2) * 8 + 4, expected, 3)) << "block " << b;
  }
  EXPECT_TRUE(pixel_near(img, 4, 4, {255, 0, 0}, 3));
  EXPECT_TRUE(pixel_near(img, 12, 12, {255, 255, 255}, 2));
}

TEST(ImageJpeg, AdobeCmyk) { check_cmyk(JCS_UNKNOWN); }
TEST(ImageJpeg, AdobeYcck) { check_cmyk(JCS_YCCK); }

TEST(ImageJpeg, ExifOrientation6RotatesClockwise) {
  test::JpegSpec s = quadrant_spec();
  s.app1 = test::jpeg_app1_exif(6);
  const Bytes jpeg = test::encode_jpeg(s);
  const RgbImage img = decode(jpeg);
  ASSERT_EQ(img.width, 16);
  ASSERT_EQ(img.height, 32);
  // Rotating 90 degrees clockwise: the left column (TL above BL) becomes the top row (BL, TL).
  EXPECT_TRUE(pixel_near(img, 3, 4, kBL, 2));
  EXPECT_TRUE(pixel_near(img, 12, 4, kTL, 2));
  EXPECT_TRUE(pixel_near(img, 3, 27, kBR, 2));
  EXPECT_TRUE(pixel_near(img, 12, 27, kTR, 2));

  ImageDecodeOptions raw;
  raw.apply_exif_orientation = false;
  const RgbImage unrotated = decode(jpeg, raw);
  EXPECT_EQ(unrotated.width, 32);
  EXPECT_TRUE(pixel_near(unrotated, 4, 3, kTL, 2));
}

TEST(ImageJpeg, ExifOrientation3Rotates180) {
  test::JpegSpec s = quadrant_spec();
  s.app1 = test::jpeg_app1_exif(3);
  const RgbImage img = decode(test::encode_jpeg(s));
  ASSERT_EQ(img.width, 32);
  ASSERT_EQ(img.height, 16);
  EXPECT_TRUE(pixel_near(img, 4, 3, kBR, 2));
  EXPECT_TRUE(pixel_near(img, 27, 3, kBL, 2));
  EXPECT_TRUE(pixel_near(img, 4, 12, kTR, 2));
  EXPECT_TRUE(pixel_near(img, 27, 12, kTL, 2));
}

TEST(ImageJpeg, ExifOrientation8RotatesCounterClockwise) {
  test::JpegSpec s = quadrant_spec();
  s.app1 = test::jpeg_app1_exif(8);
  const RgbImage img = decode(test::encode_jpeg(s));
  ASSERT_EQ(img.width, 16);
  ASSERT_EQ(img.height, 32);
  // 90 degrees counter-clockwise: the right column (TR above BR) becomes the top row (TR, BR).
  EXPECT_TRUE(pixel_near(img, 3, 4, kTR, 2));
  EXPECT_TRUE(pixel_near(img, 12, 4, kBR, 2));
  EXPECT_TRUE(pixel_near(img, 3, 27, kTL, 2));
  EXPECT_TRUE(pixel_near(img, 12, 27, kBL, 2));
}

TEST(ImageJpeg, TruncatedIsAnError) {
  test::JpegSpec s = quadrant_spec();
  s.quality = 90;
  const Bytes jpeg = test::encode_jpeg(s);
  const Bytes cut(jpeg.begin(), jpeg.begin() + long(jpeg.size() * 3 / 4));
  try {
    decode(cut);
    FAIL() << "a truncated JPEG decoded";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("JPEG"), std::string::npos) << e.what();
  }
  s.progressive = true;
  const Bytes prog = test::encode_jpeg(s);
  EXPECT_THROW(decode(Bytes(prog.begin(), prog.begin() + long(prog.size() / 2))), Error);
}

// Patches the SOF0 frame header to claim width x height.
Bytes with_sof_size(Bytes jpeg, int width, int height) {
  for (size_t i = 0; i + 9 < jpeg.size(); ++i) {
    if (jpeg[i] == 0xFF && jpeg[i + 1] == 0xC0) {
      jpeg[i + 5] = uint8_t(height >> 8), jpeg[i + 6] = uint8_t(height);
      jpeg[i + 7] = uint8_t(width >> 8), jpeg[i + 8] = uint8_t(width);
      return jpeg;
    }
  }
  ADD_FAILURE() << "no SOF0 marker";
  return jpeg;
}

TEST(ImageJpeg, HugeDeclaredSizeIsRejectedBeforeDecoding) {
  const Bytes jpeg = with_sof_size(test::encode_jpeg(quadrant_spec()), 30000, 30000);
  try {
    decode(jpeg);
    FAIL() << "a 30000x30000 JPEG header was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("30000x30000"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("exceeds the limit"), std::string::npos) << e.what();
  }
  ImageDecodeOptions small;
  small.max_pixels = 500;  // the real 32x16 = 512 pixels is already too many
  EXPECT_THROW(decode(test::encode_jpeg(quadrant_spec()), small), Error);
  small.max_pixels = 512;
  EXPECT_NO_THROW(decode(test::encode_jpeg(quadrant_spec()), small));
}

TEST(ImageJpeg, ScanCountIsCapped) {
  test::JpegSpec s = quadrant_spec();
  s.progressive = true;  // jpeg_simple_progression writes 10 scans for YCbCr
  const Bytes prog = test::encode_jpeg(s);
  ImageDecodeOptions o;
  o.max_jpeg_scans = 3;
  EXPECT_THROW(decode(prog, o), Error);
  o.max_jpeg_scans = 100;
  EXPECT_NO_THROW(decode(prog, o));
}

}  // namespace
}  // namespace qwen35
