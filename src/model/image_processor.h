// The Qwen2-VL image processor as Qwen3.5 uses it (spec section 7): RGB uint8 image ->
// smart_resize -> Pillow bicubic resize -> rescale and normalise -> time padding -> patches.
// Reproduces the reference PIL/numpy processor (transformers' Qwen2VLImageProcessor) bit for
// bit: rescale in double then float, normalise in float, the exact patch order.
//
// Layout of pixel_values: one row per patch, rows enumerate (time block, block row, block
// column, row in block, column in block), i.e. merge blocks in raster order and the
// merge_size^2 patches of a block in raster order. A row holds C * T * P * P values in
// (channel, frame, y, x) order: index ((c * T + f) * P + y) * P + x (c * 512 + f * 256 +
// y * 16 + x for the released sizes). A still image is repeated on the time axis.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "io/image.h"
#include "model/mrope_positions.h"
#include "model/vision_patch_config.h"

namespace qwen35 {

class GgufFile;

struct ImageProcessorConfig : VisionPatchConfig {
  // One image's pixel budget: the published Qwen3.5 preprocessor_config.json's.
  ImageProcessorConfig() {
    min_pixels = 65536;
    max_pixels = 16777216;
  }

  // Parses preprocessor_config.json text; absent keys keep the defaults above (spec 1.8).
  // Throws qwen35::Error naming origin for bad values or an unsupported resample filter.
  static ImageProcessorConfig parse(const std::string& json_text, const std::string& origin);
  // Reads <model_dir>/preprocessor_config.json, or returns the defaults when there is none.
  static ImageProcessorConfig load(const std::string& model_dir);
  // From a clip mmproj: patch and merge sizes, image_mean / image_std; the pixel limits keep the
  // Hugging Face defaults (the file has none, and llama.cpp's own limits differ, gguf.md D12).
  static ImageProcessorConfig from_mmproj(const GgufFile& mmproj);
};

struct ResizedSize {
  int64_t height = 0;
  int64_t width = 0;
};

// Qwen2-VL smart_resize: both sides multiples of factor, area within [min_pixels, max_pixels],
// aspect ratio kept as well as possible; Python's round-half-to-even. Throws qwen35::Error for a
// side below 10 pixels or an aspect ratio above 200 (as the reference does), and for a result
// with a zero side (the reference would fail later).
ResizedSize smart_resize(int64_t height, int64_t width, int64_t factor, int64_t min_pixels, int64_t max_pixels);

struct ProcessedImage {
  std::vector<float> pixel_values;  // [num_patches, patch_dim]
  int64_t num_patches = 0;
  int64_t patch_dim = 0;
  ImageGrid grid;                   // (t, h, w) in patches: image_grid_thw
  int64_t num_tokens = 0;           // t * h * w / merge^2 <|image_pad|> tokens
};

// The uint8 image the processor patchifies. fixed_square > 0 first resizes the picture to
// fixed_square x fixed_square with Pillow bicubic (a caller-chosen fixed size; it must be a
// multiple of factor()), then applies the processor's own smart_resize as usual.
RgbImage resize_for_processor(const RgbImage& image, const ImageProcessorConfig& config, int fixed_square = 0);

// Rescale, normalise, pad time and flatten an image whose sides are multiples of factor().
ProcessedImage patchify(const RgbImage& resized, const ImageProcessorConfig& config);

// resize_for_processor + patchify.
ProcessedImage preprocess_image(const RgbImage& image, const ImageProcessorConfig& config, int fixed_square = 0);

}  // namespace qwen35
