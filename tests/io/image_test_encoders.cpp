#include "io/image_test_encoders.h"

#include <cmath>
#include <csetjmp>
#include <cstdlib>
#include <cstdio>
#include <cstring>
#include <stdexcept>

#include <gif_lib.h>
#include <webp/encode.h>

namespace qwen35::test {
namespace {

void put_u16le(Bytes& b, uint32_t v) {
  b.push_back(uint8_t(v));
  b.push_back(uint8_t(v >> 8));
}
void put_u24le(Bytes& b, uint32_t v) {
  put_u16le(b, v & 0xFFFF);
  b.push_back(uint8_t(v >> 16));
}
void put_u32le(Bytes& b, uint32_t v) {
  put_u16le(b, v & 0xFFFF);
  put_u16le(b, v >> 16);
}
// push_back rather than insert: GCC 12 warns falsely about inserting into an empty vector.
void put_tag(Bytes& b, const char* tag) {
  for (int i = 0; i < 4; ++i) b.push_back(uint8_t(tag[i]));
}
void put_chunk(Bytes& b, const char* tag, const Bytes& payload) {
  put_tag(b, tag);
  put_u32le(b, uint32_t(payload.size()));
  b.insert(b.end(), payload.begin(), payload.end());
  if (payload.size() % 2) b.push_back(0);
}
Bytes riff_webp(const Bytes& chunks) {
  Bytes out;
  put_tag(out, "RIFF");
  put_u32le(out, uint32_t(4 + chunks.size()));
  put_tag(out, "WEBP");
  out.insert(out.end(), chunks.begin(), chunks.end());
  return out;
}
// The image chunk(s) of a simple-format file: everything after the 12-byte RIFF header.
Bytes image_chunks(const Bytes& simple) {
  if (simple.size() < 20) throw std::runtime_error("not a WebP file");
  return Bytes(simple.begin() + 12, simple.end());
}

void png_write_to_vector(png_structp png, png_bytep data, size_t n) {
  auto* out = static_cast<Bytes*>(png_get_io_ptr(png));
  out->insert(out->end(), data, data + n);
}
void png_flush_nothing(png_structp) {}

int gif_write_to_vector(GifFileType* gif, const GifByteType* data, int n) {
  auto* out = static_cast<Bytes*>(gif->UserData);
  out->insert(out->end(), data, data + n);
  return n;
}

}  // namespace

Bytes encode_jpeg(const JpegSpec& spec) {
  jpeg_compress_struct c;
  jpeg_error_mgr err;
  c.err = jpeg_std_error(&err);
  jpeg_create_compress(&c);
  unsigned char* buffer = nullptr;
  unsigned long size = 0;
  jpeg_mem_dest(&c, &buffer, &size);
  c.image_width = JDIMENSION(spec.width);
  c.image_height = JDIMENSION(spec.height);
  c.input_components = spec.components;
  c.in_color_space = spec.in_space;
  jpeg_set_defaults(&c);
  if (spec.file_space != JCS_UNKNOWN) jpeg_set_colorspace(&c, spec.file_space);
  jpeg_set_quality(&c, spec.quality, TRUE);
  if (spec.full_chroma)
    for (int i = 0; i < c.num_components; ++i) c.comp_info[i].h_samp_factor = c.comp_info[i].v_samp_factor = 1;
  if (spec.progressive) jpeg_simple_progression(&c);
  jpeg_start_compress(&c, TRUE);
  if (!spec.app1.empty()) jpeg_write_marker(&c, JPEG_APP0 + 1, spec.app1.data(), unsigned(spec.app1.size()));
  const size_t stride = size_t(spec.width) * size_t(spec.components);
  while (c.next_scanline < c.image_height) {
    JSAMPROW row = const_cast<JSAMPROW>(spec.pixels.data() + c.next_scanline * stride);
    jpeg_write_scanlines(&c, &row, 1);
  }
  jpeg_finish_compress(&c);
  Bytes out(buffer, buffer + size);
  std::free(buffer);
  jpeg_destroy_compress(&c);
  return out;
}

Bytes encode_png(const PngSpec& spec) {
  Bytes out;
  png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, nullptr, nullptr, nullptr);
  png_infop info = png_create_info_struct(png);
  if (setjmp(png_jmpbuf(png))) {
    png_destroy_write_struct(&png, &info);
    throw std::runtime_error("PNG encoding failed");
  }
  png_set_write_fn(png, &out, png_write_to_vector, png_flush_nothing);
  png_set_compression_level(png, spec.compression_level);
  png_set_IHDR(png, info, png_uint_32(spec.width), png_uint_32(spec.height), spec.bit_depth, spec.color_type,
               spec.interlace ? PNG_INTERLACE_ADAM7 : PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT,
               PNG_FILTER_TYPE_DEFAULT);
  if (!spec.palette.empty()) png_set_PLTE(png, info, spec.palette.data(), int(spec.palette.size()));
  if (!spec.trns_alpha.empty())
    png_set_tRNS(png, info, spec.trns_alpha.data(), int(spec.trns_alpha.size()), nullptr);
  if (spec.trns_color) png_set_tRNS(png, info, nullptr, 0, &spec.trns_value);
  if (!spec.exif.empty()) png_set_eXIf_1(png, info, png_uint_32(spec.exif.size()), const_cast<png_bytep>(spec.exif.data()));
  png_write_info(png, info);
  const size_t stride = spec.rows.size() / size_t(spec.height);
  std::vector<png_bytep> rows(size_t(spec.height));
  for (int y = 0; y < spec.height; ++y) rows[size_t(y)] = const_cast<png_bytep>(spec.rows.data() + size_t(y) * stride);
  png_write_image(png, rows.data());
  png_write_end(png, info);
  png_destroy_write_struct(&png, &info);
  return out;
}

