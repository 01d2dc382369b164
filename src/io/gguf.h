// GGUF files (llama.cpp's format, shared/spec/gguf.md section 9): a header of typed key/value
// metadata and tensor infos, then the aligned tensor data. Versions 2 and 3, little-endian.
//
// Every count, length, offset, dimension and type is checked against the bytes that are actually
// there before anything is allocated or read, so a truncated, corrupt or hostile file is a
// qwen35::Error naming the file and the key or tensor at fault, never an out-of-bounds read or an
// allocation sized by an untrusted number. Values and tensor data are views into the bytes (the
// memory map, or the caller's buffer for from_bytes), which must outlive the GgufFile.
//
// Split models (NAME-00001-of-0000N.gguf, keys split.no / split.count) are opened from any part:
// open() maps every part and presents one metadata set (the first part's) and the union of the
// tensors.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/mapped_file.h"
#include "core/tensor.h"

namespace qwen35 {

enum class GgufType : uint32_t {
  kU8 = 0, kI8 = 1, kU16 = 2, kI16 = 3, kU32 = 4, kI32 = 5, kF32 = 6, kBool = 7,
  kString = 8, kArray = 9, kU64 = 10, kI64 = 11, kF64 = 12,
};
std::string_view gguf_type_name(GgufType t);

// One metadata value: a scalar, a string, or an array of either (arrays of arrays are rejected).
struct GgufValue {
  GgufType type = GgufType::kU8;
  GgufType elem_type = GgufType::kU8;  // element type for arrays, else == type
  uint64_t count = 1;                  // array length; 1 for a scalar
  const uint8_t* data = nullptr;       // little-endian elements (numeric types; may be unaligned)
  std::vector<std::string_view> strings;  // kString elements

  bool is_array() const { return type == GgufType::kArray; }
  bool is_integer() const;  // element type is one of the integer types or bool
  bool is_float() const;    // element type is F32 or F64
  // Element i as a number (integers and bool as exact int64/uint64; floats rounded for int).
  int64_t int_at(uint64_t i) const;
  double float_at(uint64_t i) const;
  std::string_view string_at(uint64_t i) const { return strings[size_t(i)]; }
};

// ggml's tensor types (gguf.md section 8) as the reader knows them: every id in the enum has a
// name and a block size, so any file's layout can be checked, while only ids with a DType are
// usable as weights.
struct GgmlTypeInfo {
  int id = -1;
  std::string_view name;
  int64_t block_elems = 0;
  int64_t block_bytes = 0;
};
// nullptr for an id ggml does not define (or has removed).
const GgmlTypeInfo* ggml_type_info(int ggml_type);
// "Q4_K" for a known id, else "type 99".
std::string ggml_type_label(int ggml_type);

struct GgufTensor {
  std::string name;
  int ggml_type = 0;
  std::optional<DType> dtype;  // nullopt: a ggml type qwen35 has no kernels for (IQ2_XXS, MXFP4, ...)
  int n_dims = 0;
  std::array<int64_t, 4> ne{1, 1, 1, 1};  // ggml order: ne[0] is the fastest (contiguous) dim
  uint64_t offset = 0;                    // within its part's data section
  uint64_t file_offset = 0;               // from the start of its part's file
  uint64_t nbytes = 0;
  const uint8_t* data = nullptr;
  int part = 0;  // index of the split part holding it

  int64_t numel() const { return ne[0] * ne[1] * ne[2] * ne[3]; }
  // The shape outermost first (HF orientation): ne {cols, rows} -> Shape{rows, cols}.
  Shape shape() const;
  // A typed view (dtype must be set; throws naming the tensor and its type otherwise).
  TensorView view() const;
};

class GgufFile {
 public:
  // Maps and validates `path`, and every other part when it is one part of a split model.
  static std::unique_ptr<GgufFile> open(const std::string& path);
  // Parses bytes owned by the caller (kept alive by them). For tests and fuzz targets: the same
  // checks as open(), no file system access. `origin` names the bytes in error messages.
  static std::unique_ptr<GgufFile> from_bytes(std::span<const uint8_t> bytes, const std::string& origin = "<bytes>");

  const std::string& path() const { return path_; }
  uint32_t version() const { return version_; }
  uint32_t alignment() const { return alignment_; }
  // Parts of a split model in order (one entry for a single file).
  const std::vector<std::string>& part_paths() const { return part_paths_; }
  uint64_t file_bytes() const { return file_bytes_; }  // all parts together

  // Metadata in file order.
  const std::vector<std::pair<std::string, GgufValue>>& metadata() const { return kv_; }
  const GgufValue* find(std::string_view key) const;
  bool has(std::string_view key) const { return find(key) != nullptr; }
  // Typed getters: throw naming the key when it is missing or of another type. Integer getters
  // accept any integer type whose value fits; float getters accept F32/F64 and integers.
  std::string_view get_string(std::string_view key) const;
  std::optional<std::string_view> get_string_opt(std::string_view key) const;
  int64_t get_int(std::string_view key) const;
  std::optional<int64_t> get_int_opt(std::string_view key) const;
  double get_float(std::string_view key) const;
  std::optional<double> get_float_opt(std::string_view key) const;
  std::optional<bool> get_bool_opt(std::string_view key) const;
  // An array value (throws when `key` is missing or is not an array).
  const GgufValue& get_array(std::string_view key) const;

  const std::vector<GgufTensor>& tensors() const { return tensors_; }
  const GgufTensor* find_tensor(std::string_view name) const;
  // Throws "<file>: missing tensor 'name'".
  const GgufTensor& get_tensor(std::string_view name) const;
  uint64_t tensor_bytes() const;  // sum of all tensors' sizes

 private:
  GgufFile() = default;
  void parse_part(std::span<const uint8_t> bytes, const std::string& origin, int part_index);
  void check_split_parts();

  std::string path_;
  uint32_t version_ = 0;
  uint32_t alignment_ = 32;
  uint64_t file_bytes_ = 0;
  std::vector<std::string> part_paths_;
  std::vector<std::unique_ptr<MappedFile>> maps_;
  std::vector<std::pair<std::string, GgufValue>> kv_;
  std::map<std::string, size_t, std::less<>> kv_index_;
  std::vector<GgufTensor> tensors_;
  std::map<std::string, size_t, std::less<>> tensor_index_;
  std::vector<std::vector<std::pair<std::string, GgufValue>>> part_kv_;  // split keys of later parts
  std::vector<std::unique_ptr<uint64_t[]>> aligned_copies_;  // tensors the file left misaligned
};

// True when `path` names a GGUF file by its magic (false for folders and other files).
bool is_gguf_file(const std::string& path);

}  // namespace qwen35
