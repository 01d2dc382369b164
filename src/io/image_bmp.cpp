// BMP, our own reader (no Debian library decodes BMP on its own). Every header field is checked
// against the file before it is used; anything outside the supported set is refused by name.
//
// Supported: info headers of 12 (OS/2 1.x core), 40, 52, 56, 64 (OS/2 2.x, uncompressed only),
// 108 (V4) and 124 (V5) bytes; 1, 4 and 8-bit palettes; 16, 24 and 32-bit pixels, uncompressed
// or with BI_BITFIELDS / BI_ALPHABITFIELDS masks; bottom-up and top-down rows. RLE, JPEG and
// PNG payloads are refused. As in Pillow, alpha exists only through a bitfield alpha mask:
// the fourth byte of an uncompressed 32-bit pixel is padding. A mask of k bits widens to
// 8 bits as v * 255 / (2^k - 1), Pillow's rule for 5 and 6-bit channels.
#include <bit>
#include <cstring>

#include "core/error.h"
#include "io/image_codec.h"

namespace qwen35::image_codec {
namespace {

uint32_t u16(const uint8_t* p) { return uint32_t(p[0]) | uint32_t(p[1]) << 8; }
uint32_t u32(const uint8_t* p) {
  return uint32_t(p[0]) | uint32_t(p[1]) << 8 | uint32_t(p[2]) << 16 | uint32_t(p[3]) << 24;
}
int32_t i32(const uint8_t* p) { return int32_t(u32(p)); }

enum : uint32_t { kRgb = 0, kRle8 = 1, kRle4 = 2, kBitfields = 3, kJpeg = 4, kPng = 5, kAlphaBitfields = 6 };

const char* compression_name(uint32_t c) {
  switch (c) {
    case kRle8: return "RLE8";
    case kRle4: return "RLE4";
    case kJpeg: return "embedded JPEG";
    case kPng: return "embedded PNG";
  }
  return "an unknown compression";
}

// One channel of a bitfield pixel.
struct Channel {
  uint32_t mask = 0;
  int shift = 0;
  uint32_t max = 0;  // 2^bits - 1

