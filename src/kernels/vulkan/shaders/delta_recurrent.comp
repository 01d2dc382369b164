// The gated delta rule, token by token (kernels.h DeltaRecurrentFn), for every value head at once:
// a workgroup per value head, a thread per state column j < dv. For each token
//   S <- e^g S;  u = S^T k;  S += k (beta (v - u))^T;  o = S^T q
// and column j needs only column j of S, so a thread keeps its column to itself and sums over i
// in the reference's order. Value head h reads key head h / (Hv / Hk), or h % Hk when `tiled`
// (GGUF's value-head order).
#version 460
#include "common.glsl"

layout(local_size_x = 64) in;
layout(push_constant) uniform Params {
  F32 q;     // key head kh of token t at q + t * qk_stride + kh * dk (l2-normed, q scaled)
  F32 k;
  F32 v;     // value head h of token t at v + t * v_stride + h * dv
  F32 beta;  // [t * gate_stride + h]
  F32 g;     // log-decay, likewise
  F32 S;     // [Hv, dk, dv]
  F32 o;     // value head h of token t at o + t * o_stride + h * dv
  uint T, Hv, Hk, dk, dv, qk_stride, v_stride, gate_stride, o_stride, tiled;
} p;

void main() {
  const uint h = gl_WorkGroupID.x;
  const uint kh = p.tiled != 0u ? h % p.Hk : h / (p.Hv / p.Hk);
  const uint s0 = h * p.dk * p.dv;
  for (uint j = gl_LocalInvocationID.x; j < p.dv; j += 64u) {
    for (uint t = 0u; t < p.T; ++t) {
      const uint qk = t * p.qk_stride + kh * p.dk;
      const float decay = exp_q(p.g.v[t * p.gate_stride + h]);
      const float beta = p.beta.v[t * p.gate_stride + h];
      precise float u = 0.0;
      for (uint i = 0u; i < p.dk; ++i) {
        precise float s = p.S.v[s0 + i * p.dv + j] * decay;
        p.S.v[s0 + i * p.dv + j] = s;
        precise float prod = s * p.k.v[qk + i];
        u = u + prod;
      }
      precise float delta = beta * (p.v.v[t * p.v_stride + h * p.dv + j] - u);
      precise float out_j = 0.0;
      for (uint i = 0u; i < p.dk; ++i) {
        precise float s = p.S.v[s0 + i * p.dv + j] + p.k.v[qk + i] * delta;
        p.S.v[s0 + i * p.dv + j] = s;
        precise float prod = s * p.q.v[qk + i];
        out_j = out_j + prod;
      }
      p.o.v[t * p.o_stride + h * p.dv + j] = out_j;
    }
  }
}
