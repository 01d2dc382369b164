// libFuzzer target: video demuxing, decoding and RGB conversion (video.h) from any bytes. A bad
// file must be a qwen35::Error; small limits keep each run short. FFmpeg itself is not built
// with the sanitizers, so this exercises our handling of what it returns (and catches crashes).
#include <cstddef>
#include <cstdint>
#include <span>

#include "core/error.h"
#include "io/video.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  qwen35::VideoDecodeOptions options;
  options.max_pixels = int64_t(1) << 20;
  options.max_frames = 500;
  options.max_duration_seconds = 600.0;
  options.max_output_bytes = int64_t(64) << 20;
  try {
    qwen35::VideoDecoder decoder(std::span<const uint8_t>(data, size), options);
    const int64_t n = decoder.info().frame_count;
    // Out of order on purpose: the last frame first, then going back to the start.
    const int64_t sampled[] = {n - 1, 0, n / 2};
    for (const qwen35::RgbImage& image : decoder.decode_frames(sampled))
      if (int64_t(image.pixels.size()) != int64_t(image.width) * image.height * 3) __builtin_trap();
  } catch (const qwen35::Error&) {
  }
  return 0;
}
