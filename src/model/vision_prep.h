// The vision tower's matrices made ready for the kernels at load, under a `--weights` value (the
// same for a Hugging Face folder, a GGUF mmproj and benchmarks that build a tower in memory):
// vision_weight_types' dtypes, repacked for the kernel table, in the model's WeightStore.
#pragma once

#include <string>
#include <vector>

#include "model/vision_weights.h"
#include "model/weight_prep.h"

namespace qwen35 {

// Every matrix of the tower, GGUF-named (v.patch_embd.weight, v.blk.j.attn_qkv.weight, ...,
// mm.0.weight, mm.2.weight), in llama.cpp's mmproj order.
std::vector<NamedMatrix> vision_matrices(VisionWeights& w);

// Converts and repacks the tower's matrices in place (their views then point into `store`).
void prepare_vision_weights(VisionWeights& w, const std::string& weights, WeightStore& store,
                            const WeightPrepOptions& options);

}  // namespace qwen35
