// Image processor: config, smart_resize, patch order, and the goldens' pixel_values.
#include "model/image_processor.h"

#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "core/error.h"
#include "io/image.h"
#include "support/test_data.h"

namespace qwen35 {
namespace {

ImageProcessorConfig tiny_config() { return ImageProcessorConfig::load(test::tiny_model_dir()); }
RgbImage chelsea() { return load_image_file(test::data_path("tiny-qwen35/chelsea.png")); }

TEST(ImageProcessorConfig, ReadsTheModelFolder) {
  const ImageProcessorConfig c = tiny_config();
  EXPECT_EQ(c.patch_size, 16);
  EXPECT_EQ(c.temporal_patch_size, 2);
  EXPECT_EQ(c.merge_size, 2);
  EXPECT_EQ(c.min_pixels, 65536);
  EXPECT_EQ(c.max_pixels, 16777216);
  EXPECT_EQ(c.image_mean, (std::array<double, 3>{0.5, 0.5, 0.5}));
  EXPECT_EQ(c.image_std, (std::array<double, 3>{0.5, 0.5, 0.5}));
  EXPECT_EQ(c.rescale_factor, 1.0 / 255.0);  // "0.00392156862745098" parses to the same double
  EXPECT_EQ(c.factor(), 32);
  EXPECT_EQ(c.patch_dim(), 1536);
}

TEST(ImageProcessorConfig, DefaultsAndOlderKeys) {
  const ImageProcessorConfig d = ImageProcessorConfig::parse("{}", "empty");
  EXPECT_EQ(d.patch_size, 16);
  EXPECT_EQ(d.min_pixels, 65536);
  EXPECT_EQ(d.max_pixels, 16777216);
  EXPECT_TRUE(d.do_resize && d.do_rescale && d.do_normalize);

  const ImageProcessorConfig old = ImageProcessorConfig::parse(
      R"({"min_pixels": 3136, "max_pixels": 12845056, "patch_size": 14, "image_mean": [0.48145466, 0.4578275, 0.40821073]})",
      "old");
  EXPECT_EQ(old.min_pixels, 3136);
  EXPECT_EQ(old.max_pixels, 12845056);
  EXPECT_EQ(old.patch_size, 14);
  EXPECT_EQ(old.image_mean[1], 0.4578275);
  // Top-level min/max_pixels override size, as in HF.
  const ImageProcessorConfig both =
      ImageProcessorConfig::parse(R"({"size": {"shortest_edge": 100, "longest_edge": 200}, "max_pixels": 300})", "both");
  EXPECT_EQ(both.min_pixels, 100);
  EXPECT_EQ(both.max_pixels, 300);
  const ImageProcessorConfig inside =
      ImageProcessorConfig::parse(R"({"size": {"min_pixels": 1000, "max_pixels": 2000}, "image_std": 0.25})", "inside");
  EXPECT_EQ(inside.min_pixels, 1000);
  EXPECT_EQ(inside.max_pixels, 2000);
  EXPECT_EQ(inside.image_std[2], 0.25);

  const std::string dir = test::temp_dir("no-preprocessor");
  EXPECT_EQ(ImageProcessorConfig::load(dir).max_pixels, 16777216);
  std::filesystem::remove_all(dir);
}

TEST(ImageProcessorConfig, RejectsBadValues) {
  for (const char* bad : {R"(not json)", R"([1, 2])", R"({"patch_size": 0})", R"({"patch_size": "16"})",
                          R"({"merge_size": -2})", R"({"size": {"shortest_edge": 500, "longest_edge": 100}})",
                          R"({"image_mean": [0.5, 0.5]})", R"({"image_std": [0.5, 0, 0.5]})", R"({"resample": 2})",
                          R"({"rescale_factor": -1})", R"({"do_resize": "yes"})", R"({"size": 5})"}) {
    EXPECT_THROW(ImageProcessorConfig::parse(bad, "bad.json"), Error) << bad;
  }
  try {
    ImageProcessorConfig::parse(R"({"resample": 2})", "my/preprocessor_config.json");
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("my/preprocessor_config.json"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("BICUBIC"), std::string::npos) << e.what();
  }
}

TEST(SmartResize, ReferenceValues) {
  struct Case {
    int64_t h, w, want_h, want_w;
  };
  // Expected values from the reference Python function (factor 32, 65536..16777216 pixels).
  for (const Case& c : std::initializer_list<Case>{{300, 451, 288, 448},     {512, 512, 512, 512},
                                                   {1080, 1920, 1088, 1920}, {2160, 3840, 2176, 3840},
                                                   {8000, 6000, 4704, 3520}, {224, 224, 256, 256},
                                                   {10, 10, 256, 256},       {15, 17, 256, 288},
                                                   {10, 2000, 32, 3648},     {4000, 4000, 4000, 4000},
                                                   {5000, 5000, 4096, 4096}, {100000, 600, 52864, 288},
                                                   {600, 120000, 288, 57920}}) {
    const ResizedSize s = smart_resize(c.h, c.w, 32, 65536, 16777216);
    EXPECT_EQ(s.height, c.want_h) << c.h << "x" << c.w;
    EXPECT_EQ(s.width, c.want_w) << c.h << "x" << c.w;
  }
}

TEST(SmartResize, RoundsHalfToEven) {
  // 80 / 32 = 2.5 -> 2 (not 3), 48 / 32 = 1.5 -> 2, 112 / 32 = 3.5 -> 4.
  EXPECT_EQ(smart_resize(80, 1000, 32, 1, 1000000000).height, 64);
  EXPECT_EQ(smart_resize(48, 1000, 32, 1, 1000000000).height, 64);
  EXPECT_EQ(smart_resize(112, 1000, 32, 1, 1000000000).height, 128);
  EXPECT_EQ(smart_resize(1000, 80, 32, 1, 1000000000).width, 64);
}

TEST(SmartResize, RejectsTinyAndExtremeImages) {
  EXPECT_THROW(smart_resize(9, 100, 32, 65536, 16777216), Error);
  EXPECT_THROW(smart_resize(100, 9, 32, 65536, 16777216), Error);
  EXPECT_THROW(smart_resize(10, 2001, 32, 65536, 16777216), Error);  // aspect 200.1
  EXPECT_NO_THROW(smart_resize(10, 2000, 32, 65536, 16777216));       // aspect 200 exactly
  EXPECT_THROW(smart_resize(100, 100, 0, 1, 100), Error);
}

void expect_golden(const ProcessedImage& p, const std::string& file, int64_t gh, int64_t gw) {
  test::Golden g(file);
  const std::vector<int64_t> thw = g.i64("image_grid_thw");
  ASSERT_EQ(thw, (std::vector<int64_t>{1, gh, gw}));
  EXPECT_EQ(p.grid.t, 1);
  EXPECT_EQ(p.grid.h, gh);
  EXPECT_EQ(p.grid.w, gw);
  EXPECT_EQ(p.num_tokens, gh * gw / 4);
  EXPECT_EQ(g.shape("pixel_values"), (Shape{p.num_patches, p.patch_dim}));
  const std::vector<float> want = g.f32("pixel_values");
  ASSERT_EQ(p.pixel_values.size(), want.size());
  size_t differing = 0;
  for (size_t i = 0; i < want.size(); ++i) differing += p.pixel_values[i] != want[i];
  const double max_abs = test::max_abs_error(p.pixel_values, want);
  std::printf("[pixel_values vs %s] %zu of %zu differ, max abs error %g\n", file.c_str(), differing, want.size(), max_abs);
  EXPECT_EQ(differing, 0u);
}

TEST(ImageProcessor, NativeGolden) {
  const ImageProcessorConfig c = tiny_config();
  const RgbImage photo = chelsea();
  const ProcessedImage p = preprocess_image(photo, c);
  expect_golden(p, "tiny-qwen35/golden/image_native.safetensors", 18, 28);
  EXPECT_EQ(p.num_tokens, 126);
  const RgbImage resized = resize_for_processor(photo, c);
  EXPECT_EQ(resized.width, 448);
  EXPECT_EQ(resized.height, 288);
  const test::Golden golden("tiny-qwen35/golden/image_native.safetensors");  // owns the mapping
  const TensorView& u8 = golden.view("resized_image_u8");
  ASSERT_EQ(resized.pixels.size(), u8.nbytes);
  EXPECT_EQ(std::memcmp(resized.pixels.data(), u8.data, u8.nbytes), 0);
}

TEST(ImageProcessor, Fixed512Golden) {
  const ImageProcessorConfig c = tiny_config();
  const ProcessedImage p = preprocess_image(chelsea(), c, 512);
  expect_golden(p, "tiny-qwen35/golden/image_fixed512.safetensors", 32, 32);
  EXPECT_EQ(p.num_tokens, 256);
  const RgbImage resized = resize_for_processor(chelsea(), c, 512);
  const test::Golden golden("tiny-qwen35/golden/image_fixed512.safetensors");  // owns the mapping
  const TensorView& u8 = golden.view("resized_image_u8");
  ASSERT_EQ(resized.pixels.size(), u8.nbytes);
  EXPECT_EQ(std::memcmp(resized.pixels.data(), u8.data, u8.nbytes), 0);
}

TEST(ImageProcessor, FixedSquareSizes) {
  const ImageProcessorConfig c = tiny_config();
  EXPECT_THROW(preprocess_image(chelsea(), c, 500), Error);
  EXPECT_THROW(preprocess_image(chelsea(), c, -32), Error);
  // 224^2 is below min_pixels, so the processor's smart_resize then scales up to 256x256.
  const ProcessedImage p = preprocess_image(chelsea(), c, 224);
  EXPECT_EQ(p.grid.h, 16);
  EXPECT_EQ(p.grid.w, 16);
  EXPECT_EQ(p.num_tokens, 64);
}

TEST(ImageProcessor, PatchOrderAndNormalisation) {
  // A 64x96 image whose pixels encode their own coordinates; check every value of
  // pixel_values against the spec's index formula.
  ImageProcessorConfig c;
  RgbImage img(96, 64);
  for (int y = 0; y < 64; ++y)
    for (int x = 0; x < 96; ++x) {
      uint8_t* p = img.row(y) + size_t(x) * 3;
      p[0] = uint8_t(y * 3 + x), p[1] = uint8_t(x * 2), p[2] = uint8_t(y);
    }
  const ProcessedImage out = patchify(img, c);
  ASSERT_EQ(out.grid.h, 4);
  ASSERT_EQ(out.grid.w, 6);
  ASSERT_EQ(out.num_patches, 24);
  ASSERT_EQ(out.patch_dim, 1536);
  EXPECT_EQ(out.num_tokens, 6);
  for (int64_t n = 0; n < out.num_patches; ++n) {
    // Rows: 2x2 merge blocks in raster order (3 blocks per block row), then the 4 patches.
    const int64_t block = n / 4, in_block = n % 4;
    const int64_t r = (block / 3) * 2 + in_block / 2, q = (block % 3) * 2 + in_block % 2;
    for (int ch = 0; ch < 3; ++ch)
      for (int f = 0; f < 2; ++f)
        for (int y = 0; y < 16; ++y)
          for (int x = 0; x < 16; ++x) {
            const uint8_t v = img.at(int(q * 16 + x), int(r * 16 + y))[ch];
            const float want = (float(double(v) * (1.0 / 255.0)) - 0.5f) / 0.5f;
            ASSERT_EQ(out.pixel_values[size_t(n * 1536 + ch * 512 + f * 256 + y * 16 + x)], want)
                << "patch " << n << " c " << ch << " f " << f << " y " << y << " x " << x;
          }
  }
  EXPECT_THROW(patchify(RgbImage(50, 64), c), Error);
}

TEST(ImageProcessor, PerChannelMeanStdAndSwitches) {
  ImageProcessorConfig c;
  c.image_mean = {0.48145466, 0.4578275, 0.40821073};
  c.image_std = {0.26862954, 0.26130258, 0.27577711};
  RgbImage img(32, 32);
  for (size_t i = 0; i < img.pixels.size(); ++i) img.pixels[i] = uint8_t(i % 251);
  ProcessedImage p = patchify(img, c);
  const uint8_t v = img.at(5, 7)[1];
  EXPECT_EQ(p.pixel_values[size_t(1 * 512 + 7 * 16 + 5)], (float(double(v) * (1.0 / 255.0)) - 0.4578275f) / 0.26130258f);
  c.do_normalize = false;
  p = patchify(img, c);
  EXPECT_EQ(p.pixel_values[size_t(1 * 512 + 7 * 16 + 5)], float(double(v) * (1.0 / 255.0)));
  c.do_rescale = false;
  p = patchify(img, c);
  EXPECT_EQ(p.pixel_values[size_t(1 * 512 + 7 * 16 + 5)], float(v));
}

TEST(ImageProcessor, FourKPhotoIsFast) {
  const ImageProcessorConfig c = tiny_config();
  RgbImage photo(3840, 2160);
  for (size_t i = 0; i < photo.pixels.size(); ++i) photo.pixels[i] = uint8_t((i * 2654435761u) >> 24);
  const auto t0 = std::chrono::steady_clock::now();
  const ProcessedImage p = preprocess_image(photo, c);
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("[preprocess 3840x2160] grid %lldx%lld, %lld tokens, %.3f s\n", (long long)p.grid.h, (long long)p.grid.w,
              (long long)p.num_tokens, s);
  EXPECT_EQ(p.grid.h, 136);
  EXPECT_EQ(p.grid.w, 240);
  EXPECT_EQ(p.num_tokens, 8160);
  EXPECT_LT(s, 3.0);  // generous: shared 2-core CI machines
}

}  // namespace
}  // namespace qwen35
