// Hostile input: empty, garbage, truncated at every length, bit flips, huge declared sizes, a
// decompression bomb, a misleading file extension. The only acceptable outcomes are a decoded
// image or a qwen35::Error; anything else (a crash, another exception type) fails the test.
#include <filesystem>
#include <fstream>
#include <random>

#include <gtest/gtest.h>

#include "core/error.h"
#include "io/image.h"
#include "io/image_test_encoders.h"
#include "support/test_data.h"

namespace qwen35 {
namespace {

using test::Bytes;

Bytes pattern_rgb(int w, int h) {
  Bytes b(size_t(w) * size_t(h) * 3);
  for (size_t i = 0; i < b.size(); ++i) b[i] = uint8_t(i * 7 + (i / 3) * 13);
  return b;
}

// One valid small file per format.
std::vector<std::pair<std::string, Bytes>> sample_files() {
  std::vector<std::pair<std::string, Bytes>> out;
  test::JpegSpec j;
  j.width = 24, j.height = 16, j.pixels = pattern_rgb(24, 16), j.quality = 85;
  out.emplace_back("jpeg", test::encode_jpeg(j));
  j.progressive = true;
  out.emplace_back("progressive jpeg", test::encode_jpeg(j));
  test::PngSpec p;
  p.width = 24, p.height = 16, p.rows = pattern_rgb(24, 16);
  out.emplace_back("png", test::encode_png(p));
  p.interlace = true;
  out.emplace_back("interlaced png", test::encode_png(p));
  out.emplace_back("webp lossy", test::encode_webp_lossy_rgb(pattern_rgb(24, 16), 24, 16, 80));
  Bytes rgba(24 * 16 * 4, 200);
  out.emplace_back("webp lossless", test::encode_webp_lossless_rgba(rgba, 24, 16));
  test::GifSpec g;
  g.screen_width = g.width = 24, g.screen_height = g.height = 16;
  g.palette = {0, 0, 0, 255, 255, 255, 255, 0, 0, 0, 0, 255};
  g.indices.resize(24 * 16);
  for (size_t i = 0; i < g.indices.size(); ++i) g.indices[i] = uint8_t(i % 4);
  out.emplace_back("gif", test::encode_gif(g));
  Bytes bmp(54, 0);
  bmp[0] = 'B', bmp[1] = 'M', bmp[10] = 54, bmp[14] = 40, bmp[18] = 24, bmp[22] = 16, bmp[26] = 1, bmp[28] = 24;
  const Bytes px = pattern_rgb(24, 16);
  bmp.insert(bmp.end(), px.begin(), px.end());
  out.emplace_back("bmp", bmp);
  return out;
}

// Decodes; returns true on success, false on qwen35::Error. Any other exception escapes.
bool decodes(const Bytes& b, const ImageDecodeOptions& o = {}) {
  try {
    const RgbImage img = decode_image(b, o);
    EXPECT_EQ(img.pixels.size(), size_t(img.width) * size_t(img.height) * 3);
    return true;
  } catch (const Error&) {
    return false;
  }
}

TEST(ImageHostile, SamplesDecode) {
  for (const auto& [name, bytes] : sample_files()) {
    SCOPED_TRACE(name);
    const RgbImage img = decode_image(bytes);
    EXPECT_EQ(img.width, 24);
    EXPECT_EQ(img.height, 16);
  }
}

TEST(ImageHostile, EmptyInput) {
  try {
    decode_image(Bytes{});
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("empty"), std::string::npos) << e.what();
  }
}

TEST(ImageHostile, RandomGarbage) {
  std::mt19937 rng(7);
  for (int i = 0; i < 200; ++i) {
    Bytes b(size_t(1 + rng() % 300));
    for (auto& v : b) v = uint8_t(rng());
    if (sniff_image_format(b) != ImageFormat::kUnknown) continue;
    try {
      decode_image(b);
      FAIL() << "garbage decoded";
    } catch (const Error& e) {
      ASSERT_NE(std::string(e.what()).find("unrecognised image format"), std::string::npos) << e.what();
    }
  }
}

TEST(ImageHostile, GarbageBehindEveryMagic) {
  const std::vector<Bytes> magics = {{0xFF, 0xD8, 0xFF},
                                     {0x89, 'P', 'N', 'G', '\r', '\n', 0x1A, '\n'},
                                     {'R', 'I', 'F', 'F', 0x40, 0, 0, 0, 'W', 'E', 'B', 'P'},
                                     {'G', 'I', 'F', '8', '9', 'a'},
                                     {'B', 'M'}};
  std::mt19937 rng(11);
  ImageDecodeOptions o;
  o.max_pixels = 1 << 20;
  for (const Bytes& magic : magics) {
    for (int i = 0; i < 300; ++i) {
      Bytes b = magic;
      const size_t extra = rng() % 400;
      for (size_t k = 0; k < extra; ++k) b.push_back(uint8_t(rng()));
      decodes(b, o);  // must not crash or throw anything but Error
    }
  }
}

TEST(ImageHostile, TruncatedAtEveryLength) {
  for (const auto& [name, bytes] : sample_files()) {
    SCOPED_TRACE(name);
    size_t accepted = 0;
    for (size_t n = 0; n < bytes.size(); ++n) accepted += decodes(Bytes(bytes.begin(), bytes.begin() + long(n)));
    // Only the trailing bytes may be missing without losing pixels (PNG's IEND, GIF's
    // trailer, BMP's last row padding); cutting the middle is always an error.
    EXPECT_FALSE(decodes(Bytes(bytes.begin(), bytes.begin() + long(bytes.size() / 2))));
    EXPECT_LT(accepted, 16u) << accepted << " truncated lengths decoded";
  }
}

TEST(ImageHostile, BitFlips) {
  std::mt19937 rng(3);
  ImageDecodeOptions o;
  o.max_pixels = 1 << 20;  // a flipped size field must not turn into a huge allocation
  for (const auto& [name, bytes] : sample_files()) {
    SCOPED_TRACE(name);
    for (int i = 0; i < 300; ++i) {
      Bytes b = bytes;
      const int flips = 1 + int(rng() % 4);
      for (int k = 0; k < flips; ++k) b[rng() % b.size()] ^= uint8_t(1u << (rng() % 8));
      decodes(b, o);
    }
  }
}

Bytes png_with_size(Bytes png, uint32_t w, uint32_t h) {
  for (int i = 0; i < 4; ++i) png[size_t(16 + i)] = uint8_t(w >> (24 - 8 * i)), png[size_t(20 + i)] = uint8_t(h >> (24 - 8 * i));
  const uint32_t crc = test::crc32_of(png.data() + 12, 17);
  for (int i = 0; i < 4; ++i) png[size_t(29 + i)] = uint8_t(crc >> (24 - 8 * i));
  return png;
}

TEST(ImageHostile, HeaderClaiming30000x30000) {
  const Bytes png = png_with_size(sample_files()[2].second, 30000, 30000);
  try {
    decode_image(png);
    FAIL() << "accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("30000x30000 = 900000000 pixels exceeds the limit"), std::string::npos) << e.what();
  }
  // A limit below the real size proves the check runs on the header, before decoding.
  ImageDecodeOptions small;
  small.max_pixels = 24 * 16 - 1;
  for (const auto& [name, bytes] : sample_files()) {
    SCOPED_TRACE(name);
    try {
      decode_image(bytes, small);
      ADD_FAILURE() << "limit ignored";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("limit"), std::string::npos) << e.what();
    }
  }
}

