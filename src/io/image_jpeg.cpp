// JPEG through libjpeg(-turbo), with the decoder settings Pillow uses (islow IDCT, fancy
// upsampling), so pixels match what the reference processor saw.
//
// libjpeg reports fatal errors through error_exit, which must not return. We longjmp back to
// the setjmp in run_decoder (never throw through the C frames), and decode_jpeg throws once the
// decoder is destroyed. Everything with a destructor lives in JpegState, built before setjmp.
#include <algorithm>
#include <climits>
#include <csetjmp>
#include <cstdio>
#include <cstring>

// jpeglib.h needs size_t and FILE declared first; jerror.h gives the message codes.
#include <jpeglib.h>
#include <jerror.h>

#include "core/error.h"
#include "io/image_codec.h"

namespace qwen35::image_codec {
namespace {

struct JpegErrorManager {
  jpeg_error_mgr pub;  // first member: libjpeg hands back a pointer to it
  jmp_buf jump;
  int max_scans = 0;
  char message[JMSG_LENGTH_MAX + 64] = {};
};

[[noreturn]] void on_error_exit(j_common_ptr cinfo) {
  auto* err = reinterpret_cast<JpegErrorManager*>(cinfo->err);
  (*cinfo->err->format_message)(cinfo, err->message);
  std::longjmp(err->jump, 1);
}

// Warnings: libjpeg pads a truncated stream with a fake EOI and carries on, leaving the rest of
// the picture grey. Pillow refuses truncated files, and so do we; other warnings (stray bytes
// between markers and the like) are harmless and ignored, as Pillow does.
void on_emit_message(j_common_ptr cinfo, int level) {
  if (level >= 0) return;
  auto* err = reinterpret_cast<JpegErrorManager*>(cinfo->err);
  if (cinfo->err->msg_code == JWRN_JPEG_EOF) {
    std::snprintf(err->message, sizeof(err->message), "truncated JPEG data (premature end of file)");
    std::longjmp(err->jump, 1);
  }
  cinfo->err->num_warnings++;
}

// A progressive file may hold thousands of scans, each a full pass over the coefficients
// (a known CPU-exhaustion attack); cap the count.
void on_progress(j_common_ptr cinfo) {
  auto* dinfo = reinterpret_cast<j_decompress_ptr>(cinfo);
  auto* err = reinterpret_cast<JpegErrorManager*>(cinfo->err);
  if (dinfo->input_scan_number > err->max_scans) {
    std::snprintf(err->message, sizeof(err->message), "JPEG has more than %d scans", err->max_scans);
    std::longjmp(err->jump, 1);
  }
}

struct JpegState {
  jpeg_decompress_struct cinfo;
  JpegErrorManager err;
  jpeg_progress_mgr progress;
  std::vector<uint8_t> cmyk_row;
  JpegState() {
    std::memset(&cinfo, 0, sizeof(cinfo));
    std::memset(&progress, 0, sizeof(progress));
  }
  ~JpegState() { jpeg_destroy_decompress(&cinfo); }  // safe on a zeroed or half-built decoder
};

// Pillow reads CMYK JPEGs with raw mode "CMYK;I" (Adobe files store inverted samples) and
// converts with cmyk2rgb: nk = 255 - k; r = nk - nk * c / 255 with its rounded shift division.
inline uint8_t cmyk_channel(uint32_t raw_c, uint32_t raw_k) {
  const uint32_t c = 255 - raw_c, nk = raw_k;  // k = 255 - raw_k, so nk = raw_k
  const uint32_t t = c * nk + 128;
  const int v = int(nk) - int(((t >> 8) + t) >> 8);
  return uint8_t(v < 0 ? 0 : v > 255 ? 255 : v);
}

// Returns false with state.err.message set when libjpeg failed; may throw Error (size checks)
// or std::bad_alloc, which unwind normally because no C frame is active at those points.
bool run_decoder(JpegState& s, std::span<const uint8_t> bytes, const ImageDecodeOptions& options, DecodedImage& out) {
  jpeg_decompress_struct& cinfo = s.cinfo;
  cinfo.err = jpeg_std_error(&s.err.pub);
  s.err.pub.error_exit = on_error_exit;
  s.err.pub.emit_message = on_emit_message;
  s.err.max_scans = options.max_jpeg_scans;
  if (setjmp(s.err.jump)) return false;

  jpeg_create_decompress(&cinfo);
  s.progress.progress_monitor = on_progress;
  cinfo.progress = &s.progress;
  jpeg_mem_src(&cinfo, bytes.data(), static_cast<unsigned long>(bytes.size()));
  jpeg_save_markers(&cinfo, JPEG_APP0 + 1, 0xFFFF);
  if (jpeg_read_header(&cinfo, TRUE) != JPEG_HEADER_OK) {
    std::snprintf(s.err.message, sizeof(s.err.message), "JPEG holds tables only, no image");
    return false;
  }
  check_image_size(cinfo.image_width, cinfo.image_height, options, "JPEG");
  // Progressive files buffer every coefficient (2 bytes per sample); bound that too. libjpeg has
  // no backing store here, so going past the budget is an error rather than a temp file.
  cinfo.mem->max_memory_to_use = long(std::min<int64_t>(options.max_pixels * 8 + (int64_t(64) << 20), LONG_MAX));

  for (jpeg_saved_marker_ptr m = cinfo.marker_list; m; m = m->next) {
    if (m->marker == JPEG_APP0 + 1 && m->data_length >= 6 && std::memcmp(m->data, "Exif\0\0", 6) == 0) {
      out.exif.assign(m->data, m->data + m->data_length);
      break;
    }
  }

  const bool cmyk = cinfo.jpeg_color_space == JCS_CMYK || cinfo.jpeg_color_space == JCS_YCCK;
  if (cinfo.num_components == 1) cinfo.out_color_space = JCS_GRAYSCALE;
  else if (cmyk) cinfo.out_color_space = JCS_CMYK;  // libjpeg turns YCCK into CMYK
  else cinfo.out_color_space = JCS_RGB;
  cinfo.dct_method = JDCT_ISLOW;
  cinfo.do_fancy_upsampling = TRUE;

  jpeg_start_decompress(&cinfo);
  const int w = int(cinfo.output_width), h = int(cinfo.output_height);
  check_image_size(w, h, options, "JPEG");
  out.width = w;
  out.height = h;
  out.channels = cinfo.out_color_space == JCS_GRAYSCALE ? 1 : 3;
  const int components = cinfo.output_components;
  if (components != (cmyk ? 4 : out.channels)) {
    std::snprintf(s.err.message, sizeof(s.err.message), "unexpected JPEG output with %d components", components);
    return false;
  }
  out.pixels.resize(size_t(w) * size_t(h) * size_t(out.channels));
  if (cmyk) s.cmyk_row.resize(size_t(w) * 4);
  while (cinfo.output_scanline < cinfo.output_height) {
    uint8_t* dst = out.pixels.data() + size_t(cinfo.output_scanline) * size_t(w) * size_t(out.channels);
    JSAMPROW row = cmyk ? s.cmyk_row.data() : dst;
    if (jpeg_read_scanlines(&cinfo, &row, 1) != 1) {
      std::snprintf(s.err.message, sizeof(s.err.message), "JPEG decoder stalled (truncated data)");
      return false;
    }
    if (cmyk) {
      const uint8_t* p = s.cmyk_row.data();
      for (int x = 0; x < w; ++x, p += 4, dst += 3) {
        dst[0] = cmyk_channel(p[0], p[3]);
        dst[1] = cmyk_channel(p[1], p[3]);
        dst[2] = cmyk_channel(p[2], p[3]);
      }
    }
  }
  jpeg_finish_decompress(&cinfo);
  return true;
}

}  // namespace

DecodedImage decode_jpeg(std::span<const uint8_t> bytes, const ImageDecodeOptions& options) {
  JpegState state;
  DecodedImage out;
  if (!run_decoder(state, bytes, options, out)) fail("cannot decode JPEG: ", state.err.message);
  return out;
}

}  // namespace qwen35::image_codec
