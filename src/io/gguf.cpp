#include "io/gguf.h"

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <regex>

#include "core/error.h"

namespace qwen35 {
namespace {

// ggml_type ids with their block layouts (gguf.md section 8); ids 4, 5, 31-33, 36-38 were removed.
constexpr std::array<GgmlTypeInfo, 35> kGgmlTypes = {{
    {0, "F32", 1, 4},        {1, "F16", 1, 2},         {2, "Q4_0", 32, 18},     {3, "Q4_1", 32, 20},
    {6, "Q5_0", 32, 22},     {7, "Q5_1", 32, 24},      {8, "Q8_0", 32, 34},     {9, "Q8_1", 32, 36},
    {10, "Q2_K", 256, 84},   {11, "Q3_K", 256, 110},   {12, "Q4_K", 256, 144},  {13, "Q5_K", 256, 176},
    {14, "Q6_K", 256, 210},  {15, "Q8_K", 256, 292},   {16, "IQ2_XXS", 256, 66}, {17, "IQ2_XS", 256, 74},
    {18, "IQ3_XXS", 256, 98}, {19, "IQ1_S", 256, 50},  {20, "IQ4_NL", 32, 18},  {21, "IQ3_S", 256, 110},
    {22, "IQ2_S", 256, 82},  {23, "IQ4_XS", 256, 136}, {24, "I8", 1, 1},        {25, "I16", 1, 2},
    {26, "I32", 1, 4},       {27, "I64", 1, 8},        {28, "F64", 1, 8},       {29, "IQ1_M", 256, 56},
    {30, "BF16", 1, 2},      {34, "TQ1_0", 256, 54},   {35, "TQ2_0", 256, 66},  {39, "MXFP4", 32, 17},
    {40, "NVFP4", 64, 36},   {41, "Q1_0", 128, 18},    {42, "Q2_0", 64, 18},
}};

constexpr size_t kMaxNameBytes = 63;  // ggml's GGML_MAX_NAME (64) includes the NUL
constexpr int kMaxTensorDims = 4;

size_t scalar_size(GgufType t) {
  switch (t) {
    case GgufType::kU8: case GgufType::kI8: case GgufType::kBool: return 1;
    case GgufType::kU16: case GgufType::kI16: return 2;
    case GgufType::kU32: case GgufType::kI32: case GgufType::kF32: return 4;
    case GgufType::kU64: case GgufType::kI64: case GgufType::kF64: return 8;
    default: return 0;  // string, array
  }
}

// Little-endian reads of possibly unaligned bytes.
template <typename T>
T load(const uint8_t* p) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  return v;
}

// A bounds-checked reader over one part's header. Every failure names the file and what was read.
class Cursor {
 public:
  Cursor(std::span<const uint8_t> bytes, const std::string& origin) : b_(bytes), origin_(origin) {}

  template <typename... A>
  [[noreturn]] void bad(A&&... what) const {
    fail(origin_, ": not a valid GGUF file: ", std::forward<A>(what)...);
  }
  size_t pos() const { return pos_; }
  size_t left() const { return b_.size() - pos_; }
  const uint8_t* here() const { return b_.data() + pos_; }

  const uint8_t* take(size_t n, std::string_view what) {
    if (n > left()) bad("truncated: ", what, " needs ", n, " bytes at offset ", pos_, " but the file ends after ", left());
    const uint8_t* p = here();
    pos_ += n;
    return p;
  }
  uint32_t u32(std::string_view what) { return load<uint32_t>(take(4, what)); }
  uint64_t u64(std::string_view what) { return load<uint64_t>(take(8, what)); }
  std::string_view str(std::string_view what) {
    const uint64_t n = u64(what);
    if (n > left()) bad(what, " has length ", n, " but only ", left(), " bytes follow: lying length or truncated file");
    return {reinterpret_cast<const char*>(take(size_t(n), what)), size_t(n)};
  }

