// Video files -> 8-bit RGB frames, the input of the video processor.
//
// FFmpeg's libraries do the work in process (libavformat demuxes, libavcodec decodes, libswscale
// converts), reading the file from memory through a custom AVIOContext: no temporary files, no
// subprocess.
//
// The RGB frames are those of the video goldens (tests/data/tiny-qwen35/golden_video), which were
// made by the FFmpeg 5.1 command line
//   ffmpeg -threads 1 -i CLIP -map 0:v:0 -fps_mode passthrough
//          -sws_flags bicubic+accurate_rnd+full_chroma_int -f rawvideo -pix_fmt rgb24 -
// that is: every decoded frame once (no frame-rate conversion), swscale with SWS_BICUBIC |
// SWS_ACCURATE_RND | SWS_FULL_CHR_H_INT, and the colour details the scale filter sets for each
// frame: the YCbCr matrix the stream is tagged with (BT.601 when it is untagged), its tagged range
// (limited when untagged). Display-matrix rotation is not applied (neither does torchcodec).
//
// Frames are numbered 0..frame_count-1 in presentation order. frame_count is counted when the
// file is opened, from the stream's packets without decoding them (torchcodec's "exact" seek
// mode: one frame per packet, packets the demuxer marks as discarded left out); a frame the
// decoder then fails to produce is an error, never a silently shorter video.
//
// Cost: opening reads every packet header of the file once (no decoding). decode_frames decodes
// from the keyframe before each wanted frame, seeking when that keyframe lies ahead of where the
// demuxer is, so a long file costs what the groups of pictures of its sampled frames cost. Each
// call decodes every packet at most once, plus one pass from the top if a seek lands somewhere
// unexpected (the decoder then stops seeking and reads the file in order).
//
// Hostile input: the file size, the frame size (from the stream header, and again per decoded
// frame), the frame count, the declared and measured durations and the output size are checked
// before the work they bound. Only a short list of containers (MP4/MOV, Matroska/WebM, AVI,
// MPEG-TS/PS, FLV, GIF) and codecs (H.264, HEVC, VP8, VP9, AV1, MPEG-4 Part 2, MPEG-1/2, Motion
// JPEG, GIF) is accepted, and a demuxer cannot open other files or URLs (HLS, concat, MOV
// references). Truncated packets, damaged frames and decoder errors are errors. Every failure is a
// qwen35::Error naming the problem.
//
// Animated GIF is a short video here: FFmpeg's gif demuxer times each frame by its own delay (a
// delay under 2/100 s counts as 1/10 s, as browsers show it), and its decoder draws each frame over
// the canvas the frames before it left, RGBA that loses its alpha on conversion (as in torchcodec).
// Only the first frame is a keyframe, so any frame costs every frame before it: frame count x
// canvas pixels is bounded (max_animation_pixels). FFmpeg 5.1 cannot decode animated WebP, which
// AnimatedWebpDecoder (video_webp.h) reads instead; decode_image (image.h) gives either format's
// first frame as a still image.
//
// Threads: a VideoDecoder belongs to one thread at a time; different decoders are independent.
// FFmpeg's log output is captured into these errors instead of going to stderr (process-wide).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "io/image.h"

namespace qwen35 {

struct VideoDecodeOptions {
  // Largest accepted file for read_video_file (VideoDecoder takes bytes already in memory).
  int64_t max_file_bytes = int64_t(1) << 30;
  // Largest accepted width * height of a frame (8K UHD is 33.2 M pixels).
  int64_t max_pixels = int64_t(32) << 20;
  // Most frames a stream may have (about 9.7 hours at 30 fps).
  int64_t max_frames = int64_t(1) << 20;
  // Longest duration a container or stream may declare, or its timestamps may span.
  double max_duration_seconds = 24.0 * 3600.0;
  // Most RGB bytes one decode_frames call may return (frames asked x width x height x 3).
  int64_t max_output_bytes = int64_t(4) << 30;
  // Animations (GIF, WebP) have no keyframe after the first: frame count x canvas pixels, the work
  // of one pass, at most this (2 Gi pixels: 1000 frames of 1920x1080, 8000 of 480x540).
  int64_t max_animation_pixels = int64_t(1) << 31;
};

// Throws qwen35::Error when an animation of `frames` frames of width x height passes
// options.max_animation_pixels (or the frame limit).
void check_animation_cost(int64_t frames, int width, int height, const VideoDecodeOptions& options);

struct VideoInfo;

// The frames a decode_frames call asks for, sorted and each once, after checking that every index
// is one of the video's frames and that the frames asked for fit options.max_output_bytes.
std::vector<int64_t> frames_to_decode(std::span<const int64_t> indices, const VideoInfo& info,
                                      const VideoDecodeOptions& options);

struct VideoInfo {
  std::string container;  // the demuxer's name, e.g. "mov,mp4,m4a,3gp,3g2,mj2"
  std::string codec;      // the decoder's name, e.g. "h264"
  int width = 0;
  int height = 0;
  int64_t frame_count = 0;   // frames the stream holds (see the numbering above)
  double average_fps = 0.0;  // the stream's avg_frame_rate; 0 when the container gives none
  // From the packets' timestamps: the end of the last frame minus the start of the first.
  double duration_seconds = 0.0;

  // torchcodec's exact-mode average_fps: frame_count / duration_seconds, or average_fps when
  // the timestamps give no duration. Equal to average_fps for constant-rate files.
  double fps_from_content() const;
};

// What a decoder has done so far; tests use it to check the cost model.
struct VideoDecodeStats {
  int64_t frames_decoded = 0;  // frames that came out of the decoder, kept or not
  int64_t seeks = 0;           // seeks to a keyframe
  int64_t restarts = 0;        // openings at the start of the file to decode (the first call makes one)
};

class VideoDecoder {
 public:
  // Opens the container, picks its first video stream (cover art does not count), checks the
  // limits and counts the frames. Throws qwen35::Error. The bytes are borrowed: they must outlive
  // the decoder (a request's file is decoded where it lies, never copied).
  explicit VideoDecoder(std::span<const uint8_t> bytes, const VideoDecodeOptions& options = {});
  // A temporary vector would be gone before the first frame is decoded.
  explicit VideoDecoder(std::vector<uint8_t>&& bytes, const VideoDecodeOptions& options = {}) = delete;
  ~VideoDecoder();
  VideoDecoder(VideoDecoder&&) noexcept;
  VideoDecoder& operator=(VideoDecoder&&) noexcept;
  VideoDecoder(const VideoDecoder&) = delete;
  VideoDecoder& operator=(const VideoDecoder&) = delete;

  const VideoInfo& info() const;
  const VideoDecodeStats& stats() const;

  // The frames at `indices` (each in 0..frame_count-1; any order, repeats allowed), returned in
  // the order asked. Throws qwen35::Error; a call after an error starts again from the top.
  std::vector<RgbImage> decode_frames(std::span<const int64_t> indices);
  // Every frame, in order.
  std::vector<RgbImage> decode_all_frames();

 private:
  struct State;
  void open();
  std::unique_ptr<State> state_;
};

// A file's bytes, refused above options.max_file_bytes before anything is read.
std::vector<uint8_t> read_video_file(const std::string& path, const VideoDecodeOptions& options = {});

}  // namespace qwen35