TEST(ImageHostile, WebpCanvasClaiming30000x30000) {
  // libwebp itself refuses a still image whose VP8X canvas disagrees with the bitstream, but an
  // animation may declare any canvas over small frames, and its decoder allocates that canvas:
  // the limit must catch it first.
  Bytes rgba(8 * 8 * 4, 255);
  const Bytes anim = test::animated_webp(30000, 30000, {{test::encode_webp_lossless_rgba(rgba, 8, 8), 0, 0, 8, 8}});
  try {
    decode_image(anim);
    FAIL() << "accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("30000x30000"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("exceeds the limit"), std::string::npos) << e.what();
  }
  Bytes still = test::webp_with_exif(test::encode_webp_lossless_rgba(rgba, 8, 8), 8, 8, true, test::exif_block(1));
  // VP8X payload starts at byte 20: flags, 3 reserved, then 24-bit width - 1 and height - 1.
  for (size_t at : {size_t(24), size_t(27)}) still[at] = 0x2F, still[at + 1] = 0x75, still[at + 2] = 0;  // 29999
  EXPECT_THROW(decode_image(still), Error);
}

TEST(ImageHostile, PngDecompressionBomb) {
  // 400 million zero pixels in a few tens of KB: refused from the header, nothing inflated.
  const Bytes bomb = test::encode_png_zeros(20000, 20000);
  EXPECT_LT(bomb.size(), 100u * 1024u);
  try {
    decode_image(bomb);
    FAIL() << "bomb accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("20000x20000"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("exceeds the limit"), std::string::npos) << e.what();
  }
}

