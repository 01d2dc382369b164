// Float weights (f32, f16 or bf16 rows) against f32 activations: y[t, o] = sum_i x[t, i] W[o, i].
// A workgroup per (o, t); each thread sums a fixed stride of the row and the partial sums meet in
// a fixed tree, so a row's result does not depend on T or on where it sits. ROW_PER_THREAD (short
// rows, cols <= 256: the choice depends on the matrix alone): a thread per (o, t) sums its row in
// order, 64 rows per workgroup, no barriers.
#version 460
#include "common.glsl"

layout(local_size_x = 64) in;
layout(push_constant) uniform Params {
  U32 w;   // rows of row_bytes
  F32 x;   // row t at x + t * x_stride
  F32 y;   // row t at y + t * y_stride
  uint rows, cols, row_bytes, T, x_stride, y_stride;
} p;

#if !defined(ROW_PER_THREAD)
shared float s_sum[64];
#endif

float weight(uint o, uint i) {
#if defined(FMT_F32)
  return uintBitsToFloat(p.w.v[(o * p.row_bytes) / 4u + i]);
#elif defined(FMT_F16)
  return f16_at(p.w, o * p.row_bytes + 2u * i);
#elif defined(FMT_BF16)
  return uintBitsToFloat(u16_at(p.w, o * p.row_bytes + 2u * i) << 16);
#else
#error "define one FMT_*"
#endif
}

#if defined(ROW_PER_THREAD)
void main() {
  const uint o = flat_group() * 64u + gl_LocalInvocationID.x, t = gl_WorkGroupID.z;
  if (o >= p.rows) return;
  float s = 0.0;
  for (uint i = 0u; i < p.cols; ++i) s = fma(p.x.v[t * p.x_stride + i], weight(o, i), s);
  p.y.v[t * p.y_stride + o] = s;
}
#else
void main() {
  const uint o = flat_group(), t = gl_WorkGroupID.z, lid = gl_LocalInvocationID.x;
  if (o >= p.rows) return;
  float s = 0.0;
  for (uint i = lid; i < p.cols; i += 64u) s = fma(p.x.v[t * p.x_stride + i], weight(o, i), s);
  s_sum[lid] = s;
  barrier();
  for (uint h = 32u; h > 0u; h >>= 1) {
    if (lid < h) s_sum[lid] += s_sum[lid + h];
    barrier();
  }
  if (lid == 0u) p.y.v[t * p.y_stride + o] = s_sum[0];
}
#endif
