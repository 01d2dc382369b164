// The CPU backend of the decoder's forward: the kernel table on host rows, over the thread pool,
// in a DecoderWorkspace (text_decoder.h). What the model computed before the seam existed, call for
// call: its outputs are the reference's bits.
#pragma once

#include <memory>
#include <span>
#include <vector>

#include "kernels/compute.h"
#include "model/config.h"
#include "model/decoder_backend.h"
#include "model/rope.h"
#include "model/text_decoder.h"

namespace qwen35 {

class CpuDecoderBackend final : public DecoderBackend {
 public:
  CpuDecoderBackend(const kernels::Compute& c, const TextConfig& cfg, const MRope& rope, DecoderWorkspace& ws);
  ~CpuDecoderBackend() override;

  void begin(const float* inputs, const int32_t* positions, std::span<const DecoderSegment> segments,
             int64_t T) override;
  bool enter_layer(int i) override;
  void norm(const std::vector<float>& w) override;
  void deltanet(const DeltaNetWeights& w, int index) override;
  void attention(const AttentionWeights& w, int index) override;
  void add_norm(const std::vector<float>& w) override;
  void mlp(const MlpWeights& w) override;
  void moe(const MoeWeights& w, int layer, DecoderObserver* observer) override;
  void add() override;
  void observe(int layer, DecoderObserver& observer) override;
  void finish(const std::vector<float>& final_norm, float* out) override;
  void logits(const kernels::WeightMatrix& lm_head, std::span<const int64_t> rows, float* out) override;

 private:
  class LayerRows;
  const kernels::Compute& c_;
  const TextConfig& cfg_;
  const MRope& rope_;
  DecoderWorkspace& ws_;
  std::span<const DecoderSegment> segments_;
  std::unique_ptr<LayerRows> rows_;
  int64_t T_all_ = 0;
  const float* out_ = nullptr;  // the last finish()'s rows, for logits()
  std::vector<float> logit_rows_;
};

}  // namespace qwen35