  static Channel of(uint32_t mask) {
    Channel c;
    c.mask = mask;
    if (mask) {
      c.shift = std::countr_zero(mask);
      const int bits = std::popcount(mask);
      c.max = bits >= 32 ? 0xFFFFFFFFu : (1u << bits) - 1;
    }
    return c;
  }
  uint8_t get(uint32_t pixel) const {
    const uint32_t v = (pixel & mask) >> shift;
    return max == 255 ? uint8_t(v) : uint8_t(uint64_t(v) * 255 / max);
  }
};

void check_mask(uint32_t mask, int bpp, const char* name, bool required) {
  if (!mask) {
    if (required) fail("BMP ", name, " bitfield mask is zero");
    return;
  }
  const uint32_t shifted = mask >> std::countr_zero(mask);
  if ((shifted & (shifted + 1)) != 0) fail("BMP ", name, " bitfield mask 0x", std::hex, mask, " is not contiguous");
  if (bpp < 32 && (mask >> bpp) != 0) fail("BMP ", name, " bitfield mask 0x", std::hex, mask, " exceeds ", std::dec, bpp, " bits");
}

}  // namespace

DecodedImage decode_bmp(std::span<const uint8_t> bytes, const ImageDecodeOptions& options) {
  const uint8_t* d = bytes.data();
  const uint64_t n = bytes.size();
  if (n < 18) fail("truncated BMP: ", n, " bytes cannot hold the file header");
  const uint64_t data_offset = u32(d + 10);
  const uint32_t header_size = u32(d + 14);
  switch (header_size) {
    case 12: case 40: case 52: case 56: case 64: case 108: case 124: break;
    default: fail("BMP info header of ", header_size, " bytes is not a known version (12, 40, 52, 56, 64, 108, 124)");
  }
  if (14 + uint64_t(header_size) > n) fail("truncated BMP: the ", header_size, "-byte info header does not fit in ", n, " bytes");
  const uint8_t* h = d + 14;

  int64_t width, height;
  uint32_t planes, bpp, compression = kRgb, colors_used = 0;
  if (header_size == 12) {  // sizes are unsigned 16-bit; rows always bottom-up
    width = u16(h + 4);
    height = u16(h + 6);
    planes = u16(h + 8);
    bpp = u16(h + 10);
  } else {
    width = i32(h + 4);
    height = i32(h + 8);
    planes = u16(h + 12);
    bpp = u16(h + 14);
    compression = u32(h + 16);
    colors_used = u32(h + 32);
  }
  const bool top_down = height < 0;
  if (top_down) height = -height;  // int64: no overflow even for INT32_MIN
  if (planes != 1) fail("BMP declares ", planes, " colour planes (must be 1)");
  if (bpp != 1 && bpp != 4 && bpp != 8 && bpp != 16 && bpp != 24 && bpp != 32)
    fail("BMP with ", bpp, " bits per pixel is not supported (1, 4, 8, 16, 24, 32)");
  const bool bitfields = compression == kBitfields || compression == kAlphaBitfields;
  if (compression != kRgb && !bitfields) fail("BMP with ", compression_name(compression), " is not supported");
  if (bitfields && (bpp < 16 || header_size == 64))
    fail("BMP bitfields need 16, 24 or 32 bits per pixel in a Windows header (got ", bpp, " bits, header ", header_size, ")");
  check_image_size(width, height, options, "BMP");

  // Masks: inside V2+ headers, or right after a 40-byte header.
  uint64_t after_header = 14 + uint64_t(header_size);
  uint32_t masks[4] = {0, 0, 0, 0};
  if (bitfields) {
    const int count = compression == kAlphaBitfields || header_size >= 56 ? 4 : 3;
    const uint8_t* m = h + 40;
    if (header_size != 40 && 40 + 4 * uint64_t(count) > header_size)
      fail("BMP header of ", header_size, " bytes is too short for its ", count, " bitfield masks");
    if (header_size == 40) {
      if (after_header + 4 * uint64_t(count) > n) fail("truncated BMP: bitfield masks missing");
      m = d + after_header;
      after_header += 4 * uint64_t(count);
    }
    for (int i = 0; i < count; ++i) masks[i] = u32(m + 4 * i);
    check_mask(masks[0], int(bpp), "red", true);
    check_mask(masks[1], int(bpp), "green", true);
    check_mask(masks[2], int(bpp), "blue", true);
    check_mask(masks[3], int(bpp), "alpha", false);
    if ((masks[0] & masks[1]) || (masks[0] & masks[2]) || (masks[1] & masks[2]) ||
        ((masks[0] | masks[1] | masks[2]) & masks[3]))
      fail("BMP bitfield masks overlap");
  } else if (bpp == 16) {
    masks[0] = 0x7C00, masks[1] = 0x03E0, masks[2] = 0x001F;  // 5-5-5
  } else if (bpp >= 24) {
    masks[0] = 0xFF0000, masks[1] = 0x00FF00, masks[2] = 0x0000FF;
  }
  if (data_offset < after_header || data_offset > n)
    fail("BMP pixel data offset ", data_offset, " lies outside [", after_header, ", ", n, "]");

  // Palette: after the header (and masks), before the pixel data.
  uint8_t palette[256][3] = {};
  if (bpp <= 8) {
    const uint64_t entry = header_size == 12 ? 3 : 4;
    const uint64_t max_entries = uint64_t(1) << bpp;
    if (colors_used > max_entries) fail("BMP declares ", colors_used, " palette colours for ", bpp, "-bit pixels");
    const uint64_t room = (data_offset - after_header) / entry;
    uint64_t count = colors_used ? colors_used : std::min(max_entries, room);
    if (count > room) fail("BMP palette of ", count, " colours overlaps the pixel data");
    if (count == 0) fail("BMP with ", bpp, "-bit pixels has no palette");
    for (uint64_t i = 0; i < count; ++i) {
      const uint8_t* p = d + after_header + i * entry;
      palette[i][0] = p[2], palette[i][1] = p[1], palette[i][2] = p[0];  // stored B, G, R
    }
  }

  const uint64_t stride = (uint64_t(width) * bpp + 31) / 32 * 4;
  const uint64_t last_row = (uint64_t(width) * bpp + 7) / 8;  // some writers drop the final padding
  if (data_offset + stride * uint64_t(height - 1) + last_row > n)
    fail("truncated BMP: ", height, " rows of ", stride, " bytes at offset ", data_offset, " need more than the file's ", n,
         " bytes");

  const bool alpha = bitfields && masks[3] != 0;
  DecodedImage out;
  out.width = int(width);
  out.height = int(height);
  out.channels = alpha ? 4 : 3;
  const size_t ch = size_t(out.channels);
  out.pixels.resize(size_t(width) * size_t(height) * ch);
  const Channel r = Channel::of(masks[0]), g = Channel::of(masks[1]), b = Channel::of(masks[2]), a = Channel::of(masks[3]);

  for (int64_t y = 0; y < height; ++y) {
    const uint8_t* src = d + data_offset + stride * uint64_t(top_down ? y : height - 1 - y);
    uint8_t* dst = out.pixels.data() + size_t(y) * size_t(width) * ch;
    if (bpp <= 8) {
      const uint32_t per_byte = 8 / bpp, low_mask = (1u << bpp) - 1;
      for (int64_t x = 0; x < width; ++x, dst += 3) {
        const uint32_t byte = src[x / per_byte];
        const uint32_t shift = 8 - bpp * (uint32_t(x % per_byte) + 1);  // leftmost pixel in the high bits
        std::memcpy(dst, palette[(byte >> shift) & low_mask], 3);      // unused entries are black
      }
    } else if (bpp == 24 && !bitfields) {
      for (int64_t x = 0; x < width; ++x, src += 3, dst += 3) dst[0] = src[2], dst[1] = src[1], dst[2] = src[0];
    } else {
      const uint32_t step = bpp / 8;
      for (int64_t x = 0; x < width; ++x, src += step, dst += ch) {
        const uint32_t pixel = step == 2 ? u16(src) : step == 3 ? u16(src) | uint32_t(src[2]) << 16 : u32(src);
        dst[0] = r.get(pixel), dst[1] = g.get(pixel), dst[2] = b.get(pixel);
        if (alpha) dst[3] = a.get(pixel);
      }
    }
  }
  return out;
}

}  // namespace qwen35::image_codec
