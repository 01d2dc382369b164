// Shared by every shader: tensors are buffer device addresses, read as 32-bit words (no 8- or
// 16-bit storage features needed), and the exact f16 -> f32 conversion of the block scales.
#extension GL_EXT_buffer_reference : require

layout(buffer_reference, std430, buffer_reference_align = 4) buffer F32 { float v[]; };
layout(buffer_reference, std430, buffer_reference_align = 4) buffer U32 { uint v[]; };

// Byte `off` of a word array.
uint byte_at(U32 p, uint off) { return (p.v[off >> 2] >> ((off & 3u) * 8u)) & 0xffu; }
int sbyte_at(U32 p, uint off) { return bitfieldExtract(int(byte_at(p, off)), 0, 8); }
uint u16_at(U32 p, uint off) { return byte_at(p, off) | (byte_at(p, off + 1u) << 8); }

// Exact for every f16 value, subnormals included (unpackHalf2x16 may flush them).
float half_bits_to_float(uint h) {
  const uint s = (h & 0x8000u) << 16, e = (h >> 10) & 31u, m = h & 0x3ffu;
  if (e == 0u) return uintBitsToFloat(s | floatBitsToUint(float(m) * 5.9604644775390625e-8));
  if (e == 31u) return uintBitsToFloat(s | 0x7f800000u | (m << 13));
  return uintBitsToFloat(s | ((e + 112u) << 23) | (m << 13));
}
float f16_at(U32 p, uint off) { return half_bits_to_float(u16_at(p, off)); }

// e^x within ~2 ulp on every device: GLSL's exp may be off by 3 + 2|x| ulp (lavapipe's is, 1e-6
// at |x| = 30), and the CPU tables are within 4e-7 of libm. x = n ln2 + r with ln2 in two parts
// (n * hi exact), a degree-7 polynomial for |r| <= ln2 / 2, and 2^n applied in two halves.
float exp_q(float x) {
  if (x > 88.72283935546875) return uintBitsToFloat(0x7f800000u);
  if (x < -103.97208) return 0.0;
  if (isnan(x)) return x;
  precise float n = roundEven(x * 1.4426950408889634);
  precise float r = x - n * 0.693145751953125;
  r = r - n * 1.4286067653301870e-06;
  precise float p = 1.0 / 5040.0;
  p = p * r + 1.0 / 720.0;
  p = p * r + 1.0 / 120.0;
  p = p * r + 1.0 / 24.0;
  p = p * r + 1.0 / 6.0;
  p = p * r + 0.5;
  p = p * r + 1.0;
  p = p * r + 1.0;
  const int ni = int(n);
  return ldexp(ldexp(p, ni / 2), ni - ni / 2);
}

// log(1 + u) for u in [0, 1] as 2 atanh(s), s = u / (2 + u) <= 1/3 (GLSL's log has an absolute
// error of 2^-21 near 1, which would swamp a small softplus).
float log1p_q(float u) {
  precise float s = u / (2.0 + u);
  precise float s2 = s * s;
  precise float p = 1.0 / 17.0;
  p = p * s2 + 1.0 / 15.0;
  p = p * s2 + 1.0 / 13.0;
  p = p * s2 + 1.0 / 11.0;
  p = p * s2 + 1.0 / 9.0;
  p = p * s2 + 1.0 / 7.0;
  p = p * s2 + 1.0 / 5.0;
  p = p * s2 + 1.0 / 3.0;
  p = p * s2 + 1.0;
  return 2.0 * s * p;
}

// torch's softplus, linear above 20: log(1 + e^v) = max(v, 0) + log1p(e^-|v|).
float softplus(float v) { return v > 20.0 ? v : max(v, 0.0) + log1p_q(exp_q(-abs(v))); }

// x / (1 + e^-x) and 1 / (1 + e^-x), as the CPU reference writes them.
float silu(float x) { return x / (1.0 + exp_q(-x)); }
float sigmoid(float x) { return 1.0 / (1.0 + exp_q(-x)); }

// Workgroups past 65535 in x spill into y: the flat index of this workgroup.
uint flat_group() { return gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x; }

// fma(a, b, c) rounded once, as C's std::fma: the canonical dot product's float steps. Vulkan lets
// a driver split fma() into a multiply and an add (lavapipe does), so where the device has f64
// (EXACT_FMA) the product is formed exactly in double, the sum's rounding error recovered by
// TwoSum, and a sum that landed on a float midpoint nudged toward the error's side before the one
// rounding to float.
#if defined(EXACT_FMA)
float fma_exact(float a, float b, float c) {
  precise double pr = double(a) * double(b);
  precise double s = pr + double(c);
  precise double bb = s - pr;
  precise double e = (pr - (s - bb)) + (double(c) - bb);
  if (e != 0.0) {
    uvec2 w = unpackDouble2x32(s);
    if ((w.x & 0x1fffffffu) == 0x10000000u) {
      const bool up = (e > 0.0) == (s > 0.0);
      w.x = (w.x & ~0x1fffffffu) | (up ? 0x10000001u : 0x0fffffffu);
      s = packDouble2x32(w);
    }
  }
  return float(s);
}
#else
float fma_exact(float a, float b, float c) { return fma(a, b, c); }
#endif
