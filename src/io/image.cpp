// Format sniffing, conversion to RGB, EXIF orientation and file reading; the per-format
// decoders live in image_jpeg.cpp, image_png.cpp, image_webp.cpp, image_gif.cpp, image_bmp.cpp.
#include "io/image.h"

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "core/error.h"
#include "io/image_codec.h"

namespace qwen35 {

namespace image_codec {

void check_image_size(int64_t width, int64_t height, const ImageDecodeOptions& options, std::string_view format) {
  if (width <= 0 || height <= 0)
    fail(format, " image has a zero or negative size (", width, "x", height, ")");
  // Both factors are below 2^32 for every format, so the product cannot overflow int64.
  if (width > (int64_t(1) << 32) || height > (int64_t(1) << 32) || width * height > options.max_pixels)
    fail(format, " image of ", width, "x", height, " = ", width * height, " pixels exceeds the limit of ",
         options.max_pixels, " pixels");
}

}  // namespace image_codec

namespace {

using image_codec::DecodedImage;

bool starts_with(std::span<const uint8_t> bytes, std::string_view magic, size_t at = 0) {
  return bytes.size() >= at + magic.size() && std::memcmp(bytes.data() + at, magic.data(), magic.size()) == 0;
}

// Pillow's alpha_composite of (c, a) over opaque white, per channel: integer arithmetic with
// 7 extra bits and a shift-based division by 255 (libImaging/AlphaComposite.c). Over an opaque
// background the blend coefficients reduce to a * 128 and (255 - a) * 128.
inline uint8_t over_white(uint32_t c, uint32_t a) {
  if (a == 0) return 255;
  uint32_t tmp = c * a * 128 + 255u * (255u - a) * 128 + (0x80u << 7);
  return uint8_t((((tmp >> 8) + tmp) >> 8) >> 7);
}

RgbImage to_rgb(DecodedImage&& in, AlphaMode alpha) {
  RgbImage out;
  out.width = in.width;
  out.height = in.height;
  if (in.channels == 3) {
    out.pixels = std::move(in.pixels);
    return out;
  }
  const size_t n = size_t(in.width) * size_t(in.height);
  out.pixels.resize(n * 3);
  const uint8_t* s = in.pixels.data();
  uint8_t* d = out.pixels.data();
  const bool composite = alpha == AlphaMode::kCompositeOnWhite;
  switch (in.channels) {
    case 1:
      for (size_t i = 0; i < n; ++i) d[3 * i] = d[3 * i + 1] = d[3 * i + 2] = s[i];
      break;
    case 2:
      for (size_t i = 0; i < n; ++i) {
        uint8_t v = composite ? over_white(s[2 * i], s[2 * i + 1]) : s[2 * i];
        d[3 * i] = d[3 * i + 1] = d[3 * i + 2] = v;
      }
      break;
    case 4:
      for (size_t i = 0; i < n; ++i) {
        const uint8_t* p = s + 4 * i;
        for (int c = 0; c < 3; ++c) d[3 * i + c] = composite ? over_white(p[c], p[3]) : p[c];
      }
      break;
    default:
      fail("internal: decoder produced ", in.channels, " channels");
  }
  return out;
}

uint32_t exif_u16(const uint8_t* p, bool little) { return little ? p[0] | p[1] << 8 : p[0] << 8 | p[1]; }
uint32_t exif_u32(const uint8_t* p, bool little) {
  return little ? uint32_t(p[0]) | uint32_t(p[1]) << 8 | uint32_t(p[2]) << 16 | uint32_t(p[3]) << 24
                : uint32_t(p[0]) << 24 | uint32_t(p[1]) << 16 | uint32_t(p[2]) << 8 | uint32_t(p[3]);
}

}  // namespace

std::string_view image_format_name(ImageFormat format) {
  switch (format) {
    case ImageFormat::kJpeg: return "JPEG";
    case ImageFormat::kPng: return "PNG";
    case ImageFormat::kWebp: return "WebP";
    case ImageFormat::kGif: return "GIF";
    case ImageFormat::kBmp: return "BMP";
    case ImageFormat::kUnknown: break;
  }
  return "unknown";
}

ImageFormat sniff_image_format(std::span<const uint8_t> bytes) {
  if (starts_with(bytes, "\xFF\xD8\xFF")) return ImageFormat::kJpeg;
  if (starts_with(bytes, "\x89PNG\r\n\x1A\n")) return ImageFormat::kPng;
  if (starts_with(bytes, "RIFF") && starts_with(bytes, "WEBP", 8)) return ImageFormat::kWebp;
  if (starts_with(bytes, "GIF87a") || starts_with(bytes, "GIF89a")) return ImageFormat::kGif;
  if (starts_with(bytes, "BM")) return ImageFormat::kBmp;
  return ImageFormat::kUnknown;
}

int exif_orientation(std::span<const uint8_t> exif) {
  if (starts_with(exif, std::string_view("Exif\0\0", 6))) exif = exif.subspan(6);
  const uint8_t* d = exif.data();
  const size_t n = exif.size();
  if (n < 8) return 1;
  bool little;
  if (d[0] == 'I' && d[1] == 'I') little = true;
  else if (d[0] == 'M' && d[1] == 'M') little = false;
  else return 1;
  if (exif_u16(d + 2, little) != 42) return 1;
  const uint64_t ifd = exif_u32(d + 4, little);
  if (ifd + 2 > n) return 1;
  const uint32_t entries = exif_u16(d + ifd, little);
  for (uint32_t i = 0; i < entries; ++i) {
    const uint64_t e = ifd + 2 + uint64_t(i) * 12;
    if (e + 12 > n) break;
    if (exif_u16(d + e, little) != 0x0112) continue;
    const uint32_t type = exif_u16(d + e + 2, little);
    const uint32_t count = exif_u32(d + e + 4, little);
    uint32_t value = 0;
    if (type == 3 && count >= 1) value = exif_u16(d + e + 8, little);       // SHORT, the standard
    else if (type == 4 && count >= 1) value = exif_u32(d + e + 8, little);  // LONG, seen in the wild
    return value >= 1 && value <= 8 ? int(value) : 1;
  }
  return 1;
}

RgbImage apply_orientation(const RgbImage& in, int orientation) {
  if (orientation < 2 || orientation > 8) return in;
  const int w = in.width, h = in.height;
  const bool swap = orientation >= 5;  // 5..8 exchange the axes
  RgbImage out(swap ? h : w, swap ? w : h);
  // For every output pixel, the source pixel (sx, sy); PIL names: 2 FLIP_LEFT_RIGHT,
  // 3 ROTATE_180, 4 FLIP_TOP_BOTTOM, 5 TRANSPOSE, 6 ROTATE_270 (90 clockwise), 7 TRANSVERSE,
  // 8 ROTATE_90 (90 counter-clockwise).
  for (int y = 0; y < out.height; ++y) {
    uint8_t* d = out.row(y);
    for (int x = 0; x < out.width; ++x, d += 3) {
      int sx = x, sy = y;
      switch (orientation) {
        case 2: sx = w - 1 - x; break;
        case 3: sx = w - 1 - x; sy = h - 1 - y; break;
        case 4: sy = h - 1 - y; break;
        case 5: sx = y; sy = x; break;
        case 6: sx = y; sy = h - 1 - x; break;
        case 7: sx = w - 1 - y; sy = h - 1 - x; break;
        case 8: sx = w - 1 - y; sy = x; break;
      }
      std::memcpy(d, in.at(sx, sy), 3);
    }
  }
  return out;
}

RgbImage decode_image(std::span<const uint8_t> bytes, const ImageDecodeOptions& options) {
  if (bytes.empty()) fail("cannot decode an empty image (0 bytes)");
  const ImageFormat format = sniff_image_format(bytes);
  DecodedImage decoded;
  switch (format) {
    case ImageFormat::kJpeg: decoded = image_codec::decode_jpeg(bytes, options); break;
    case ImageFormat::kPng: decoded = image_codec::decode_png(bytes, options); break;
    case ImageFormat::kWebp: decoded = image_codec::decode_webp(bytes, options); break;
    case ImageFormat::kGif: decoded = image_codec::decode_gif(bytes, options); break;
    case ImageFormat::kBmp: decoded = image_codec::decode_bmp(bytes, options); break;
    case ImageFormat::kUnknown: {
      std::string hex;
      static const char* digits = "0123456789abcdef";
      for (size_t i = 0; i < std::min<size_t>(bytes.size(), 8); ++i) {
        hex += digits[bytes[i] >> 4];
        hex += digits[bytes[i] & 15];
        hex += ' ';
      }
      fail("unrecognised image format (", bytes.size(), " bytes starting with ", hex,
           "); supported: JPEG, PNG, WebP, GIF, BMP");
    }
  }
  const int orientation = options.apply_exif_orientation ? exif_orientation(decoded.exif) : 1;
  RgbImage rgb = to_rgb(std::move(decoded), options.alpha);
  return orientation == 1 ? rgb : apply_orientation(rgb, orientation);
}

bool is_animated_image(std::span<const uint8_t> bytes) {
  switch (sniff_image_format(bytes)) {
    case ImageFormat::kGif: return image_codec::gif_frame_count(bytes, 2) > 1;
    case ImageFormat::kWebp: return image_codec::webp_frame_count(bytes) > 1;
    default: return false;
  }
}

RgbImage load_image_file(const std::string& path, const ImageDecodeOptions& options) {
  std::error_code ec;
  const auto size = std::filesystem::file_size(path, ec);
  if (ec) fail("cannot read image file ", path, ": ", ec.message());
  if (int64_t(size) > options.max_file_bytes)
    fail("image file ", path, " has ", size, " bytes, above the limit of ", options.max_file_bytes);
  std::ifstream in(path, std::ios::binary);
  if (!in) fail("cannot open image file ", path);
  std::vector<uint8_t> bytes(size);
  in.read(reinterpret_cast<char*>(bytes.data()), std::streamsize(size));
  if (size_t(in.gcount()) != size) fail("short read on image file ", path);
  try {
    return decode_image(bytes, options);
  } catch (const Error& e) {
    fail(path, ": ", e.what());
  }
}

}  // namespace qwen35
