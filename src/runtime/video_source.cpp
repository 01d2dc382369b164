#include "runtime/video_source.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"
#include "io/image.h"

namespace qwen35 {

namespace {

// An encoded file's frames, decoded one by one as the processor asks for them.
template <typename Decoder>
VideoFrameSource encoded_source(const VideoInfo& info, Decoder& decoder) {
  // The frame rate torchcodec reports in its exact mode, which the official pipeline reads.
  return {info.frame_count, info.height, info.width, info.fps_from_content(), [&decoder](int64_t index) {
            const int64_t one[1] = {index};
            return std::move(decoder.decode_frames(one).at(0));
          }};
}

}  // namespace

RequestVideo::RequestVideo(const VideoInput& video, const VideoSourceLimits& limits) {
  switch (video.source) {
    case VideoInput::Source::kFile: {
      // FFmpeg 5.1 cannot decode WebP animations: libwebp reads any WebP, FFmpeg everything else.
      const std::span<const uint8_t> bytes(video.file);
      if (sniff_image_format(bytes) == ImageFormat::kWebp) {
        webp_ = std::make_unique<AnimatedWebpDecoder>(bytes, limits.decode);
        source_ = encoded_source(webp_->info(), *webp_);
      } else {
        decoder_ = std::make_unique<VideoDecoder>(bytes, limits.decode);
        source_ = encoded_source(decoder_->info(), *decoder_);
      }
      return;
    }
    case VideoInput::Source::kImages: {
      if (video.images.empty()) fail("a video given as images needs at least one image");
      if (!std::isfinite(video.images_fps) || video.images_fps < 0)
        fail("a video's frame rate must be finite and not negative, got ", video.images_fps);
      ImageDecodeOptions decode;
      decode.max_pixels = limits.max_image_pixels;
      // The first image gives the clip's size (it is always sampled); each frame is decoded when
      // the processor asks for it.
      const RgbImage first = decode_image(video.images[0], decode);
      const auto& images = video.images;
      source_ = {int64_t(images.size()), first.height, first.width, video.images_fps, [&images, decode](int64_t index) {
                   try {
                     return decode_image(images[size_t(index)], decode);
                   } catch (const Error& e) {
                     fail("video frame ", index, ": ", e.what());
                   }
                 }};
      return;
    }
    case VideoInput::Source::kFrames: {
      const VideoFrames& v = video.frames;
      source_ = frame_source(VideoClipView{v.rgb, v.frames, v.height, v.width, v.fps});
      return;
    }
  }
  fail("unknown video source");
}

RequestVideo::~RequestVideo() = default;

VideoDecodeStats RequestVideo::decode_stats() const {
  return decoder_ ? decoder_->stats() : webp_ ? webp_->stats() : VideoDecodeStats{};
}

VideoProcessorConfig video_config_for(const VideoProcessorConfig& base, const VideoSampling& sampling, int64_t frames,
                                      int64_t height, int64_t width, double fps) {
  VideoProcessorConfig c = base;
  if (!std::isfinite(sampling.fps) || sampling.fps < 0) fail("a video's sampling fps must be positive, got ", sampling.fps);
  if (sampling.max_frames < 0) fail("a video's max_frames must be positive, got ", sampling.max_frames);
  if (sampling.max_tokens < 0) fail("a video's max_tokens must be positive, got ", sampling.max_tokens);
  if (sampling.fps > 0) c.sample_fps = sampling.fps;
  if (sampling.max_frames > 0) {
    c.max_frames = std::min(c.max_frames, sampling.max_frames);
    c.min_frames = std::min(c.min_frames, c.max_frames);
  }
  if (sampling.max_tokens > 0 && c.do_resize &&
      video_pad_tokens(VideoFrameSource{frames, height, width, fps, nullptr}, c) > sampling.max_tokens) {
    // Tokens = pairs * h * w / (patch * merge)^2, and the processor keeps T * h * w within its
    // budget for T sampled frames (T, not T rounded up to whole pairs), so the budget is scaled
    // by T / (pairs * temporal) for the padded pair to fit as well.
    const int64_t sampled = int64_t(sample_frame_indices(frames, fps, c).size());
    const int64_t temporal = c.temporal_patch_size;
    const int64_t padded = (sampled + temporal - 1) / temporal * temporal;
    const double per_token = double(c.factor()) * double(c.factor()) * double(temporal);
    const double budget = std::floor(double(sampling.max_tokens) * per_token * double(sampled) / double(padded));
    c.max_pixels = std::min<int64_t>(c.max_pixels, int64_t(std::min(budget, 9e18)));
    c.min_pixels = std::min(c.min_pixels, c.max_pixels);
  }
  return c;
}

int64_t video_pad_tokens(const VideoFrameSource& source, const VideoProcessorConfig& c) {
  const int64_t sampled = int64_t(sample_frame_indices(source.frames, source.fps, c).size());
  const ResizedSize r = video_target_size(sampled, source.height, source.width, c);
  const int64_t pairs = (sampled + c.temporal_patch_size - 1) / c.temporal_patch_size;
  return pairs * image_token_count({1, r.height / c.patch_size, r.width / c.patch_size}, c.merge_size);
}

}  // namespace qwen35