 private:
  std::span<const uint8_t> b_;
  const std::string& origin_;
  size_t pos_ = 0;
};

GgufType read_type(Cursor& c, const std::string& key, bool element) {
  const uint32_t t = c.u32(element ? "array element type" : "value type");
  if (t > uint32_t(GgufType::kF64)) c.bad("key '", key, "' has unknown ", element ? "array element " : "value ", "type ", t);
  return GgufType(t);
}

GgufValue read_value(Cursor& c, const std::string& key) {
  GgufValue v;
  v.type = read_type(c, key, false);
  v.elem_type = v.type;
  if (v.type == GgufType::kArray) {
    v.elem_type = read_type(c, key, true);
    if (v.elem_type == GgufType::kArray) c.bad("key '", key, "' is an array of arrays, which GGUF does not allow");
    v.count = c.u64("array length");
  }
  if (v.elem_type == GgufType::kString) {
    // Each string is at least its 8-byte length: a count beyond that cannot be true.
    if (v.count > c.left() / 8) c.bad("key '", key, "' claims ", v.count, " strings but only ", c.left(), " bytes follow");
    v.strings.reserve(size_t(v.count));
    for (uint64_t i = 0; i < v.count; ++i) v.strings.push_back(c.str("string value"));
    return v;
  }
  const size_t size = scalar_size(v.elem_type);
  if (v.count > c.left() / size)
    c.bad("key '", key, "' claims ", v.count, " elements of ", gguf_type_name(v.elem_type), " but only ", c.left(),
          " bytes follow");
  v.data = c.take(size_t(v.count) * size, "value");
  return v;
}

uint64_t align_up(uint64_t x, uint64_t a) { return (x + a - 1) / a * a; }

// Parts of a split model: "<prefix>-00002-of-00005.gguf".
bool split_name(const std::string& path, std::string& prefix, int& index, int& count) {
  static const std::regex re(R"((.*)-([0-9]{5})-of-([0-9]{5})\.gguf)");
  std::smatch m;
  if (!std::regex_match(path, m, re)) return false;
  prefix = m[1];
  index = std::stoi(m[2]);
  count = std::stoi(m[3]);
  return count >= 1 && index >= 1 && index <= count;
}

std::string split_path(const std::string& prefix, int index, int count) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "-%05d-of-%05d.gguf", index, count);
  return prefix + buf;
}

}  // namespace

std::string_view gguf_type_name(GgufType t) {
  static constexpr std::array<std::string_view, 13> names = {"u8",  "i8",     "u16",   "i16", "u32", "i32", "f32",
                                                              "bool", "string", "array", "u64", "i64", "f64"};
  return uint32_t(t) < names.size() ? names[uint32_t(t)] : "unknown";
}

const GgmlTypeInfo* ggml_type_info(int id) {
  for (const GgmlTypeInfo& t : kGgmlTypes)
    if (t.id == id) return &t;
  return nullptr;
}

std::string ggml_type_label(int id) {
  const GgmlTypeInfo* t = ggml_type_info(id);
  return t ? std::string(t->name) : "type " + std::to_string(id);
}

bool GgufValue::is_integer() const {
  switch (elem_type) {
    case GgufType::kU8: case GgufType::kI8: case GgufType::kU16: case GgufType::kI16: case GgufType::kU32:
    case GgufType::kI32: case GgufType::kU64: case GgufType::kI64: case GgufType::kBool: return true;
    default: return false;
  }
}

bool GgufValue::is_float() const { return elem_type == GgufType::kF32 || elem_type == GgufType::kF64; }

int64_t GgufValue::int_at(uint64_t i) const {
  const uint8_t* p = data + i * scalar_size(elem_type);
  switch (elem_type) {
    case GgufType::kU8: return load<uint8_t>(p);
    case GgufType::kI8: return load<int8_t>(p);
    case GgufType::kBool: return load<uint8_t>(p) != 0;
    case GgufType::kU16: return load<uint16_t>(p);
    case GgufType::kI16: return load<int16_t>(p);
    case GgufType::kU32: return load<uint32_t>(p);
    case GgufType::kI32: return load<int32_t>(p);
    case GgufType::kU64: {
      const uint64_t u = load<uint64_t>(p);
      if (u > uint64_t(std::numeric_limits<int64_t>::max())) fail("GGUF value ", u, " does not fit in int64");
      return int64_t(u);
    }
    case GgufType::kI64: return load<int64_t>(p);
    case GgufType::kF32: return int64_t(load<float>(p));
    case GgufType::kF64: return int64_t(load<double>(p));
    default: fail("GGUF value of type ", gguf_type_name(elem_type), " is not a number");
  }
}

double GgufValue::float_at(uint64_t i) const {
  if (elem_type == GgufType::kF32) return load<float>(data + i * 4);
  if (elem_type == GgufType::kF64) return load<double>(data + i * 8);
  return double(int_at(i));
}

Shape GgufTensor::shape() const {
  Shape s;
  for (int d = n_dims - 1; d >= 0; --d) s.dims[size_t(s.ndim++)] = ne[size_t(d)];
  return s;
}

