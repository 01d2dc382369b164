// The layer primitives (layer_ops.h) on the CPU: the kernel table over the thread pool on host
// rows, in the layers' scratch. The decoder's CPU backend runs its layers on one; the MTP head's
// attention and the experts' MLPs run theirs on one made for the call (attention_forward,
// mlp_forward).
#pragma once

#include <span>

#include "kernels/compute.h"
#include "model/attention.h"
#include "model/config.h"
#include "model/deltanet.h"
#include "model/layer_ops.h"
#include "model/mlp.h"

namespace qwen35 {

class CpuLayerOps final : public LayerOps {
 public:
  // Rows::kIn is `in` (its quantized forms are shared by the matrices that read it), Rows::kOut
  // `out` [in.T(), H]. cfg may be null for an MLP alone.
  CpuLayerOps(const kernels::Compute& c, const TextConfig* cfg, kernels::Activations& in, float* out)
      : c_(c), cfg_(cfg), in_(&in), out_(out) {}

  // Where the layer's other rows are and which sequences they belong to, set before its body
  // runs (the scratch reserved for in.T() rows).
  DeltaNetScratch* deltanet = nullptr;
  std::span<const DeltaNetSpan> deltanet_spans;  // in row order, their T summing to in.T()
  AttentionScratch* attention = nullptr;         // with its angles set (set_positions)
  std::span<const AttentionSpan> attention_spans;
  int rope_half = 0;
  MlpScratch* mlp = nullptr;

  void bind(kernels::Activations& in, float* out) {
    in_ = &in;
    out_ = out;
  }

  void linear(Rows in, std::span<const LinearTo> outs) override;
  using LayerOps::linear;
  bool delta_rule_fused(const DeltaNetWeights& w, int index) override;
  void conv(const DeltaNetWeights& w, int index) override;
  void gates(const DeltaNetWeights& w) override;
  void delta(const DeltaNetWeights& w, int index) override;
  void head_norms(const AttentionWeights& w) override;
  void rope() override;
  void attend(int index) override;
  void output_gate() override;
  void swiglu() override;

 private:
  int64_t T() const { return in_->T(); }
  float* rows(Rows r) const;
  const TextConfig& cfg() const;

  const kernels::Compute& c_;
  const TextConfig* cfg_;
  kernels::Activations* in_;
  float* out_;
  int64_t gate_width_ = 0;  // I, of the last projection into Rows::kGate
};

}  // namespace qwen35
