// BMP: files built byte by byte here, so every header field can be set (and broken) at will.
#include <gtest/gtest.h>

#include "core/error.h"
#include "io/image.h"
#include "io/image_test_encoders.h"

namespace qwen35 {
namespace {

using test::Bytes;
using test::composite_alpha;
using test::pixel_near;

struct BmpSpec {
  uint32_t header_size = 40;
  int32_t width = 0;
  int32_t height = 0;
  uint32_t planes = 1;
  uint32_t bpp = 24;
  uint32_t compression = 0;
  uint32_t colors_used = 0;
  std::array<uint32_t, 4> masks{};  // in the header (sizes >= 52) or after a 40-byte header
  int masks_after_header = 0;       // 0, 3 or 4 masks written after a 40-byte header
  Bytes palette;                    // as stored (BGRx, or BGR for the 12-byte header)
  Bytes pixels;                     // rows as stored, padding included
  int64_t data_offset = -1;         // -1: right after the palette
};

void put16(Bytes& b, size_t at, uint32_t v) {
  b[at] = uint8_t(v), b[at + 1] = uint8_t(v >> 8);
}
void put32(Bytes& b, size_t at, uint32_t v) {
  for (int i = 0; i < 4; ++i) b[at + size_t(i)] = uint8_t(v >> (8 * i));
}

Bytes build_bmp(const BmpSpec& s) {
  Bytes b(14 + s.header_size, 0);
  b[0] = 'B', b[1] = 'M';
  put32(b, 14, s.header_size);
  if (s.header_size == 12) {
    put16(b, 18, uint32_t(s.width));
    put16(b, 20, uint32_t(s.height));
    put16(b, 22, s.planes);
    put16(b, 24, s.bpp);
  } else {
    put32(b, 18, uint32_t(s.width));
    put32(b, 22, uint32_t(s.height));
    put16(b, 26, s.planes);
    put16(b, 28, s.bpp);
    put32(b, 30, s.compression);
    put32(b, 34, uint32_t(s.pixels.size()));
    put32(b, 46, s.colors_used);
    for (int i = 0; i < 4 && 40u + 4u * uint32_t(i) + 4u <= s.header_size; ++i) put32(b, 14 + 40 + size_t(i) * 4, s.masks[size_t(i)]);
  }
  for (int i = 0; i < s.masks_after_header; ++i) {
    b.resize(b.size() + 4);
    put32(b, b.size() - 4, s.masks[size_t(i)]);
  }
  b.insert(b.end(), s.palette.begin(), s.palette.end());
  put32(b, 10, uint32_t(s.data_offset >= 0 ? s.data_offset : int64_t(b.size())));
  b.insert(b.end(), s.pixels.begin(), s.pixels.end());
  put32(b, 2, uint32_t(b.size()));
  return b;
}

// 3x2 24-bit: row stride 12 (9 bytes + 3 padding). Stored bottom-up, B G R.
BmpSpec bgr24(bool top_down) {
  BmpSpec s;
  s.width = 3;
  s.height = top_down ? -2 : 2;
  const Bytes top = {3, 2, 1, 6, 5, 4, 9, 8, 7, 0, 0, 0};            // (1,2,3) (4,5,6) (7,8,9)
  const Bytes bottom = {30, 20, 10, 60, 50, 40, 90, 80, 70, 0, 0, 0};  // (10,20,30) ...
  s.pixels = top_down ? top : bottom;
  s.pixels.insert(s.pixels.end(), top_down ? bottom.begin() : top.begin(), top_down ? bottom.end() : top.end());
  return s;
}

void expect_bgr24(const RgbImage& img) {
  ASSERT_EQ(img.width, 3);
  ASSERT_EQ(img.height, 2);
  EXPECT_TRUE(pixel_near(img, 0, 0, {1, 2, 3}));
  EXPECT_TRUE(pixel_near(img, 2, 0, {7, 8, 9}));
  EXPECT_TRUE(pixel_near(img, 1, 1, {40, 50, 60}));
}

TEST(ImageBmp, TwentyFourBitBottomUpAndTopDown) {
  const Bytes bmp = build_bmp(bgr24(false));
  EXPECT_EQ(sniff_image_format(bmp), ImageFormat::kBmp);
  expect_bgr24(decode_image(bmp, composite_alpha()));
  expect_bgr24(decode_image(build_bmp(bgr24(true)), composite_alpha()));
}

TEST(ImageBmp, TwentyFourBitWithoutFinalRowPadding) {
  Bytes bmp = build_bmp(bgr24(false));
  bmp.resize(bmp.size() - 3);
  expect_bgr24(decode_image(bmp, composite_alpha()));
}

TEST(ImageBmp, ThirtyTwoBitUncompressedIgnoresTheFourthByte) {
  BmpSpec s;
  s.width = 2;
  s.height = 1;
  s.bpp = 32;
  s.pixels = {30, 20, 10, 0, 60, 50, 40, 7};
  const RgbImage img = decode_image(build_bmp(s), composite_alpha());
  EXPECT_TRUE(pixel_near(img, 0, 0, {10, 20, 30}));
  EXPECT_TRUE(pixel_near(img, 1, 0, {40, 50, 60}));
}

TEST(ImageBmp, ThirtyTwoBitBitfieldsWithAlpha) {
  BmpSpec s;
  s.header_size = 108;  // V4
  s.width = 3;
  s.height = 1;
  s.bpp = 32;
  s.compression = 3;
  s.masks = {0x00FF0000, 0x0000FF00, 0x000000FF, 0xFF000000};  // BGRA in memory
  s.pixels = {30, 20, 10, 255, 30, 20, 10, 0, 200, 150, 100, 64};
  const Bytes bmp = build_bmp(s);
  const RgbImage img = decode_image(bmp, composite_alpha());
  EXPECT_TRUE(pixel_near(img, 0, 0, {10, 20, 30}));
  EXPECT_TRUE(pixel_near(img, 1, 0, {255, 255, 255}));
  EXPECT_TRUE(pixel_near(img, 2, 0,
                         {test::over_white_reference(100, 64), test::over_white_reference(150, 64),
                          test::over_white_reference(200, 64)}));
  ImageDecodeOptions drop;
  drop.alpha = AlphaMode::kDrop;
  EXPECT_TRUE(pixel_near(decode_image(bmp, drop), 1, 0, {10, 20, 30}));
}

TEST(ImageBmp, BitfieldMasksAfterAV3Header) {
  BmpSpec s;
  s.width = 1;
  s.height = 1;
  s.bpp = 32;
  s.compression = 3;
  s.masks = {0x000000FF, 0x0000FF00, 0x00FF0000, 0};  // RGBX in memory
  s.masks_after_header = 3;
  s.pixels = {11, 22, 33, 44};
  EXPECT_TRUE(pixel_near(decode_image(build_bmp(s), composite_alpha()), 0, 0, {11, 22, 33}));
}

TEST(ImageBmp, SixteenBit555And565) {
  BmpSpec s;
  s.width = 2;
  s.height = 1;
  s.bpp = 16;
  // 555: (31, 0, 16) and (1, 31, 0).
  const uint32_t a = 31u << 10 | 16u, b = 1u << 10 | 31u << 5;
  s.pixels = {uint8_t(a), uint8_t(a >> 8), uint8_t(b), uint8_t(b >> 8)};
  RgbImage img = decode_image(build_bmp(s), composite_alpha());
  EXPECT_TRUE(pixel_near(img, 0, 0, {255, 0, 16 * 255 / 31}));
  EXPECT_TRUE(pixel_near(img, 1, 0, {255 / 31, 255, 0}));

  s.compression = 3;
  s.masks = {0xF800, 0x07E0, 0x001F, 0};
  s.masks_after_header = 3;
  const uint32_t c = 17u << 11 | 40u << 5 | 3u;
  s.pixels = {uint8_t(c), uint8_t(c >> 8), 0xFF, 0xFF};
  img = decode_image(build_bmp(s), composite_alpha());
  EXPECT_TRUE(pixel_near(img, 0, 0, {17 * 255 / 31, 40 * 255 / 63, 3 * 255 / 31}));
  EXPECT_TRUE(pixel_near(img, 1, 0, {255, 255, 255}));
}

TEST(ImageBmp, PalettedOneFourEightBit) {
  BmpSpec s;
  s.width = 5;
  s.height = 1;
  s.bpp = 8;
  s.colors_used = 3;
  s.palette = {30, 20, 10, 0, 60, 50, 40, 0, 90, 80, 70, 0};
  s.pixels = {0, 1, 2, 9, 1, 0, 0, 0};  // index 9 is past the palette: black
  RgbImage img = decode_image(build_bmp(s), composite_alpha());
  EXPECT_TRUE(pixel_near(img, 0, 0, {10, 20, 30}));
  EXPECT_TRUE(pixel_near(img, 2, 0, {70, 80, 90}));
  EXPECT_TRUE(pixel_near(img, 3, 0, {0, 0, 0}));
  EXPECT_TRUE(pixel_near(img, 4, 0, {40, 50, 60}));

  s.bpp = 4;
  s.pixels = {0x01, 0x20, 0x10, 0x00};  // 0 1 2 0 1
  img = decode_image(build_bmp(s), composite_alpha());
  EXPECT_TRUE(pixel_near(img, 1, 0, {40, 50, 60}));
  EXPECT_TRUE(pixel_near(img, 2, 0, {70, 80, 90}));
  EXPECT_TRUE(pixel_near(img, 4, 0, {40, 50, 60}));

  s.bpp = 1;
  s.colors_used = 2;
  s.palette = {0, 0, 0, 0, 255, 255, 255, 0};
  s.pixels = {0b10100000, 0, 0, 0};
  img = decode_image(build_bmp(s), composite_alpha());
  EXPECT_TRUE(pixel_near(img, 0, 0, {255, 255, 255}));
  EXPECT_TRUE(pixel_near(img, 1, 0, {0, 0, 0}));
  EXPECT_TRUE(pixel_near(img, 2, 0, {255, 255, 255}));
}

TEST(ImageBmp, Os2CoreHeader) {
  BmpSpec s;
  s.header_size = 12;
  s.width = 2;
  s.height = 1;
  s.bpp = 8;
  s.palette.resize(256 * 3);
  s.palette[3] = 9, s.palette[4] = 8, s.palette[5] = 7;  // entry 1 = (7, 8, 9)
  s.pixels = {1, 0, 0, 0};
  const RgbImage img = decode_image(build_bmp(s), composite_alpha());
  EXPECT_TRUE(pixel_near(img, 0, 0, {7, 8, 9}));
  EXPECT_TRUE(pixel_near(img, 1, 0, {0, 0, 0}));
}

void expect_error(const Bytes& bmp, const std::string& needle, const ImageDecodeOptions& o = {}) {
  try {
    decode_image(bmp, o);
    ADD_FAILURE() << "decoded; expected an error mentioning '" << needle << "'";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  }
}

TEST(ImageBmp, HostileHeaders) {
  BmpSpec s = bgr24(false);
  s.header_size = 41;
  expect_error(build_bmp(s), "not a known version");
  s = bgr24(false), s.planes = 2;
  expect_error(build_bmp(s), "colour planes");
  s = bgr24(false), s.bpp = 7;
  expect_error(build_bmp(s), "bits per pixel");
  s = bgr24(false), s.compression = 1;
  expect_error(build_bmp(s), "RLE8");
  s = bgr24(false), s.compression = 5;
  expect_error(build_bmp(s), "PNG");
  s = bgr24(false), s.width = 0;
  expect_error(build_bmp(s), "zero or negative");
  s = bgr24(false), s.width = -3;
  expect_error(build_bmp(s), "zero or negative");
  s = bgr24(false), s.height = 0;
  expect_error(build_bmp(s), "zero or negative");
  s = bgr24(false), s.data_offset = 100000;
  expect_error(build_bmp(s), "offset");
  s = bgr24(false), s.data_offset = 20;  // inside the info header
  expect_error(build_bmp(s), "offset");
  s = bgr24(false), s.height = 200;
  expect_error(build_bmp(s), "truncated");
  s = bgr24(false), s.width = 30000, s.height = 30000;
  expect_error(build_bmp(s), "exceeds the limit");
  s = bgr24(false), s.height = int32_t(0x80000000u);
  expect_error(build_bmp(s), "exceeds the limit");

  BmpSpec p;
  p.width = 1, p.height = 1, p.bpp = 8, p.colors_used = 300, p.palette = Bytes(1200), p.pixels = {0, 0, 0, 0};
  expect_error(build_bmp(p), "palette colours");
  p.colors_used = 4, p.palette = Bytes(8);  // 4 declared, room for 2
  expect_error(build_bmp(p), "overlaps");

  BmpSpec m;
  m.width = 1, m.height = 1, m.bpp = 32, m.compression = 3, m.masks_after_header = 3, m.pixels = Bytes(4);
  m.masks = {0xFF0000, 0xFF00, 0, 0};
  expect_error(build_bmp(m), "blue bitfield mask is zero");
  m.masks = {0xFF0000, 0xFF00, 0xF0F, 0};
  expect_error(build_bmp(m), "not contiguous");
  m.masks = {0xFF0000, 0xFFFF00, 0xFF, 0};
  expect_error(build_bmp(m), "overlap");
  m.bpp = 16, m.masks = {0xF8000, 0x7E0, 0x1F, 0}, m.pixels = Bytes(4);
  expect_error(build_bmp(m), "exceeds 16 bits");
  m = BmpSpec{};
  m.width = 1, m.height = 1, m.bpp = 32, m.compression = 3, m.masks_after_header = 3;
  Bytes cut = build_bmp(m);
  cut.resize(14 + 40 + 6);
  expect_error(cut, "truncated");

  expect_error(Bytes{'B', 'M', 0, 0}, "truncated");
  ImageDecodeOptions small;
  small.max_pixels = 5;
  expect_error(build_bmp(bgr24(false)), "exceeds the limit", small);
}

}  // namespace
}  // namespace qwen35

namespace qwen35 {
namespace {

// A 52-byte header with BI_ALPHABITFIELDS needs 4 masks (16 bytes after the first 40) but has
// room for 3: the decoder must not read past the header.
TEST(ImageBmp, MasksBeyondAShortHeaderAreRejected) {
  std::vector<uint8_t> b;
  auto u16 = [&](uint16_t v) { b.push_back(uint8_t(v)); b.push_back(uint8_t(v >> 8)); };
  auto u32 = [&](uint32_t v) { for (int i = 0; i < 4; ++i) b.push_back(uint8_t(v >> (8 * i))); };
  b.push_back('B'), b.push_back('M'), u32(66), u32(0), u32(66);
  u32(52), u32(1), u32(1), u16(1), u16(16), u32(6), u32(0), u32(0), u32(0), u32(0), u32(0);
  u32(0x7C00), u32(0x03E0), u32(0x001F);  // 3 masks fill the 52-byte header
  EXPECT_THROW(decode_image(b), Error);
}

}  // namespace
}  // namespace qwen35
