// The DeltaNet's causal depthwise conv and SiLU (kernels.h ConvArgs) over T new rows: one thread
// per channel sums its K taps in tap order from zero (the reference's float steps), token by
// token, then moves the channel's state (its last K inputs, oldest first) past the T rows.
#version 460
#include "common.glsl"

layout(local_size_x = 64) in;
layout(push_constant) uniform Params {
  F32 x;      // [T, C]
  F32 taps;   // tap j of channel ch at taps[j * C + ch]
  F32 state;  // [C, K]
  F32 y;      // [T, C]
  uint T, C, K;
} p;

void main() {
  const uint ch = gl_GlobalInvocationID.x;
  if (ch >= p.C) return;
  const int K = int(p.K);
  for (int t = 0; t < int(p.T); ++t) {
    precise float acc = 0.0;
    for (int j = 0; j < K; ++j) {
      const int src = t - (K - 1) + j;
      const float xv = src >= 0 ? p.x.v[uint(src) * p.C + ch] : p.state.v[ch * p.K + uint(K + src)];
      precise float prod = p.taps.v[uint(j) * p.C + ch] * xv;
      acc = acc + prod;
    }
    p.y.v[uint(t) * p.C + ch] = silu(acc);
  }
  const int keep = max(K - int(p.T), 0);
  float window[16];
  for (int j = 0; j < keep; ++j) window[j] = p.state.v[ch * p.K + uint(K - keep + j)];
  for (int j = keep; j < K; ++j) window[j] = p.x.v[uint(int(p.T) - (K - j)) * p.C + ch];
  for (int j = 0; j < K; ++j) p.state.v[ch * p.K + uint(j)] = window[j];
}