TensorView GgufTensor::view() const {
  if (!dtype) fail("tensor '", name, "' has ggml type ", ggml_type_label(ggml_type), ", which qwen35 does not support");
  TensorView v;
  v.dtype = *dtype;
  v.shape = shape();
  v.data = data;
  v.nbytes = size_t(nbytes);
  return v;
}

void GgufFile::parse_part(std::span<const uint8_t> bytes, const std::string& origin, int part_index) {
  Cursor c(bytes, origin);
  const uint8_t* magic = c.take(4, "magic");
  if (std::memcmp(magic, "GGUF", 4) != 0) c.bad("the file does not start with the magic 'GGUF'");
  const uint32_t version = c.u32("version");
  if ((version & 0xFFFF) == 0) c.bad("version ", version, " looks byte-swapped (a big-endian file?)");
  if (version == 1) c.bad("version 1 is not supported (only versions 2 and 3)");
  if (version > 3) c.bad("version ", version, " is newer than the supported 3");
  const uint64_t n_tensors = c.u64("tensor count");
  const uint64_t n_kv = c.u64("key/value count");
  // The smallest key/value takes 14 bytes and the smallest tensor info 24: larger counts lie.
  if (n_kv > c.left() / 14) c.bad("key/value count ", n_kv, " cannot fit in the ", c.left(), " bytes that follow");
  if (n_tensors > c.left() / 24) c.bad("tensor count ", n_tensors, " cannot fit in the ", c.left(), " bytes that follow");

  std::vector<std::pair<std::string, GgufValue>> kv;
  std::map<std::string, size_t, std::less<>> kv_index;
  for (uint64_t i = 0; i < n_kv; ++i) {
    std::string key(c.str("key"));
    if (key.empty()) c.bad("key/value pair ", i, " has an empty key");
    if (kv_index.count(key)) c.bad("key '", key, "' appears twice");
    GgufValue v = read_value(c, key);
    kv_index.emplace(key, kv.size());
    kv.emplace_back(std::move(key), std::move(v));
  }
  uint32_t alignment = 32;
  if (auto it = kv_index.find("general.alignment"); it != kv_index.end()) {
    const GgufValue& a = kv[it->second].second;
    if (a.type != GgufType::kU32) c.bad("general.alignment must be a u32, got ", gguf_type_name(a.type));
    alignment = uint32_t(a.int_at(0));
    if (alignment == 0 || (alignment & (alignment - 1)) != 0) c.bad("general.alignment ", alignment, " is not a power of two");
  }

  std::vector<GgufTensor> infos;
  infos.reserve(size_t(n_tensors));
  for (uint64_t i = 0; i < n_tensors; ++i) {
    GgufTensor t;
    t.name = std::string(c.str("tensor name"));
    auto tbad = [&](auto&&... what) { c.bad("tensor '", t.name, "' ", what...); };
    if (t.name.empty()) c.bad("tensor ", i, " has an empty name");
    if (t.name.size() > kMaxNameBytes) tbad("has a name of ", t.name.size(), " bytes (at most ", kMaxNameBytes, ")");
    if (tensor_index_.count(t.name)) tbad("appears twice");
    const uint32_t n_dims = c.u32("tensor dimension count");
    if (n_dims > uint32_t(kMaxTensorDims)) tbad("has ", n_dims, " dimensions (at most ", kMaxTensorDims, ")");
    t.n_dims = int(n_dims);
    int64_t numel = 1;
    bool empty = false;
    for (uint32_t d = 0; d < n_dims; ++d) {
      const int64_t ne = int64_t(c.u64("tensor dimension"));
      if (ne < 0) tbad("has a negative dimension ", ne);
      t.ne[d] = ne;
      empty |= ne == 0;
      if (ne != 0 && numel > std::numeric_limits<int64_t>::max() / 512 / ne) tbad("has a shape whose size overflows");
      if (ne != 0) numel *= ne;
    }
    t.ggml_type = int32_t(c.u32("tensor type"));
    const GgmlTypeInfo* info = ggml_type_info(t.ggml_type);
    if (!info) tbad("has unknown ggml type ", t.ggml_type);
    t.dtype = dtype_from_ggml(t.ggml_type);
    if (t.ne[0] % info->block_elems != 0)
      tbad("of type ", info->name, " has ", t.ne[0], " elements per row, not a multiple of its block size ",
           info->block_elems);
    t.nbytes = empty ? 0 : uint64_t(numel / info->block_elems) * uint64_t(info->block_bytes);
    t.offset = c.u64("tensor offset");
    if (t.offset % alignment != 0) tbad("has offset ", t.offset, ", not a multiple of the alignment ", alignment);
    t.part = part_index;
    tensor_index_.emplace(t.name, tensors_.size() + infos.size());
    infos.push_back(std::move(t));
  }

  const uint64_t data_start = align_up(c.pos(), alignment);
  const uint64_t data_size = data_start <= bytes.size() ? bytes.size() - data_start : 0;
  struct Range {
    uint64_t begin, end;
    const std::string* name;
  };
  std::vector<Range> ranges;
  for (GgufTensor& t : infos) {
    if (t.nbytes > data_size || t.offset > data_size - t.nbytes)
      c.bad("tensor '", t.name, "' (", t.nbytes, " bytes at data offset ", t.offset, ") runs past the end of the file (",
            data_size, " data bytes): truncated file or lying offset");
    t.data = bytes.data() + data_start + t.offset;
    t.file_offset = data_start + t.offset;
    if (t.nbytes > 0) ranges.push_back({t.offset, t.offset + t.nbytes, &t.name});
  }
  std::sort(ranges.begin(), ranges.end(), [](const Range& a, const Range& b) { return a.begin < b.begin; });
  for (size_t i = 1; i < ranges.size(); ++i)
    if (ranges[i].begin < ranges[i - 1].end)
      c.bad("tensors '", *ranges[i - 1].name, "' and '", *ranges[i].name, "' overlap");
  // Typed reads need element alignment; a file with a small general.alignment (or caller bytes
  // at an odd address) may not give it, so such tensors get an aligned copy.
  for (GgufTensor& t : infos) {
    const size_t need = t.dtype && !is_block_format(*t.dtype) ? dtype_info(*t.dtype).block_bytes : 2;
    if (t.nbytes == 0 || reinterpret_cast<uintptr_t>(t.data) % need == 0) continue;
    aligned_copies_.emplace_back(new uint64_t[size_t((t.nbytes + 7) / 8)]);
    std::memcpy(aligned_copies_.back().get(), t.data, size_t(t.nbytes));
    t.data = reinterpret_cast<const uint8_t*>(aligned_copies_.back().get());
  }

  if (part_index == 0) {
    version_ = version;
    alignment_ = alignment;
    kv_ = std::move(kv);
    kv_index_ = std::move(kv_index);
  } else {
    part_kv_.push_back(std::move(kv));
  }
  for (GgufTensor& t : infos) tensors_.push_back(std::move(t));
  file_bytes_ += bytes.size();
}

