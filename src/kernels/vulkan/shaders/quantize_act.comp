// Activations to int8 blocks of ACT_BLOCK (kernels/quant/act_format.h, exactly): amax of the block;
// d = amax / 127 and q = round-half-even(x * (1 / d)); d = 0 (q = 0) below 1e-30,
// d = NaN (q = 0) when a value is not finite. A workgroup per (block, row).
#version 460
#include "common.glsl"

layout(local_size_x = 32) in;
layout(push_constant) uniform Params {
  F32 x;   // row t at x + t * x_stride
  U32 q;   // [T, n] int8, 4 per word
  F32 d;   // [T, n / ACT_BLOCK]
  uint n, T, x_stride;
} p;

shared float s_max[32];
shared uint s_bad[32];

void main() {
  const uint b = flat_group(), t = gl_WorkGroupID.z, lid = gl_LocalInvocationID.x;
  const uint nb = p.n / ACT_BLOCK;
  if (b >= nb) return;
  const uint x0 = t * p.x_stride + b * ACT_BLOCK;
  float amax = 0.0;
  uint bad = 0u;
  for (uint j = lid; j < ACT_BLOCK; j += 32u) {
    const float a = abs(p.x.v[x0 + j]);
    if (!(a <= 3.4028234663852886e38)) bad = 1u;
    else amax = max(amax, a);
  }
  s_max[lid] = amax;
  s_bad[lid] = bad;
  barrier();
  for (uint h = 16u; h > 0u; h >>= 1) {
    if (lid < h) {
      s_max[lid] = max(s_max[lid], s_max[lid + h]);
      s_bad[lid] |= s_bad[lid + h];
    }
    barrier();
  }
  amax = s_max[0];
  const bool zero = s_bad[0] != 0u || amax < 1e-30;
  precise float db = amax / 127.0;
  precise float id = 1.0 / db;
  if (lid == 0u) p.d.v[t * nb + b] = s_bad[0] != 0u ? uintBitsToFloat(0x7fc00000u) : zero ? 0.0 : db;
  // Each thread packs whole words: 4 quants.
  for (uint w = lid; w < ACT_BLOCK / 4u; w += 32u) {
    uint word = 0u;
    for (uint k = 0u; k < 4u; ++k) {
      precise float v = p.x.v[x0 + 4u * w + k] * id;
      const int qv = zero ? 0 : int(roundEven(v));
      word |= (uint(qv) & 0xffu) << (8u * k);
    }
    p.q.v[(t * p.n + b * ACT_BLOCK) / 4u + w] = word;
  }
}
