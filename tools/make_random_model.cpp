// make_random_model: writes a Qwen3.5 checkpoint folder with random weights at the shapes of a
// config.json (default: the real 9B config), in the Hugging Face layout (sharded safetensors +
// index), for benchmarks and memory planning. Speed depends on shapes, not values. Mixture-of-
// experts configs (qwen3.5-35b-a3b.json) write the experts as the published checkpoints do.
//
//   make_random_model --out /tmp/qwen35-9b-random [--config tests/data/configs/qwen3.5-9b.json]
//                     [--layers N] [--no-vision] [--no-mtp] [--shard-gib 4] [--seed 1]
//   make_random_model --mmproj /tmp/mmproj-9b-random-Q8_0.gguf [--mmproj-type q8_0] [--config ...]
//
// --mmproj writes the vision tower alone as a clip mmproj GGUF (what `qwen35 convert --mmproj`
// writes, and llama.cpp's clip loader reads as projector qwen3vl_merger), drawn in memory, so a
// GGUF text model (e.g. from shared/bench/make_random_gguf.py) gets its projector without a
// checkpoint folder on disk; with --out as well, both are written (from separate draws).
// The MTP head (mtp.*, 15 tensors) is written when the config declares mtp_num_hidden_layers.
//
// Tokenizer and processor files are copied from the bundled tiny model (same vocabulary size and
// special ids). Values are drawn so activations stay finite: matrices ~ U(-a, a) with
// a = sqrt(3 / fan_in) * 0.5, norm weights 0 (the decoder multiplies by 1 + w), DeltaNet decays
// like the tiny model's.
#include <cmath>
#include <cstdio>
#include <cstring>
#include <deque>
#include <filesystem>
#include <map>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/half.h"
#include "core/thread_pool.h"
#include "io/gguf_writer.h"
#include "model/config.h"
#include "model/gguf_export.h"
#include "model/vision_weights.h"

namespace fs = std::filesystem;
using qwen35::fail;
using ojson = nlohmann::ordered_json;