std::unique_ptr<GgufFile> GgufFile::from_bytes(std::span<const uint8_t> bytes, const std::string& origin) {
  auto f = std::unique_ptr<GgufFile>(new GgufFile());
  f->path_ = origin;
  f->part_paths_.push_back(origin);
  f->parse_part(bytes, origin, 0);
  return f;
}

std::unique_ptr<GgufFile> GgufFile::open(const std::string& path) {
  auto f = std::unique_ptr<GgufFile>(new GgufFile());
  std::string prefix;
  int index = 0, count = 0;
  const bool named_split = split_name(path, prefix, index, count);
  const std::string first = named_split ? split_path(prefix, 1, count) : path;
  f->path_ = first;
  f->maps_.push_back(std::make_unique<MappedFile>(first));
  f->part_paths_.push_back(first);
  f->parse_part({f->maps_[0]->data(), f->maps_[0]->size()}, first, 0);

  const std::optional<int64_t> declared = f->get_int_opt("split.count");
  if (declared && *declared > 1) {
    if (!named_split) fail(path, ": split.count is ", *declared, " but the name is not NAME-00001-of-0000N.gguf");
    if (*declared != count) fail(path, ": split.count ", *declared, " disagrees with the file name (", count, " parts)");
    for (int k = 2; k <= count; ++k) {
      const std::string part = split_path(prefix, k, count);
      f->maps_.push_back(std::make_unique<MappedFile>(part));
      f->part_paths_.push_back(part);
      f->parse_part({f->maps_.back()->data(), f->maps_.back()->size()}, part, k - 1);
    }
    f->check_split_parts();
  } else if (named_split && count > 1) {
    fail(first, ": named as part 1 of ", count, " but has no split.count key");
  }
  return f;
}

