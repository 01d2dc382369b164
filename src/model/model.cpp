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
  // a tied LM head gets the embedding's prepared rows and then a packed copy of its own. The
  // preset's types come from the text decoder's tensors as one list (llama-quantize's counters
  // run over the whole model; without output.weight the embedding gets the output's type); the
  // vision tower, a separate projector file in llama.cpp, gets Q8_0 under any quantized preset.
  std::unique_ptr<ThreadPool> own_pool;
  WeightPrepOptions prep;
  prep.table = options.table;
  prep.pool = options.pool;
  if (!prep.pool) prep.pool = (own_pool = std::make_unique<ThreadPool>(0)).get();
  prep.release_sources = true;
  TextWeights& t = m->text_;
  const TextConfig& tc = m->config_.text;
  const bool tied = tc.tie_word_embeddings;
  std::vector<NamedMatrix> text = named_matrices(t, nullptr);
  text.insert(text.begin(), NamedMatrix{"token_embd.weight", &t.embed, true});
  if (!tied) text.insert(text.begin() + 1, NamedMatrix{"output.weight", &t.lm_head, false});
  WeightModelShape shape;
  shape.n_layers = tc.num_layers;
  shape.n_gqa = tc.num_kv_heads > 0 ? tc.num_heads / tc.num_kv_heads : 1;
  shape.tied_embeddings = tied;
  std::vector<DType> types = choose_weight_types(options.weights, text, shape);
  // The MTP head's matrices get the types llama-quantize gives them in a file that bundles the
  // head as one more block; the trunk keeps those of a file without it (the stock mixes). Its
  // embedding and LM head are the trunk's, taken once those are prepared.
  const bool has_mtp = has_mtp_weights(*m->checkpoint_);
  std::vector<NamedMatrix> mtp_mats;
  std::vector<DType> mtp_types;
  if (has_mtp) {
    m->mtp_weights_ = bind_mtp_weights(*m->checkpoint_, tc, t);
    mtp_mats = mtp_named_matrices(m->mtp_weights_, tc.num_layers);
    std::vector<NamedMatrix> bundled = text;
    bundled.insert(bundled.end(), mtp_mats.begin(), mtp_mats.end());
    WeightModelShape with_head = shape;
    with_head.n_layers += 1;
    const std::vector<DType> all = choose_weight_types(options.weights, bundled, with_head);
    mtp_types.assign(all.end() - int64_t(mtp_mats.size()), all.end());
  }
  std::vector<NamedMatrix> vision_mats;
  std::vector<DType> vision_types;
  if (has_vision) {
    for (NamedMatrix& nm : named_matrices(t, &vision_weights))
      if (nm.name.rfind("v.", 0) == 0 || nm.name.rfind("mm.", 0) == 0) vision_mats.push_back(nm);
    vision_types = vision_weight_types(options.weights, vision_mats);
  }
  double total = 0, done = 0;
  for (const auto* list : {&text, &vision_mats, &mtp_mats})
    for (const NamedMatrix& nm : *list) total += double(nm.w->rows) * double(nm.w->cols);
  auto stage = [&](const std::vector<NamedMatrix>& mats, const std::vector<DType>& ty) {
    double size = 0;
    for (const NamedMatrix& nm : mats) size += double(nm.w->rows) * double(nm.w->cols);
    prep.progress = [&, size](double f) {
      if (options.on_prepare_progress) options.on_prepare_progress(total > 0 ? (done + f * size) / total : 1.0);
    };
    prepare_weights(mats, ty, m->store_, prep);
    done += size;
  };
  stage({text[0]}, {types[0]});
  if (tied) {
    t.lm_head = t.embed;
    text[0] = NamedMatrix{"output.weight", &t.lm_head, false};  // same type as the embedding now has
    types[0] = t.embed.dtype;
  } else {
    text.erase(text.begin());
    types.erase(types.begin());
  }
  stage(text, types);
  if (has_vision) stage(vision_mats, vision_types);
  if (has_mtp) {
    stage(mtp_mats, mtp_types);
    m->mtp_weights_.embed = t.embed;
    m->mtp_weights_.lm_head = t.lm_head;
  }

  m->weight_bytes_ = matrix_bytes(t.embed) + (tied && t.lm_head.data == t.embed.data ? 0 : matrix_bytes(t.lm_head));
  for (NamedMatrix& nm : named_matrices(t, has_vision ? &vision_weights : nullptr)) {
    m->weight_bytes_ += matrix_bytes(*nm.w);
    if (nm.name.rfind("v.", 0) == 0 || nm.name.rfind("mm.", 0) == 0) m->vision_weight_bytes_ += matrix_bytes(*nm.w);
  }
  for (const NamedMatrix& nm : mtp_mats) m->weight_bytes_ += matrix_bytes(*nm.w);

  m->decoder_ = std::make_unique<TextDecoder>(m->config_.text, m->text_);
  if (has_vision) m->vision_ = std::make_unique<VisionTower>(m->config_.vision, std::move(vision_weights));
  if (has_mtp) m->mtp_ = std::make_unique<MtpHead>(m->config_.text, m->mtp_weights_);
  return m;
}

}  // namespace qwen35