namespace {

// kExperts: a stack of matrices [E, rows, cols], each drawn as a matrix of fan-in cols.
enum class Init { kMatrix, kExperts, kZero, kOne, kALog, kDtBias, kConv, kSmall };

struct Spec {
  std::string name;
  std::vector<int64_t> shape;
  bool f32;  // stored as F32 (A_log and the DeltaNet norm, as in the real checkpoints)
  Init init;
};

struct Rng {
  uint64_t s;
  uint64_t next() {  // splitmix64
    uint64_t z = (s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  float uniform() { return float(next() >> 40) / float(1ull << 24); }  // [0, 1)
};

// A layer's FFN under prefix l ("...layers.N."): the SwiGLU MLP, or for a mixture of experts the
// router, the shared expert with its gate, and the routed experts, stacked as the published
// checkpoints store them (gate_up_proj [E, 2I, H], gate rows first; down_proj [E, H, I]; no
// .weight suffix) or one by one (Qwen3.5's MTP block).
void ffn_tensors(const qwen35::TextConfig& c, const std::string& l, bool experts_one_by_one, std::vector<Spec>& t) {
  const int64_t H = c.hidden_size;
  if (!c.is_moe()) {
    const int64_t I = c.intermediate_size;
    t.push_back({l + "mlp.gate_proj.weight", {I, H}, false, Init::kMatrix});
    t.push_back({l + "mlp.up_proj.weight", {I, H}, false, Init::kMatrix});
    t.push_back({l + "mlp.down_proj.weight", {H, I}, false, Init::kMatrix});
    return;
  }
  const int64_t E = c.num_experts, I = c.moe_intermediate_size, Is = c.shared_expert_intermediate_size;
  t.push_back({l + "mlp.gate.weight", {E, H}, false, Init::kMatrix});
  t.push_back({l + "mlp.shared_expert_gate.weight", {1, H}, false, Init::kMatrix});
  t.push_back({l + "mlp.shared_expert.gate_proj.weight", {Is, H}, false, Init::kMatrix});
  t.push_back({l + "mlp.shared_expert.up_proj.weight", {Is, H}, false, Init::kMatrix});
  t.push_back({l + "mlp.shared_expert.down_proj.weight", {H, Is}, false, Init::kMatrix});
  if (!experts_one_by_one) {
    t.push_back({l + "mlp.experts.gate_up_proj", {E, 2 * I, H}, false, Init::kExperts});
    t.push_back({l + "mlp.experts.down_proj", {E, H, I}, false, Init::kExperts});
    return;
  }
  for (int64_t e = 0; e < E; ++e) {
    const std::string x = l + "mlp.experts." + std::to_string(e) + ".";
    t.push_back({x + "gate_proj.weight", {I, H}, false, Init::kMatrix});
    t.push_back({x + "up_proj.weight", {I, H}, false, Init::kMatrix});
    t.push_back({x + "down_proj.weight", {H, I}, false, Init::kMatrix});
  }
}

std::vector<Spec> text_tensors(const qwen35::TextConfig& c, const std::string& p, bool tied) {
  const int64_t H = c.hidden_size, V = c.vocab_size;
  std::vector<Spec> t = {{p + "embed_tokens.weight", {V, H}, false, Init::kMatrix},
                         {p + "norm.weight", {H}, false, Init::kZero}};
  if (!tied) t.push_back({"lm_head.weight", {V, H}, false, Init::kMatrix});
  for (int i = 0; i < c.num_layers; ++i) {
    const std::string l = p + "layers." + std::to_string(i) + ".";
    t.push_back({l + "input_layernorm.weight", {H}, false, Init::kZero});
    t.push_back({l + "post_attention_layernorm.weight", {H}, false, Init::kZero});
    ffn_tensors(c, l, false, t);
    if (c.layer_kinds[size_t(i)] == qwen35::LayerKind::kDeltaNet) {
      const std::string d = l + "linear_attn.";
      const int64_t C = c.conv_dim(), Hv = c.linear_value_heads, VS = c.deltanet_value_size();
      t.push_back({d + "in_proj_qkv.weight", {C, H}, false, Init::kMatrix});
      t.push_back({d + "in_proj_z.weight", {VS, H}, false, Init::kMatrix});
      t.push_back({d + "in_proj_b.weight", {Hv, H}, false, Init::kMatrix});
      t.push_back({d + "in_proj_a.weight", {Hv, H}, false, Init::kMatrix});
      t.push_back({d + "out_proj.weight", {H, VS}, false, Init::kMatrix});
      t.push_back({d + "conv1d.weight", {C, 1, c.conv_kernel}, false, Init::kConv});
      t.push_back({d + "dt_bias", {Hv}, false, Init::kDtBias});
      t.push_back({d + "A_log", {Hv}, true, Init::kALog});
      t.push_back({d + "norm.weight", {c.linear_value_dim}, true, Init::kOne});
    } else {
      const std::string a = l + "self_attn.";
      const int64_t hd = c.head_dim, q_rows = int64_t(c.num_heads) * hd * (c.attn_output_gate ? 2 : 1);
      t.push_back({a + "q_proj.weight", {q_rows, H}, false, Init::kMatrix});
      t.push_back({a + "k_proj.weight", {int64_t(c.num_kv_heads) * hd, H}, false, Init::kMatrix});
      t.push_back({a + "v_proj.weight", {int64_t(c.num_kv_heads) * hd, H}, false, Init::kMatrix});
      t.push_back({a + "o_proj.weight", {H, int64_t(c.num_heads) * hd}, false, Init::kMatrix});
      t.push_back({a + "q_norm.weight", {hd}, false, Init::kZero});
      t.push_back({a + "k_norm.weight", {hd}, false, Init::kZero});
    }
  }
  return t;
}

// The multi-token-prediction head (spec 2.4): mtp.fc, its norms and one full-attention layer with
// the trunk's kind of FFN.
std::vector<Spec> mtp_tensors(const qwen35::TextConfig& c) {
  const int64_t H = c.hidden_size, hd = c.head_dim;
  const int64_t q_rows = int64_t(c.num_heads) * hd * (c.attn_output_gate ? 2 : 1);
  const std::string l = "mtp.layers.0.", a = l + "self_attn.";
  std::vector<Spec> t = {{"mtp.pre_fc_norm_embedding.weight", {H}, false, Init::kZero},
          {"mtp.pre_fc_norm_hidden.weight", {H}, false, Init::kZero},
          {"mtp.fc.weight", {H, 2 * H}, false, Init::kMatrix},
          {l + "input_layernorm.weight", {H}, false, Init::kZero},
          {l + "post_attention_layernorm.weight", {H}, false, Init::kZero},
          {a + "q_proj.weight", {q_rows, H}, false, Init::kMatrix},
          {a + "k_proj.weight", {int64_t(c.num_kv_heads) * hd, H}, false, Init::kMatrix},
          {a + "v_proj.weight", {int64_t(c.num_kv_heads) * hd, H}, false, Init::kMatrix},
          {a + "o_proj.weight", {H, int64_t(c.num_heads) * hd}, false, Init::kMatrix},
          {a + "q_norm.weight", {hd}, false, Init::kZero},
          {a + "k_norm.weight", {hd}, false, Init::kZero},
          {"mtp.norm.weight", {H}, false, Init::kZero}};
  ffn_tensors(c, l, true, t);
  return t;
}

std::vector<Spec> vision_tensors(const qwen35::VisionConfig& v) {
  const int64_t D = v.hidden_size, F = v.intermediate_size, P = v.patch_size, m2 = int64_t(v.spatial_merge_size) * v.spatial_merge_size;
  const std::string p = "model.visual.";
  std::vector<Spec> t = {
      {p + "patch_embed.proj.weight", {D, v.in_channels, v.temporal_patch_size, P, P}, false, Init::kMatrix},
      {p + "patch_embed.proj.bias", {D}, false, Init::kSmall},
      {p + "pos_embed.weight", {v.num_position_embeddings, D}, false, Init::kSmall},
      {p + "merger.norm.weight", {D}, false, Init::kOne},
      {p + "merger.norm.bias", {D}, false, Init::kZero},
      {p + "merger.linear_fc1.weight", {D * m2, D * m2}, false, Init::kMatrix},
      {p + "merger.linear_fc1.bias", {D * m2}, false, Init::kSmall},
      {p + "merger.linear_fc2.weight", {v.out_hidden_size, D * m2}, false, Init::kMatrix},
      {p + "merger.linear_fc2.bias", {v.out_hidden_size}, false, Init::kSmall}};
  for (int j = 0; j < v.depth; ++j) {
    const std::string b = p + "blocks." + std::to_string(j) + ".";
    for (const char* n : {"norm1", "norm2"}) {
      t.push_back({b + n + ".weight", {D}, false, Init::kOne});
      t.push_back({b + n + ".bias", {D}, false, Init::kZero});
    }
    t.push_back({b + "attn.qkv.weight", {3 * D, D}, false, Init::kMatrix});
    t.push_back({b + "attn.qkv.bias", {3 * D}, false, Init::kSmall});
    t.push_back({b + "attn.proj.weight", {D, D}, false, Init::kMatrix});
    t.push_back({b + "attn.proj.bias", {D}, false, Init::kSmall});
    t.push_back({b + "mlp.linear_fc1.weight", {F, D}, false, Init::kMatrix});
    t.push_back({b + "mlp.linear_fc1.bias", {F}, false, Init::kSmall});
    t.push_back({b + "mlp.linear_fc2.weight", {D, F}, false, Init::kMatrix});
    t.push_back({b + "mlp.linear_fc2.bias", {D}, false, Init::kSmall});
  }
  return t;
}

int64_t numel(const Spec& s) {
  int64_t n = 1;
  for (int64_t d : s.shape) n *= d;
  return n;
}

float draw(const Spec& s, int64_t i, Rng& rng) {
  const int64_t fan_in = s.init == Init::kExperts ? s.shape.back() : s.shape.size() >= 2 ? numel(s) / s.shape[0] : 1;
  switch (s.init) {
    case Init::kMatrix:
    case Init::kExperts: return (rng.uniform() * 2 - 1) * std::sqrt(3.0f / float(fan_in)) * 0.5f;
    case Init::kZero: return 0.0f;
    case Init::kOne: return 1.0f;
    case Init::kALog: return std::log(0.005f + 2.5f * rng.uniform());
    case Init::kDtBias: return 1.0f + (rng.uniform() - 0.5f);
    case Init::kConv: return (rng.uniform() * 2 - 1) * 0.4f;
    case Init::kSmall: return (rng.uniform() * 2 - 1) * 0.02f;
  }
  return 0.0f;
}

void write_shard(const fs::path& path, const std::vector<const Spec*>& tensors, Rng& rng) {
  ojson header = ojson::object();
  uint64_t offset = 0;
  for (const Spec* s : tensors) {
    const uint64_t bytes = uint64_t(numel(*s)) * (s->f32 ? 4 : 2);
    header[s->name] = {{"dtype", s->f32 ? "F32" : "BF16"}, {"shape", s->shape}, {"data_offsets", {offset, offset + bytes}}};
    offset += bytes;
  }
  std::string text = header.dump();
  while ((8 + text.size()) % 8) text += ' ';
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) fail("cannot write ", path.string());
  uint8_t len[8];
  for (int i = 0; i < 8; ++i) len[i] = uint8_t(uint64_t(text.size()) >> (8 * i));
  out.write(reinterpret_cast<const char*>(len), 8);
  out.write(text.data(), std::streamsize(text.size()));
  std::vector<uint8_t> buf;
  for (const Spec* s : tensors) {
    const int64_t n = numel(*s);
    for (int64_t i0 = 0; i0 < n; i0 += 1 << 20) {
      const int64_t m = std::min<int64_t>(1 << 20, n - i0);
      buf.resize(size_t(m) * (s->f32 ? 4 : 2));
      for (int64_t i = 0; i < m; ++i) {
        const float v = draw(*s, i0 + i, rng);
        if (s->f32) std::memcpy(buf.data() + i * 4, &v, 4);
        else {
          const uint16_t h = qwen35::f32_to_bf16(v);
          std::memcpy(buf.data() + i * 2, &h, 2);
        }
      }
      out.write(reinterpret_cast<const char*>(buf.data()), std::streamsize(buf.size()));
    }
  }
  if (!out) fail("error writing ", path.string());
}

// The vision tower drawn spec by spec (the order and values of the HF folder's draw), held as
// VisionWeights over bf16 matrices (as in the checkpoint) and f32 vectors; the mmproj exporter
// then writes it in the asked type.
struct RandomTower {
  std::deque<std::vector<uint16_t>> matrices;
  std::map<std::string, std::vector<float>> vectors;
  std::map<std::string, qwen35::WeightMatrix> views;
  qwen35::VisionWeights w;

