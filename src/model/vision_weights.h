// The vision tower's weights (spec 2.3): typed views into the mapped checkpoint for the matrices,
// f32 copies for biases, LayerNorm parameters and the position table.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "io/checkpoint.h"
#include "io/gguf.h"
#include "kernels/kernels.h"
#include "model/config.h"

namespace qwen35 {

using kernels::WeightMatrix;

// One affine LayerNorm: y = (x - mean) / sqrt(var + eps) * weight + bias.
struct LayerNormWeights {
  std::vector<float> weight;  // [n]
  std::vector<float> bias;    // [n]
};

// A linear layer with bias: y = x W^T + b.
struct LinearWeights {
  WeightMatrix w;          // [out, in]
  std::vector<float> b;    // [out]
};

struct VisionBlockWeights {
  LayerNormWeights norm1;  // [D]
  LinearWeights qkv;       // [3D, D]: rows [q (heads x hd) ; k ; v]
  LinearWeights proj;      // [D, D]
  LayerNormWeights norm2;  // [D]
  LinearWeights fc1;       // [I, D]
  LinearWeights fc2;       // [D, I]
};

struct VisionWeights {
  // Conv3d weight [D, C, T, P, P] seen as the matrix [D, C*T*P*P]: the conv's kernel equals its
  // stride, so each patch is one dot product per output channel, and the (c, t, y, x) order of
  // the weight's trailing dims is the order of a pixel_values row.
  LinearWeights patch_embed;
  std::vector<float> pos_table;  // [side*side, D], row-major grid: index = row*side + col
  std::vector<VisionBlockWeights> blocks;
  LayerNormWeights merger_norm;  // [D], per patch before grouping
  LinearWeights merger_fc1;      // [D*m*m, D*m*m]
  LinearWeights merger_fc2;      // [out_hidden, D*m*m]

  // The prefix of the vision tensors in this checkpoint ("model.visual." or "visual."), or ""
  // when it has none (a text-only checkpoint).
  static std::string prefix(const Checkpoint& ck);

  // Binds every vision tensor, checking names, dtypes and shapes against the config; throws
  // qwen35::Error with the expected and the actual value. The checkpoint must outlive the weights.
  static VisionWeights bind(const Checkpoint& ck, const VisionConfig& cfg);
  // The same from a clip mmproj GGUF (projector qwen3vl_merger, gguf.md section 4). Its patch
  // embedding comes as two Conv2d kernels (time 0 and 1); they are interleaved into the Conv3d
  // matrix above (one small copy), which for a still image equals llama.cpp's sum of the two.
  static VisionWeights bind_mmproj(const GgufFile& file, const VisionConfig& cfg);

  // Bytes the views point to when they are not in a mapped file (the interleaved patch kernel).
  std::shared_ptr<const std::vector<uint8_t>> owned;
};

}  // namespace qwen35
