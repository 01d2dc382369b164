// libFuzzer target: image decoding (JPEG, PNG, WebP, GIF, BMP; EXIF orientation) from any bytes.
// A bad file must be a qwen35::Error; the pixel limit keeps each run small.
#include <cstddef>
#include <cstdint>
#include <span>

#include "core/error.h"
#include "io/image.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  qwen35::ImageDecodeOptions options;
  options.max_pixels = int64_t(4) << 20;
  try {
    const qwen35::RgbImage image = qwen35::decode_image(std::span<const uint8_t>(data, size), options);
    if (int64_t(image.pixels.size()) != int64_t(image.width) * image.height * 3) __builtin_trap();
  } catch (const qwen35::Error&) {
  }
  return 0;
}
