#include "model/video_processor.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "io/image_resize.h"
#include "model/processor_json.h"

namespace qwen35 {
namespace {

using nlohmann::json;
using processor_json::get_bool;
using processor_json::get_double;
using processor_json::get_int;

double metadata_fps(double fps) { return fps > 0 ? fps : kUnknownVideoFps; }

// Every uint8 value's float per channel, as the video processor computes it in float32 tensors.
// Fused (rescale and normalise): mean and std become float32 tensors times 1 / rescale_factor, then
// (x - mean) / std; rescale alone multiplies by the factor as a float; normalise alone uses mean
// and std as given.
struct ChannelTables {
  float lut[3][256];
};

ChannelTables channel_tables(const VideoProcessorConfig& c) {
  ChannelTables t;
  const float inverse = float(1.0 / c.rescale_factor);
  for (int ch = 0; ch < 3; ++ch) {
    float mean = float(c.image_mean[size_t(ch)]), deviation = float(c.image_std[size_t(ch)]);
    if (c.do_rescale && c.do_normalize) {
      mean *= inverse;
      deviation *= inverse;
    }
    for (int v = 0; v < 256; ++v) {
      float x = float(v);
      if (c.do_normalize) x = (x - mean) / deviation;
      else if (c.do_rescale) x = x * float(c.rescale_factor);
      t.lut[ch][v] = x;
    }
  }
  return t;
}

}  // namespace

VideoProcessorConfig VideoProcessorConfig::parse(const std::string& json_text, const std::string& origin) {
  const json j = processor_json::parse_object(json_text, origin);
  VideoProcessorConfig c;
  processor_json::read_patch_config(j, c, /*legacy_pixel_keys=*/false, origin);
  c.do_sample_frames = get_bool(j, "do_sample_frames", c.do_sample_frames, origin);
  c.sample_fps = get_double(j, "fps", c.sample_fps, origin);
  c.min_frames = get_int(j, "min_frames", c.min_frames, origin);
  c.max_frames = get_int(j, "max_frames", c.max_frames, origin);
  if (j.contains("num_frames") && !j.at("num_frames").is_null())
    fail(origin, ": num_frames is not supported (frames are sampled by fps)");

  processor_json::check_patch_config(c, origin);
  if (!(c.sample_fps > 0) || !std::isfinite(c.sample_fps)) fail(origin, ": fps must be positive, got ", c.sample_fps);
  if (c.min_frames < 1 || c.max_frames < c.min_frames)
    fail(origin, ": need 1 <= min_frames (", c.min_frames, ") <= max_frames (", c.max_frames, ")");
  return c;
}

VideoProcessorConfig VideoProcessorConfig::load(const std::string& model_dir) {
  const std::filesystem::path path = std::filesystem::path(model_dir) / "video_preprocessor_config.json";
  const std::optional<std::string> text = processor_json::read_optional(path);
  return text ? parse(*text, path.string()) : VideoProcessorConfig{};
}

std::vector<int64_t> sample_frame_indices(int64_t total_frames, double fps, const VideoProcessorConfig& config) {
  if (total_frames < 1) fail("a video needs at least one frame, got ", total_frames);
  std::vector<int64_t> indices;
  if (!config.do_sample_frames) {
    for (int64_t i = 0; i < total_frames; ++i) indices.push_back(i);
    return indices;
  }
  // int(total / fps * sample_fps): Python's int() truncates toward zero.
  const double wanted = double(total_frames) / metadata_fps(fps) * config.sample_fps;
  const int64_t n0 = wanted < 9e18 ? int64_t(wanted) : config.max_frames;
  const int64_t n = std::min({std::max(n0, config.min_frames), config.max_frames, total_frames});
  // numpy.linspace(0, total - 1, n): i * step with step = (total - 1) / (n - 1), the last point
  // exactly total - 1; .round() goes half to even.
  indices.resize(size_t(n));
  if (n == 1) return indices;  // linspace of one point: the start
  const double step = double(total_frames - 1) / double(n - 1);
  for (int64_t i = 0; i + 1 < n; ++i) indices[size_t(i)] = int64_t(std::nearbyint(double(i) * step));
  indices.back() = total_frames - 1;
  return indices;
}

ResizedSize video_smart_resize(int64_t frames, int64_t height, int64_t width, int64_t factor, int64_t temporal_factor,
                               int64_t min_pixels, int64_t max_pixels) {
  if (factor <= 0 || temporal_factor <= 0) fail("video_smart_resize: factors must be positive");
  if (frames < 1) fail("a video needs at least one frame, got ", frames);
  if (height < factor || width < factor)
    fail("video frames of ", height, "x", width, " (height x width) are too small: both sides must be at least ",
         factor, " pixels");
  if (double(std::max(height, width)) / double(std::min(height, width)) > 200)
    fail("video frames of ", height, "x", width, " have an aspect ratio above 200");
  const double f = double(factor);
  // Python's round() (half to even) for the sides, ceil for the frames.
  int64_t h = int64_t(std::nearbyint(double(height) / f)) * factor;
  int64_t w = int64_t(std::nearbyint(double(width) / f)) * factor;
  const int64_t t_bar = (frames + temporal_factor - 1) / temporal_factor * temporal_factor;
  // The budget covers the frames rounded up to whole pairs, the scale uses the frames themselves.
  const double volume = double(frames) * double(height) * double(width);
  if (double(t_bar) * double(h) * double(w) > double(max_pixels)) {
    const double beta = std::sqrt(volume / double(max_pixels));
    h = std::max(factor, int64_t(std::floor(double(height) / beta / f)) * factor);
    w = std::max(factor, int64_t(std::floor(double(width) / beta / f)) * factor);
  } else if (double(t_bar) * double(h) * double(w) < double(min_pixels)) {
    const double beta = std::sqrt(double(min_pixels) / volume);
    h = int64_t(std::ceil(double(height) * beta / f)) * factor;
    w = int64_t(std::ceil(double(width) * beta / f)) * factor;
  }
  return {h, w};
}

ResizedSize video_target_size(int64_t sampled_frames, int64_t height, int64_t width, const VideoProcessorConfig& config) {
  if (!config.do_resize) return {height, width};
  return video_smart_resize(sampled_frames, height, width, config.factor(), config.temporal_patch_size,
                            config.min_pixels, config.max_pixels);
}

std::vector<double> pair_timestamps(std::span<const int64_t> frame_indices, double fps, int temporal_patch_size) {
  if (frame_indices.empty()) return {};
  if (temporal_patch_size < 1) fail("temporal_patch_size must be positive, got ", temporal_patch_size);
  std::vector<int64_t> padded(frame_indices.begin(), frame_indices.end());
  while (padded.size() % size_t(temporal_patch_size) != 0) padded.push_back(padded.back());
  const double rate = metadata_fps(fps);
  std::vector<double> stamps;
  for (size_t i = 0; i < padded.size(); i += size_t(temporal_patch_size)) {
    const double first = double(padded[i]) / rate;
    const double last = double(padded[i + size_t(temporal_patch_size) - 1]) / rate;
    stamps.push_back((first + last) / 2);
  }
  return stamps;
}

std::string timestamp_text(double seconds) {
  // printf's %.1f rounds the double's exact value correctly, as Python's format does.
  char buf[64];
  std::snprintf(buf, sizeof buf, "<%.1f seconds>", seconds);
  return buf;
}

std::string expand_video_placeholder(std::span<const double> timestamps, int64_t tokens_per_pair) {
  static constexpr std::string_view kStart = "<|vision_start|>", kPad = "<|video_pad|>", kEnd = "<|vision_end|>";
  std::string out;
  out.reserve(timestamps.size() * (24 + kStart.size() + kEnd.size() + size_t(tokens_per_pair) * kPad.size()));
  for (double t : timestamps) {
    out += timestamp_text(t);
    out += kStart;
    for (int64_t i = 0; i < tokens_per_pair; ++i) out += kPad;
    out += kEnd;
  }
  return out;
}

std::vector<float> ProcessedVideo::pixel_values() const {
  std::vector<float> all;
  for (const ProcessedImage& p : pairs) all.insert(all.end(), p.pixel_values.begin(), p.pixel_values.end());
  return all;
}

ProcessedVideo patchify_video(std::span<const RgbImage> frames, const VideoProcessorConfig& config) {
  const int P = config.patch_size, T = config.temporal_patch_size, m = config.merge_size;
  const int64_t F = config.factor();
  if (frames.empty()) fail("a video needs at least one frame");
  const int width = frames[0].width, height = frames[0].height;
  if (width <= 0 || height <= 0 || width % F != 0 || height % F != 0)
    fail("video patches need sides that are multiples of ", F, ", got ", width, "x", height);
  for (const RgbImage& f : frames) {
    if (f.width != width || f.height != height)
      fail("video frames must share one size: ", f.width, "x", f.height, " after ", width, "x", height);
    if (f.pixels.size() != size_t(width) * size_t(height) * 3)
      fail("RgbImage of ", f.width, "x", f.height, " holds ", f.pixels.size(), " bytes");
  }
  const ChannelTables tables = channel_tables(config);

  ProcessedVideo out;
  const int64_t frame_count = int64_t(frames.size());
  out.grid = {(frame_count + T - 1) / T, height / P, width / P};
  out.patch_dim = config.patch_dim();
  out.tokens_per_pair = image_token_count({1, out.grid.h, out.grid.w}, m);
  const size_t plane = size_t(P) * size_t(P);
  for (int64_t pair = 0; pair < out.grid.t; ++pair) {
    ProcessedImage img;
    img.grid = {1, out.grid.h, out.grid.w};
    img.num_patches = out.grid.h * out.grid.w;
    img.patch_dim = out.patch_dim;
    img.num_tokens = out.tokens_per_pair;
    img.pixel_values.resize(size_t(img.num_patches) * size_t(img.patch_dim));
    float* row = img.pixel_values.data();
    for (int64_t bh = 0; bh < out.grid.h / m; ++bh) {
      for (int64_t bw = 0; bw < out.grid.w / m; ++bw) {
        for (int mh = 0; mh < m; ++mh) {
          for (int mw = 0; mw < m; ++mw, row += img.patch_dim) {
            const int64_t py = (bh * m + mh) * P, px = (bw * m + mw) * P;
            for (int c = 0; c < 3; ++c) {
              for (int f = 0; f < T; ++f) {
                // An odd count pads the last pair with the last frame.
                const RgbImage& frame = frames[size_t(std::min<int64_t>(pair * T + f, frame_count - 1))];
                float* dst = row + (size_t(c) * size_t(T) + size_t(f)) * plane;
                for (int y = 0; y < P; ++y) {
                  const uint8_t* src = frame.at(int(px), int(py + y)) + c;
                  for (int x = 0; x < P; ++x) dst[size_t(y) * size_t(P) + size_t(x)] = tables.lut[c][src[3 * x]];
                }
              }
            }
          }
        }
      }
    }
    out.pairs.push_back(std::move(img));
  }
  return out;
}

ProcessedVideo preprocess_video(const VideoFrameSource& source, const VideoProcessorConfig& config) {
  if (source.frames < 1 || source.height < 1 || source.width < 1)
    fail("a video needs frames of a positive size, got ", source.frames, " frames of ", source.width, "x",
         source.height);
  if (!std::isfinite(source.fps) || source.fps < 0)
    fail("a video's frame rate must be finite and not negative, got ", source.fps);
  const std::vector<int64_t> indices = sample_frame_indices(source.frames, source.fps, config);
  const ResizedSize size = video_target_size(int64_t(indices.size()), source.height, source.width, config);

  std::vector<RgbImage> resized;
  resized.reserve(indices.size());
  for (int64_t index : indices) {
    RgbImage frame = source.frame(index);
    if (frame.width != source.width || frame.height != source.height ||
        frame.pixels.size() != size_t(frame.width) * size_t(frame.height) * 3)
      fail("video frame ", index, " is ", frame.width, "x", frame.height, ", not the clip's ", source.width, "x",
           source.height);
    // At the clip's own size the resize is a copy: keep the frame instead.
    if (size.width == frame.width && size.height == frame.height) resized.push_back(std::move(frame));
    else resized.push_back(resize_bicubic_torch(frame, int(size.width), int(size.height)));
  }
  ProcessedVideo out = patchify_video(resized, config);
  out.frame_indices = indices;
  out.timestamps = pair_timestamps(indices, source.fps, config.temporal_patch_size);
  return out;
}

VideoFrameSource frame_source(const VideoClipView& clip) {
  if (clip.frames < 1 || clip.height < 1 || clip.width < 1)
    fail("a video needs frames of a positive size, got ", clip.frames, " frames of ", clip.width, "x", clip.height);
  const size_t frame_bytes = size_t(clip.height) * size_t(clip.width) * 3;
  if (clip.rgb.size() / frame_bytes != size_t(clip.frames) || clip.rgb.size() % frame_bytes != 0)
    fail("a video of ", clip.frames, " frames of ", clip.width, "x", clip.height, " needs ",
         size_t(clip.frames) * frame_bytes, " bytes of RGB, got ", clip.rgb.size());
  return {clip.frames, clip.height, clip.width, clip.fps, [rgb = clip.rgb, width = int(clip.width), height = int(clip.height),
                                                           frame_bytes](int64_t index) {
            RgbImage frame(width, height);
            std::memcpy(frame.pixels.data(), rgb.data() + size_t(index) * frame_bytes, frame_bytes);
            return frame;
          }};
}

ProcessedVideo preprocess_video(const VideoClipView& clip, const VideoProcessorConfig& config) {
  return preprocess_video(frame_source(clip), config);
}

}  // namespace qwen35
