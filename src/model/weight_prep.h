// Turns a model's bound weights into what the kernels read best, once, at load: matrices stored in
// floats are quantized to a preset's types when asked (quantize at load), and block-format
// matrices are repacked into the layout of the kernel table that will run them. The results live
// in engine-owned memory (WeightStore); the source pages are handed back as each matrix is done,
// so resident memory is not file + copy.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "core/page_buffer.h"
#include "core/thread_pool.h"
#include "kernels/kernels.h"

namespace qwen35 {

// A matrix of the model, named as in GGUF files (token_embd.weight, blk.3.attn_qkv.weight,
// v.blk.0.ffn_up.weight, ...): the names llama-quantize's type rules are written for.
struct NamedMatrix {
  std::string name;
  kernels::WeightMatrix* w;
  bool row_lookup = false;  // read by row (the embedding table): kept in plain rows, never repacked
};

// The dtype each matrix gets under a `--weights` value: the checkpoint's own ("" or "auto"), a
// float type ("f32", "f16", "bf16": float matrices only), or a llama-quantize preset ("q8_0",
// "q4_0", "q4_k_m", "q6_k", "iq4_xs", ...) with llama-quantize's per-tensor rules (quant_mix.h;
// tensors it never quantizes keep their stored type). Block-format matrices (GGUF) keep theirs.
// `matrices` must be the whole model in any order; n_layers counts MTP layers; n_gqa = heads /
// KV heads. Throws qwen35::Error naming the accepted values for an unknown value.
struct WeightModelShape {
  int n_layers = 0;
  int n_gqa = 1;
  int n_experts = 0;  // routed experts of an MoE model (its mix has rules of its own)
  bool tied_embeddings = false;
};
std::vector<DType> choose_weight_types(const std::string& weights, const std::vector<NamedMatrix>& matrices,
                                       const WeightModelShape& shape);
// The vision tower's dtypes under a `--weights` value: Q8_0 (where rows split into its blocks)
// for any quantized preset, the preset's float type for f32/f16/bf16, else the stored types.
// The patch embedding keeps its type, as llama-quantize leaves it.
std::vector<DType> vision_weight_types(const std::string& weights, const std::vector<NamedMatrix>& matrices);
// The values choose_weight_types accepts, for help texts and errors.
std::string weight_type_names();

// Engine-owned weight memory: one page buffer per prepared matrix.
class WeightStore {
 public:
  uint8_t* allocate(size_t bytes);
  size_t bytes() const { return bytes_; }
  // Whether p points into memory of this store.
  bool owns(const void* p) const;

 private:
  std::vector<PageBuffer> buffers_;
  size_t bytes_ = 0;
};

struct WeightPrepOptions {
  const kernels::KernelTable* table = nullptr;  // repack for this table (nullptr: the active one)
  ThreadPool* pool = nullptr;                   // required
  bool release_sources = false;                 // views into mapped files: drop their pages when done
  std::function<void(double fraction)> progress;
};

// Prepares every matrix in `matrices` in place, converting matrix i to types[i] (their views then
// point into `store`).
void prepare_weights(const std::vector<NamedMatrix>& matrices, const std::vector<DType>& types, WeightStore& store,
                     const WeightPrepOptions& options);

}  // namespace qwen35
