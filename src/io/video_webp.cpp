// Animated WebP through libwebp (see video_webp.h for the contract).
#include "io/video_webp.h"

#include <algorithm>
#include <cstring>

#include <webp/decode.h>
#include <webp/demux.h>

#include "core/error.h"

namespace qwen35 {
namespace {

struct DemuxDeleter {
  void operator()(WebPDemuxer* d) const { WebPDemuxDelete(d); }
};
struct AnimDeleter {
  void operator()(WebPAnimDecoder* d) const { WebPAnimDecoderDelete(d); }
};

// FFmpeg's GIF demuxer: a delay under its min_delay (2/100 s) becomes its default_delay (1/10 s).
constexpr int kShortestFrameMs = 20;
constexpr int kShortFrameMs = 100;

}  // namespace

struct AnimatedWebpDecoder::State {
  std::span<const uint8_t> bytes;  // the caller's
  VideoDecodeOptions options;
  VideoInfo info;
  VideoDecodeStats stats;
  std::unique_ptr<WebPAnimDecoder, AnimDeleter> decoder;
  int64_t next_frame = 0;  // the frame the next WebPAnimDecoderGetNext composes
};

AnimatedWebpDecoder::AnimatedWebpDecoder(std::span<const uint8_t> bytes, const VideoDecodeOptions& options)
    : state_(std::make_unique<State>()) {
  state_->bytes = bytes;
  state_->options = options;
  open();
}

AnimatedWebpDecoder::~AnimatedWebpDecoder() = default;
AnimatedWebpDecoder::AnimatedWebpDecoder(AnimatedWebpDecoder&&) noexcept = default;
AnimatedWebpDecoder& AnimatedWebpDecoder::operator=(AnimatedWebpDecoder&&) noexcept = default;

void AnimatedWebpDecoder::open() {
  State& s = *state_;
  const VideoDecodeOptions& options = s.options;
  if (s.bytes.empty()) fail("cannot decode an empty video (0 bytes)");
  if (int64_t(s.bytes.size()) > options.max_file_bytes)
    fail("the video has ", s.bytes.size(), " bytes, above the limit of ", options.max_file_bytes);
  if (sniff_image_format(s.bytes) != ImageFormat::kWebp) fail("not a WebP file");

  // The demuxer reads chunk headers only; it refuses a file whose chunks are cut or inconsistent.
  const WebPData data{s.bytes.data(), s.bytes.size()};
  std::unique_ptr<WebPDemuxer, DemuxDeleter> demux(WebPDemux(&data));
  if (!demux) fail("the WebP file is damaged or truncated (its chunks do not parse)");
  const uint32_t width = WebPDemuxGetI(demux.get(), WEBP_FF_CANVAS_WIDTH);
  const uint32_t height = WebPDemuxGetI(demux.get(), WEBP_FF_CANVAS_HEIGHT);
  const uint32_t frames = WebPDemuxGetI(demux.get(), WEBP_FF_FRAME_COUNT);
  if (width == 0 || height == 0) fail("the WebP file declares no valid canvas (", width, "x", height, ")");
  if (int64_t(width) * height > options.max_pixels)
    fail("WebP frames of ", width, "x", height, " = ", int64_t(width) * height, " pixels exceed the limit of ",
         options.max_pixels, " pixels");
  if (frames == 0) fail("the WebP file has no frames");
  check_animation_cost(frames, int(width), int(height), options);
  const bool animated = (WebPDemuxGetI(demux.get(), WEBP_FF_FORMAT_FLAGS) & ANIMATION_FLAG) != 0;

  double seconds = 0;
  if (animated) {
    WebPIterator it;
    if (!WebPDemuxGetFrame(demux.get(), 1, &it)) fail("the WebP animation's first frame cannot be read");
    do {
      if (!it.complete) fail("the WebP animation is truncated: frame ", it.frame_num, " is incomplete");
      seconds += (it.duration < kShortestFrameMs ? kShortFrameMs : it.duration) / 1000.0;
    } while (WebPDemuxNextFrame(&it));
    WebPDemuxReleaseIterator(&it);
    if (seconds > options.max_duration_seconds)
      fail("the video spans a duration of ", seconds, " s, above the limit of ", options.max_duration_seconds, " s");
  }

  s.info.container = "webp";
  s.info.codec = "libwebp";
  s.info.width = int(width);
  s.info.height = int(height);
  s.info.frame_count = frames;
  s.info.duration_seconds = seconds;
  s.info.average_fps = seconds > 0 ? frames / seconds : 0.0;
}

const VideoInfo& AnimatedWebpDecoder::info() const { return state_->info; }
const VideoDecodeStats& AnimatedWebpDecoder::stats() const { return state_->stats; }

std::vector<RgbImage> AnimatedWebpDecoder::decode_frames(std::span<const int64_t> indices) {
  State& s = *state_;
  const std::vector<int64_t> wanted = frames_to_decode(indices, s.info, s.options);
  std::vector<RgbImage> decoded(wanted.size());
  try {
    for (size_t k = 0; k < wanted.size(); ++k) {
      if (!s.decoder || s.next_frame > wanted[k]) {
        WebPAnimDecoderOptions options;
        if (!WebPAnimDecoderOptionsInit(&options)) fail("cannot initialise the WebP animation decoder");
        options.color_mode = MODE_RGBA;
        options.use_threads = 0;
        const WebPData data{s.bytes.data(), s.bytes.size()};
        s.decoder.reset(WebPAnimDecoderNew(&data, &options));
        if (!s.decoder) fail("the WebP file is damaged or truncated (the animation decoder refuses it)");
        s.next_frame = 0;
        ++s.stats.restarts;
      }
      for (;;) {
        uint8_t* canvas = nullptr;
        int timestamp = 0;
        if (!WebPAnimDecoderGetNext(s.decoder.get(), &canvas, &timestamp) || canvas == nullptr)
          fail("cannot decode frame ", s.next_frame, " of the WebP animation (damaged or truncated)");
        ++s.stats.frames_decoded;
        if (s.next_frame++ < wanted[k]) continue;
        // RGBA -> RGB: the alpha is dropped, the colour under it kept.
        RgbImage& out = decoded[k];
        out = RgbImage(s.info.width, s.info.height);
        const size_t pixels = size_t(s.info.width) * size_t(s.info.height);
        for (size_t p = 0; p < pixels; ++p) std::memcpy(&out.pixels[p * 3], canvas + p * 4, 3);
        break;
      }
    }
  } catch (...) {
    s.decoder.reset();  // the next call starts again from the first frame
    throw;
  }

  std::vector<RgbImage> out;
  out.reserve(indices.size());
  std::vector<int64_t> uses(wanted.size(), 0);
  for (const int64_t i : indices) ++uses[size_t(std::lower_bound(wanted.begin(), wanted.end(), i) - wanted.begin())];
  for (const int64_t i : indices) {
    const size_t k = size_t(std::lower_bound(wanted.begin(), wanted.end(), i) - wanted.begin());
    if (--uses[k] == 0) out.push_back(std::move(decoded[k]));
    else out.push_back(decoded[k]);
  }
  return out;
}

}  // namespace qwen35
