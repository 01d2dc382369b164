// A loaded Qwen3.5 model: config, mapped checkpoint, bound weights. Immutable after load.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/thread_pool.h"
#include "io/checkpoint.h"
#include "model/config.h"
#include "model/mtp.h"
#include "model/mtp_weights.h"
#include "model/text_decoder.h"
#include "model/text_weights.h"
#include "model/vision.h"
#include "model/weight_prep.h"

namespace qwen35 {

struct ModelLoadOptions {
  // `--weights`: "" keeps the checkpoint's types; otherwise weight_type_rule()'s values.
  std::string weights;
  // The kernel table the weights are prepared (repacked) for; nullptr: the active table.
  const kernels::KernelTable* table = nullptr;
  // Runs the preparation; nullptr: a pool of one thread per core for the duration of the load.
  ThreadPool* pool = nullptr;
  std::function<void(double fraction)> on_prepare_progress;
};

class Model {
 public:
  // Loads config.json and the weights of `model_dir`; throws qwen35::Error on any problem.
  static std::unique_ptr<Model> load(const std::string& model_dir, const ModelLoadOptions& options = {});

  const std::string& dir() const { return dir_; }
  const ModelConfig& config() const { return config_; }
  const Checkpoint& checkpoint() const { return *checkpoint_; }
  const TextDecoder& decoder() const { return *decoder_; }
  const TextWeights& text_weights() const { return text_; }
  // The vision tower; nullptr for a text-only checkpoint (no vision_config or no model.visual.*).
  const VisionTower* vision() const { return vision_.get(); }
  // The multi-token-prediction head; nullptr when the checkpoint has none (no mtp.*).
  const MtpHead* mtp() const { return mtp_.get(); }
  // Bytes of the weights as the kernels read them (prepared copies and the mapped views in use),
  // and the vision tower's share of them.
  size_t weight_bytes() const { return weight_bytes_; }
  size_t vision_weight_bytes() const { return vision_weight_bytes_; }

 private:
  Model() = default;
  std::string dir_;
  ModelConfig config_;
  std::unique_ptr<Checkpoint> checkpoint_;
  WeightStore store_;  // before the weights that point into it
  TextWeights text_;
  std::unique_ptr<TextDecoder> decoder_;
  std::unique_ptr<VisionTower> vision_;
  MtpWeights mtp_weights_;
  std::unique_ptr<MtpHead> mtp_;
  size_t weight_bytes_ = 0;
  size_t vision_weight_bytes_ = 0;
};

// Every matrix of the text decoder (and of the vision tower when given), GGUF-named, in
// llama-quantize's order (non-layer tensors first, then by layer).
std::vector<NamedMatrix> named_matrices(TextWeights& text, VisionWeights* vision);

}  // namespace qwen35
