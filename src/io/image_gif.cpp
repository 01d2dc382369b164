// GIF through giflib, first frame only (what Pillow shows before any seek). Records are read
// one at a time, so later frames are never decoded or stored.
//
// Like Pillow: the canvas is the logical screen, grown if the first frame reaches past it; the
// area the frame does not cover is filled with the transparent index when the frame has one,
// else with palette entry 0; a transparent index becomes alpha 0; indices past the end of the
// colour table are black.
#include <algorithm>
#include <cstring>
#include <memory>

#include <gif_lib.h>

#include "core/error.h"
#include "io/image_codec.h"

namespace qwen35::image_codec {
namespace {

struct MemoryReader {
  const uint8_t* data;
  size_t size;
  size_t pos;
};

int read_from_memory(GifFileType* gif, GifByteType* out, int n) {
  auto* r = static_cast<MemoryReader*>(gif->UserData);
  const size_t k = std::min(size_t(n < 0 ? 0 : n), r->size - r->pos);
  std::memcpy(out, r->data + r->pos, k);
  r->pos += k;
  return int(k);
}

struct GifCloser {
  void operator()(GifFileType* gif) const {
    int error = 0;
    DGifCloseFile(gif, &error);
  }
};
using GifPtr = std::unique_ptr<GifFileType, GifCloser>;

[[noreturn]] void gif_fail(const GifFileType* gif, const char* what) {
  const char* reason = gif ? GifErrorString(gif->Error) : nullptr;
  fail("cannot decode GIF: ", what, reason ? std::string(" (") + reason + ")" : std::string());
}

}  // namespace

int64_t gif_frame_count(std::span<const uint8_t> bytes, int64_t most) {
  MemoryReader reader{bytes.data(), bytes.size(), 0};
  int open_error = 0;
  GifPtr gif(DGifOpen(&reader, read_from_memory, &open_error));
  if (!gif) return 0;
  int64_t frames = 0;
  while (frames < most) {
    GifRecordType record;
    if (DGifGetRecordType(gif.get(), &record) == GIF_ERROR || record == TERMINATE_RECORD_TYPE) break;
    GifByteType* block = nullptr;
    if (record == EXTENSION_RECORD_TYPE) {
      int code = 0;
      if (DGifGetExtension(gif.get(), &code, &block) == GIF_ERROR) return 0;
      while (block)
        if (DGifGetExtensionNext(gif.get(), &block) == GIF_ERROR) return 0;
    } else if (record == IMAGE_DESC_RECORD_TYPE) {
      // The LZW data is skipped block by block, never decompressed.
      int code_size = 0;
      if (DGifGetImageDesc(gif.get()) == GIF_ERROR || DGifGetCode(gif.get(), &code_size, &block) == GIF_ERROR) return 0;
      while (block)
        if (DGifGetCodeNext(gif.get(), &block) == GIF_ERROR) return 0;
      ++frames;
    }
  }
  return frames;
}

DecodedImage decode_gif(std::span<const uint8_t> bytes, const ImageDecodeOptions& options) {
  MemoryReader reader{bytes.data(), bytes.size(), 0};
  int open_error = 0;
  GifPtr gif(DGifOpen(&reader, read_from_memory, &open_error));
  if (!gif) {
    const char* reason = GifErrorString(open_error);
    fail("cannot decode GIF: bad or truncated header", reason ? std::string(" (") + reason + ")" : std::string());
  }
  check_image_size(gif->SWidth, gif->SHeight, options, "GIF");

  int transparent = -1;
  for (;;) {
    GifRecordType record;
    if (DGifGetRecordType(gif.get(), &record) == GIF_ERROR) gif_fail(gif.get(), "truncated or corrupt record");
    if (record == TERMINATE_RECORD_TYPE) fail("cannot decode GIF: the file holds no image");
    if (record == EXTENSION_RECORD_TYPE) {
      int code = 0;
      GifByteType* block = nullptr;
      if (DGifGetExtension(gif.get(), &code, &block) == GIF_ERROR) gif_fail(gif.get(), "corrupt extension");
      if (code == GRAPHICS_EXT_FUNC_CODE && block && block[0] == 4) {
        GraphicsControlBlock gcb;
        if (DGifExtensionToGCB(block[0], block + 1, &gcb) == GIF_OK) transparent = gcb.TransparentColor;
      }
      while (block) {
        if (DGifGetExtensionNext(gif.get(), &block) == GIF_ERROR) gif_fail(gif.get(), "corrupt extension");
      }
      continue;
    }
    if (record != IMAGE_DESC_RECORD_TYPE) continue;

    if (DGifGetImageDesc(gif.get()) == GIF_ERROR) gif_fail(gif.get(), "corrupt image descriptor");
    const GifImageDesc& desc = gif->Image;
    const ColorMapObject* map = desc.ColorMap ? desc.ColorMap : gif->SColorMap;
    if (!map || !map->Colors || map->ColorCount <= 0) fail("cannot decode GIF: the first frame has no colour table");
    if (desc.Width <= 0 || desc.Height <= 0 || desc.Left < 0 || desc.Top < 0)
      fail("cannot decode GIF: bad frame geometry ", desc.Width, "x", desc.Height, " at ", desc.Left, ",", desc.Top);
    const int64_t canvas_w = std::max<int64_t>(gif->SWidth, int64_t(desc.Left) + desc.Width);
    const int64_t canvas_h = std::max<int64_t>(gif->SHeight, int64_t(desc.Top) + desc.Height);
    check_image_size(canvas_w, canvas_h, options, "GIF");

    uint8_t palette[256][4] = {};
    for (int i = 0; i < std::min(map->ColorCount, 256); ++i) {
      palette[i][0] = map->Colors[i].Red;
      palette[i][1] = map->Colors[i].Green;
      palette[i][2] = map->Colors[i].Blue;
      palette[i][3] = 255;
    }
    for (int i = std::min(map->ColorCount, 256); i < 256; ++i) palette[i][3] = 255;
    if (transparent >= 0 && transparent < 256) palette[transparent][3] = 0;
    else transparent = -1;

    DecodedImage out;
    out.width = int(canvas_w);
    out.height = int(canvas_h);
    out.channels = transparent >= 0 ? 4 : 3;
    const size_t ch = size_t(out.channels);
    out.pixels.resize(size_t(canvas_w) * size_t(canvas_h) * ch);
    const uint8_t* fill = palette[transparent >= 0 ? transparent : 0];
    for (size_t i = 0; i < out.pixels.size(); i += ch) std::memcpy(&out.pixels[i], fill, ch);

    // Interlaced frames deliver rows in four passes: every 8th from 0, every 8th from 4,
    // every 4th from 2, every 2nd from 1.
    static constexpr int kStart[4] = {0, 4, 2, 1};
    static constexpr int kStep[4] = {8, 8, 4, 2};
    std::vector<GifPixelType> line(size_t(desc.Width));
    const int passes = desc.Interlace ? 4 : 1;
    for (int pass = 0; pass < passes; ++pass) {
      const int start = desc.Interlace ? kStart[pass] : 0, step = desc.Interlace ? kStep[pass] : 1;
      for (int y = start; y < desc.Height; y += step) {
        if (DGifGetLine(gif.get(), line.data(), desc.Width) == GIF_ERROR)
          gif_fail(gif.get(), "truncated or corrupt image data");
        uint8_t* dst = out.pixels.data() + (size_t(desc.Top + y) * size_t(canvas_w) + size_t(desc.Left)) * ch;
        for (int x = 0; x < desc.Width; ++x, dst += ch) std::memcpy(dst, palette[line[size_t(x)]], ch);
      }
    }
    return out;
  }
}

}  // namespace qwen35::image_codec
