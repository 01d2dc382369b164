// Builds small test images in memory with the same libraries the decoders use (libjpeg,
// libpng, libwebp, giflib) or by hand (BMP, WebP containers), so every decoder test knows the
// exact pixels it put in.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <jpeglib.h>
#include <png.h>

#include "io/image.h"

namespace qwen35::test {

using Bytes = std::vector<uint8_t>;

struct JpegSpec {
  int width = 0;
  int height = 0;
  int components = 3;                     // of `pixels`: 1 gray, 3 RGB, 4 CMYK (as stored)
  J_COLOR_SPACE in_space = JCS_RGB;       // JCS_GRAYSCALE, JCS_RGB or JCS_CMYK
  J_COLOR_SPACE file_space = JCS_UNKNOWN; // JCS_UNKNOWN: libjpeg's default for in_space; or JCS_YCCK
  int quality = 100;
  bool progressive = false;
  bool full_chroma = true;                // 4:4:4 so flat colour blocks decode (almost) exactly
  Bytes pixels;                           // [height, width, components]
  Bytes app1;                             // written as an APP1 marker when not empty
};
Bytes encode_jpeg(const JpegSpec& spec);

struct PngSpec {
  int width = 0;
  int height = 0;
  int color_type = PNG_COLOR_TYPE_RGB;
  int bit_depth = 8;
  Bytes rows;                             // packed PNG rows, big-endian 16-bit samples
  std::vector<png_color> palette;
  Bytes trns_alpha;                       // palette tRNS: one alpha per entry
  bool trns_color = false;                // gray/RGB tRNS: this colour is transparent
  png_color_16 trns_value{};
  bool interlace = false;
  Bytes exif;                             // eXIf chunk (TIFF header onward)
  int compression_level = 6;
};
Bytes encode_png(const PngSpec& spec);
// A valid 1-bit grayscale PNG of width x height zeros: a few tens of KB for 20000 x 20000.
Bytes encode_png_zeros(int width, int height);

Bytes encode_webp_lossy_rgb(const Bytes& rgb, int width, int height, float quality);
Bytes encode_webp_lossless_rgba(const Bytes& rgba, int width, int height);
// Wraps a simple-format WebP file (RIFF/WEBP + one VP8/VP8L chunk) into an extended file with
// an EXIF chunk.
Bytes webp_with_exif(const Bytes& simple_webp, int width, int height, bool alpha, const Bytes& exif);
// An animated WebP built from simple lossless frames, each placed at (x, y) on the canvas.
struct WebpFrame {
  Bytes simple_webp;
  int x = 0, y = 0, width = 0, height = 0;  // x and y must be even
  int duration_ms = 100;
};
Bytes animated_webp(int canvas_width, int canvas_height, const std::vector<WebpFrame>& frames);

struct GifSpec {
  int screen_width = 0;
  int screen_height = 0;
  int left = 0, top = 0, width = 0, height = 0;  // the frame
  std::vector<uint8_t> palette;                  // RGB triples; padded to a power of two
  Bytes indices;                                 // [height, width], top to bottom
  int transparent = -1;
  bool interlace = false;
  bool local_palette = false;
  int frames = 1;                                // extra frames: later_indices, else index 0
  std::vector<Bytes> later_indices;              // frame f >= 1 uses later_indices[f - 1] when there
  std::vector<int> delays_cs;                    // per frame, in 1/100 s; written with any transparency
};
Bytes encode_gif(const GifSpec& spec);

// A TIFF/EXIF block holding only the orientation tag, optionally behind "Exif\0\0".
Bytes exif_block(int orientation, bool big_endian = false, bool with_exif_prefix = false);
Bytes jpeg_app1_exif(int orientation);

std::string hex_prefix(const Bytes& b, size_t n = 8);

// PNG chunks carry a CRC-32 that libpng verifies; tests that patch a header recompute it.
uint32_t crc32_of(const uint8_t* data, size_t n);

// |decoded - expected| <= tolerance on each channel of pixel (x, y).
::testing::AssertionResult pixel_near(const RgbImage& image, int x, int y, std::array<int, 3> expected, int tolerance = 0);

// Pillow's alpha_composite of one channel over white, computed in floating point as an
// independent reference for the decoder's integer version.
int over_white_reference(int c, int a);

// Decoder options that composite alpha onto white (the default drops alpha like the reference).
inline ImageDecodeOptions composite_alpha() {
  ImageDecodeOptions o;
  o.alpha = AlphaMode::kCompositeOnWhite;
  return o;
}

}  // namespace qwen35::test
