// Internal to src/io: the per-format decoders behind decode_image (image.h).
// Each decoder validates its header, checks the declared size with check_image_size before it
// allocates pixels, and returns the pixels in the layout its library produces most directly;
// image.cpp then converts them to RGB and applies the EXIF orientation.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "io/image.h"

namespace qwen35::image_codec {

// Pixels before conversion to RGB: 8 bits per sample, rows top to bottom, samples interleaved.
struct DecodedImage {
  int width = 0;
  int height = 0;
  int channels = 0;  // 1 gray, 2 gray + alpha, 3 RGB, 4 RGBA (straight, not premultiplied)
  std::vector<uint8_t> pixels;
  std::vector<uint8_t> exif;  // raw EXIF block when the file has one (for the orientation tag)
};

// Throws qwen35::Error when width x height is zero, negative or above options.max_pixels.
// Call it with the header's numbers, before allocating anything proportional to them.
void check_image_size(int64_t width, int64_t height, const ImageDecodeOptions& options, std::string_view format);

DecodedImage decode_jpeg(std::span<const uint8_t> bytes, const ImageDecodeOptions& options);
DecodedImage decode_png(std::span<const uint8_t> bytes, const ImageDecodeOptions& options);
DecodedImage decode_webp(std::span<const uint8_t> bytes, const ImageDecodeOptions& options);
DecodedImage decode_gif(std::span<const uint8_t> bytes, const ImageDecodeOptions& options);
DecodedImage decode_bmp(std::span<const uint8_t> bytes, const ImageDecodeOptions& options);

// Frames in the file, counted from the headers (the compressed data skipped), at most `most`; 0
// when the file does not parse that far.
int64_t gif_frame_count(std::span<const uint8_t> bytes, int64_t most);
int64_t webp_frame_count(std::span<const uint8_t> bytes);

}  // namespace qwen35::image_codec
