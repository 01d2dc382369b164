// Animated WebP files -> 8-bit RGB frames, as short videos. FFmpeg 5.1 (Debian 12) cannot decode
// WebP animations, so libwebp does the work: its demuxer reads the frame list and durations from
// the headers, WebPAnimDecoder composes each frame on the canvas (blending and disposal as the
// format defines them; the canvas starts transparent), and the alpha is dropped, keeping the
// colour under it (what decode_image gives for the first frame, as PIL's convert("RGB")).
//
// Frames are timed by their own durations, with the rule FFmpeg's GIF demuxer applies to GIF
// delays (a duration under 20 ms counts as 100 ms, as browsers show it), so an animation gets the
// same frame times as a GIF of the same frames. A still WebP is a video of one frame and no
// duration.
//
// Cost: the headers are read when the decoder is made; a frame is composed over the ones before it,
// so reaching frame k decodes frames 0..k once (a later call asking for an earlier frame starts
// again from the first). Frame count x canvas pixels is bounded (max_animation_pixels), as are the
// file size, the canvas size, the frame count, the duration and the output size, before the work.
//
// Threads: a decoder belongs to one thread at a time.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "io/image.h"
#include "io/video.h"

namespace qwen35 {

class AnimatedWebpDecoder {
 public:
  // Reads the headers and checks the limits. Throws qwen35::Error. The bytes are borrowed: they
  // must outlive the decoder.
  explicit AnimatedWebpDecoder(std::span<const uint8_t> bytes, const VideoDecodeOptions& options = {});
  // A temporary vector would be gone before the first frame is decoded.
  explicit AnimatedWebpDecoder(std::vector<uint8_t>&& bytes, const VideoDecodeOptions& options = {}) = delete;
  ~AnimatedWebpDecoder();
  AnimatedWebpDecoder(AnimatedWebpDecoder&&) noexcept;
  AnimatedWebpDecoder& operator=(AnimatedWebpDecoder&&) noexcept;
  AnimatedWebpDecoder(const AnimatedWebpDecoder&) = delete;
  AnimatedWebpDecoder& operator=(const AnimatedWebpDecoder&) = delete;

  // container "webp", codec "libwebp"; frame_count, durations and rates as VideoDecoder gives them.
  const VideoInfo& info() const;
  // frames_decoded counts composed frames; restarts the passes from the first frame.
  const VideoDecodeStats& stats() const;

  // The frames at `indices` (each in 0..frame_count-1; any order, repeats allowed), in the order
  // asked. Throws qwen35::Error.
  std::vector<RgbImage> decode_frames(std::span<const int64_t> indices);

 private:
  struct State;
  void open();
  std::unique_ptr<State> state_;
};

}  // namespace qwen35
