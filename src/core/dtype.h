// The one dtype table: every storage format a tensor can have, with its block layout.
// Plain types have block_elems == 1; quantized formats (GGUF-compatible blocks) add rows here.
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
  Q8_0,  // 32 int8 + one f16 scale per block (GGUF layout)
  Q4_0,  // 32 4-bit + one f16 scale per block (GGUF layout)
  kCount
};

struct DTypeInfo {
  DType dtype;
  std::string_view name;  // safetensors spelling where one exists
  size_t block_elems;     // elements per block
  size_t block_bytes;     // bytes per block
  bool is_float;          // a plain float type a weight may be stored in
};

const DTypeInfo& dtype_info(DType t);
std::string_view dtype_name(DType t);
std::optional<DType> dtype_from_safetensors(std::string_view name);

// Bytes for n elements; n must be a multiple of the block size.
inline size_t dtype_bytes(DType t, size_t n) {
  const DTypeInfo& info = dtype_info(t);
  return n / info.block_elems * info.block_bytes;
}

}  // namespace qwen35
