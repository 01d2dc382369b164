// The tiny MoE model written as GGUF (llama.cpp's qwen35moe: expert keys, ffn_gate_inp,
// ffn_{gate,up,down}_exps, the shared expert, its 1-D gate) and loaded back: the official goldens
// and routes hold for the GGUF model as for the folder, the fused ffn_gate_up_exps form loads to
// the same weights, and the MTP block with its MoE FFN is the folder's head.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <map>
#include <random>

#include "core/error.h"
#include "core/thread_pool.h"
#include "decoder_harness.h"
#include "model_fixtures.h"
#include "io/gguf.h"
#include "io/gguf_writer.h"
#include "model/gguf_export.h"
#include "model/mtp.h"
#include "moe_checks.h"
#include "support/logit_checks.h"
#include "support/test_data.h"

namespace qwen35::test {
namespace {

using ::testing::HasSubstr;

// The tiny MoE model converted with the given matrix type (text only), then loaded from GGUF.
const ConvertedGguf& converted_moe(DType type) { return converted_gguf("tiny-qwen35-moe", type, false); }

TEST(GgufMoe, MetadataAndTensorsAreLlamaCpps) {
  const GgufFile& f = *converted_moe(DType::BF16).model->gguf();
  EXPECT_EQ(f.get_string("general.architecture"), "qwen35moe");
  EXPECT_EQ(f.get_int("qwen35moe.expert_count"), 16);
  EXPECT_EQ(f.get_int("qwen35moe.expert_used_count"), 4);
  EXPECT_EQ(f.get_int("qwen35moe.expert_feed_forward_length"), 32);
  EXPECT_EQ(f.get_int("qwen35moe.expert_shared_feed_forward_length"), 48);
  EXPECT_EQ(f.get_int("qwen35moe.block_count"), 9);  // 8 layers + the MTP block
  EXPECT_FALSE(f.has("qwen35moe.feed_forward_length"));
  EXPECT_FALSE(f.has("qwen35.block_count"));
  auto ne = [&](const std::string& name) {
    const GgufTensor& t = f.get_tensor(name);
    return std::vector<int64_t>(t.ne.begin(), t.ne.begin() + t.n_dims);
  };
  for (const char* b : {"blk.0.", "blk.8."}) {
    const std::string p = b;
    EXPECT_EQ(ne(p + "ffn_gate_inp.weight"), (std::vector<int64_t>{64, 16}));
    EXPECT_EQ(f.get_tensor(p + "ffn_gate_inp.weight").dtype, DType::F32);
    EXPECT_EQ(ne(p + "ffn_gate_inp_shexp.weight"), (std::vector<int64_t>{64}));
    EXPECT_EQ(ne(p + "ffn_gate_exps.weight"), (std::vector<int64_t>{64, 32, 16}));
    EXPECT_EQ(ne(p + "ffn_up_exps.weight"), (std::vector<int64_t>{64, 32, 16}));
    EXPECT_EQ(ne(p + "ffn_down_exps.weight"), (std::vector<int64_t>{32, 64, 16}));
    EXPECT_EQ(f.get_tensor(p + "ffn_down_exps.weight").dtype, DType::BF16);
    EXPECT_EQ(ne(p + "ffn_gate_shexp.weight"), (std::vector<int64_t>{64, 48}));
    EXPECT_EQ(ne(p + "ffn_down_shexp.weight"), (std::vector<int64_t>{48, 64}));
    EXPECT_EQ(f.find_tensor(p + "ffn_gate.weight"), nullptr);
  }
  // Expert 5's gate rows are the folder's rows 0..31 of gate_up_proj[5], bit for bit.
  const Checkpoint& ck = tiny_moe_model().checkpoint();
  const TensorView& gu = ck.get("model.language_model.layers.2.mlp.experts.gate_up_proj");
  const GgufTensor& g = f.get_tensor("blk.2.ffn_gate_exps.weight");
  const GgufTensor& u = f.get_tensor("blk.2.ffn_up_exps.weight");
  const size_t expert = 32 * 64 * 2;  // bytes of one expert's gate (or up) rows
  EXPECT_EQ(0, std::memcmp(g.data + 5 * expert, static_cast<const uint8_t*>(gu.data) + 5 * 2 * expert, expert));
  EXPECT_EQ(0, std::memcmp(u.data + 5 * expert, static_cast<const uint8_t*>(gu.data) + (5 * 2 + 1) * expert, expert));
}

class GgufMoeGolden : public ::testing::TestWithParam<int64_t> {};

TEST_P(GgufMoeGolden, F32FileMatchesOfficialImplementationAndRoutes) {
  const Golden g("tiny-qwen35-moe/golden/text_L64.safetensors");
  const Model& m = *converted_moe(DType::F32).model;
  const TextConfig& cfg = m.config().text;
  ASSERT_TRUE(cfg.is_moe());
  const auto ids = g.i64("input_ids");
  const int64_t T = int64_t(ids.size());
  DecoderState state = DecoderState::create(cfg);
  RunResult r = run_tokens(m, ids, state, GetParam());
  EXPECT_EQ(expect_layer_routes_match(g, "", r.routes, cfg.num_layers, T), T);
  for (int i = 0; i < cfg.num_layers; ++i)
    EXPECT_LE(max_rel_error(r.hidden[size_t(i)], g.f32("hidden." + std::to_string(i))), 1e-4) << "hidden." << i;
  expect_logits_match(g, "logits", r.logits, T, cfg.vocab_size);
}

INSTANTIATE_TEST_SUITE_P(Blocks, GgufMoeGolden, ::testing::Values(64, 1));

TEST(GgufMoe, Bf16FileGivesTheFoldersLogits) {
  const Golden g("tiny-qwen35-moe/golden/text_L64.safetensors");
  const auto ids = g.i64("input_ids");
  DecoderState a = DecoderState::create(tiny_moe_model().config().text), b = a;
  const RunResult from_hf = run_tokens(tiny_moe_model(), ids, a, 64);
  const RunResult from_gguf = run_tokens(*converted_moe(DType::BF16).model, ids, b, 64);
  EXPECT_LE(max_abs_error(from_gguf.logits, from_hf.logits), 1e-4);
  for (size_t i = 0; i < from_hf.routes.size(); ++i) EXPECT_EQ(from_gguf.routes[i].ids, from_hf.routes[i].ids) << i;
}

// A copy of the BF16 file with every layer's (and the MTP block's) gate and up experts fused into
// ffn_gate_up_exps [E, 2I, H], gate rows first, as newer llama.cpp converters write them.
std::string fused_copy() {
  const GgufFile& src = *converted_moe(DType::BF16).model->gguf();
  GgufWriter w;
  for (const auto& [k, v] : src.metadata()) w.set_value(k, v);
  std::vector<std::vector<uint8_t>> keep;
  for (const GgufTensor& t : src.tensors()) {
    const std::string& n = t.name;
    if (n.ends_with("ffn_up_exps.weight")) continue;
    if (!n.ends_with("ffn_gate_exps.weight")) {
      w.add_tensor_bytes(n, *t.dtype, t.shape(), t.data, size_t(t.nbytes));
      continue;
    }
    const GgufTensor& up = src.get_tensor(n.substr(0, n.size() - std::string("gate_exps.weight").size()) + "up_exps.weight");
    const int64_t E = t.ne[2];
    const size_t per = size_t(t.nbytes) / size_t(E);
    std::vector<uint8_t>& bytes = keep.emplace_back(2 * size_t(t.nbytes));
    for (int64_t e = 0; e < E; ++e) {
      std::memcpy(bytes.data() + 2 * per * size_t(e), t.data + per * size_t(e), per);
      std::memcpy(bytes.data() + 2 * per * size_t(e) + per, up.data + per * size_t(e), per);
    }
    const std::string fused = n.substr(0, n.size() - std::string("gate_exps.weight").size()) + "gate_up_exps.weight";
    w.add_tensor_bytes(fused, *t.dtype, Shape{E, 2 * t.ne[1], t.ne[0]}, bytes.data(), bytes.size());
  }
  const std::string path = temp_dir("gguf_moe_fused") + "/fused.gguf";
  w.write(path);
  return path;
}

TEST(GgufMoe, FusedGateUpExpertsLoadAsTheSameWeights) {
  const std::string path = fused_copy();
  auto fused = Model::load(path);
  ASSERT_NE(fused->gguf()->find_tensor("blk.0.ffn_gate_up_exps.weight"), nullptr);
  ASSERT_EQ(fused->gguf()->find_tensor("blk.0.ffn_gate_exps.weight"), nullptr);
  const Golden g("tiny-qwen35-moe/golden/text_L7.safetensors");
  const auto ids = g.i64("input_ids");
  DecoderState a = DecoderState::create(fused->config().text), b = a;
  const RunResult want = run_tokens(*converted_moe(DType::BF16).model, ids, a, 7);
  const RunResult got = run_tokens(*fused, ids, b, 7);
  EXPECT_EQ(got.logits, want.logits);
  ASSERT_NE(fused->mtp(), nullptr);
}

TEST(GgufMoe, MtpHeadIsTheFoldersHead) {
  const Golden g("tiny-qwen35-moe/golden/mtp.safetensors");
  const TextConfig& cfg = tiny_moe_model().config().text;
  const int64_t H = cfg.hidden_size, T = 9;
  std::mt19937 rng(5);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::vector<float> hidden(size_t(T * H));
  for (float& x : hidden) x = nd(rng);
  const std::vector<int32_t> ids = {248045, 846, 198, 9707, 11, 1246, 525, 498, 30};
  std::vector<int32_t> pos(size_t(3 * T));
  for (int64_t t = 0; t < 3 * T; ++t) pos[size_t(t)] = int32_t(t % T);
  auto run = [&](const MtpHead& head) {
    std::vector<float> emb(size_t(T * H)), out(size_t(T * H));
    head.embed(ids.data(), T, emb.data());
    KvCache kv = head.make_cache(DType::F32);
    MtpWorkspace ws;
    head.forward(test_compute(), emb.data(), hidden.data(), pos.data(), T, kv, ws, out.data());
    return out;
  };
  ASSERT_NE(tiny_moe_model().mtp(), nullptr);
  const std::vector<float> want = run(*tiny_moe_model().mtp());
  for (DType type : {DType::F32, DType::BF16}) {
    const Model& m = *converted_moe(type).model;
    ASSERT_NE(m.mtp(), nullptr) << dtype_name(type);
    EXPECT_TRUE(m.mtp()->weights().layer.is_moe());
    EXPECT_EQ(run(*m.mtp()), want) << dtype_name(type);
  }
}

// Q8_0 experts are repacked for each table, each stacked tensor's experts into one allocation; the
// block dot is exact in integers, so the tables differ only by the float matrices' rounding (router,
// the F16 shared down projection).
TEST(GgufMoe, Q8FileAgreesOnEveryTable) {
  const std::string path = converted_moe(DType::Q8_0).text;
  const Golden g("tiny-qwen35-moe/golden/text_L7.safetensors");
  const auto ids = g.i64("input_ids");
  ThreadPool pool(2);
  std::vector<float> first;
  for (const kernels::KernelTable* table : kernels::supported_tables()) {
    ModelLoadOptions o;
    o.table = table;
    o.pool = &pool;
    auto m = Model::load(path, o);
    EXPECT_EQ(m->text_weights().layers[0].moe.gate[3].dtype, DType::Q8_0);
    const kernels::Compute c{table, &pool};
    DecoderState s = DecoderState::create(m->config().text);
    const RunResult r = run_tokens(*m, ids, s, 7, DeltaRuleMode::kAuto, &c);
    if (first.empty()) first = r.logits;
    else EXPECT_LE(max_abs_error(r.logits, first), 1e-4) << table->name;
  }
  DecoderState s = DecoderState::create(tiny_moe_model().config().text);
  const RunResult hf = run_tokens(tiny_moe_model(), ids, s, 7);
  double num = 0, den = 0;
  for (size_t i = 0; i < hf.logits.size(); ++i)
    num += double(first[i] - hf.logits[i]) * (first[i] - hf.logits[i]), den += double(hf.logits[i]) * hf.logits[i];
  EXPECT_LT(std::sqrt(num / den), 0.5);  // the tiny random model is very sensitive to 8-bit weights (see GgufModel)
  EXPECT_GT(std::sqrt(num / den), 1e-4);
}

// llama-gguf-split's layout, cut in the middle of a layer's experts (its gate experts in the
// first part, its up and down experts in the second): the model is the single file's, bit for bit.
TEST(GgufMoe, SplitFileLoadsFromItsFirstPart) {
  const ConvertedGguf& c = converted_moe(DType::BF16);
  const GgufFile& full = *c.model->gguf();
  size_t cut = 0;
  while (cut < full.tensors().size() && full.tensors()[cut].name != "blk.4.ffn_up_exps.weight") ++cut;
  ASSERT_LT(cut, full.tensors().size());
  ASSERT_EQ(full.tensors()[cut - 1].name, "blk.4.ffn_gate_exps.weight");
  GgufWriter p1, p2;
  for (const auto& [k, v] : full.metadata()) p1.set_value(k, v);
  for (GgufWriter* w : {&p1, &p2}) {
    w->set_u16("split.no", w == &p1 ? 0 : 1);
    w->set_u16("split.count", 2);
    w->set_i32("split.tensors.count", int32_t(full.tensors().size()));
  }
  for (size_t i = 0; i < full.tensors().size(); ++i) {
    const GgufTensor& t = full.tensors()[i];
    (i < cut ? p1 : p2).add_tensor_bytes(t.name, *t.dtype, t.shape(), t.data, size_t(t.nbytes));
  }
  const std::string dir = temp_dir("gguf_moe_split");
  p1.write(dir + "/tiny-moe-00001-of-00002.gguf");
  p2.write(dir + "/tiny-moe-00002-of-00002.gguf");
  auto m = Model::load(dir + "/tiny-moe-00001-of-00002.gguf");
  EXPECT_EQ(m->gguf()->part_paths().size(), 2u);
  const Golden g("tiny-qwen35-moe/golden/text_L7.safetensors");
  const auto ids = g.i64("input_ids");
  DecoderState a = DecoderState::create(m->config().text), b = a;
  const RunResult split = run_tokens(*m, ids, a, 7), whole = run_tokens(*c.model, ids, b, 7);
  EXPECT_EQ(split.logits, whole.logits);
  ASSERT_NE(m->mtp(), nullptr);  // the MTP block sits in the second part
  EXPECT_TRUE(m->mtp()->weights().layer.is_moe());
}

TEST(GgufMoe, BrokenExpertTensorsNameTheProblem) {
  const GgufFile& src = *converted_moe(DType::BF16).model->gguf();
  auto without = [&](const std::string& drop, const std::string& file) {
    GgufWriter w;
    for (const auto& [k, v] : src.metadata()) w.set_value(k, v);
    for (const GgufTensor& t : src.tensors())
      if (t.name != drop) w.add_tensor_bytes(t.name, *t.dtype, t.shape(), t.data, size_t(t.nbytes));
    const std::string path = temp_dir("gguf_moe_bad") + "/" + file;
    w.write(path);
    try {
      Model::load(path);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_THAT(without("blk.3.ffn_down_exps.weight", "a.gguf"), HasSubstr("missing tensor 'ffn_down_exps.weight'"));
  EXPECT_THAT(without("blk.1.ffn_up_exps.weight", "b.gguf"), HasSubstr("blk.1.: missing tensor 'ffn_up_exps.weight'"));
  EXPECT_THAT(without("blk.8.ffn_gate_inp.weight", "c.gguf"), HasSubstr("missing tensor 'ffn_gate_inp.weight'"));
}

}  // namespace
}  // namespace qwen35::test
