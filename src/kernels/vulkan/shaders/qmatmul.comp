// Block-format weights against int8 activations: y[t, o] = the canonical dot of weight row o with
// activation row t (kernels/quant/quant_ref.h). A workgroup per (o, t): its threads take blocks,
// each the exact int32 sums I1 = sum_s sc_s sum q a and I2 = sum_s mn_s sum a of its block, and
// one thread folds them in block order with the reference's two float steps, so every output has
// the CPU reference's bits whatever the shapes.
#version 460
#include "common.glsl"
#include "blocks.glsl"

layout(local_size_x = 64) in;
layout(push_constant) uniform Params {
  U32 w;    // rows of row_bytes
  U32 aq;   // [T, cols] int8 quants, 4 per word
  F32 ad;   // [T, cols / BLOCK_ELEMS] activation block scales
  F32 y;    // row t at y + t * y_stride
  uint rows, cols, row_bytes, T, y_stride;
} p;

shared int s_i1[64];
shared int s_i2[64];
shared float s_d[64];
shared float s_dmin[64];

int act_q(uint t, uint e) { return sbyte_at(p.aq, t * p.cols + e); }

void main() {
  const uint o = flat_group(), t = gl_WorkGroupID.z, lid = gl_LocalInvocationID.x;
  if (o >= p.rows) return;
  const uint nb = p.cols / BLOCK_ELEMS;
  precise float acc = 0.0;
  for (uint b0 = 0u; b0 < nb; b0 += 64u) {
    const uint blk = b0 + lid;
    if (blk < nb) {
      const uint wb = o * p.row_bytes + blk * BLOCK_BYTES, e0 = blk * BLOCK_ELEMS;
      int i1 = 0, i2 = 0;
      for (uint s = 0u; s < BLOCK_ELEMS / SUB; ++s) {
        int part = 0, asum = 0;
        for (uint j = s * SUB; j < (s + 1u) * SUB; ++j) {
          const int a = act_q(t, e0 + j);
          part += blk_q(p.w, wb, j) * a;
          asum += a;
        }
        i1 += blk_sc(p.w, wb, s) * part;
        if (HAS_MIN) i2 += blk_mn(p.w, wb, s) * asum;
      }
      s_i1[lid] = i1;
      s_i2[lid] = i2;
      s_d[lid] = blk_d(p.w, wb);
      s_dmin[lid] = blk_dmin(p.w, wb);
    }
    barrier();
    if (lid == 0u) {
      for (uint k = 0u; k < 64u && b0 + k < nb; ++k) {
        const float da = p.ad.v[t * nb + b0 + k];
        precise float dd = s_d[k] * da;
        acc = fma_exact(float(s_i1[k]), dd, acc);
        if (HAS_MIN) {
          precise float dm = -(s_dmin[k] * da);
          acc = fma_exact(float(s_i2[k]), dm, acc);
        }
      }
    }
    barrier();
  }
  if (lid == 0u) p.y.v[t * p.y_stride + o] = acc;
}
