// Causal softmax attention over an f16 or f32 KV cache (kernels.h AttnArgs, all KV heads at once):
// a workgroup per (query token t, query head). Query row (t, g) of KV head kh sees keys
// 0 .. n_kv0 + t - 1 when causal (all n_kv0 otherwise). Keys go in tiles of 64 at fixed positions
// with an online softmax (running max and sum), so a row's result depends on its own keys only,
// not on how many query tokens the block holds.
#version 460
#include "common.glsl"

layout(local_size_x = 64) in;
layout(push_constant) uniform Params {
  F32 q;  // query head qh of token t at q + t * q_stride + qh * head_dim, qh = kh * group + g
  F32 o;  // likewise with o_stride
  U32 k;  // key row j, KV head kh: head_dim values at element j * kv_stride + kh * head_dim
  U32 v;
  uint q_stride, o_stride, kv_stride, n_q, group, head_dim, n_kv0, causal, kv_f16;
  float scale;
} p;

const uint MAX_DIMS_PER_THREAD = 8u;  // head_dim <= 512
shared float s_q[512];
shared float s_p[64];
shared float s_red[64];

float kv_at(U32 base, uint e) {
  return p.kv_f16 != 0u ? half_bits_to_float((base.v[e >> 1] >> (16u * (e & 1u))) & 0xffffu) : uintBitsToFloat(base.v[e]);
}

void main() {
  const uint t = gl_WorkGroupID.x, qh = gl_WorkGroupID.y, lid = gl_LocalInvocationID.x;
  const uint kh = qh / p.group, hd = p.head_dim;
  const uint n = p.causal != 0u ? p.n_kv0 + t : p.n_kv0;
  for (uint d = lid; d < hd; d += 64u) s_q[d] = p.q.v[t * p.q_stride + qh * hd + d];
  barrier();
  float acc[MAX_DIMS_PER_THREAD];
  for (uint r = 0u; r < MAX_DIMS_PER_THREAD; ++r) acc[r] = 0.0;
  float m = -1.0 / 0.0, l = 0.0;
  for (uint j0 = 0u; j0 < n; j0 += 64u) {
    const uint j = j0 + lid;
    float s = -1.0 / 0.0;
    if (j < n) {
      const uint kr = j * p.kv_stride + kh * hd;
      float dot = 0.0;
      for (uint d = 0u; d < hd; ++d) dot = fma(s_q[d], kv_at(p.k, kr + d), dot);
      s = dot * p.scale;
    }
    s_red[lid] = s;
    barrier();
    for (uint h = 32u; h > 0u; h >>= 1) {
      if (lid < h) s_red[lid] = max(s_red[lid], s_red[lid + h]);
      barrier();
    }
    const float m_new = max(m, s_red[0]);
    barrier();
    const float pj = j < n ? exp_q(s - m_new) : 0.0;
    s_p[lid] = pj;
    s_red[lid] = pj;
    barrier();
    for (uint h = 32u; h > 0u; h >>= 1) {
      if (lid < h) s_red[lid] += s_red[lid + h];
      barrier();
    }
    const float corr = exp_q(m - m_new);  // 0 on the first tile (m = -inf)
    l = l * corr + s_red[0];
    m = m_new;
    const uint tile = min(64u, n - j0);
    for (uint r = 0u; r < MAX_DIMS_PER_THREAD; ++r) {
      const uint d = lid + 64u * r;
      if (d >= hd) break;
      float a = acc[r] * corr;
      for (uint jj = 0u; jj < tile; ++jj) a = fma(s_p[jj], kv_at(p.v, (j0 + jj) * p.kv_stride + kh * hd + d), a);
      acc[r] = a;
    }
    barrier();
  }
  const float inv = 1.0 / l;
  for (uint r = 0u; r < MAX_DIMS_PER_THREAD; ++r) {
    const uint d = lid + 64u * r;
    if (d >= hd) break;
    p.o.v[t * p.o_stride + qh * hd + d] = acc[r] * inv;
  }
}
