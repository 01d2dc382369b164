// Weight rows to f32: block formats with ggml's formulas, (d * sc) * q - (dmin * mn), float rows
// (f32, f16, bf16) as they are. The embedding lookup: one thread per element of rows [0, n_rows)
// read at row_index[r] (token ids), written to y + r * n.
#version 460
#include "common.glsl"
#if defined(FMT_F32) || defined(FMT_F16) || defined(FMT_BF16)
#define FLOAT_ROWS
#else
#include "blocks.glsl"
#endif

layout(local_size_x = 256) in;
layout(push_constant) uniform Params {
  U32 w;
  U32 row_index;  // [n_rows] row numbers of w
  F32 y;
  uint n, row_bytes, n_rows;
} p;

void main() {
  const uint i = gl_GlobalInvocationID.x + gl_GlobalInvocationID.y * gl_NumWorkGroups.x * 256u;
  if (i >= p.n * p.n_rows) return;
  const uint r = i / p.n, e = i % p.n;
#if defined(FLOAT_ROWS)
  const uint at = p.row_index.v[r] * p.row_bytes;
#if defined(FMT_F32)
  p.y.v[r * p.n + e] = uintBitsToFloat(p.w.v[at / 4u + e]);
#elif defined(FMT_F16)
  p.y.v[r * p.n + e] = f16_at(p.w, at + 2u * e);
#else
  p.y.v[r * p.n + e] = uintBitsToFloat(u16_at(p.w, at + 2u * e) << 16);
#endif
#else
  const uint blk = e / BLOCK_ELEMS, j = e % BLOCK_ELEMS, s = j / SUB;
  const uint wb = p.row_index.v[r] * p.row_bytes + blk * BLOCK_BYTES;
  precise float dl = blk_d(p.w, wb) * float(blk_sc(p.w, wb, s));
  precise float v = dl * float(blk_q(p.w, wb, j));
  if (HAS_MIN) {
    precise float ml = blk_dmin(p.w, wb) * float(blk_mn(p.w, wb, s));
    v = v - ml;
  }
  p.y.v[r * p.n + e] = v;
#endif
}