  RandomTower(const qwen35::VisionConfig& v, Rng& rng) {
    const std::string p = "model.visual.";
    for (const Spec& s : vision_tensors(v)) {
      const int64_t n = numel(s);
      if (s.shape.size() >= 2 && s.name != p + "pos_embed.weight") {
        std::vector<uint16_t>& m = matrices.emplace_back(size_t(n));
        for (int64_t i = 0; i < n; ++i) m[size_t(i)] = qwen35::f32_to_bf16(draw(s, i, rng));
        const int64_t cols = n / s.shape[0];
        views[s.name] = qwen35::WeightMatrix{qwen35::DType::BF16, m.data(), s.shape[0], cols, size_t(cols) * 2};
      } else {
        std::vector<float>& x = vectors[s.name];
        x.resize(size_t(n));
        for (int64_t i = 0; i < n; ++i) x[size_t(i)] = draw(s, i, rng);
      }
    }
    auto linear = [&](const std::string& hf) -> qwen35::LinearWeights {
      return {views.at(p + hf + ".weight"), vectors.at(p + hf + ".bias")};
    };
    auto norm = [&](const std::string& hf) -> qwen35::LayerNormWeights {
      return {vectors.at(p + hf + ".weight"), vectors.at(p + hf + ".bias")};
    };
    w.patch_embed = linear("patch_embed.proj");
    w.pos_table = vectors.at(p + "pos_embed.weight");
    for (int j = 0; j < v.depth; ++j) {
      const std::string b = "blocks." + std::to_string(j) + ".";
      w.blocks.push_back({norm(b + "norm1"), linear(b + "attn.qkv"), linear(b + "attn.proj"), norm(b + "norm2"),
                          linear(b + "mlp.linear_fc1"), linear(b + "mlp.linear_fc2")});
    }
    w.merger_norm = norm("merger.norm");
    w.merger_fc1 = linear("merger.linear_fc1");
    w.merger_fc2 = linear("merger.linear_fc2");
  }
};

// `type`: the matrices' type, as `qwen35 convert --mmproj-type` (f16, bf16, f32 or q8_0; a q8_0
// matrix whose rows do not split into blocks is f16, as the converter falls back).
void write_mmproj(const qwen35::VisionConfig& v, const std::string& type, const std::string& path, Rng& rng) {
  static const std::map<std::string, std::pair<qwen35::DType, int64_t>> kTypes = {
      {"f32", {qwen35::DType::F32, 0}}, {"f16", {qwen35::DType::F16, 1}},
      {"bf16", {qwen35::DType::BF16, 32}}, {"q8_0", {qwen35::DType::Q8_0, 7}}};  // llama_ftype
  const auto t = kTypes.find(type);
  if (t == kTypes.end()) fail("--mmproj-type must be f16, bf16, f32 or q8_0, got '", type, "'");
  if (!v.present) fail("the config has no vision_config: no tower to write as an mmproj");
  const RandomTower tower(v, rng);
  qwen35::ThreadPool pool(0);
  qwen35::GgufExportOptions o;
  o.matrix_type = qwen35::uniform_matrix_type(t->second.first);
  o.file_type = t->second.second;
  o.name = "Qwen3.5 random-weights vision tower";
  o.pool = &pool;
  // The official processor's mean and std (preprocessor_config.json): 0.5 for every channel.
  qwen35::GgufWriter w;
  qwen35::export_mmproj_gguf(v, tower.w, float(v.layer_norm_eps), o, {0.5, 0.5, 0.5}, {0.5, 0.5, 0.5}, w);
  w.write(path);
  std::fprintf(stderr, "done: %s (%s, %.2f GiB)\n", path.c_str(), type.c_str(),
               double(fs::file_size(path)) / double(1ull << 30));
}

int run(int argc, char** argv) {
  std::string config_path = std::string(QWEN35_SOURCE_DIR) + "/tests/data/configs/qwen3.5-9b.json";
  std::string out_dir, mmproj_path, mmproj_type = "f16";
  int layers = -1;
  bool vision = true, mtp = true;
  double shard_gib = 4.0;
  uint64_t seed = 1;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&] {
      if (i + 1 >= argc) fail(a, " needs a value");
      return std::string(argv[++i]);
    };
    if (a == "--config") config_path = value();
    else if (a == "--out") out_dir = value();
    else if (a == "--layers") layers = std::stoi(value());
    else if (a == "--no-vision") vision = false;
    else if (a == "--no-mtp") mtp = false;
    else if (a == "--shard-gib") shard_gib = std::stod(value());
    else if (a == "--seed") seed = std::stoull(value());
    else if (a == "--mmproj") mmproj_path = value();
    else if (a == "--mmproj-type") mmproj_type = value();
    else if (a == "--help" || a == "-h") {
      std::printf("usage: make_random_model [--out DIR] [--mmproj FILE.gguf] [--mmproj-type f16|bf16|f32|q8_0] [--config FILE]\n"
                  "                         [--layers N] [--no-vision] [--no-mtp] [--shard-gib G] [--seed S]\n");
      return 0;
    } else fail("unknown option ", a);
  }
  if (out_dir.empty() && mmproj_path.empty()) fail("missing --out DIR (or --mmproj FILE.gguf)");

