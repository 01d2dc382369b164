// Elementwise steps over n values, one thread each (kernels.h's formulas):
//   0 add           y += a
//   1 swiglu        y = silu(a) * b
//   2 silu          y = silu(a)
//   3 sigmoid       y = sigmoid(a)
//   4 sigmoid_gate  y *= sigmoid(a)
//   5 decay_gate    y = a * softplus(y + b)   (softplus linear above 20, as torch)
//   6 axpy          y += scale * a
#version 460
#include "common.glsl"

layout(local_size_x = 256) in;
layout(push_constant) uniform Params {
  F32 a;
  F32 b;
  F32 y;
  uint n, op;
  float scale;
} p;

void main() {
  const uint i = gl_GlobalInvocationID.x + gl_GlobalInvocationID.y * gl_NumWorkGroups.x * 256u;
  if (i >= p.n) return;
  precise float r;
  switch (p.op) {
    case 0u: r = p.y.v[i] + p.a.v[i]; break;
    case 1u: r = silu(p.a.v[i]) * p.b.v[i]; break;
    case 2u: r = silu(p.a.v[i]); break;
    case 3u: r = sigmoid(p.a.v[i]); break;
    case 4u: r = p.y.v[i] * sigmoid(p.a.v[i]); break;
    case 5u: {
      precise float v = p.y.v[i] + p.b.v[i];
      r = p.a.v[i] * softplus(v);
      break;
    }
    default: r = p.y.v[i] + p.scale * p.a.v[i]; break;
  }
  p.y.v[i] = r;
}
