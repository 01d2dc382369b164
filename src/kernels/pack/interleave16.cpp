#include "kernels/pack/interleave16.h"

#include <cstring>
#include <vector>

#include "core/error.h"
#include "kernels/quant/blocks.h"
#include "kernels/quant/quant_ref.h"

namespace qwen35::kernels::interleave16 {
namespace {

using namespace quant;

static_assert(kQ6kBlock == size_t(kRows) * sizeof(BlockQ6_K) && kQ6kSubBlocks + 16 * kQ6kSubBlock == kQ6kD);

// One field of a plain block (bytes [off, off + len) of the row's block) and where its bytes go
// in the packed block: units of `unit` bytes, unit u of row r at dst + kRows * unit * u + unit * r
// (4-byte units fill one 64-byte vector per unit; a 2-byte scalar, an f16, is one unit).
struct Field {
  size_t plain_off, len, packed_off, unit = 4;
};

// Moves one field in either direction: to_packed copies plain -> packed, else packed -> plain.
void move_field(const Field& f, uint8_t* plain, uint8_t* packed, int r, bool to_packed) {
  const size_t unit = f.len == 2 ? 2 : f.unit;
  for (size_t u = 0; u < f.len / unit; ++u) {
    uint8_t* p = packed + f.packed_off + size_t(kRows) * unit * u + unit * size_t(r);
    if (to_packed) std::memcpy(p, plain + f.plain_off + unit * u, unit);
    else std::memcpy(plain + f.plain_off + unit * u, p, unit);
  }
}

// Q5_0/Q5_1 fifth bits: ggml keeps them as one u32 (bit e = element e); packed, byte j bit k holds
// element 4k + j so that quad k's bits sit at bit k of every byte.
void qh_to_packed(const uint8_t* ggml_qh, uint8_t* out) {
  uint32_t qh;
  std::memcpy(&qh, ggml_qh, 4);
  for (int j = 0; j < 4; ++j) {
    uint8_t b = 0;
    for (int k = 0; k < 8; ++k) b |= uint8_t(((qh >> (4 * k + j)) & 1u) << k);
    out[j] = b;
  }
}
void qh_from_packed(const uint8_t* in, uint8_t* ggml_qh) {
  uint32_t qh = 0;
  for (int j = 0; j < 4; ++j)
    for (int k = 0; k < 8; ++k) qh |= uint32_t((in[j] >> k) & 1u) << (4 * k + j);
  std::memcpy(ggml_qh, &qh, 4);
}

// Q3_K high bits: ggml's hmask byte l, bit 4h + k, is the high bit of element 128h + 32k + l;
// packed, that bit moves to kQ3HmaskBit[4h + k]. Then shifts k and k + 2 (k = 0, 1) come out of one
// blend: qs >> 2k has their 2-bit fields at bits 0-1 and 4-5 of each byte, and the hmask byte
// shifted left by 2h - k has their high bits at bits 2 and 6.
constexpr int kQ3HmaskBit[8] = {2, 3, 6, 7, 0, 1, 4, 5};
void hmask_permute(uint8_t* hmask, bool to_packed) {
  for (int l = 0; l < 32; ++l) {
    uint8_t out = 0;
    for (int b = 0; b < 8; ++b) {
      if (to_packed) out |= uint8_t(((hmask[l] >> b) & 1) << kQ3HmaskBit[b]);
      else out |= uint8_t(((hmask[l] >> kQ3HmaskBit[b]) & 1) << b);
    }
    hmask[l] = out;
  }
}

// Q6_K quants (ggml: 4 low bits in ql, 2 high in qh, 128 elements a half) as interleave16.h's
// sub-block bytes, in the first 192 bytes of the block: byte 12s + 4k + j = u(16s + 4k + j) |
// (bits 2k, 2k + 1 of u(16s + 12 + j)) << 6, u the unsigned 6-bit quant.
void q6k_quants(uint8_t* blk, bool to_packed) {
  uint8_t u[256];
  if (to_packed) {
    for (int h = 0; h < 2; ++h)
      for (int l = 0; l < 32; ++l) {
        const uint8_t a = blk[64 * h + l], b = blk[64 * h + l + 32], hb = blk[128 + 32 * h + l];
        u[128 * h + l] = uint8_t((a & 15) | (hb & 3) << 4);
        u[128 * h + l + 32] = uint8_t((b & 15) | (hb >> 2 & 3) << 4);
        u[128 * h + l + 64] = uint8_t((a >> 4) | (hb >> 4 & 3) << 4);
        u[128 * h + l + 96] = uint8_t((b >> 4) | (hb >> 6) << 4);
      }
    for (int s = 0; s < 16; ++s)
      for (int k = 0; k < 3; ++k)
        for (int j = 0; j < 4; ++j)
          blk[12 * s + 4 * k + j] = uint8_t(u[16 * s + 4 * k + j] | (u[16 * s + 12 + j] >> (2 * k) & 3) << 6);
  } else {
    for (int s = 0; s < 16; ++s)
      for (int j = 0; j < 4; ++j) {
        uint8_t top = 0;
        for (int k = 0; k < 3; ++k) {
          const uint8_t v = blk[12 * s + 4 * k + j];
          u[16 * s + 4 * k + j] = v & 63;
          top = uint8_t(top | (v >> 6) << (2 * k));
        }
        u[16 * s + 12 + j] = top;
      }
    for (int h = 0; h < 2; ++h)
      for (int l = 0; l < 32; ++l) {
        const uint8_t* e = u + 128 * h + l;
        blk[64 * h + l] = uint8_t((e[0] & 15) | (e[64] & 15) << 4);
        blk[64 * h + l + 32] = uint8_t((e[32] & 15) | (e[96] & 15) << 4);
        blk[128 + 32 * h + l] = uint8_t(e[0] >> 4 | (e[32] >> 4) << 2 | (e[64] >> 4) << 4 | (e[96] >> 4) << 6);
      }
  }
}

// The bit rearrangements inside a plain block that the packed layout stores (applied before the
// fields move on packing, after they move back on unpacking).
void rearrange(DType t, uint8_t* blk, bool to_packed) {
  if (t == DType::Q5_0 || t == DType::Q5_1) {
    const size_t off = t == DType::Q5_0 ? 2 : 4;
    uint8_t q[4];
    if (to_packed) qh_to_packed(blk + off, q);
    else qh_from_packed(blk + off, q);
    std::memcpy(blk + off, q, 4);
  } else if (t == DType::Q3_K) {
    hmask_permute(blk, to_packed);  // hmask is bytes 0..31
  } else if (t == DType::Q6_K) {
    q6k_quants(blk, to_packed);  // ql and qh are bytes 0..191
  }
}

// The field map of a packed format, or empty when the dtype is not packed.
std::vector<Field> fields(DType t) {
  switch (t) {
    case DType::Q8_0: return {{0, 2, 0}, {2, 32, 32}};
    case DType::Q4_0:
    case DType::IQ4_NL: return {{0, 2, 0}, {2, 16, 32}};
    case DType::Q4_1: return {{0, 2, 0}, {2, 2, 32}, {4, 16, 64}};
    case DType::Q5_0: return {{0, 2, 0}, {2, 4, 32}, {6, 16, 96}};             // qh rearranged on the way
    case DType::Q5_1: return {{0, 2, 0}, {2, 2, 32}, {4, 4, 64}, {8, 16, 128}};  // qh rearranged on the way
    case DType::Q4_K: return {{0, 2, 0}, {2, 2, 32}, {4, 12, 64}, {16, 128, 256}};
    case DType::Q5_K: return {{0, 2, 0}, {2, 2, 32}, {4, 12, 64}, {16, 32, 256}, {48, 128, 768}};
    case DType::Q6_K: {
      // After q6k_quants: sub-block s's vectors from bytes 12s + 4k; the scales bytewise, sub-block major.
      std::vector<Field> f{{192, 16, kQ6kScales, 1}, {208, 2, kQ6kD}};
      for (size_t s = 0; s < 16; ++s)
        for (size_t k = 0; k < 3; ++k) f.push_back({12 * s + 4 * k, 4, kQ6kSubBlocks + kQ6kSubBlock * s + 64 * k});
      return f;
    }
    case DType::Q2_K: return {{80, 2, 0}, {82, 2, 32}, {0, 16, 64}, {16, 64, 320}};
    case DType::Q3_K: return {{0, 32, 0}, {32, 64, 512}, {96, 12, 1536}, {108, 2, 1728}};
    case DType::IQ4_XS: return {{0, 2, 0}, {2, 2, 32}, {4, 4, 64}, {8, 128, 128}};
    default: return {};
  }
}

}  // namespace

size_t block_bytes(DType dtype) { return fields(dtype).empty() ? 0 : size_t(kRows) * dtype_info(dtype).block_bytes; }

size_t group_bytes(DType dtype, int64_t cols) {
  const size_t b = block_bytes(dtype);
  return b ? b * size_t(cols) / dtype_info(dtype).block_elems : 0;
}

void pack(const WeightMatrix& plain, int64_t g0, int64_t g1, uint8_t* dst) {
  const DType t = plain.dtype;
  const std::vector<Field> map = fields(t);
  if (map.empty()) fail("interleave16: ", dtype_name(t), " is not packed");
  const size_t bb = dtype_info(t).block_bytes, pb = block_bytes(t);
  const int64_t nb = plain.cols / int64_t(dtype_info(t).block_elems);
  const size_t gb = group_bytes(t, plain.cols);
  std::vector<uint8_t> zero(bb, 0), blk(bb);
  for (int64_t g = g0; g < g1; ++g) {
    uint8_t* group = dst + size_t(g) * gb;
    for (int64_t b = 0; b < nb; ++b) {
      uint8_t* out = group + size_t(b) * pb;
      for (int r = 0; r < kRows; ++r) {
        const int64_t row = g * kRows + r;
        if (row < plain.rows) std::memcpy(blk.data(), plain.row(row) + size_t(b) * bb, bb);
        else std::memcpy(blk.data(), zero.data(), bb);
        rearrange(t, blk.data(), true);
        for (const Field& f : map) move_field(f, blk.data(), out, r, true);
      }
    }
  }
}

void unpack_row(const WeightMatrix& packed, int64_t row, uint8_t* plain_row) {
  const DType t = packed.dtype;
  const std::vector<Field> map = fields(t);
  const size_t bb = dtype_info(t).block_bytes, pb = block_bytes(t);
  const int64_t nb = packed.cols / int64_t(dtype_info(t).block_elems);
  const uint8_t* group = static_cast<const uint8_t*>(packed.data) + size_t(row / kRows) * packed.group_bytes;
  const int r = int(row % kRows);
  for (int64_t b = 0; b < nb; ++b) {
    uint8_t* blk = plain_row + size_t(b) * bb;
    uint8_t* in = const_cast<uint8_t*>(group + size_t(b) * pb);  // read only: move_field with to_packed = false
    for (const Field& f : map) move_field(f, blk, in, r, false);
    rearrange(t, blk, false);
  }
}

void row_to_f32(const WeightMatrix& packed, int64_t r, float* out) {
  std::vector<uint8_t> plain(dtype_bytes(packed.dtype, size_t(packed.cols)));
  unpack_row(packed, r, plain.data());
  quant::dequantize_row(packed.dtype, plain.data(), out, packed.cols);
}

PackedFormat format() {
  PackedFormat f;
  f.layout = kLayout;
  f.group_rows = kRows;
  f.group_bytes = group_bytes;
  f.pack = pack;
  f.row_to_f32 = row_to_f32;
  return f;
}

}  // namespace qwen35::kernels::interleave16
