// The Qwen3-VL video processor as Qwen3.5 uses it (golden_video/README.md, steps 1-10): decoded
// RGB frames -> frames sampled at 2 per second -> one common size for all of them (a pixel budget
// for the whole clip) -> torchvision's float bicubic resize -> fused rescale and normalise ->
// temporal pairs (an odd count repeats the last frame) -> patches; plus each pair's time stamp and
// the prompt text a video placeholder becomes.
//
// pixel_values has the image processor's layout (image_processor.h) with grid (pairs, h, w): rows
// pair by pair, merge blocks in raster order within a pair; a row's index c * 512 + f * 256 +
// y * 16 + x takes frame f of the pair. Each pair is positioned and attended like an image of grid
// (1, h, w), so the runtime treats it as one.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "model/image_processor.h"
#include "model/mrope_positions.h"

namespace qwen35 {

struct VideoProcessorConfig : VisionPatchConfig {
  // The pixel budget of the whole clip, all sampled frames together. The defaults are the published
  // Qwen3.5 video_preprocessor_config.json's: every Qwen3.5 release ships that file, so a folder
  // without it (GGUF) gets the same numbers.
  VideoProcessorConfig() {
    min_pixels = 4096;
    max_pixels = 25165824;
  }
  bool do_sample_frames = true;  // false: every decoded frame is used
  double sample_fps = 2;         // frames sampled per second of the clip ("fps")
  int64_t min_frames = 4;
  int64_t max_frames = 768;

  // Parses video_preprocessor_config.json text; absent keys keep the defaults above. Throws
  // qwen35::Error naming origin for bad values or an unsupported resample filter.
  static VideoProcessorConfig parse(const std::string& json_text, const std::string& origin);
  // Reads <model_dir>/video_preprocessor_config.json, or returns the defaults when there is none.
  static VideoProcessorConfig load(const std::string& model_dir);
};

// The metadata frame rate the processor assumes when a clip reports none.
inline constexpr double kUnknownVideoFps = 24.0;

// Steps 1-2: which of total_frames decoded frames are used. n = int(total / fps * sample_fps)
// clamped to [min_frames, max_frames] and to total (fewer than min_frames frames: all of them),
// then numpy's linspace(0, total - 1, n) rounded half to even. fps <= 0 means unknown (24).
// Without do_sample_frames: every frame. Throws qwen35::Error when total_frames < 1.
std::vector<int64_t> sample_frame_indices(int64_t total_frames, double fps, const VideoProcessorConfig& config);

// Step 4: the common frame size for `frames` frames of height x width: both sides multiples of
// factor (Python's half-to-even round), the clip's total area (frames rounded up to a multiple of
// temporal_factor) within [min_pixels, max_pixels], scaled with the actual frame count. Throws
// qwen35::Error for a side below factor or an aspect ratio above 200 (as the reference does).
ResizedSize video_smart_resize(int64_t frames, int64_t height, int64_t width, int64_t factor, int64_t temporal_factor,
                               int64_t min_pixels, int64_t max_pixels);

// Step 9: each pair's time in seconds, the mean of its first and last frame's index / fps, the
// indices padded like the frames (an odd count repeats the last). fps <= 0 means unknown (24).
std::vector<double> pair_timestamps(std::span<const int64_t> frame_indices, double fps, int temporal_patch_size);

// Step 10: "<0.3 seconds>", Python's f"<{t:.1f} seconds>" (the correctly rounded double).
std::string timestamp_text(double seconds);

// Step 10: the prompt text one video placeholder (<|vision_start|><|video_pad|><|vision_end|>)
// becomes: per pair its stamp, <|vision_start|>, tokens_per_pair x <|video_pad|>, <|vision_end|>.
std::string expand_video_placeholder(std::span<const double> timestamps, int64_t tokens_per_pair);

// Decoded frames in memory: `frames` pictures of height x width, packed RGB, frame after frame.
struct VideoClipView {
  std::span<const uint8_t> rgb;  // [frames, height, width, 3]
  int64_t frames = 0;
  int64_t height = 0;
  int64_t width = 0;
  double fps = 0;  // metadata frame rate; <= 0: unknown
};

struct ProcessedVideo {
  std::vector<int64_t> frame_indices;  // the sampled frames (before pair padding)
  std::vector<double> timestamps;      // per pair, seconds
  ImageGrid grid;                      // (pairs, h, w) in patches: video_grid_thw
  int64_t patch_dim = 0;
  int64_t tokens_per_pair = 0;         // grid.h * grid.w / merge^2
  // Pair i as an image of grid (1, h, w): its rows of pixel_values. Kept per pair so the runtime
  // can hand each to the vision tower on its own without a copy of the whole clip.
  std::vector<ProcessedImage> pairs;

  int64_t num_tokens() const { return grid.t * tokens_per_pair; }
  // pixel_values_videos: every pair's rows in order [grid.t * grid.h * grid.w, patch_dim] (a copy).
  std::vector<float> pixel_values() const;
};

// Steps 6-8 on frames that are already sampled and resized to a common size (sides multiples of
// factor()): rescale and normalise (fused as torch does it: (x - mean / rescale) / (std / rescale)
// in float32), pad to whole pairs by repeating the last frame, flatten. Throws qwen35::Error for no
// frames or frames of different or unsuitable sizes.
ProcessedVideo patchify_video(std::span<const RgbImage> resized_frames, const VideoProcessorConfig& config);

// The size the processor resizes this clip's frames to (or their own size when do_resize is off),
// from the frame count and size alone: what a caller needs to count tokens before any pixels move.
ResizedSize video_target_size(int64_t sampled_frames, int64_t height, int64_t width, const VideoProcessorConfig& config);

// Frames handed over one at a time (by a decoder that seeks to each): the clip's frame count, size
// and rate, known before any frame is decoded, and a call that gives frame `index`.
struct VideoFrameSource {
  int64_t frames = 0;
  int64_t height = 0;
  int64_t width = 0;
  double fps = 0;  // metadata frame rate; <= 0: unknown
  // Frame `index` at height x width; asked only for the sampled frames, in ascending order, once
  // each. Throws qwen35::Error.
  std::function<RgbImage(int64_t index)> frame;
};

// The frames of a clip in memory as a source (each asked frame copied out). Throws qwen35::Error
// for no frames, a size that is not positive or RGB bytes that are not frames x height x width x 3.
// The view's bytes must outlive the source.
VideoFrameSource frame_source(const VideoClipView& clip);

// The whole processor: sample, resize (resize_bicubic_torch), patchify, time stamps. Each sampled
// frame is resized as soon as it arrives, so at most one frame of the source's size is held and
// the other frames are never asked for. Throws qwen35::Error for an empty or inconsistent clip.
ProcessedVideo preprocess_video(const VideoFrameSource& source, const VideoProcessorConfig& config);
// The same over decoded frames in memory (frame_source).
ProcessedVideo preprocess_video(const VideoClipView& clip, const VideoProcessorConfig& config);

}  // namespace qwen35
