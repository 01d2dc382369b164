// The ggml block formats in their integer form (kernels/quant/quant_ref.h): element e of a block
// is d * sc(s) * q(e) - dmin * mn(s) for its sub-block s. One format per compile (FMT_* define).
// `b` is the byte offset of the block in the weight buffer `w`.

#if defined(FMT_Q8_0)
const uint BLOCK_ELEMS = 32u, BLOCK_BYTES = 34u, SUB = 32u;
const bool HAS_MIN = false;
float blk_d(U32 w, uint b) { return f16_at(w, b); }
float blk_dmin(U32 w, uint b) { return 0.0; }
int blk_sc(U32 w, uint b, uint s) { return 1; }
int blk_mn(U32 w, uint b, uint s) { return 0; }
int blk_q(U32 w, uint b, uint e) { return sbyte_at(w, b + 2u + e); }

#elif defined(FMT_Q4_0)
const uint BLOCK_ELEMS = 32u, BLOCK_BYTES = 18u, SUB = 32u;
const bool HAS_MIN = false;
float blk_d(U32 w, uint b) { return f16_at(w, b); }
float blk_dmin(U32 w, uint b) { return 0.0; }
int blk_sc(U32 w, uint b, uint s) { return 1; }
int blk_mn(U32 w, uint b, uint s) { return 0; }
int blk_q(U32 w, uint b, uint e) {
  const uint byte = byte_at(w, b + 2u + (e & 15u));
  return int(e < 16u ? byte & 15u : byte >> 4) - 8;
}

#elif defined(FMT_Q4_K) || defined(FMT_Q5_K)
#if defined(FMT_Q4_K)
const uint BLOCK_BYTES = 144u, QS = 16u;
#else
const uint BLOCK_BYTES = 176u, QS = 48u, QH = 16u;
#endif
const uint BLOCK_ELEMS = 256u, SUB = 32u;
const bool HAS_MIN = true;
float blk_d(U32 w, uint b) { return f16_at(w, b); }
float blk_dmin(U32 w, uint b) { return f16_at(w, b + 2u); }
// 6-bit scales and mins of sub-blocks 0..7 packed in 12 bytes at b + 4.
int blk_sc(U32 w, uint b, uint s) {
  if (s < 4u) return int(byte_at(w, b + 4u + s) & 63u);
  return int((byte_at(w, b + 8u + s) & 15u) | ((byte_at(w, b + s) >> 6) << 4));
}
int blk_mn(U32 w, uint b, uint s) {
  if (s < 4u) return int(byte_at(w, b + 8u + s) & 63u);
  return int((byte_at(w, b + 8u + s) >> 4) | ((byte_at(w, b + 4u + s) >> 6) << 4));
}
int blk_q(U32 w, uint b, uint e) {
  const uint c = e >> 6, l = e & 31u, hi = (e >> 5) & 1u;  // chunk of 64: low nibbles, then high
  const uint byte = byte_at(w, b + QS + 32u * c + l);
  uint q = hi == 0u ? byte & 15u : byte >> 4;
#if defined(FMT_Q5_K)
  q |= ((byte_at(w, b + QH + l) >> (2u * c + hi)) & 1u) << 4;
#endif
  return int(q);
}

#elif defined(FMT_Q6_K)
const uint BLOCK_ELEMS = 256u, BLOCK_BYTES = 210u, SUB = 16u;
const bool HAS_MIN = false;
float blk_d(U32 w, uint b) { return f16_at(w, b + 208u); }
float blk_dmin(U32 w, uint b) { return 0.0; }
int blk_sc(U32 w, uint b, uint s) { return sbyte_at(w, b + 192u + s); }
int blk_mn(U32 w, uint b, uint s) { return 0; }
// Halves of 128; in a half, quarter k of 32 takes ql[l + 32 (k & 1)]'s low (k < 2) or high nibble
// and bits 2k, 2k + 1 of qh[l].
int blk_q(U32 w, uint b, uint e) {
  const uint h = e >> 7, k = (e >> 5) & 3u, l = e & 31u;
  const uint ql = byte_at(w, b + 64u * h + l + 32u * (k & 1u));
  const uint qh = byte_at(w, b + 128u + 32u * h + l);
  return int((k < 2u ? ql & 15u : ql >> 4) | (((qh >> (2u * k)) & 3u) << 4)) - 32;
}

#elif defined(FMT_IQ4_XS)
const uint BLOCK_ELEMS = 256u, BLOCK_BYTES = 136u, SUB = 32u;
const bool HAS_MIN = false;
const int kIQ4[16] = int[16](-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113);
float blk_d(U32 w, uint b) { return f16_at(w, b); }
float blk_dmin(U32 w, uint b) { return 0.0; }
int blk_sc(U32 w, uint b, uint s) {
  const uint lo = (byte_at(w, b + 4u + s / 2u) >> (4u * (s & 1u))) & 15u;
  const uint hi = (u16_at(w, b + 2u) >> (2u * s)) & 3u;
  return int(lo | (hi << 4)) - 32;
}
int blk_mn(U32 w, uint b, uint s) { return 0; }
int blk_q(U32 w, uint b, uint e) {
  const uint s = e >> 5, j = e & 15u;
  const uint byte = byte_at(w, b + 8u + 16u * s + j);
  return kIQ4[(e & 16u) == 0u ? byte & 15u : byte >> 4];
}

#else
#error "define one FMT_*"
#endif
