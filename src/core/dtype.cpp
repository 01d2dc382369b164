#include "core/dtype.h"

#include <array>
#include <cctype>

namespace qwen35 {
namespace {

constexpr std::array<DTypeInfo, size_t(DType::kCount)> kTable = {{
    {DType::F32, "F32", 1, 4, true, 0},
    {DType::F16, "F16", 1, 2, true, 1},
    {DType::BF16, "BF16", 1, 2, true, 30},
    {DType::F64, "F64", 1, 8, false, 28},
    {DType::I64, "I64", 1, 8, false, 27},
    {DType::I32, "I32", 1, 4, false, 26},
    {DType::I16, "I16", 1, 2, false, 25},
    {DType::I8, "I8", 1, 1, false, 24},
    {DType::U8, "U8", 1, 1, false, -1},
    {DType::BOOL, "BOOL", 1, 1, false, -1},
    {DType::Q8_0, "Q8_0", 32, 34, false, 8},
    {DType::Q4_0, "Q4_0", 32, 18, false, 2},
    {DType::Q4_1, "Q4_1", 32, 20, false, 3},
    {DType::Q5_0, "Q5_0", 32, 22, false, 6},
    {DType::Q5_1, "Q5_1", 32, 24, false, 7},
    {DType::Q2_K, "Q2_K", 256, 84, false, 10},
    {DType::Q3_K, "Q3_K", 256, 110, false, 11},
    {DType::Q4_K, "Q4_K", 256, 144, false, 12},
    {DType::Q5_K, "Q5_K", 256, 176, false, 13},
    {DType::Q6_K, "Q6_K", 256, 210, false, 14},
    {DType::IQ4_NL, "IQ4_NL", 32, 18, false, 20},
    {DType::IQ4_XS, "IQ4_XS", 256, 136, false, 23},
    {DType::Q8_K, "Q8_K", 256, 292, false, 15},
}};

bool iequal(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (std::toupper(static_cast<unsigned char>(a[i])) != std::toupper(static_cast<unsigned char>(b[i]))) return false;
  return true;
}

}  // namespace

const DTypeInfo& dtype_info(DType t) { return kTable[size_t(t)]; }

std::string_view dtype_name(DType t) { return kTable[size_t(t)].name; }

std::optional<DType> dtype_from_safetensors(std::string_view name) {
  for (const DTypeInfo& info : kTable) {
    if (info.block_elems == 1 && info.name == name) return info.dtype;
  }
  return std::nullopt;
}

std::optional<DType> dtype_from_ggml(int ggml_type) {
  for (const DTypeInfo& info : kTable)
    if (info.ggml_type == ggml_type && ggml_type >= 0) return info.dtype;
  return std::nullopt;
}

std::optional<DType> dtype_from_name(std::string_view name) {
  for (const DTypeInfo& info : kTable)
    if (iequal(info.name, name)) return info.dtype;
  return std::nullopt;
}

}  // namespace qwen35
