// WebP through libwebp: still images with the simple decoder (RGB, or RGBA when the file has
// alpha), animations through WebPAnimDecoder, keeping the first frame as composed on the canvas.
// Both use libwebp's default fancy upsampling, like Pillow's WebP plugin.
#include <cstring>
#include <memory>

#include <webp/decode.h>
#include <webp/demux.h>

#include "core/error.h"
#include "io/image_codec.h"

namespace qwen35::image_codec {
namespace {

const char* status_text(VP8StatusCode status) {
  switch (status) {
    case VP8_STATUS_OK: return "ok";
    case VP8_STATUS_OUT_OF_MEMORY: return "out of memory";
    case VP8_STATUS_INVALID_PARAM: return "invalid parameter";
    case VP8_STATUS_BITSTREAM_ERROR: return "corrupt bitstream";
    case VP8_STATUS_UNSUPPORTED_FEATURE: return "unsupported feature";
    case VP8_STATUS_SUSPENDED: return "suspended";
    case VP8_STATUS_USER_ABORT: return "aborted";
    case VP8_STATUS_NOT_ENOUGH_DATA: return "truncated data";
  }
  return "unknown error";
}

struct DemuxDeleter {
  void operator()(WebPDemuxer* d) const { WebPDemuxDelete(d); }
};
struct AnimDeleter {
  void operator()(WebPAnimDecoder* d) const { WebPAnimDecoderDelete(d); }
};

void read_exif(const WebPData& data, DecodedImage& out) {
  std::unique_ptr<WebPDemuxer, DemuxDeleter> demux(WebPDemux(&data));
  if (!demux || !(WebPDemuxGetI(demux.get(), WEBP_FF_FORMAT_FLAGS) & EXIF_FLAG)) return;
  WebPChunkIterator it;
  if (WebPDemuxGetChunk(demux.get(), "EXIF", 1, &it)) {
    out.exif.assign(it.chunk.bytes, it.chunk.bytes + it.chunk.size);
    WebPDemuxReleaseChunkIterator(&it);
  }
}

void decode_first_frame(const WebPData& data, int width, int height, DecodedImage& out) {
  WebPAnimDecoderOptions opts;
  if (!WebPAnimDecoderOptionsInit(&opts)) fail("cannot initialise the WebP animation decoder");
  opts.color_mode = MODE_RGBA;
  opts.use_threads = 0;
  std::unique_ptr<WebPAnimDecoder, AnimDeleter> dec(WebPAnimDecoderNew(&data, &opts));
  if (!dec) fail("cannot decode animated WebP: corrupt or truncated container");
  WebPAnimInfo info;
  if (!WebPAnimDecoderGetInfo(dec.get(), &info)) fail("cannot decode animated WebP: no canvas information");
  if (int(info.canvas_width) != width || int(info.canvas_height) != height)
    fail("animated WebP canvas ", info.canvas_width, "x", info.canvas_height, " disagrees with its header ", width,
         "x", height);
  uint8_t* frame = nullptr;
  int timestamp = 0;
  if (!WebPAnimDecoderGetNext(dec.get(), &frame, &timestamp) || !frame)
    fail("cannot decode the first frame of an animated WebP (corrupt or truncated)");
  out.channels = 4;
  out.pixels.assign(frame, frame + size_t(width) * size_t(height) * 4);
}

}  // namespace

int64_t webp_frame_count(std::span<const uint8_t> bytes) {
  const WebPData data{bytes.data(), bytes.size()};
  std::unique_ptr<WebPDemuxer, DemuxDeleter> demux(WebPDemux(&data));
  return demux ? int64_t(WebPDemuxGetI(demux.get(), WEBP_FF_FRAME_COUNT)) : 0;
}

DecodedImage decode_webp(std::span<const uint8_t> bytes, const ImageDecodeOptions& options) {
  WebPBitstreamFeatures features;
  const VP8StatusCode status = WebPGetFeatures(bytes.data(), bytes.size(), &features);
  if (status != VP8_STATUS_OK) fail("cannot decode WebP: ", status_text(status));
  // For an extended (VP8X) file these are the canvas size, known before anything is decoded.
  check_image_size(features.width, features.height, options, "WebP");

  DecodedImage out;
  out.width = features.width;
  out.height = features.height;
  const WebPData data{bytes.data(), bytes.size()};
  if (features.has_animation) {
    decode_first_frame(data, out.width, out.height, out);
  } else {
    out.channels = features.has_alpha ? 4 : 3;
    const size_t stride = size_t(out.width) * size_t(out.channels);
    out.pixels.resize(stride * size_t(out.height));
    const uint8_t* ok = features.has_alpha
                            ? WebPDecodeRGBAInto(bytes.data(), bytes.size(), out.pixels.data(), out.pixels.size(), int(stride))
                            : WebPDecodeRGBInto(bytes.data(), bytes.size(), out.pixels.data(), out.pixels.size(), int(stride));
    if (!ok) fail("cannot decode WebP: corrupt or truncated bitstream");
  }
  read_exif(data, out);
  return out;
}

}  // namespace qwen35::image_codec
