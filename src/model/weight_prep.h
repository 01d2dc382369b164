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

// The type each matrix gets: from its GGUF name, stored type and shape. Returning the stored
// type keeps it.
using WeightTypeRule = std::function<DType(const std::string& name, DType stored, int64_t rows, int64_t cols)>;

// The rule of a `--weights` value: the checkpoint's own types ("" or "auto"), a plain float type
// ("bf16", "f16", "f32", applied to float matrices only), or a llama-quantize preset ("q8_0",
// "q4_0", "q4_k_m", ...). Throws qwen35::Error naming the accepted values for anything else.
WeightTypeRule weight_type_rule(const std::string& weights);
// The names weight_type_rule accepts, for help texts and errors.
std::string weight_type_names();

// Engine-owned weight memory: one page buffer per prepared matrix.
class WeightStore {
 public:
  uint8_t* allocate(size_t bytes);
  size_t bytes() const { return bytes_; }

 private:
  std::vector<PageBuffer> buffers_;
  size_t bytes_ = 0;
};

struct WeightPrepOptions {
  WeightTypeRule rule;                          // empty: keep every stored type
  const kernels::KernelTable* table = nullptr;  // repack for this table (nullptr: the active one)
  ThreadPool* pool = nullptr;                   // required
  bool release_sources = false;                 // the views point into mapped files: drop their pages when done
  std::function<void(double fraction)> progress;
};

// Prepares every matrix in `matrices` in place (their views then point into `store`).
void prepare_weights(const std::vector<NamedMatrix>& matrices, WeightStore& store, const WeightPrepOptions& options);

}  // namespace qwen35
