// A loaded Qwen3.5 model: config, mapped checkpoint, bound weights. Immutable after load.
#pragma once

#include <memory>
#include <string>

#include "io/checkpoint.h"
#include "model/config.h"
#include "model/mtp.h"
#include "model/mtp_weights.h"
#include "model/text_decoder.h"
#include "model/text_weights.h"
#include "model/vision.h"

namespace qwen35 {

class Model {
 public:
  // Loads config.json and the weights of `model_dir`; throws qwen35::Error on any problem.
  static std::unique_ptr<Model> load(const std::string& model_dir);

  const std::string& dir() const { return dir_; }
  const ModelConfig& config() const { return config_; }
  const Checkpoint& checkpoint() const { return *checkpoint_; }
  const TextDecoder& decoder() const { return *decoder_; }
  const TextWeights& text_weights() const { return text_; }
  // The vision tower; nullptr for a text-only checkpoint (no vision_config or no model.visual.*).
  const VisionTower* vision() const { return vision_.get(); }
  // The multi-token-prediction head; nullptr when the checkpoint has none (no mtp.*).
  const MtpHead* mtp() const { return mtp_.get(); }

 private:
  Model() = default;
  std::string dir_;
  ModelConfig config_;
  std::unique_ptr<Checkpoint> checkpoint_;
  TextWeights text_;
  std::unique_ptr<TextDecoder> decoder_;
  std::unique_ptr<VisionTower> vision_;
  MtpWeights mtp_weights_;
  std::unique_ptr<MtpHead> mtp_;
};

}  // namespace qwen35