  std::ifstream in(config_path);
  if (!in) fail("cannot read ", config_path);
  ojson cfg = ojson::parse(in);
  if (layers > 0) {  // keep the first N layers of the schedule
    auto& tc = cfg["text_config"];
    tc["num_hidden_layers"] = layers;
    if (tc.contains("layer_types")) {
      ojson lt = ojson::array();
      for (int i = 0; i < layers; ++i) lt.push_back(tc["layer_types"][size_t(i)]);
      tc["layer_types"] = lt;
    }
  }
  if (!vision) cfg.erase("vision_config");
  if (!mtp && cfg.contains("text_config")) cfg["text_config"]["mtp_num_hidden_layers"] = 0;
  const qwen35::ModelConfig mc = qwen35::ModelConfig::parse(cfg.dump(), config_path);

  if (!mmproj_path.empty()) {
    Rng rng{seed};
    write_mmproj(mc.vision, mmproj_type, mmproj_path, rng);
    if (out_dir.empty()) return 0;
  }
  fs::create_directories(out_dir);
  std::ofstream(fs::path(out_dir) / "config.json") << cfg.dump(2);
  const fs::path tiny = fs::path(QWEN35_SOURCE_DIR) / "tests/data/tiny-qwen35";
  for (const char* f : {"tokenizer.json", "tokenizer_config.json", "generation_config.json", "preprocessor_config.json",
                        "chat_template.jinja"})
    fs::copy_file(tiny / f, fs::path(out_dir) / f, fs::copy_options::overwrite_existing);

