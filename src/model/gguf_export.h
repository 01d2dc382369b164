// Writing a loaded model as GGUF the way llama.cpp's converter and llama-quantize do (gguf.md
// sections 2, 4, 6, 8, 10): qwen35 metadata and tensor names, norms stored as 1 + w, ssm_a as
// -exp(A_log), the squeezed conv, value heads in tiled order, F32 for every vector, norm, conv and
// ssm_a; the vision tower as a clip mmproj with the Conv3d split in two along time.
//
// The source is a bound Model, so an HF folder and a GGUF file (requantizing) export the same way:
// rows are read as f32 (dequantized when the source is a block format) and encoded to each
// tensor's type; a tensor already in its target type is copied byte for byte, as llama-quantize
// does. The tokenizer keys are the text layer's (text/tokenizer_gguf.h); the caller adds them.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/thread_pool.h"
#include "io/gguf_writer.h"
#include "model/model.h"

namespace qwen35 {

// A tensor about to be written: GGUF name, ggml shape (ne[0] = row length) and whether it is a
// matrix that may be quantized (2-D, name ending in ".weight", not a norm or ssm_conv1d).
struct ExportTensor {
  std::string name;
  std::vector<int64_t> ne;
  bool quantizable = false;
};

struct GgufExportOptions {
  // The type of a quantizable matrix: llama-quantize's per-tensor choice for a preset, keyed by
  // the GGUF name. The other tensors are F32 whatever this says.
  std::function<DType(const std::string& gguf_name, int64_t rows, int64_t cols)> matrix_type;
  // Alternatively the types of all tensors at once (llama-quantize's rules count tensors of a kind
  // over the whole model); used instead of matrix_type when set. One entry per tensor, in order.
  std::function<std::vector<DType>(const std::vector<ExportTensor>& tensors)> plan_types;
  int64_t file_type = 0;     // general.file_type (llama_ftype)
  bool mtp = true;           // write the MTP block when the model has one
  std::string name;          // general.name; empty: none
  ThreadPool* pool = nullptr;  // rows are encoded in parallel when given
};

// A type choice for converter-style uniform outputs (F32, F16, BF16, Q8_0, ...): every matrix in
// `type`, F16 where a row does not split into its blocks (as the converter falls back).
std::function<DType(const std::string&, int64_t, int64_t)> uniform_matrix_type(DType type);

// Adds general.* and qwen35.* keys and every text tensor (and the MTP block) of `model` to `w`.
void export_text_gguf(const Model& model, const GgufExportOptions& options, GgufWriter& w);

// Adds the clip mmproj keys and tensors of the model's vision tower (throws when it has none).
// `matrix_type` as above for the mmproj matrices (F32/F16/BF16/Q8_0 in practice); the patch
// kernels are F16 for an F16 file and F32 otherwise, the position table F32 (gguf.md D10).
// `image_mean`/`image_std` go into clip.vision.image_mean/std.
void export_mmproj_gguf(const Model& model, const GgufExportOptions& options, const std::array<double, 3>& image_mean,
                        const std::array<double, 3>& image_std, GgufWriter& w);

// The same from a tower's config and weights alone (a random tower built in memory, with no text
// model beside it); `layer_norm_eps` goes into clip.vision.attention.layer_norm_epsilon.
void export_mmproj_gguf(const VisionConfig& config, const VisionWeights& weights, float layer_norm_eps,
                        const GgufExportOptions& options, const std::array<double, 3>& image_mean,
                        const std::array<double, 3>& image_std, GgufWriter& w);

}  // namespace qwen35
