// The --type names of `qwen35 convert`: converter-style uniform types and llama-quantize presets,
// each with its llama_ftype id and the per-tensor type choice.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "core/dtype.h"
#include "model/config.h"

namespace qwen35::app {

using MatrixTypeFn = std::function<DType(const std::string& gguf_name, int64_t rows, int64_t cols)>;

struct QuantPreset {
  std::string name;
  int64_t ftype = 0;
  bool mmproj_ok = false;  // usable for an mmproj (f32, f16, bf16, q8_0)
  std::function<MatrixTypeFn(const TextConfig& cfg, bool mtp)> chooser;
};

// Throws naming the valid names.
QuantPreset find_preset(const std::string& name);
std::string preset_names();

}  // namespace qwen35::app
