// The norms of one row per workgroup (kernels.h): mode 0 RMSNorm x / sqrt(mean(x^2) + eps) * w,
// mode 1 the gated RMSNorm (that times silu(z)), mode 2 the l2 norm x / sqrt(sum(x^2) + eps) * scale.
// The sum of squares meets in a fixed tree: a row's bits do not depend on the rows around it.
#version 460
#include "common.glsl"

layout(local_size_x = 64) in;
layout(push_constant) uniform Params {
  F32 x;  // row r at x + r * x_stride
  F32 w;  // [n] (modes 0, 1)
  F32 z;  // row r at z + r * z_stride (mode 1)
  F32 y;  // row r at y + r * y_stride (may be x)
  uint n, rows, x_stride, z_stride, y_stride, mode;
  float eps, scale;
} p;

shared float s_sum[64];

void main() {
  const uint r = flat_group(), lid = gl_LocalInvocationID.x;
  if (r >= p.rows) return;
  const uint x0 = r * p.x_stride;
  float s = 0.0;
  for (uint i = lid; i < p.n; i += 64u) {
    const float v = p.x.v[x0 + i];
    s = fma(v, v, s);
  }
  s_sum[lid] = s;
  barrier();
  for (uint h = 32u; h > 0u; h >>= 1) {
    if (lid < h) s_sum[lid] += s_sum[lid + h];
    barrier();
  }
  const float ss = s_sum[0];
  precise float inv = 1.0 / sqrt(p.mode == 2u ? ss + p.eps : ss / float(p.n) + p.eps);
  for (uint i = lid; i < p.n; i += 64u) {
    precise float v = p.x.v[x0 + i] * inv;
    if (p.mode == 2u) v = v * p.scale;
    else v = v * p.w.v[i];
    if (p.mode == 1u) v = v * silu(p.z.v[r * p.z_stride + i]);
    p.y.v[r * p.y_stride + i] = v;
  }
}