Bytes encode_png_zeros(int width, int height) {
  Bytes out;
  png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, nullptr, nullptr, nullptr);
  png_infop info = png_create_info_struct(png);
  if (setjmp(png_jmpbuf(png))) {
    png_destroy_write_struct(&png, &info);
    throw std::runtime_error("PNG encoding failed");
  }
  png_set_write_fn(png, &out, png_write_to_vector, png_flush_nothing);
  png_set_compression_level(png, 9);
  png_set_IHDR(png, info, png_uint_32(width), png_uint_32(height), 1, PNG_COLOR_TYPE_GRAY, PNG_INTERLACE_NONE,
               PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
  png_set_filter(png, 0, PNG_FILTER_NONE);
  png_write_info(png, info);
  Bytes row(size_t(width + 7) / 8, 0);
  for (int y = 0; y < height; ++y) png_write_row(png, row.data());
  png_write_end(png, info);
  png_destroy_write_struct(&png, &info);
  return out;
}

Bytes encode_webp_lossy_rgb(const Bytes& rgb, int width, int height, float quality) {
  uint8_t* data = nullptr;
  const size_t n = WebPEncodeRGB(rgb.data(), width, height, width * 3, quality, &data);
  if (!n) throw std::runtime_error("WebP encoding failed");
  Bytes out(data, data + n);
  WebPFree(data);
  return out;
}

Bytes encode_webp_lossless_rgba(const Bytes& rgba, int width, int height) {
  uint8_t* data = nullptr;
  const size_t n = WebPEncodeLosslessRGBA(rgba.data(), width, height, width * 4, &data);
  if (!n) throw std::runtime_error("WebP encoding failed");
  Bytes out(data, data + n);
  WebPFree(data);
  return out;
}

