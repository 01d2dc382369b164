#include "core/dtype.h"

#include <array>

namespace qwen35 {
namespace {

constexpr std::array<DTypeInfo, size_t(DType::kCount)> kTable = {{
    {DType::F32, "F32", 1, 4, true},
    {DType::F16, "F16", 1, 2, true},
    {DType::BF16, "BF16", 1, 2, true},
    {DType::F64, "F64", 1, 8, false},
    {DType::I64, "I64", 1, 8, false},
    {DType::I32, "I32", 1, 4, false},
    {DType::I16, "I16", 1, 2, false},
    {DType::I8, "I8", 1, 1, false},
    {DType::U8, "U8", 1, 1, false},
    {DType::BOOL, "BOOL", 1, 1, false},
    {DType::Q8_0, "Q8_0", 32, 34, false},
    {DType::Q4_0, "Q4_0", 32, 18, false},
}};

}  // namespace

const DTypeInfo& dtype_info(DType t) { return kTable[size_t(t)]; }

std::string_view dtype_name(DType t) { return kTable[size_t(t)].name; }

std::optional<DType> dtype_from_safetensors(std::string_view name) {
  for (const DTypeInfo& info : kTable) {
    if (info.block_elems == 1 && info.name == name) return info.dtype;
  }
  return std::nullopt;
}

}  // namespace qwen35
