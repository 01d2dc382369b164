// Small synthetic video files for the video decoder tests, made in memory with FFmpeg's own
// encoders and muxers (libavcodec, libavformat): any container, codec, group-of-pictures length,
// B-frames and colour tags, so seeking and conversion can be tested on files the golden clip
// does not cover.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace qwen35::test {

using VideoBytes = std::vector<uint8_t>;

struct VideoSpec {
  std::string muxer = "mp4";      // FFmpeg muxer name: "mp4", "mov", "matroska", "avi", "gif", "webp", ...
  std::string encoder = "mpeg4";  // FFmpeg encoder name: "mpeg4", "mjpeg", "png", "gif" (gray), "libwebp_anim", ...
  int width = 64;
  int height = 48;
  int frames = 30;
  int fps = 10;
  int keyframe_interval = 10;  // gop_size
  int max_b_frames = 0;
  // AVColorSpace and AVColorRange values; 2 and 0 leave the stream untagged.
  int colorspace = 2;
  int color_range = 0;
  // When set, every frame is this one flat Y, Cb, Cr colour (no chroma edges to interpolate).
  bool flat = false;
  uint8_t flat_yuv[3] = {0, 0, 0};
};

// Frame t of the synthetic clip: a diagonal gradient that moves with t and a bright square that
// walks across, so that every frame differs from its neighbours (or the flat colour).
VideoBytes encode_video(const VideoSpec& spec);

// A file with one audio stream (PCM silence) and no video, in the given muxer ("mov", "matroska").
VideoBytes encode_audio_only(const std::string& muxer);

// A WAV file of PCM silence, written by hand.
VideoBytes wav_silence(int samples);

}  // namespace qwen35::test