Bytes webp_with_exif(const Bytes& simple_webp, int width, int height, bool alpha, const Bytes& exif) {
  Bytes vp8x;
  vp8x.push_back(uint8_t(0x08 | (alpha ? 0x10 : 0)));  // EXIF flag, alpha flag
  vp8x.insert(vp8x.end(), 3, 0);
  put_u24le(vp8x, uint32_t(width - 1));
  put_u24le(vp8x, uint32_t(height - 1));
  Bytes chunks;
  put_chunk(chunks, "VP8X", vp8x);
  const Bytes image = image_chunks(simple_webp);
  chunks.insert(chunks.end(), image.begin(), image.end());
  put_chunk(chunks, "EXIF", exif);
  return riff_webp(chunks);
}

Bytes animated_webp(int canvas_width, int canvas_height, const std::vector<WebpFrame>& frames) {
  Bytes vp8x;
  vp8x.push_back(0x02 | 0x10);  // animation, alpha
  vp8x.insert(vp8x.end(), 3, 0);
  put_u24le(vp8x, uint32_t(canvas_width - 1));
  put_u24le(vp8x, uint32_t(canvas_height - 1));
  Bytes chunks;
  put_chunk(chunks, "VP8X", vp8x);
  Bytes anim;
  put_u32le(anim, 0xFFFFFFFF);  // background colour (ignored by decoders by default)
  put_u16le(anim, 0);           // loop forever
  put_chunk(chunks, "ANIM", anim);
  for (const WebpFrame& f : frames) {
    Bytes anmf;
    put_u24le(anmf, uint32_t(f.x / 2));
    put_u24le(anmf, uint32_t(f.y / 2));
    put_u24le(anmf, uint32_t(f.width - 1));
    put_u24le(anmf, uint32_t(f.height - 1));
    put_u24le(anmf, uint32_t(f.duration_ms));
    anmf.push_back(0x02);  // do not blend, no disposal
    const Bytes image = image_chunks(f.simple_webp);
    anmf.insert(anmf.end(), image.begin(), image.end());
    put_chunk(chunks, "ANMF", anmf);
  }
  return riff_webp(chunks);
}

Bytes encode_gif(const GifSpec& spec) {
  Bytes out;
  int err = 0;
  GifFileType* gif = EGifOpen(&out, gif_write_to_vector, &err);
  if (!gif) throw std::runtime_error("EGifOpen failed");
  EGifSetGifVersion(gif, true);
  int colors = 2;
  while (colors < int(spec.palette.size() / 3)) colors *= 2;
  std::vector<GifColorType> table(size_t(colors), GifColorType{0, 0, 0});
  for (size_t i = 0; i < spec.palette.size() / 3; ++i)
    table[i] = GifColorType{spec.palette[3 * i], spec.palette[3 * i + 1], spec.palette[3 * i + 2]};
  ColorMapObject* map = GifMakeMapObject(colors, table.data());
  if (EGifPutScreenDesc(gif, spec.screen_width, spec.screen_height, 8, 0, spec.local_palette ? nullptr : map) == GIF_ERROR)
    throw std::runtime_error("EGifPutScreenDesc failed");
  for (int frame = 0; frame < spec.frames; ++frame) {
    if (spec.transparent >= 0 || !spec.delays_cs.empty()) {
      GraphicsControlBlock gcb{};
      gcb.DisposalMode = DISPOSAL_UNSPECIFIED;
      gcb.UserInputFlag = false;
      gcb.DelayTime = size_t(frame) < spec.delays_cs.size() ? spec.delays_cs[size_t(frame)] : 10;
      gcb.TransparentColor = spec.transparent;
      GifByteType ext[4];
      const size_t len = EGifGCBToExtension(&gcb, ext);
      EGifPutExtension(gif, GRAPHICS_EXT_FUNC_CODE, int(len), ext);
    }
    if (EGifPutImageDesc(gif, spec.left, spec.top, spec.width, spec.height, spec.interlace,
                         spec.local_palette ? map : nullptr) == GIF_ERROR)
      throw std::runtime_error("EGifPutImageDesc failed");
    Bytes line(size_t(spec.width));
    const Bytes* indices = frame == 0                                           ? &spec.indices
                           : size_t(frame) <= spec.later_indices.size() ? &spec.later_indices[size_t(frame) - 1]
                                                                         : nullptr;
    auto put_row = [&](int y) {
      for (int x = 0; x < spec.width; ++x) line[size_t(x)] = indices ? (*indices)[size_t(y) * size_t(spec.width) + size_t(x)] : 0;
      EGifPutLine(gif, line.data(), spec.width);
    };
    if (spec.interlace) {
      static constexpr int kStart[4] = {0, 4, 2, 1}, kStep[4] = {8, 8, 4, 2};
      for (int p = 0; p < 4; ++p)
        for (int y = kStart[p]; y < spec.height; y += kStep[p]) put_row(y);
    } else {
      for (int y = 0; y < spec.height; ++y) put_row(y);
    }
  }
  EGifCloseFile(gif, &err);
  GifFreeMapObject(map);
  return out;
}