void GgufFile::check_split_parts() {
  const int64_t count = get_int("split.count");
  auto check = [&](const std::vector<std::pair<std::string, GgufValue>>& kv, int part) {
    auto get = [&](std::string_view key) -> std::optional<int64_t> {
      for (const auto& [k, v] : kv)
        if (k == key && !v.is_array() && v.is_integer()) return v.int_at(0);
      return std::nullopt;
    };
    const std::string& p = part_paths_[size_t(part)];
    if (get("split.no") != part) fail(p, ": split.no should be ", part);
    if (get("split.count") != count) fail(p, ": split.count disagrees with the first part's ", count);
  };
  check(kv_, 0);
  for (size_t i = 0; i < part_kv_.size(); ++i) check(part_kv_[i], int(i + 1));
  if (auto n = get_int_opt("split.tensors.count"); n && *n != int64_t(tensors_.size()))
    fail(path_, ": split.tensors.count is ", *n, " but the parts hold ", tensors_.size(), " tensors");
}

const GgufValue* GgufFile::find(std::string_view key) const {
  auto it = kv_index_.find(key);
  return it == kv_index_.end() ? nullptr : &kv_[it->second].second;
}

std::optional<std::string_view> GgufFile::get_string_opt(std::string_view key) const {
  const GgufValue* v = find(key);
  if (!v) return std::nullopt;
  if (v->type != GgufType::kString) fail(path_, ": key '", key, "' must be a string, got ", gguf_type_name(v->type));
  return v->strings[0];
}

std::string_view GgufFile::get_string(std::string_view key) const {
  auto v = get_string_opt(key);
  if (!v) fail(path_, ": missing key '", key, "'");
  return *v;
}

std::optional<int64_t> GgufFile::get_int_opt(std::string_view key) const {
  const GgufValue* v = find(key);
  if (!v) return std::nullopt;
  if (v->is_array() || !v->is_integer() || v->type == GgufType::kBool)
    fail(path_, ": key '", key, "' must be an integer, got ", gguf_type_name(v->type));
  if (v->type == GgufType::kU64 && load<uint64_t>(v->data) > uint64_t(std::numeric_limits<int64_t>::max()))
    fail(path_, ": key '", key, "' is too large");
  return v->int_at(0);
}

int64_t GgufFile::get_int(std::string_view key) const {
  auto v = get_int_opt(key);
  if (!v) fail(path_, ": missing key '", key, "'");
  return *v;
}

std::optional<double> GgufFile::get_float_opt(std::string_view key) const {
  const GgufValue* v = find(key);
  if (!v) return std::nullopt;
  if (v->is_array() || !(v->is_float() || v->is_integer()) || v->type == GgufType::kBool)
    fail(path_, ": key '", key, "' must be a number, got ", gguf_type_name(v->type));
  if (v->type == GgufType::kU64 && load<uint64_t>(v->data) > uint64_t(std::numeric_limits<int64_t>::max()))
    fail(path_, ": key '", key, "' is too large");
  return v->float_at(0);
}

double GgufFile::get_float(std::string_view key) const {
  auto v = get_float_opt(key);
  if (!v) fail(path_, ": missing key '", key, "'");
  return *v;
}

std::optional<bool> GgufFile::get_bool_opt(std::string_view key) const {
  const GgufValue* v = find(key);
  if (!v) return std::nullopt;
  if (v->type != GgufType::kBool) fail(path_, ": key '", key, "' must be a bool, got ", gguf_type_name(v->type));
  return v->int_at(0) != 0;
}

const GgufValue& GgufFile::get_array(std::string_view key) const {
  const GgufValue* v = find(key);
  if (!v) fail(path_, ": missing key '", key, "'");
  if (!v->is_array()) fail(path_, ": key '", key, "' must be an array, got ", gguf_type_name(v->type));
  return *v;
}

const GgufTensor* GgufFile::find_tensor(std::string_view name) const {
  auto it = tensor_index_.find(name);
  return it == tensor_index_.end() ? nullptr : &tensors_[it->second];
}

const GgufTensor& GgufFile::get_tensor(std::string_view name) const {
  const GgufTensor* t = find_tensor(name);
  if (!t) fail(path_, ": missing tensor '", name, "'");
  return *t;
}

uint64_t GgufFile::tensor_bytes() const {
  uint64_t n = 0;
  for (const GgufTensor& t : tensors_) n += t.nbytes;
  return n;
}

bool is_gguf_file(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) return false;
  std::ifstream in(path, std::ios::binary);
  char magic[4] = {};
  in.read(magic, 4);
  return in.gcount() == 4 && std::memcmp(magic, "GGUF", 4) == 0;
}

}  // namespace qwen35
