// libFuzzer target: video demuxing, decoding and RGB conversion (video.h; WebP animations through
// video_webp.h, as a request's video is opened) from any bytes. A bad file must be a
// qwen35::Error; small limits keep each run short. FFmpeg and libwebp themselves are not built
// with the sanitizers, so this exercises our handling of what they return (and catches crashes).
//
// Seeds: two tiny clips, and an animated GIF and WebP made by
//   ffmpeg -f lavfi -i testsrc=size=32x24:rate=5 -t 1 anim.gif
//   ffmpeg -f lavfi -i testsrc=size=32x24:rate=5 -t 1 -c:v libwebp_anim -loop 0 anim.webp
#include <cstddef>
#include <cstdint>
#include <span>

#include "core/error.h"
#include "io/image.h"
#include "io/video.h"
#include "io/video_webp.h"

namespace {

template <typename Decoder>
void decode_some(Decoder& decoder) {
  const int64_t n = decoder.info().frame_count;
  // Out of order on purpose: the last frame first, then going back to the start.
  const int64_t sampled[] = {n - 1, 0, n / 2};
  for (const qwen35::RgbImage& image : decoder.decode_frames(sampled))
    if (int64_t(image.pixels.size()) != int64_t(image.width) * image.height * 3) __builtin_trap();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  qwen35::VideoDecodeOptions options;
  options.max_pixels = int64_t(1) << 20;
  options.max_frames = 500;
  options.max_duration_seconds = 600.0;
  options.max_output_bytes = int64_t(64) << 20;
  options.max_animation_pixels = int64_t(1) << 24;
  const std::span<const uint8_t> bytes(data, size);
  try {
    if (qwen35::sniff_image_format(bytes) == qwen35::ImageFormat::kWebp) {
      qwen35::AnimatedWebpDecoder decoder(bytes, options);
      decode_some(decoder);
    } else {
      qwen35::VideoDecoder decoder(bytes, options);
      decode_some(decoder);
    }
  } catch (const qwen35::Error&) {
  }
  return 0;
}
