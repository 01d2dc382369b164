// The --type names of `qwen35 convert`: llama-quantize's presets (model/quant_mix) with their
// llama_ftype ids and per-tensor type plans for the GGUF exporter.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "model/gguf_export.h"
#include "model/quant_mix.h"

namespace qwen35::app {

// Throws naming the valid names.
QuantPreset find_preset(const std::string& name);
std::string preset_names();
// Whether an mmproj may be written in this type (f32, f16, bf16, q8_0: the projector files seen).
bool mmproj_preset_ok(QuantPreset p);

// The exporter's type plan for `p` over the tensors of one file, for a decoder with `n_gqa` query
// heads per KV head and `n_experts` routed experts (0: dense): llama-quantize's rules (F32/F16/BF16
// and everything it never quantizes are what llama.cpp's converter writes).
std::function<std::vector<DType>(const std::vector<ExportTensor>&)> preset_plan(QuantPreset p, int n_gqa, int n_experts);

}  // namespace qwen35::app
