// Pillow-exact bicubic resize, checked against the processor's resized image in the goldens.
#include <chrono>
#include <cstdio>
#include <cstring>

#include <gtest/gtest.h>

#include "core/error.h"
#include "io/image.h"
#include "io/image_resize.h"
#include "support/test_data.h"

namespace qwen35 {
namespace {

RgbImage chelsea() { return load_image_file(test::data_path("tiny-qwen35/chelsea.png")); }

// Compares with the golden uint8 HWC image; reports how many samples differ and by how much.
void expect_matches_golden(const RgbImage& img, const std::string& golden_file) {
  test::Golden g(golden_file);
  const TensorView& want = g.view("resized_image_u8");
  ASSERT_EQ(want.dtype, DType::U8);
  ASSERT_EQ(want.shape.ndim, 3);
  ASSERT_EQ(img.height, want.shape[0]);
  ASSERT_EQ(img.width, want.shape[1]);
  ASSERT_EQ(want.shape[2], 3);
  const uint8_t* w = want.as<uint8_t>();
  size_t differing = 0;
  int max_diff = 0;
  for (size_t i = 0; i < img.pixels.size(); ++i) {
    const int d = std::abs(int(img.pixels[i]) - int(w[i]));
    differing += d != 0;
    max_diff = std::max(max_diff, d);
  }
  std::printf("[resize vs %s] %zu of %zu samples differ, max difference %d\n", golden_file.c_str(), differing,
              img.pixels.size(), max_diff);
  EXPECT_EQ(differing, 0u);
  EXPECT_EQ(max_diff, 0);
}

TEST(ImageResize, NativeGoldenDownscale) {
  // smart_resize(300, 451) = (288, 448): both sides shrink.
  expect_matches_golden(resize_bicubic(chelsea(), 448, 288), "tiny-qwen35/golden/image_native.safetensors");
}

TEST(ImageResize, Fixed512GoldenUpscale) {
  // PIL Image.resize((512, 512), BICUBIC) of the 451x300 photo: both sides grow.
  expect_matches_golden(resize_bicubic(chelsea(), 512, 512), "tiny-qwen35/golden/image_fixed512.safetensors");
}

TEST(ImageResize, SameSizeIsACopy) {
  const RgbImage src = chelsea();
  EXPECT_EQ(resize_bicubic(src, src.width, src.height).pixels, src.pixels);
}

TEST(ImageResize, OneAxisOnly) {
  // A vertical-only resize must equal resizing each column on its own (the horizontal pass is
  // skipped), and the same for horizontal-only.
  const RgbImage src = chelsea();
  const RgbImage v = resize_bicubic(src, src.width, 200);
  const RgbImage h = resize_bicubic(src, 300, src.height);
  ASSERT_EQ(v.width, src.width);
  ASSERT_EQ(h.height, src.height);
  RgbImage column(1, src.height);
  for (int y = 0; y < src.height; ++y) std::memcpy(column.row(y), src.at(123, y), 3);
  const RgbImage col_resized = resize_bicubic(column, 1, 200);
  for (int y = 0; y < 200; ++y) ASSERT_EQ(std::memcmp(col_resized.row(y), v.at(123, y), 3), 0) << y;
  RgbImage line(src.width, 1);
  std::memcpy(line.row(0), src.row(77), src.row_bytes());
  const RgbImage line_resized = resize_bicubic(line, 300, 1);
  EXPECT_EQ(std::memcmp(line_resized.row(0), h.row(77), h.row_bytes()), 0);
}

TEST(ImageResize, FlatImageStaysFlat) {
  RgbImage flat(37, 23);
  for (size_t i = 0; i < flat.pixels.size(); i += 3) flat.pixels[i] = 10, flat.pixels[i + 1] = 128, flat.pixels[i + 2] = 250;
  for (auto [w, h] : {std::pair{1, 1}, std::pair{100, 7}, std::pair{5, 90}, std::pair{37, 24}}) {
    const RgbImage r = resize_bicubic(flat, w, h);
    for (size_t i = 0; i < r.pixels.size(); i += 3) {
      ASSERT_NEAR(r.pixels[i], 10, 1);
      ASSERT_NEAR(r.pixels[i + 1], 128, 1);
      ASSERT_NEAR(r.pixels[i + 2], 250, 1);
    }
  }
  RgbImage dot(1, 1);
  dot.pixels = {1, 2, 3};
  const RgbImage big = resize_bicubic(dot, 9, 4);
  for (size_t i = 0; i < big.pixels.size(); i += 3) ASSERT_EQ(big.pixels[i + 2], 3);
}

TEST(ImageResize, BadSizes) {
  const RgbImage src(4, 4);
  EXPECT_THROW(resize_bicubic(src, 0, 4), Error);
  EXPECT_THROW(resize_bicubic(src, 4, -1), Error);
  EXPECT_THROW(resize_bicubic(RgbImage{}, 4, 4), Error);
}

TEST(ImageResize, FourKPhotoIsFast) {
  RgbImage src(3840, 2160);
  for (size_t i = 0; i < src.pixels.size(); ++i) src.pixels[i] = uint8_t((i * 2654435761u) >> 24);
  const auto t0 = std::chrono::steady_clock::now();
  const RgbImage down = resize_bicubic(src, 1920, 1088);
  const auto t1 = std::chrono::steady_clock::now();
  const RgbImage up = resize_bicubic(src, 3840, 2176);  // what smart_resize asks for a 4K frame
  const auto t2 = std::chrono::steady_clock::now();
  const double down_s = std::chrono::duration<double>(t1 - t0).count();
  const double up_s = std::chrono::duration<double>(t2 - t1).count();
  std::printf("[resize 3840x2160] -> 1920x1088 %.3f s, -> 3840x2176 %.3f s\n", down_s, up_s);
  EXPECT_EQ(down.width, 1920);
  EXPECT_EQ(up.height, 2176);
  EXPECT_LT(down_s, 2.0);  // generous: shared 2-core CI machines
  EXPECT_LT(up_s, 2.0);
}

}  // namespace
}  // namespace qwen35
