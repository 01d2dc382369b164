#include "model/image_processor.h"

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "io/gguf.h"
#include "io/image_resize.h"
#include "model/processor_json.h"

namespace qwen35 {
namespace {

using nlohmann::json;

// Python's round(): halves go to the even neighbour. nearbyint does that in the default
// rounding mode, which nothing in this program changes.
double round_half_even(double x) { return std::nearbyint(x); }

}  // namespace

ImageProcessorConfig ImageProcessorConfig::parse(const std::string& json_text, const std::string& origin) {
  const json j = processor_json::parse_object(json_text, origin);
  ImageProcessorConfig c;
  // Current files: size = {shortest_edge, longest_edge} in pixels; older ones min_pixels / max_pixels.
  processor_json::read_patch_config(j, c, /*legacy_pixel_keys=*/true, origin);
  processor_json::check_patch_config(c, origin);
  return c;
}

ImageProcessorConfig ImageProcessorConfig::load(const std::string& model_dir) {
  const std::filesystem::path path = std::filesystem::path(model_dir) / "preprocessor_config.json";
  const std::optional<std::string> text = processor_json::read_optional(path);
  return text ? parse(*text, path.string()) : ImageProcessorConfig{};
}

ImageProcessorConfig ImageProcessorConfig::from_mmproj(const GgufFile& f) {
  ImageProcessorConfig c;
  c.patch_size = int(f.get_int("clip.vision.patch_size"));
  c.merge_size = int(f.get_int_opt("clip.vision.spatial_merge_size").value_or(2));
  for (const char* key : {"clip.vision.image_mean", "clip.vision.image_std"}) {
    const GgufValue* v = f.find(key);
    if (!v) continue;
    if (!v->is_array() || v->count != 3 || !(v->is_float() || v->is_integer()))
      fail(f.path(), ": ", key, " must be 3 numbers");
    auto& out = std::string_view(key).ends_with("mean") ? c.image_mean : c.image_std;
    for (int i = 0; i < 3; ++i) out[size_t(i)] = v->float_at(uint64_t(i));
  }
  for (int i = 0; i < 3; ++i)
    if (!std::isfinite(c.image_mean[size_t(i)]) || !std::isfinite(c.image_std[size_t(i)]) || c.image_std[size_t(i)] == 0)
      fail(f.path(), ": clip.vision.image_mean must be finite and image_std finite and non-zero");
  if (c.patch_size <= 0 || c.patch_size > 1024 || c.merge_size <= 0 || c.merge_size > 16)
    fail(f.path(), ": clip.vision.patch_size / spatial_merge_size out of range");
  return c;
}

ResizedSize smart_resize(int64_t height, int64_t width, int64_t factor, int64_t min_pixels, int64_t max_pixels) {
  if (factor <= 0) fail("smart_resize: factor must be positive, got ", factor);
  if (height < 10 || width < 10)
    fail("image of ", height, "x", width, " (height x width) is too small: both sides must be at least 10 pixels");
  // Python: max(h, w) / min(h, w) > 200 in floating point.
  if (double(std::max(height, width)) / double(std::min(height, width)) > 200)
    fail("image of ", height, "x", width, " has an aspect ratio above 200");
  const double f = double(factor);
  int64_t h = int64_t(round_half_even(double(height) / f)) * factor;
  int64_t w = int64_t(round_half_even(double(width) / f)) * factor;
  if (double(h) * double(w) > double(max_pixels)) {
    const double beta = std::sqrt(double(height * width) / double(max_pixels));
    h = int64_t(std::floor(double(height) / beta / f)) * factor;
    w = int64_t(std::floor(double(width) / beta / f)) * factor;
  } else if (double(h) * double(w) < double(min_pixels)) {
    const double beta = std::sqrt(double(min_pixels) / double(height * width));
    h = int64_t(std::ceil(double(height) * beta / f)) * factor;
    w = int64_t(std::ceil(double(width) * beta / f)) * factor;
  }
  if (h <= 0 || w <= 0)
    fail("smart_resize of ", height, "x", width, " gives an empty ", h, "x", w, " (min_pixels ", min_pixels,
         ", max_pixels ", max_pixels, ")");
  return {h, w};
}

namespace {

// The processor's target size for an image, or its own size when do_resize is off.
ResizedSize target_size(const RgbImage& image, const ImageProcessorConfig& config) {
  if (!config.do_resize) return {image.height, image.width};
  return smart_resize(image.height, image.width, config.factor(), config.min_pixels, config.max_pixels);
}

RgbImage fixed_square_resize(const RgbImage& image, const ImageProcessorConfig& config, int side) {
  if (side <= 0 || side % config.factor() != 0)
    fail("fixed image size ", side, " must be a positive multiple of ", config.factor());
  return resize_bicubic(image, side, side);
}

}  // namespace

RgbImage resize_for_processor(const RgbImage& image, const ImageProcessorConfig& config, int fixed_square) {
  if (fixed_square != 0) return resize_for_processor(fixed_square_resize(image, config, fixed_square), config, 0);
  const ResizedSize size = target_size(image, config);
  return resize_bicubic(image, int(size.width), int(size.height));
}

ProcessedImage patchify(const RgbImage& image, const ImageProcessorConfig& config) {
  const int P = config.patch_size, T = config.temporal_patch_size, m = config.merge_size;
  const int64_t F = config.factor();
  if (image.width <= 0 || image.height <= 0 || image.width % F != 0 || image.height % F != 0)
    fail("patchify needs sides that are multiples of ", F, ", got ", image.width, "x", image.height);
  if (image.pixels.size() != size_t(image.width) * size_t(image.height) * 3)
    fail("RgbImage of ", image.width, "x", image.height, " holds ", image.pixels.size(), " bytes");

  // Every uint8 value maps to one float per channel: float(double(v) * rescale) as numpy's
  // float64 rescale then float32 cast, then (x - mean) / std in float32.
  float lut[3][256];
  for (int c = 0; c < 3; ++c) {
    const float mean = float(config.image_mean[size_t(c)]), std = float(config.image_std[size_t(c)]);
    for (int v = 0; v < 256; ++v) {
      float x = config.do_rescale ? float(double(v) * config.rescale_factor) : float(v);
      if (config.do_normalize) x = (x - mean) / std;
      lut[c][v] = x;
    }
  }

  ProcessedImage out;
  out.grid = {1, image.height / P, image.width / P};
  out.num_patches = out.grid.h * out.grid.w;  // one time block: the frame repeated T times
  out.patch_dim = config.patch_dim();
  out.num_tokens = image_token_count(out.grid, m);
  out.pixel_values.resize(size_t(out.num_patches) * size_t(out.patch_dim));

  const size_t plane = size_t(P) * size_t(P);
  float* row = out.pixel_values.data();
  for (int64_t bh = 0; bh < out.grid.h / m; ++bh) {
    for (int64_t bw = 0; bw < out.grid.w / m; ++bw) {
      for (int mh = 0; mh < m; ++mh) {
        for (int mw = 0; mw < m; ++mw, row += out.patch_dim) {
          const int64_t py = (bh * m + mh) * P, px = (bw * m + mw) * P;
          for (int c = 0; c < 3; ++c) {
            float* frame0 = row + size_t(c) * size_t(T) * plane;
            for (int y = 0; y < P; ++y) {
              const uint8_t* src = image.at(int(px), int(py + y)) + c;
              float* dst = frame0 + size_t(y) * size_t(P);
              for (int x = 0; x < P; ++x) dst[x] = lut[c][src[3 * x]];
            }
            // Time padding repeats the single frame.
            for (int f = 1; f < T; ++f) std::memcpy(frame0 + size_t(f) * plane, frame0, plane * sizeof(float));
          }
        }
      }
    }
  }
  return out;
}

ProcessedImage preprocess_image(const RgbImage& image, const ImageProcessorConfig& config, int fixed_square) {
  if (fixed_square != 0) return preprocess_image(fixed_square_resize(image, config, fixed_square), config, 0);
  const ResizedSize size = target_size(image, config);
  if (size.height == image.height && size.width == image.width) return patchify(image, config);  // no copy
  return patchify(resize_bicubic(image, int(size.width), int(size.height)), config);
}

}  // namespace qwen35
