// f32 -> f16 rows, round to nearest even with subnormals, infinities and NaNs as core/half.h's
// f32_to_f16 (integer steps only, so every device gives its bits): the f16 KV cache's append. A
// thread per pair of values (one 32-bit word of output).
#version 460
#include "common.glsl"

layout(local_size_x = 256) in;
layout(push_constant) uniform Params {
  F32 x;
  U32 y;
  uint pairs;
} p;

uint to_half(float f) {
  const uint bits = floatBitsToUint(f);
  const uint sign = (bits >> 16) & 0x8000u;
  const int e = int((bits >> 23) & 0xffu) - 127 + 15;
  uint mant = bits & 0x7fffffu;
  if (((bits >> 23) & 0xffu) == 0xffu) return sign | 0x7c00u | (mant != 0u ? 0x200u : 0u);
  if (e >= 31) return sign | 0x7c00u;
  if (e <= 0) {
    if (e < -10) return sign;
    mant |= 0x800000u;
    const uint shift = uint(14 - e);
    uint h = mant >> shift;
    const uint rem = mant & ((1u << shift) - 1u), mid = 1u << (shift - 1u);
    if (rem > mid || (rem == mid && (h & 1u) != 0u)) ++h;
    return sign | h;
  }
  uint h = sign | (uint(e) << 10) | (mant >> 13);
  const uint rem = mant & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (h & 1u) != 0u)) ++h;
  return h;
}

void main() {
  const uint i = gl_GlobalInvocationID.x + gl_GlobalInvocationID.y * gl_NumWorkGroups.x * 256u;
  if (i >= p.pairs) return;
  p.y.v[i] = to_half(p.x.v[2u * i]) | (to_half(p.x.v[2u * i + 1u]) << 16);
}
