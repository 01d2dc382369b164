#include "model/model.h"

#include <string>

namespace qwen35 {
namespace {

size_t matrix_bytes(const kernels::WeightMatrix& w) {
  if (w.layout != 0) return w.group_bytes * size_t((w.rows + 15) / 16);
  return w.row_bytes * size_t(w.rows);
}

}  // namespace

std::vector<NamedMatrix> named_matrices(TextWeights& text, VisionWeights* vision) {
  std::vector<NamedMatrix> out;
  auto add = [&](std::string name, kernels::WeightMatrix& w) { out.push_back(NamedMatrix{std::move(name), &w, false}); };
  for (size_t i = 0; i < text.layers.size(); ++i) {
    LayerWeights& L = text.layers[i];
    const std::string b = "blk." + std::to_string(i) + ".";
    if (L.kind == LayerKind::kDeltaNet) {
      add(b + "attn_qkv.weight", L.deltanet.in_qkv);
      add(b + "attn_gate.weight", L.deltanet.in_z);
      add(b + "ssm_beta.weight", L.deltanet.in_b);
      add(b + "ssm_alpha.weight", L.deltanet.in_a);
      add(b + "ssm_out.weight", L.deltanet.out);
    } else {
      add(b + "attn_q.weight", L.attention.q);
      add(b + "attn_k.weight", L.attention.k);
      add(b + "attn_v.weight", L.attention.v);
      add(b + "attn_output.weight", L.attention.o);
    }
    add(b + "ffn_gate.weight", L.mlp.gate);
    add(b + "ffn_up.weight", L.mlp.up);
    add(b + "ffn_down.weight", L.mlp.down);
  }
  if (vision) {
    add("v.patch_embd.weight", vision->patch_embed.w);
    for (size_t j = 0; j < vision->blocks.size(); ++j) {
      VisionBlockWeights& B = vision->blocks[j];
      const std::string b = "v.blk." + std::to_string(j) + ".";
      add(b + "attn_qkv.weight", B.qkv.w);
      add(b + "attn_out.weight", B.proj.w);
      add(b + "ffn_up.weight", B.fc1.w);
      add(b + "ffn_down.weight", B.fc2.w);
    }
    add("mm.0.weight", vision->merger_fc1.w);
    add("mm.2.weight", vision->merger_fc2.w);
  }
  return out;
}

std::unique_ptr<Model> Model::load(const std::string& model_dir, const ModelLoadOptions& options) {
  auto m = std::unique_ptr<Model>(new Model());
  m->dir_ = model_dir;
  m->config_ = ModelConfig::load(model_dir);
  m->checkpoint_ = Checkpoint::open(model_dir);
  m->text_ = TextWeights::bind(*m->checkpoint_, m->config_.text);
  VisionWeights vision_weights;
  const bool has_vision = m->config_.vision.present && !VisionWeights::prefix(*m->checkpoint_).empty();
  if (has_vision) vision_weights = VisionWeights::bind(*m->checkpoint_, m->config_.vision);

  // Prepare the weights for the kernels. The embedding is read by rows and stays in plain rows;
  // a tied LM head gets the embedding's (prepared) rows and then its own packed copy. Without an
  // output tensor llama-quantize gives the embedding the output's type, hence its name here.
  std::unique_ptr<ThreadPool> own_pool;
  WeightPrepOptions prep;
  prep.rule = weight_type_rule(options.weights);
  prep.table = options.table;
  prep.pool = options.pool;
  if (!prep.pool) prep.pool = (own_pool = std::make_unique<ThreadPool>(0)).get();
  prep.release_sources = true;
  prep.progress = options.on_prepare_progress;
  TextWeights& t = m->text_;
  const bool tied = m->config_.text.tie_word_embeddings;
  prepare_weights({NamedMatrix{tied ? "output.weight" : "token_embd.weight", &t.embed, true}}, m->store_, prep);
  std::vector<NamedMatrix> rest;
  if (tied) t.lm_head = t.embed;
  rest.push_back(NamedMatrix{"output.weight", &t.lm_head, false});
  for (NamedMatrix& nm : named_matrices(t, has_vision ? &vision_weights : nullptr)) rest.push_back(nm);
  prepare_weights(rest, m->store_, prep);

  m->weight_bytes_ = matrix_bytes(t.embed) + (tied && t.lm_head.data == t.embed.data ? 0 : matrix_bytes(t.lm_head));
  for (NamedMatrix& nm : named_matrices(t, has_vision ? &vision_weights : nullptr)) m->weight_bytes_ += matrix_bytes(*nm.w);

  m->decoder_ = std::make_unique<TextDecoder>(m->config_.text, m->text_);
  if (has_vision) m->vision_ = std::make_unique<VisionTower>(m->config_.vision, std::move(vision_weights));
  return m;
}

}  // namespace qwen35
