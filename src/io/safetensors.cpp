#include "io/safetensors.h"

#include <algorithm>
#include <cstring>
#include <fstream>
#include <limits>

#include <nlohmann/json.hpp>

#include "core/error.h"

namespace qwen35 {
namespace {

// A header larger than this is not a model header but an attack or corruption.
constexpr uint64_t kMaxHeaderBytes = 256ull << 20;

uint64_t read_u64_le(const uint8_t* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

}  // namespace

SafetensorsFile::SafetensorsFile(const std::string& path) : file_(std::make_unique<MappedFile>(path)) {
  const uint8_t* base = file_->data();
  const size_t size = file_->size();
  auto bad = [&](auto&&... what) { fail(path, ": not a valid safetensors file: ", what...); };

  if (size < 8) bad("file is ", size, " bytes, shorter than the 8-byte header length");
  const uint64_t header_len = read_u64_le(base);
  if (header_len > kMaxHeaderBytes) bad("header length ", header_len, " exceeds the limit of ", kMaxHeaderBytes);
  if (header_len > size - 8) bad("header length ", header_len, " runs past the end of the file (", size, " bytes)");

  nlohmann::json header;
  try {
    header = nlohmann::json::parse(reinterpret_cast<const char*>(base + 8),
                                   reinterpret_cast<const char*>(base + 8 + header_len));
  } catch (const nlohmann::json::exception& e) {
    bad("header is not JSON (", e.what(), ")");
  }
  if (!header.is_object()) bad("header is not a JSON object");

  const uint8_t* data = base + 8 + header_len;
  const uint64_t data_size = size - 8 - header_len;
  struct Range {
    uint64_t begin, end;
    const std::string* name;
  };
  std::vector<Range> ranges;

  for (auto it = header.begin(); it != header.end(); ++it) {
    const std::string& name = it.key();
    const nlohmann::json& entry = it.value();
    if (name == "__metadata__") {
      if (!entry.is_object()) bad("__metadata__ is not an object");
      for (auto m = entry.begin(); m != entry.end(); ++m)
        if (m.value().is_string()) metadata_[m.key()] = m.value().get<std::string>();
      continue;
    }
    if (!entry.is_object()) bad("entry '", name, "' is not an object");
    auto dt = entry.find("dtype");
    auto sh = entry.find("shape");
    auto off = entry.find("data_offsets");
    if (dt == entry.end() || !dt->is_string()) bad("tensor '", name, "' has no string dtype");
    if (sh == entry.end() || !sh->is_array()) bad("tensor '", name, "' has no shape array");
    if (off == entry.end() || !off->is_array() || off->size() != 2) bad("tensor '", name, "' needs data_offsets [begin, end]");

    auto dtype = dtype_from_safetensors(dt->get<std::string>());
    if (!dtype) bad("tensor '", name, "' has unsupported dtype ", dt->get<std::string>());
    if (sh->size() > size_t(kMaxDims)) bad("tensor '", name, "' has ", sh->size(), " dimensions (at most ", kMaxDims, ")");

    Shape shape;
    // The product of the non-zero dims must fit too: a zero dim would otherwise let the others be
    // anything, even values that turn negative as int64.
    uint64_t nonzero = 1;
    bool empty = false;
    for (const auto& d : *sh) {
      if (!d.is_number_unsigned()) bad("tensor '", name, "' has a negative or non-integer dimension");
      uint64_t v = d.get<uint64_t>();
      empty |= v == 0;
      if (v != 0 && nonzero > std::numeric_limits<uint64_t>::max() / 16 / v) bad("tensor '", name, "' shape overflows");
      if (v != 0) nonzero *= v;
      shape.dims[size_t(shape.ndim++)] = int64_t(v);
    }
    const uint64_t numel = empty ? 0 : nonzero;
    for (const auto& o : *off)
      if (!o.is_number_unsigned()) bad("tensor '", name, "' has a non-integer data offset");
    const uint64_t begin = (*off)[0].get<uint64_t>(), end = (*off)[1].get<uint64_t>();
    if (begin > end) bad("tensor '", name, "' data_offsets begin ", begin, " > end ", end);
    if (end > data_size) bad("tensor '", name, "' ends at byte ", end, " past the data section (", data_size, " bytes): truncated file?");
    const uint64_t expected = numel * dtype_info(*dtype).block_bytes;
    if (end - begin != expected)
      bad("tensor '", name, "' of dtype ", dtype_name(*dtype), " and shape ", shape.to_string(), " needs ", expected,
          " bytes but its data_offsets span ", end - begin);

    TensorView view;
    view.dtype = *dtype;
    view.shape = shape;
    view.data = data + begin;
    view.nbytes = size_t(end - begin);
    // Typed reads need element alignment; the format does not promise it (a header whose length
    // is not a multiple of 8 shifts every tensor), so a misaligned tensor gets an aligned copy.
    const size_t align = dtype_info(*dtype).block_elems == 1 ? dtype_info(*dtype).block_bytes : 2;
    if (view.nbytes > 0 && reinterpret_cast<uintptr_t>(view.data) % align != 0) {
      aligned_copies_.emplace_back(new uint64_t[(view.nbytes + 7) / 8]);
      std::memcpy(aligned_copies_.back().get(), view.data, view.nbytes);
      view.data = aligned_copies_.back().get();
    }
    auto [pos, inserted] = tensors_.emplace(name, view);
    ranges.push_back({begin, end, &pos->first});
  }

  // Empty tensors occupy no bytes; each other one must start after every earlier one ends.
  std::erase_if(ranges, [](const Range& r) { return r.begin == r.end; });
  std::sort(ranges.begin(), ranges.end(), [](const Range& a, const Range& b) { return a.begin < b.begin; });
  const Range* furthest = nullptr;  // the earlier range reaching furthest
  for (const Range& r : ranges) {
    if (furthest && r.begin < furthest->end) bad("tensors '", *furthest->name, "' and '", *r.name, "' overlap");
    if (!furthest || r.end > furthest->end) furthest = &r;
  }
}

const TensorView& SafetensorsFile::get(const std::string& name) const {
  auto it = tensors_.find(name);
  if (it == tensors_.end()) fail(path(), ": tensor '", name, "' not found");
  return it->second;
}

void SafetensorsWriter::add(const std::string& name, DType dtype, const Shape& shape, const void* data, size_t nbytes) {
  if (dtype_bytes(dtype, size_t(shape.numel())) != nbytes)
    fail("SafetensorsWriter: '", name, "' shape ", shape.to_string(), " does not match ", nbytes, " bytes");
  for (const Entry& e : entries_)
    if (e.name == name) fail("SafetensorsWriter: tensor '", name, "' added twice");
  Entry e{name, dtype, shape, {}};
  e.bytes.resize(nbytes);
  if (nbytes) std::memcpy(e.bytes.data(), data, nbytes);
  entries_.push_back(std::move(e));
}

void SafetensorsWriter::add_f32(const std::string& name, const Shape& shape, const float* data) {
  add(name, DType::F32, shape, data, size_t(shape.numel()) * 4);
}

void SafetensorsWriter::add_i64(const std::string& name, const Shape& shape, const int64_t* data) {
  add(name, DType::I64, shape, data, size_t(shape.numel()) * 8);
}

void SafetensorsWriter::write(const std::string& path) const {
  // Widest elements first (8-, 4-, then 2-byte types with the block formats, whose f16 scales need
  // 2, then bytes): from the 8-aligned data start every tensor is aligned to its element size.
  auto alignment = [](DType t) { return dtype_info(t).block_elems == 1 ? dtype_info(t).block_bytes : size_t(2); };
  std::vector<const Entry*> order;
  for (const Entry& e : entries_) order.push_back(&e);
  std::stable_sort(order.begin(), order.end(),
                   [&](const Entry* a, const Entry* b) { return alignment(a->dtype) > alignment(b->dtype); });

  nlohmann::ordered_json header = nlohmann::ordered_json::object();
  if (!metadata_.empty()) header["__metadata__"] = metadata_;
  uint64_t offset = 0;
  for (const Entry* entry : order) {
    const Entry& e = *entry;
    std::vector<int64_t> dims(e.shape.dims.begin(), e.shape.dims.begin() + e.shape.ndim);
    header[e.name] = {{"dtype", std::string(dtype_name(e.dtype))},
                      {"shape", dims},
                      {"data_offsets", {offset, offset + e.bytes.size()}}};
    offset += e.bytes.size();
  }
  std::string text = header.dump();
  while ((8 + text.size()) % 8 != 0) text += ' ';  // keep tensor data 8-byte aligned
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) fail("cannot write ", path);
  uint8_t len[8];
  for (int i = 0; i < 8; ++i) len[i] = uint8_t(uint64_t(text.size()) >> (8 * i));
  out.write(reinterpret_cast<const char*>(len), 8);
  out.write(text.data(), std::streamsize(text.size()));
  for (const Entry* e : order) out.write(reinterpret_cast<const char*>(e->bytes.data()), std::streamsize(e->bytes.size()));
  if (!out) fail("error while writing ", path);
}

}  // namespace qwen35
