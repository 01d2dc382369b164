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
#include "model/layer_ops_cpu.h"
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
  void add_norm(const std::vector<float>& w) override;
  void moe(const MoeWeights& w, int layer, DecoderObserver* observer) override;
  void add() override;
  void observe(int layer, DecoderObserver& observer) override;
  void finish(const std::vector<float>& final_norm, float* out) override;
  void logits(const kernels::WeightMatrix& lm_head, std::span<const int64_t> rows, float* out) override;

  // The layer primitives: CpuLayerOps on the workspace, each mixer over the layer's segments.
  void linear(Rows in, std::span<const LinearTo> outs) override { ops_.linear(in, outs); }
  using LayerOps::linear;
  bool delta_rule_fused(const DeltaNetWeights& w, int index) override;
  void conv(const DeltaNetWeights& w, int index) override;
  void gates(const DeltaNetWeights& w) override { ops_.gates(w); }
  void delta(const DeltaNetWeights& w, int index) override;
  void head_norms(const AttentionWeights& w) override { ops_.head_norms(w); }
  void rope() override { ops_.rope(); }
  void attend(int index) override;
  void output_gate() override { ops_.output_gate(); }
  void swiglu() override { ops_.swiglu(); }

 private:
  class LayerRows;
  const kernels::Compute& c_;
  const TextConfig& cfg_;
  const MRope& rope_;
  DecoderWorkspace& ws_;
  CpuLayerOps ops_;
  std::span<const DecoderSegment> segments_;
  std::unique_ptr<LayerRows> rows_;
  int64_t T_all_ = 0;
  const float* out_ = nullptr;  // the last finish()'s rows, for logits()
  std::vector<float> logit_rows_;
};

}  // namespace qwen35
