// A request's video (an encoded file: a video, an animated GIF or WebP; frames as images, or
// decoded frames) -> the video processor's frame source, and the processor settings its sampling asks for. Opening reads only
// the container's headers (or the first image); the processor then pulls the sampled frames, and
// nothing else is ever decoded.
#pragma once

#include <cstdint>
#include <memory>

#include "io/video.h"
#include "io/video_webp.h"
#include "model/video_processor.h"
#include "qwen35/chat.h"

namespace qwen35 {

// Limits on what opening and decoding a video may cost, checked before the work they bound.
struct VideoSourceLimits {
  VideoDecodeOptions decode;                   // encoded files (file size, frame size, count, duration)
  int64_t max_image_pixels = int64_t(64) << 20;  // each frame given as an image
};

class RequestVideo {
 public:
  // Throws qwen35::Error for a video that cannot be opened or breaks a limit. `video` is borrowed
  // and must outlive this object.
  RequestVideo(const VideoInput& video, const VideoSourceLimits& limits = {});
  ~RequestVideo();
  RequestVideo(const RequestVideo&) = delete;
  RequestVideo& operator=(const RequestVideo&) = delete;

  const VideoFrameSource& source() const { return source_; }
  // The decoder's counters for an encoded file (all zero otherwise): what the sampled frames cost.
  VideoDecodeStats decode_stats() const;

 private:
  std::unique_ptr<VideoDecoder> decoder_;         // an encoded file (animated GIF included)...
  std::unique_ptr<AnimatedWebpDecoder> webp_;     // ...or a WebP
  VideoFrameSource source_;
};

// The processor settings for a clip of `frames` frames of height x width at `fps` sampled as
// `sampling` asks: its own fps and frame cap, and for a token cap that the clip would pass, a pixel
// budget low enough that the pairs' tokens fit (computed with the sampled frame count, so an odd
// count padded to a pair fits too). A cap the clip does not reach changes nothing. Throws
// qwen35::Error for a negative or non-finite value.
VideoProcessorConfig video_config_for(const VideoProcessorConfig& base, const VideoSampling& sampling, int64_t frames,
                                      int64_t height, int64_t width, double fps);

// The <|video_pad|> tokens the processor will give this source under `config`, from the frame
// count and size alone (before any frame is decoded).
int64_t video_pad_tokens(const VideoFrameSource& source, const VideoProcessorConfig& config);

}  // namespace qwen35
