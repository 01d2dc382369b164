// The vision tower, spec 6 (a Qwen3-VL-style ViT without DeepStack), top to bottom:
// patch embedding (Conv3d as a matmul) + bilinearly interpolated learned position table,
// `depth` pre-LayerNorm blocks (2-D rotary attention within each image frame, tanh-GELU MLP),
// then the patch merger (LayerNorm per patch, m*m neighbours concatenated, erf-GELU MLP) that
// turns every m x m block of patches into one token of the text decoder's width.
//
// Patch order everywhere (input rows, intermediates, output tokens) is the image processor's:
// per image, per frame, merge blocks in raster order and the m*m patches of a block in raster
// order (spec 7.3). Output tokens are therefore blocks in raster order, images one after another.
//
// forward() is a VisionRun taken to the end. A VisionRun does the same work in bounded slices
// (a row range of one stage), so a caller can interleave other work and stop between any two;
// rows never depend on how they are grouped, so every slicing gives forward()'s exact output.
//
// Thread contract: a VisionTower is immutable after construction; forward() may run on several
// threads at once as long as each passes its own Compute (thread pool). A VisionRun belongs to
// one thread at a time.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "kernels/compute.h"
#include "model/config.h"
#include "model/mrope_positions.h"
#include "model/vision_weights.h"

namespace qwen35 {

// Receives intermediate results of one forward call (for tests and `qwen35 forward --dump`);
// default: ignore. Every tensor covers all images of the call, rows in patch order:
//   "vision.patch_embed"        [Np, D]      Conv3d output (with bias)
//   "vision.pos_embed_interp"   [Np, D]      interpolated position embedding that is added to it
//   "vision.rot_pos_emb"        [Np, hd/2]   rotary angles [row angles | column angles]
//   "vision.block.<j>"          [Np, D]      output of block j
//   "vision.last_hidden_state"  [Np, D]      output of the last block (input of the merger)
class VisionObserver {
 public:
  virtual ~VisionObserver() = default;
  virtual void on_tensor(const std::string& name, const float* data, int64_t rows, int64_t cols) {}
};

class VisionRun;

class VisionTower {
 public:
  // Checks the config's derived sizes (head_dim divisible by 4 for the 2-D rotary halves, square
  // position table); throws qwen35::Error otherwise.
  VisionTower(const VisionConfig& cfg, VisionWeights weights);

  const VisionConfig& config() const { return cfg_; }
  const VisionWeights& weights() const { return w_; }
  int64_t patch_dim() const { return w_.patch_embed.w.cols; }  // C * T * P * P
  int head_dim() const { return head_dim_; }
  int64_t out_dim() const { return cfg_.out_hidden_size; }

  // Rows of pixel_values (sum of t*h*w) and output tokens (sum of t*h*w / m^2) for these grids.
  // Throw qwen35::Error for a non-positive grid or h, w that are not multiples of the merge size.
  int64_t num_patches(std::span<const ImageGrid> grids) const;
  int64_t num_tokens(std::span<const ImageGrid> grids) const;

  // pixel_values [rows, patch_dim] of one or more images (grids in the same order) ->
  // out [num_tokens(grids), out_dim]. Throws qwen35::Error when rows != num_patches(grids).
  // Images never attend to each other, so one call over several images equals separate calls.
  void forward(const kernels::Compute& c, const float* pixel_values, int64_t rows, std::span<const ImageGrid> grids,
               float* out, VisionObserver* observer = nullptr) const;
  std::vector<float> encode(const kernels::Compute& c, const std::vector<float>& pixel_values,
                            std::span<const ImageGrid> grids, VisionObserver* observer = nullptr) const;

  // Rows per slice of a VisionRun (a stage's rows are done in chunks of this many).
  static constexpr int64_t kSliceRows = 512;

  // The two position inputs, in patch order (exposed for tests; forward() computes them itself).
  // out [num_patches, D]: the learned table bilinearly interpolated to each image's grid.
  void position_embeddings(std::span<const ImageGrid> grids, float* out) const;
  // out [num_patches, head_dim/2]: angles [row * inv_freq | col * inv_freq] of each patch.
  void rotary_angles(std::span<const ImageGrid> grids, float* out) const;

 private:
  VisionConfig cfg_;
  VisionWeights w_;
  int head_dim_ = 0;
  int64_t table_side_ = 0;       // the position table is table_side_ x table_side_
  std::vector<float> inv_freq_;  // [head_dim / 4]
};

// One forward call of the tower in slices. The tower, pixel_values and observer must outlive it.
class VisionRun {
 public:
  // Throws qwen35::Error as forward() does for bad grids or rows.
  VisionRun(const VisionTower& tower, const float* pixel_values, int64_t rows, std::vector<ImageGrid> grids,
            VisionObserver* observer = nullptr, int64_t slice_rows = VisionTower::kSliceRows);
  ~VisionRun();
  VisionRun(const VisionRun&) = delete;
  VisionRun& operator=(const VisionRun&) = delete;

  // Does one slice; false once the output is complete (then step() does nothing).
  bool step(const kernels::Compute& c);
  bool done() const;
  // [num_tokens, out_dim], complete once done().
  std::vector<float>& output();
  int64_t slices() const;  // done so far
  // The stage the next step() works on: "patch_embed", "positions", "qkv", "attention", "proj",
  // "mlp", "merger" or "done" (benchmarks time the stages by it).
  const char* stage() const;

 private:
  struct State;
  std::unique_ptr<State> s_;
};

}  // namespace qwen35