TEST(ImageHostile, FileExtensionIsIgnored) {
  const std::string dir = test::temp_dir("image-ext");
  const auto samples = sample_files();
  const std::string png_as_jpg = dir + "/photo.jpg", jpg_as_png = dir + "/photo.png";
  std::ofstream(png_as_jpg, std::ios::binary).write(reinterpret_cast<const char*>(samples[2].second.data()),
                                                     std::streamsize(samples[2].second.size()));
  std::ofstream(jpg_as_png, std::ios::binary).write(reinterpret_cast<const char*>(samples[0].second.data()),
                                                     std::streamsize(samples[0].second.size()));
  EXPECT_EQ(load_image_file(png_as_jpg).pixels, pattern_rgb(24, 16));  // lossless: really read as PNG
  EXPECT_EQ(load_image_file(jpg_as_png).width, 24);

  ImageDecodeOptions tiny;
  tiny.max_file_bytes = 100;
  EXPECT_THROW(load_image_file(png_as_jpg, tiny), Error);
  EXPECT_THROW(load_image_file(dir + "/missing.png"), Error);
  const std::string text = dir + "/notes.png";
  std::ofstream(text) << "definitely not an image";
  try {
    load_image_file(text);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("notes.png"), std::string::npos) << e.what();
  }
  std::filesystem::remove_all(dir);
}

TEST(ImageHostile, ExifParserBounds) {
  EXPECT_EQ(exif_orientation({}), 1);
  for (int o = 1; o <= 8; ++o) {
    EXPECT_EQ(exif_orientation(test::exif_block(o)), o);
    EXPECT_EQ(exif_orientation(test::exif_block(o, true)), o);
    EXPECT_EQ(exif_orientation(test::exif_block(o, false, true)), o);
  }
  EXPECT_EQ(exif_orientation(test::exif_block(9)), 1);
  EXPECT_EQ(exif_orientation(test::exif_block(0)), 1);
  Bytes b = test::exif_block(6);
  for (size_t n = 0; n < b.size(); ++n) {
    const int o = exif_orientation(std::span<const uint8_t>(b.data(), n));
    EXPECT_TRUE(o == 1 || o == 6);
  }
  b[4] = 0xF0;  // IFD offset far outside the block
  EXPECT_EQ(exif_orientation(b), 1);
  b = test::exif_block(6);
  b[8] = 0xFF, b[9] = 0xFF;  // 65535 entries claimed
  EXPECT_EQ(exif_orientation(b), 6);
}

TEST(ImageHostile, OrientationTable) {
  // 3x2 image whose red channel numbers the pixels 1..6 (row-major).
  RgbImage img(3, 2);
  for (int i = 0; i < 6; ++i) img.pixels[size_t(i) * 3] = uint8_t(i + 1);
  auto red = [](const RgbImage& m) {
    std::vector<int> v;
    for (size_t i = 0; i < m.pixels.size(); i += 3) v.push_back(m.pixels[i]);
    return v;
  };
  // Expected layouts worked out by hand from the EXIF definitions.
  EXPECT_EQ(red(apply_orientation(img, 1)), (std::vector<int>{1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(red(apply_orientation(img, 2)), (std::vector<int>{3, 2, 1, 6, 5, 4}));
  EXPECT_EQ(red(apply_orientation(img, 3)), (std::vector<int>{6, 5, 4, 3, 2, 1}));
  EXPECT_EQ(red(apply_orientation(img, 4)), (std::vector<int>{4, 5, 6, 1, 2, 3}));
  EXPECT_EQ(red(apply_orientation(img, 5)), (std::vector<int>{1, 4, 2, 5, 3, 6}));
  EXPECT_EQ(red(apply_orientation(img, 6)), (std::vector<int>{4, 1, 5, 2, 6, 3}));
  EXPECT_EQ(red(apply_orientation(img, 7)), (std::vector<int>{6, 3, 5, 2, 4, 1}));
  EXPECT_EQ(red(apply_orientation(img, 8)), (std::vector<int>{3, 6, 2, 5, 1, 4}));
  for (int o = 5; o <= 8; ++o) {
    EXPECT_EQ(apply_orientation(img, o).width, 2);
    EXPECT_EQ(apply_orientation(img, o).height, 3);
  }
}

}  // namespace
}  // namespace qwen35
