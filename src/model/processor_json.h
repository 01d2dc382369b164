// Typed reads of the keys of preprocessor_config.json and video_preprocessor_config.json, shared by
// the image and video processors (their common part, VisionPatchConfig, read and checked in one
// place): an absent or null key keeps the caller's default, a wrong type is an error naming the
// file (origin) and the key.
#pragma once

#include <array>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "model/vision_patch_config.h"

namespace qwen35::processor_json {

inline int64_t get_int(const nlohmann::json& j, const char* key, int64_t fallback, const std::string& origin) {
  if (!j.contains(key) || j.at(key).is_null()) return fallback;
  const nlohmann::json& v = j.at(key);
  if (v.is_number_integer()) return v.get<int64_t>();
  // Some exporters write whole numbers as floats (e.g. 65536.0).
  if (v.is_number_float() && std::floor(v.get<double>()) == v.get<double>() && std::fabs(v.get<double>()) < 9e15)
    return int64_t(v.get<double>());
  fail(origin, ": ", key, " must be an integer, got ", v.dump());
}

inline double get_double(const nlohmann::json& j, const char* key, double fallback, const std::string& origin) {
  if (!j.contains(key) || j.at(key).is_null()) return fallback;
  const nlohmann::json& v = j.at(key);
  if (!v.is_number()) fail(origin, ": ", key, " must be a number, got ", v.dump());
  return v.get<double>();
}

inline bool get_bool(const nlohmann::json& j, const char* key, bool fallback, const std::string& origin) {
  if (!j.contains(key) || j.at(key).is_null()) return fallback;
  const nlohmann::json& v = j.at(key);
  if (!v.is_boolean()) fail(origin, ": ", key, " must be true or false, got ", v.dump());
  return v.get<bool>();
}

// A per-channel list of 3 numbers; a single number applies to every channel, as in HF.
inline std::array<double, 3> get_triple(const nlohmann::json& j, const char* key, std::array<double, 3> fallback,
                                        const std::string& origin) {
  if (!j.contains(key) || j.at(key).is_null()) return fallback;
  const nlohmann::json& v = j.at(key);
  if (v.is_number()) return {v.get<double>(), v.get<double>(), v.get<double>()};
  if (!v.is_array() || v.size() != 3 || !v[0].is_number() || !v[1].is_number() || !v[2].is_number())
    fail(origin, ": ", key, " must be a list of 3 numbers (one per RGB channel), got ", v.dump());
  return {v[0].get<double>(), v[1].get<double>(), v[2].get<double>()};
}

// The text of a processor config file, or nothing when the model folder has none.
inline std::optional<std::string> read_optional(const std::filesystem::path& path) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return std::nullopt;
  std::ifstream in(path, std::ios::binary);
  if (!in) fail("cannot read ", path.string());
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// The keys of VisionPatchConfig into `c` (absent keys keep its values), and the resample filter,
// which must be 3 (PIL's BICUBIC, the only one implemented). With `legacy_pixel_keys`, also the
// min_pixels / max_pixels of older image processor files, inside size or at the top level (the
// top-level keys win, as in HF).
inline void read_patch_config(const nlohmann::json& j, VisionPatchConfig& c, bool legacy_pixel_keys,
                              const std::string& origin) {
  c.patch_size = int(get_int(j, "patch_size", c.patch_size, origin));
  c.temporal_patch_size = int(get_int(j, "temporal_patch_size", c.temporal_patch_size, origin));
  c.merge_size = int(get_int(j, "merge_size", c.merge_size, origin));
  if (j.contains("size") && !j.at("size").is_null()) {
    const nlohmann::json& size = j.at("size");
    if (!size.is_object()) fail(origin, ": size must be an object, got ", size.dump());
    const int64_t min_pixels = legacy_pixel_keys ? get_int(size, "min_pixels", c.min_pixels, origin) : c.min_pixels;
    const int64_t max_pixels = legacy_pixel_keys ? get_int(size, "max_pixels", c.max_pixels, origin) : c.max_pixels;
    c.min_pixels = get_int(size, "shortest_edge", min_pixels, origin);
    c.max_pixels = get_int(size, "longest_edge", max_pixels, origin);
  }
  if (legacy_pixel_keys) {
    c.min_pixels = get_int(j, "min_pixels", c.min_pixels, origin);
    c.max_pixels = get_int(j, "max_pixels", c.max_pixels, origin);
  }
  c.image_mean = get_triple(j, "image_mean", c.image_mean, origin);
  c.image_std = get_triple(j, "image_std", c.image_std, origin);
  c.rescale_factor = get_double(j, "rescale_factor", c.rescale_factor, origin);
  c.do_resize = get_bool(j, "do_resize", c.do_resize, origin);
  c.do_rescale = get_bool(j, "do_rescale", c.do_rescale, origin);
  c.do_normalize = get_bool(j, "do_normalize", c.do_normalize, origin);
  const int64_t resample = get_int(j, "resample", 3, origin);
  if (resample != 3) fail(origin, ": resample = ", resample, " is not supported (only 3 = BICUBIC)");
}

// The checks both processors make: patch sizes in range, 1 <= min_pixels <= max_pixels, finite
// means, finite non-zero stds, a positive rescale factor.
inline void check_patch_config(const VisionPatchConfig& c, const std::string& origin) {
  if (c.patch_size < 1 || c.patch_size > 1024) fail(origin, ": patch_size must be in [1, 1024], got ", c.patch_size);
  if (c.temporal_patch_size < 1 || c.temporal_patch_size > 64)
    fail(origin, ": temporal_patch_size must be in [1, 64], got ", c.temporal_patch_size);
  if (c.merge_size < 1 || c.merge_size > 64) fail(origin, ": merge_size must be in [1, 64], got ", c.merge_size);
  if (c.min_pixels < 1 || c.max_pixels < c.min_pixels)
    fail(origin, ": need 1 <= size.shortest_edge (", c.min_pixels, ") <= size.longest_edge (", c.max_pixels, ")");
  for (int i = 0; i < 3; ++i) {
    if (!std::isfinite(c.image_mean[size_t(i)]) || !std::isfinite(c.image_std[size_t(i)]) ||
        float(c.image_std[size_t(i)]) == 0.0f)
      fail(origin, ": image_mean must be finite and image_std finite and non-zero (channel ", i, ")");
  }
  if (!(c.rescale_factor > 0) || !std::isfinite(c.rescale_factor))
    fail(origin, ": rescale_factor must be positive, got ", c.rescale_factor);
}

// The text of a processor config file parsed as a JSON object; throws naming origin.
inline nlohmann::json parse_object(const std::string& json_text, const std::string& origin) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(json_text);
  } catch (const nlohmann::json::exception& e) {
    fail(origin, ": invalid JSON: ", e.what());
  }
  if (!j.is_object()) fail(origin, ": expected a JSON object");
  return j;
}

}  // namespace qwen35::processor_json
