// Test helpers: where the bundled data lives and typed access to golden safetensors files.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "io/safetensors.h"

namespace qwen35::test {

// Absolute path of a file under tests/data (e.g. "tiny-qwen35/config.json").
std::string data_path(const std::string& relative);
// The bundled tiny model folder.
std::string tiny_model_dir();
// The bundled tiny mixture-of-experts model folder (tests/data/tiny-qwen35-moe).
std::string tiny_moe_model_dir();
// The qwen35 command-line binary built with the tests.
std::string cli_binary();
// A fresh empty directory for one test's files; removed when the test binary exits.
std::string temp_dir(const std::string& tag);
std::string read_text_file(const std::string& path);
// A whole file's bytes (an encoded image, say).
std::vector<uint8_t> read_file_bytes(const std::string& path);

// A golden file: tensors read as f32 (from F32), i64 (from I64), f64 (from F64) or u8 (from U8).
class Golden {
 public:
  explicit Golden(const std::string& relative) : file_(data_path(relative)) {}
  bool has(const std::string& name) const { return file_.contains(name); }
  const TensorView& view(const std::string& name) const { return file_.get(name); }
  std::vector<float> f32(const std::string& name) const;
  std::vector<int64_t> i64(const std::string& name) const;
  std::vector<double> f64(const std::string& name) const;
  std::vector<uint8_t> u8(const std::string& name) const;
  Shape shape(const std::string& name) const { return file_.get(name).shape; }

 private:
  SafetensorsFile file_;
};

// max |a - b| / max |b| (0 when b is all zeros and a == b).
double max_rel_error(const std::vector<float>& a, const std::vector<float>& b);
double max_abs_error(const std::vector<float>& a, const std::vector<float>& b);

}  // namespace qwen35::test
