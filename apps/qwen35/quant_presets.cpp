#include "apps/qwen35/quant_presets.h"

#include <algorithm>
#include <cctype>
#include <vector>

#include "core/error.h"
#include "model/gguf_export.h"

namespace qwen35::app {
namespace {

QuantPreset uniform(const char* name, int64_t ftype, DType type, bool mmproj_ok) {
  return {name, ftype, mmproj_ok, [type](const TextConfig&, bool) { return uniform_matrix_type(type); }};
}

const std::vector<QuantPreset>& presets() {
  static const std::vector<QuantPreset> all = {
      uniform("f32", 0, DType::F32, true),
      uniform("f16", 1, DType::F16, true),
      uniform("bf16", 32, DType::BF16, true),
      uniform("q8_0", 7, DType::Q8_0, true),
  };
  return all;
}

}  // namespace

std::string preset_names() {
  std::string s;
  for (const QuantPreset& p : presets()) s += (s.empty() ? "" : ", ") + p.name;
  return s;
}

QuantPreset find_preset(const std::string& name) {
  std::string lower = name;
  std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return char(std::tolower(c)); });
  for (const QuantPreset& p : presets())
    if (p.name == lower) return p;
  fail("unknown --type '", name, "' (one of: ", preset_names(), ")");
}

}  // namespace qwen35::app
