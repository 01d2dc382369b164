// A Hugging Face checkpoint folder's tensors: `model.safetensors`, or the sharded form
// `model-0000x-of-0000y.safetensors` listed by `model.safetensors.index.json`. All shards are
// memory-mapped; lookups return views into them.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "io/safetensors.h"

namespace qwen35 {

class Checkpoint {
 public:
  // Opens the folder's weights. Throws qwen35::Error naming the file and the problem.
  static std::unique_ptr<Checkpoint> open(const std::string& model_dir);

  // nullptr when absent.
  const TensorView* find(const std::string& name) const;
  // Throws "missing tensor" when absent.
  const TensorView& get(const std::string& name) const;
  std::vector<std::string> names() const;
  size_t total_bytes() const;

 private:
  std::vector<std::unique_ptr<SafetensorsFile>> files_;
  std::map<std::string, const TensorView*> index_;
  std::string dir_;
};

}  // namespace qwen35