  std::vector<Spec> all = text_tensors(mc.text, "model.language_model.", mc.text.tie_word_embeddings);
  if (mc.text.mtp_num_hidden_layers > 0) {
    auto m = mtp_tensors(mc.text);
    all.insert(all.end(), m.begin(), m.end());
  }
  if (mc.vision.present) {
    auto v = vision_tensors(mc.vision);
    all.insert(all.end(), v.begin(), v.end());
  }
  // Group into shards of about shard_gib each.
  std::vector<std::vector<const Spec*>> shards(1);
  uint64_t in_shard = 0, total = 0;
  const uint64_t limit = uint64_t(shard_gib * double(1ull << 30));
  for (const Spec& s : all) {
    const uint64_t b = uint64_t(numel(s)) * (s.f32 ? 4 : 2);
    if (in_shard > 0 && in_shard + b > limit) {
      shards.emplace_back();
      in_shard = 0;
    }
    shards.back().push_back(&s);
    in_shard += b;
    total += b;
  }
  ojson index = {{"metadata", {{"total_size", total}}}, {"weight_map", ojson::object()}};
  Rng rng{seed};
  for (size_t k = 0; k < shards.size(); ++k) {
    char name[64];
    std::snprintf(name, sizeof(name), "model-%05zu-of-%05zu.safetensors", k + 1, shards.size());
    std::fprintf(stderr, "writing %s (%zu tensors)\n", name, shards[k].size());
    write_shard(fs::path(out_dir) / name, shards[k], rng);
    for (const Spec* s : shards[k]) index["weight_map"][s->name] = name;
  }
  std::ofstream(fs::path(out_dir) / "model.safetensors.index.json") << index.dump(2);
  std::fprintf(stderr, "done: %s, %.2f GiB of weights\n", out_dir.c_str(), double(total) / double(1ull << 30));
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "make_random_model: %s\n", e.what());
    return 1;
  }
}