Bytes exif_block(int orientation, bool big_endian, bool with_exif_prefix) {
  Bytes b;
  if (with_exif_prefix)
    for (char ch : std::string("Exif\0\0", 6)) b.push_back(uint8_t(ch));
  auto u16 = [&](uint32_t v) {
    b.push_back(uint8_t(big_endian ? v >> 8 : v));
    b.push_back(uint8_t(big_endian ? v : v >> 8));
  };
  auto u32 = [&](uint32_t v) {
    if (big_endian) u16(v >> 16), u16(v & 0xFFFF);
    else u16(v & 0xFFFF), u16(v >> 16);
  };
  b.push_back(big_endian ? 'M' : 'I');
  b.push_back(big_endian ? 'M' : 'I');
  u16(42);
  u32(8);       // IFD0 offset
  u16(1);       // one entry
  u16(0x0112);  // Orientation
  u16(3);       // SHORT
  u32(1);
  u16(uint32_t(orientation));
  u16(0);
  u32(0);  // no next IFD
  return b;
}

Bytes jpeg_app1_exif(int orientation) { return exif_block(orientation, false, true); }

std::string hex_prefix(const Bytes& b, size_t n) {
  std::string s;
  char buf[4];
  for (size_t i = 0; i < std::min(n, b.size()); ++i) {
    std::snprintf(buf, sizeof(buf), "%02x ", b[i]);
    s += buf;
  }
  return s;
}

uint32_t crc32_of(const uint8_t* data, size_t n) {
  uint32_t crc = 0xFFFFFFFFu;
  for (size_t i = 0; i < n; ++i) {
    crc ^= data[i];
    for (int k = 0; k < 8; ++k) crc = (crc >> 1) ^ (0xEDB88320u & (0u - (crc & 1u)));
  }
  return crc ^ 0xFFFFFFFFu;
}

::testing::AssertionResult pixel_near(const RgbImage& image, int x, int y, std::array<int, 3> expected, int tolerance) {
  if (x < 0 || y < 0 || x >= image.width || y >= image.height)
    return ::testing::AssertionFailure() << "pixel (" << x << ", " << y << ") outside " << image.width << "x" << image.height;
  const uint8_t* p = image.at(x, y);
  for (int c = 0; c < 3; ++c) {
    if (std::abs(int(p[c]) - expected[size_t(c)]) > tolerance)
      return ::testing::AssertionFailure() << "pixel (" << x << ", " << y << ") = (" << int(p[0]) << ", " << int(p[1]) << ", "
                                           << int(p[2]) << "), expected (" << expected[0] << ", " << expected[1] << ", "
                                           << expected[2] << ") +- " << tolerance;
  }
  return ::testing::AssertionSuccess();
}

int over_white_reference(int c, int a) {
  // Pillow rounds (c * a + 255 * (255 - a)) / 255 to nearest, up to its 7-bit coefficient
  // precision; over white the coefficients are exact, so the nearest integer is the answer.
  const double v = (double(c) * a + 255.0 * (255 - a)) / 255.0;
  return int(std::floor(v + 0.5));
}

}  // namespace qwen35::test
