// Typed reads of the keys of preprocessor_config.json and video_preprocessor_config.json, shared by
// the image and video processors: an absent or null key keeps the caller's default, a wrong type is
// an error naming the file (origin) and the key.
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

// The checks both processors make on their normalisation: finite means, finite non-zero stds,
// a positive rescale factor.
inline void check_normalisation(const std::array<double, 3>& mean, const std::array<double, 3>& std_dev,
                                double rescale_factor, const std::string& origin) {
  for (int i = 0; i < 3; ++i) {
    if (!std::isfinite(mean[size_t(i)]) || !std::isfinite(std_dev[size_t(i)]) || float(std_dev[size_t(i)]) == 0.0f)
      fail(origin, ": image_mean must be finite and image_std finite and non-zero (channel ", i, ")");
  }
  if (!(rescale_factor > 0) || !std::isfinite(rescale_factor))
    fail(origin, ": rescale_factor must be positive, got ", rescale_factor);
}

}  // namespace qwen35::processor_json
