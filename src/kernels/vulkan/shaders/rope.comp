// Rotate-half RoPE in place over T tokens: in each of `heads` vectors of token t the pairs
// (d, d + half) turn by the angle of cos[t, d], sin[t, d] (MRoPE's sections are in the tables,
// built on the host from the positions). One thread per pair.
#version 460
#include "common.glsl"

layout(local_size_x = 64) in;
layout(push_constant) uniform Params {
  F32 x;    // head h of token t at x + t * token_stride + h * head_stride
  F32 cos;  // row t at cos + t * cs_stride
  F32 sin;
  uint T, heads, head_stride, token_stride, half_dim, cs_stride;
} p;

void main() {
  const uint i = gl_GlobalInvocationID.x + gl_GlobalInvocationID.y * gl_NumWorkGroups.x * 64u;
  if (i >= p.T * p.heads * p.half_dim) return;
  const uint d = i % p.half_dim, h = (i / p.half_dim) % p.heads, t = i / (p.half_dim * p.heads);
  const uint at = t * p.token_stride + h * p.head_stride + d;
  const float a = p.x.v[at], b = p.x.v[at + p.half_dim];
  const float c = p.cos.v[t * p.cs_stride + d], s = p.sin.v[t * p.cs_stride + d];
  precise float ra = a * c - b * s;
  precise float rb = b * c + a * s;
  p.x.v[at] = ra;
  p.x.v[at + p.half_dim] = rb;
}
