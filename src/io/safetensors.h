// safetensors files: a little-endian u64 header length, a JSON header, then the tensor bytes.
// Every field of the header is validated against the file before a view is handed out, so a
// truncated, corrupt or hostile file is an Error, never an out-of-bounds read.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/mapped_file.h"
#include "core/tensor.h"

namespace qwen35 {

class SafetensorsFile {
 public:
  // Maps and validates the file. Throws qwen35::Error naming the file and the problem.
  explicit SafetensorsFile(const std::string& path);

  const std::string& path() const { return file_->path(); }
  bool contains(const std::string& name) const { return tensors_.count(name) != 0; }
  // Throws when the tensor is absent.
  const TensorView& get(const std::string& name) const;
  const std::map<std::string, TensorView>& tensors() const { return tensors_; }
  const std::map<std::string, std::string>& metadata() const { return metadata_; }

 private:
  std::unique_ptr<MappedFile> file_;
  std::map<std::string, TensorView> tensors_;
  std::map<std::string, std::string> metadata_;
  std::vector<std::unique_ptr<uint64_t[]>> aligned_copies_;  // tensors the file left misaligned
};

// Writes tensors to a safetensors file (used by `qwen35 forward --out` and the tools).
class SafetensorsWriter {
 public:
  void add(const std::string& name, DType dtype, const Shape& shape, const void* data, size_t nbytes);
  void add_f32(const std::string& name, const Shape& shape, const float* data);
  void add_i64(const std::string& name, const Shape& shape, const int64_t* data);
  void set_metadata(const std::string& key, const std::string& value) { metadata_[key] = value; }
  // Throws on I/O failure.
  void write(const std::string& path) const;

 private:
  struct Entry {
    std::string name;
    DType dtype;
    Shape shape;
    std::vector<uint8_t> bytes;
  };
  std::vector<Entry> entries_;
  std::map<std::string, std::string> metadata_;
};

}  // namespace qwen35
