// The one dtype table: every storage format a tensor can have, with its block layout.
// Plain types have block_elems == 1; the block formats are ggml's (GGUF) layouts, byte for byte
// (shared/spec/gguf.md section 8), so a GGUF tensor's bytes are used as they are.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace qwen35 {

enum class DType : uint8_t {
  F32,
  F16,
  BF16,
  F64,
  I64,
  I32,
  I16,
  I8,
  U8,
  BOOL,
  // Weight block formats. "d" is the block scale, "m"/"dmin" a block minimum.
  Q8_0,    // 32: d f16, 32 int8
  Q4_0,    // 32: d f16, 32 4-bit (value d * (q - 8))
  Q4_1,    // 32: d, m f16, 32 4-bit (value d * q + m)
  Q5_0,    // 32: d f16, 32 5-bit (value d * (q - 16))
  Q5_1,    // 32: d, m f16, 32 5-bit (value d * q + m)
  Q2_K,    // 256: 16 sub-blocks of 16, 4-bit scale and min each, 2-bit quants
  Q3_K,    // 256: 16 sub-blocks of 16, 6-bit signed scales, 3-bit quants
  Q4_K,    // 256: 8 sub-blocks of 32, 6-bit scale and min each, 4-bit quants
  Q5_K,    // 256: as Q4_K with a fifth bit per quant
  Q6_K,    // 256: 16 sub-blocks of 16, int8 scales, 6-bit quants
  IQ4_NL,  // 32: d f16, 32 4-bit indices into a fixed non-linear table
  IQ4_XS,  // 256: 8 sub-blocks of 32 with 6-bit scales, IQ4_NL indices
  Q8_K,    // 256: d f32, 256 int8, 16 int16 group sums (ggml's activation format; never a weight here)
  kCount
};

struct DTypeInfo {
  DType dtype;
  std::string_view name;  // safetensors / ggml spelling
  size_t block_elems;     // elements per block
  size_t block_bytes;     // bytes per block
  bool is_float;          // a plain float type a weight may be stored in
  int ggml_type;          // ggml_type enum value in GGUF files, -1 if GGUF has none
};

const DTypeInfo& dtype_info(DType t);
std::string_view dtype_name(DType t);
std::optional<DType> dtype_from_safetensors(std::string_view name);
std::optional<DType> dtype_from_ggml(int ggml_type);
// Case-insensitive lookup by name ("q4_k", "Q4_K", "bf16").
std::optional<DType> dtype_from_name(std::string_view name);

inline bool is_block_format(DType t) { return dtype_info(t).block_elems > 1; }

// Bytes for n elements; n must be a multiple of the block size.
inline size_t dtype_bytes(DType t, size_t n) {
  const DTypeInfo& info = dtype_info(t);
  return n / info.block_elems * info.block_bytes;
}

}  // namespace qwen35
