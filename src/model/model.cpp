#include "model/model.h"

namespace qwen35 {

std::unique_ptr<Model> Model::load(const std::string& model_dir) {
  auto m = std::unique_ptr<Model>(new Model());
  m->dir_ = model_dir;
  m->config_ = ModelConfig::load(model_dir);
  m->checkpoint_ = Checkpoint::open(model_dir);
  m->text_ = TextWeights::bind(*m->checkpoint_, m->config_.text);
  m->decoder_ = std::make_unique<TextDecoder>(m->config_.text, m->text_);
  if (m->config_.vision.present && !VisionWeights::prefix(*m->checkpoint_).empty())
    m->vision_ = std::make_unique<VisionTower>(m->config_.vision, VisionWeights::bind(*m->checkpoint_, m->config_.vision));
  if (has_mtp_weights(*m->checkpoint_)) {
    m->mtp_weights_ = bind_mtp_weights(*m->checkpoint_, m->config_.text, m->text_);
    m->mtp_ = std::make_unique<MtpHead>(m->config_.text, m->mtp_weights_);
  }
  return m;
}

}  // namespace qwen35
