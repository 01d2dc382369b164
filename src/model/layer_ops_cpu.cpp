#include "model/layer_ops_cpu.h"

#include "core/error.h"

namespace qwen35 {

namespace {

template <typename S>
S& scratch(S* s, const char* what) {
  if (!s) fail("CpuLayerOps: a ", what, " primitive without its scratch");
  return *s;
}

}  // namespace

const TextConfig& CpuLayerOps::cfg() const {
  if (!cfg_) fail("CpuLayerOps: a mixer primitive without the model's config");
  return *cfg_;
}

float* CpuLayerOps::rows(Rows r) const {
  switch (r) {
    case Rows::kIn: break;  // read through in_ (its quantized forms)
    case Rows::kOut: return out_;
    case Rows::kQkv: return scratch(deltanet, "DeltaNet").qkv.data();
    case Rows::kZ: return scratch(deltanet, "DeltaNet").z.data();
    case Rows::kBeta: return scratch(deltanet, "DeltaNet").beta.data();
    case Rows::kG: return scratch(deltanet, "DeltaNet").g.data();
    case Rows::kCore: return scratch(deltanet, "DeltaNet").core.data();
    case Rows::kQg: return scratch(attention, "attention").qg.data();
    case Rows::kQ: return scratch(attention, "attention").q.data();
    case Rows::kK: return scratch(attention, "attention").k.data();
    case Rows::kV: return scratch(attention, "attention").v.data();
    case Rows::kAttn: return scratch(attention, "attention").attn.data();
    case Rows::kGate: return scratch(mlp, "MLP").gate.data();
    case Rows::kUp: return scratch(mlp, "MLP").up.data();
  }
  fail("CpuLayerOps: the layer input is not an output");
}

void CpuLayerOps::linear(Rows in, std::span<const LinearTo> outs) {
  constexpr size_t kMaxOuts = 4;
  if (outs.empty() || outs.size() > kMaxOuts) fail("CpuLayerOps::linear of ", outs.size(), " matrices");
  kernels::LinearOut o[kMaxOuts];
  for (size_t i = 0; i < outs.size(); ++i) {
    o[i] = {outs[i].w, rows(outs[i].out), outs[i].w->rows};
    if (outs[i].out == Rows::kGate) gate_width_ = outs[i].w->rows;
  }
  // A mixer's or the MLP's own rows are bound as the input of the projection that reads them.
  kernels::Activations* x = in_;
  const int64_t cols = outs[0].w->cols;
  switch (in) {
    case Rows::kIn: break;
    case Rows::kCore: x = &scratch(deltanet, "DeltaNet").core_in; break;
    case Rows::kAttn: x = &scratch(attention, "attention").attn_in; break;
    case Rows::kGate: x = &scratch(mlp, "MLP").mid; break;
    default: fail("CpuLayerOps::linear over rows no projection reads");
  }
  if (in != Rows::kIn) x->bind(rows(in), T(), cols);
  kernels::linear_fused(c_, *x, std::span<const kernels::LinearOut>(o, outs.size()));
}

bool CpuLayerOps::delta_rule_fused(const DeltaNetWeights& w, int) {
  return deltanet_fused(c_, cfg(), w, deltanet_spans, scratch(deltanet, "DeltaNet"), T());
}

void CpuLayerOps::conv(const DeltaNetWeights& w, int) {
  deltanet_conv(c_, cfg(), w, deltanet_spans, scratch(deltanet, "DeltaNet"), T());
}

void CpuLayerOps::gates(const DeltaNetWeights& w) { deltanet_gates(c_, cfg(), w, scratch(deltanet, "DeltaNet"), T()); }

void CpuLayerOps::delta(const DeltaNetWeights& w, int) {
  deltanet_delta(c_, cfg(), w, deltanet_spans, scratch(deltanet, "DeltaNet"));
}

void CpuLayerOps::head_norms(const AttentionWeights& w) {
  attention_head_norms(c_, cfg(), w, scratch(attention, "attention"), T());
}

void CpuLayerOps::rope() { attention_rope(c_, cfg(), rope_half, scratch(attention, "attention"), T()); }

void CpuLayerOps::attend(int) { attention_attend(c_, cfg(), attention_spans, scratch(attention, "attention"), T()); }

void CpuLayerOps::output_gate() { attention_output_gate(c_, cfg(), scratch(attention, "attention"), T()); }

void CpuLayerOps::swiglu() {
  mlp_swiglu(c_, scratch(mlp, "MLP"), T(), gate_width_);
}

}  // namespace qwen35
