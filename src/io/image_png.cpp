// PNG through libpng. Every colour type and bit depth comes out as 8-bit gray, gray + alpha,
// RGB or RGBA: palettes expand to RGB, a tRNS chunk becomes an alpha channel (per palette
// entry, or the single transparent colour of a gray/RGB image), low bit depths widen to 8 and
// 16-bit samples keep their high byte. gAMA/iCCP/sRGB are ignored, as Pillow ignores them.
//
// libpng errors longjmp back to run_decoder (error callbacks must not return and must not throw
// through libpng's C frames); decode_png throws after libpng has been torn down.
#include <algorithm>
#include <csetjmp>
#include <cstdio>
#include <cstring>

#include <png.h>

#include "core/error.h"
#include "io/image_codec.h"

namespace qwen35::image_codec {
namespace {

struct MemoryReader {
  const uint8_t* data;
  size_t size;
  size_t pos;
};

enum class Stage { kHeader, kPixels, kTrailer };

struct PngState {
  png_structp png = nullptr;
  png_infop info = nullptr;
  MemoryReader reader{};
  Stage stage = Stage::kHeader;
  std::vector<png_bytep> rows;
  char message[256] = {};
  ~PngState() {
    if (png) png_destroy_read_struct(&png, info ? &info : nullptr, nullptr);
  }
};

void on_error(png_structp png, png_const_charp msg) {
  auto* s = static_cast<PngState*>(png_get_error_ptr(png));
  std::snprintf(s->message, sizeof(s->message), "%s", msg);
  png_longjmp(png, 1);
}

void on_warning(png_structp, png_const_charp) {}

void read_from_memory(png_structp png, png_bytep out, size_t n) {
  auto* r = static_cast<MemoryReader*>(png_get_io_ptr(png));
  if (n > r->size - r->pos) png_error(png, "truncated PNG data");
  std::memcpy(out, r->data + r->pos, n);
  r->pos += n;
}

void take_exif(PngState& s, DecodedImage& out) {
#ifdef PNG_eXIf_SUPPORTED
  png_uint_32 size = 0;
  png_bytep exif = nullptr;
  if (out.exif.empty() && png_get_eXIf_1(s.png, s.info, &size, &exif) && exif && size > 0)
    out.exif.assign(exif, exif + size);
#endif
}

bool run_decoder(PngState& s, std::span<const uint8_t> bytes, const ImageDecodeOptions& options, DecodedImage& out) {
  s.png = png_create_read_struct(PNG_LIBPNG_VER_STRING, &s, on_error, on_warning);
  if (!s.png) fail("cannot create a PNG decoder");
  s.info = png_create_info_struct(s.png);
  if (!s.info) fail("cannot create a PNG decoder");
  if (setjmp(png_jmpbuf(s.png))) {
    // A damaged chunk after the last image row (or a missing IEND) costs no pixels; Pillow
    // accepts such files too.
    if (s.stage != Stage::kTrailer) return false;
    take_exif(s, out);
    return true;
  }

  s.reader = MemoryReader{bytes.data(), bytes.size(), 0};
  png_set_read_fn(s.png, &s.reader, read_from_memory);
  // libpng checks each side against these limits while it parses IHDR; our own product check
  // follows. Ancillary chunks that libpng decompresses (iCCP, zTXt, iTXt) are capped at 8 MiB,
  // and at most 1000 of them are kept, against text-chunk bombs.
  const int64_t side_limit = std::min<int64_t>(options.max_pixels, PNG_UINT_31_MAX);
  png_set_user_limits(s.png, png_uint_32(side_limit), png_uint_32(side_limit));
  png_set_chunk_malloc_max(s.png, size_t(8) << 20);
  png_set_chunk_cache_max(s.png, 1000);

  png_read_info(s.png, s.info);
  png_uint_32 width = 0, height = 0;
  int bit_depth = 0, color_type = 0, interlace = 0;
  png_get_IHDR(s.png, s.info, &width, &height, &bit_depth, &color_type, &interlace, nullptr, nullptr);
  check_image_size(width, height, options, "PNG");

  png_set_expand(s.png);  // palette -> RGB, gray 1/2/4 -> 8 bits, tRNS -> alpha
  if (bit_depth == 16) png_set_strip_16(s.png);
  png_set_interlace_handling(s.png);
  png_read_update_info(s.png, s.info);

  const int channels = png_get_channels(s.png, s.info);
  if (channels < 1 || channels > 4 || png_get_bit_depth(s.png, s.info) != 8 ||
      png_get_rowbytes(s.png, s.info) != size_t(width) * size_t(channels)) {
    std::snprintf(s.message, sizeof(s.message), "unexpected PNG layout after expansion (%d channels)", channels);
    return false;
  }
  out.width = int(width);
  out.height = int(height);
  out.channels = channels;
  out.pixels.resize(size_t(width) * size_t(height) * size_t(channels));
  s.rows.resize(height);
  for (png_uint_32 y = 0; y < height; ++y) s.rows[y] = out.pixels.data() + size_t(y) * width * size_t(channels);

  s.stage = Stage::kPixels;
  png_read_image(s.png, s.rows.data());

  s.stage = Stage::kTrailer;
  png_read_end(s.png, s.info);  // eXIf may also follow the image data
  take_exif(s, out);
  return true;
}

}  // namespace

DecodedImage decode_png(std::span<const uint8_t> bytes, const ImageDecodeOptions& options) {
  PngState state;
  DecodedImage out;
  if (!run_decoder(state, bytes, options, out)) fail("cannot decode PNG: ", state.message);
  return out;
}

}  // namespace qwen35::image_codec
