// Image files -> 8-bit RGB pixels, the input of the image processor (src/model/image_processor.h).
//
// Formats: JPEG (baseline, progressive, grayscale, CMYK/YCCK), PNG (every colour type and depth),
// WebP (still; first frame of an animation), GIF (first frame) and BMP (uncompressed and bitfields).
// The format is sniffed from the leading bytes, never from a file name.
//
// Conversion to RGB follows Pillow, which the reference processor runs on:
//   * grayscale is replicated to R = G = B; CMYK uses Pillow's inverted-Adobe convention and
//     Pillow's integer cmyk -> rgb formula;
//   * 16-bit samples keep their high byte (what Pillow does for 16-bit RGB/RGBA/LA PNGs; Pillow
//     9.x opens 16-bit *grayscale* as 32-bit "I" and clips it to 255 on conversion, which we
//     do not copy);
//   * alpha (RGBA, gray+alpha, palette or colour-key tRNS, GIF transparency, BMP alpha masks,
//     WebP alpha) is dropped by default (AlphaMode::kDrop): the reference Qwen2-VL processor
//     calls transformers' image_transforms.convert_to_rgb, which is PIL's convert("RGB") and
//     keeps whatever colour hides under transparent pixels (spec 7.1's "composited onto white"
//     describes idefics/mllama's helper, not this processor). AlphaMode::kCompositeOnWhite
//     composites onto opaque white with Pillow's integer alpha_composite, for callers that
//     prefer that look.
//   * the EXIF orientation tag (JPEG APP1, PNG eXIf, WebP EXIF) is applied like
//     PIL.ImageOps.exif_transpose (all 8 orientations).
//
// Hostile input: every decoder checks the declared width x height against
// ImageDecodeOptions::max_pixels before it allocates pixel memory, library errors come back as
// qwen35::Error (libjpeg/libpng errors longjmp out of the C frames first, then we throw), and
// truncated data is an error rather than a half-grey picture.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace qwen35 {

// 8-bit RGB, rows top to bottom, pixels interleaved R, G, B: [height, width, 3].
struct RgbImage {
  int width = 0;
  int height = 0;
  std::vector<uint8_t> pixels;

  RgbImage() = default;
  RgbImage(int w, int h) : width(w), height(h), pixels(size_t(w) * size_t(h) * 3) {}
  size_t row_bytes() const { return size_t(width) * 3; }
  uint8_t* row(int y) { return pixels.data() + size_t(y) * row_bytes(); }
  const uint8_t* row(int y) const { return pixels.data() + size_t(y) * row_bytes(); }
  const uint8_t* at(int x, int y) const { return row(y) + size_t(x) * 3; }
};

enum class ImageFormat { kUnknown, kJpeg, kPng, kWebp, kGif, kBmp };

std::string_view image_format_name(ImageFormat format);
// Looks only at the magic bytes.
ImageFormat sniff_image_format(std::span<const uint8_t> bytes);

enum class AlphaMode {
  kCompositeOnWhite,  // Pillow alpha_composite over (255, 255, 255, 255)
  kDrop,              // PIL convert("RGB"): keep the stored colour, ignore alpha
};

struct ImageDecodeOptions {
  // Largest accepted width * height, checked against the header before any pixel buffer exists.
  // 64 Mi pixels by default (Pillow's own bomb limit is about 89 M).
  int64_t max_pixels = int64_t(64) << 20;
  // Largest accepted file for load_image_file.
  int64_t max_file_bytes = int64_t(256) << 20;
  // Progressive JPEGs can carry thousands of tiny scans that each rescan the whole image.
  int max_jpeg_scans = 1000;
  bool apply_exif_orientation = true;
  AlphaMode alpha = AlphaMode::kDrop;  // as the reference processor (see above)
};

// Decodes an image held in memory. Throws qwen35::Error naming the format and the problem.
RgbImage decode_image(std::span<const uint8_t> bytes, const ImageDecodeOptions& options = {});
// Whether `bytes` is a GIF or WebP of more than one frame (a short video, not only its first
// frame). Reads the headers and skips the compressed data; false for anything it cannot parse.
bool is_animated_image(std::span<const uint8_t> bytes);
// Reads a file (bounded by max_file_bytes) and decodes it; the extension is ignored.
RgbImage load_image_file(const std::string& path, const ImageDecodeOptions& options = {});

// EXIF orientation (1..8) found in a TIFF-structured EXIF block ("II*\0"/"MM\0*" header,
// optionally preceded by "Exif\0\0"); 1 when absent or malformed. Exposed for tests.
int exif_orientation(std::span<const uint8_t> exif);
// Applies an EXIF orientation like PIL.ImageOps.exif_transpose (6 = rotate 90 degrees clockwise).
RgbImage apply_orientation(const RgbImage& image, int orientation);

}  // namespace qwen35
