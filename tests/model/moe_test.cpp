// The MoE FFN (model/moe) on the tiny MoE model: layer 1's block of text_L7 against the official
// expert-by-expert trace (moe_trace.*), every row the same bits whatever the block, its order and
// the thread count, and experts no row chose never read.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <vector>

#include "core/error.h"
#include "decoder_harness.h"
#include "model/moe.h"
#include "moe_checks.h"
#include "support/logit_checks.h"
#include "support/test_data.h"

namespace qwen35::test {
namespace {

struct MoeRun {
  std::vector<float> out;
  MoeScratch s;
};

MoeRun run_moe(const kernels::Compute& c, const TextConfig& cfg, const MoeWeights& w, const std::vector<float>& x) {
  const int64_t H = cfg.hidden_size, T = int64_t(x.size()) / H;
  MoeRun r;
  r.out.resize(x.size());
  r.s.reserve(cfg, T);
  kernels::Activations a;
  a.bind(x.data(), T, H);
  moe_forward(c, w, a, r.s, r.out.data());
  return r;
}

TEST(Moe, LayerBlockMatchesOfficialTrace) {
  const Golden g("tiny-qwen35-moe/golden/text_L7.safetensors");
  const Model& m = tiny_moe_model();
  const TextConfig& cfg = m.config().text;
  const int layer = int(g.i64("moe_trace.layer")[0]);
  const MoeWeights& w = m.text_weights().layers[size_t(layer)].moe;
  const std::vector<float> x = g.f32("moe_trace.input");
  const int64_t H = cfg.hidden_size, T = int64_t(x.size()) / H, k = cfg.num_experts_per_tok;
  MoeRun r = run_moe(test_compute(), cfg, w, x);

  const auto ids = g.i64("moe_trace.topk_ids");
  const auto weights = g.f32("moe_trace.topk_weights");
  const auto expert_out = g.f32("moe_trace.expert_out");  // [T, k, H], unweighted
  std::vector<float> ours(expert_out.size());
  for (int64_t t = 0; t < T; ++t)
    for (int64_t j = 0; j < k; ++j) {
      ASSERT_EQ(r.s.ids[size_t(t * k + j)], ids[size_t(t * k + j)]) << "row " << t << " slot " << j;
      EXPECT_NEAR(r.s.weights[size_t(t * k + j)], weights[size_t(t * k + j)], 1e-6) << "row " << t << " slot " << j;
      std::memcpy(ours.data() + (t * k + j) * H, r.s.y.data() + int64_t(r.s.row_of[size_t(t * k + j)]) * H,
                  size_t(H) * sizeof(float));
    }
  // Observed: ~1e-7 (float64 recomputation of the trace: 3.7e-7 for the experts, 4.9e-7 for the block).
  EXPECT_LE(max_rel_error(ours, expert_out), 1e-5) << "expert outputs";
  EXPECT_LE(max_rel_error(std::vector<float>(r.s.shared_out.begin(), r.s.shared_out.begin() + T * H),
                          g.f32("moe_trace.shared_expert_out")),
            1e-5)
      << "shared expert";
  EXPECT_LE(max_rel_error(std::vector<float>(r.s.shared_gate.begin(), r.s.shared_gate.begin() + T),
                          g.f32("moe_trace.shared_gate")),
            1e-6)
      << "shared gate";
  EXPECT_LE(max_rel_error(r.out, g.f32("moe_trace.output")), 1e-5) << "block output";
}

// Rows of the trace input in another arrangement: each alone, reversed, and repeated into a block
// of 23 (so experts see other row counts and groupings); every table, 1-3 threads, same bits.
TEST(Moe, RowsDoNotDependOnTheBlockOrderOrThreads) {
  const Golden g("tiny-qwen35-moe/golden/text_L7.safetensors");
  const Model& m = tiny_moe_model();
  const TextConfig& cfg = m.config().text;
  const MoeWeights& w = m.text_weights().layers[1].moe;
  const std::vector<float> x = g.f32("moe_trace.input");
  const int64_t H = cfg.hidden_size, T = int64_t(x.size()) / H;
  ThreadPool one(1), two(2), three(3);
  for (const kernels::KernelTable* table : kernels::supported_tables()) {
    const MoeRun base = run_moe({table, &one}, cfg, w, x);
    for (ThreadPool* pool : {&one, &two, &three}) {
      const kernels::Compute c{table, pool};
      std::vector<int64_t> order;
      for (int64_t i = 0; i < 23; ++i) order.push_back((3 * i + 1) % T);
      std::vector<float> big;
      for (int64_t t : order) big.insert(big.end(), x.begin() + t * H, x.begin() + (t + 1) * H);
      const MoeRun many = run_moe(c, cfg, w, big);
      for (size_t i = 0; i < order.size(); ++i)
        EXPECT_EQ(0, std::memcmp(many.out.data() + int64_t(i) * H, base.out.data() + order[i] * H, size_t(H) * 4))
            << table->name << " threads " << pool->size() << " row " << i;
      for (int64_t t = 0; t < T; ++t) {
        const MoeRun alone = run_moe(c, cfg, w, std::vector<float>(x.begin() + t * H, x.begin() + (t + 1) * H));
        EXPECT_EQ(0, std::memcmp(alone.out.data(), base.out.data() + t * H, size_t(H) * 4))
            << table->name << " threads " << pool->size() << " token " << t;
      }
    }
  }
}

// Decoding reads only the chosen experts: with every other expert's matrices replaced by NaN the
// token's output keeps its bits.
TEST(Moe, ReadsOnlyTheChosenExperts) {
  const Golden g("tiny-qwen35-moe/golden/text_L7.safetensors");
  const Model& m = tiny_moe_model();
  const TextConfig& cfg = m.config().text;
  const MoeWeights& w = m.text_weights().layers[1].moe;
  const std::vector<float> x = g.f32("moe_trace.input");
  const int64_t H = cfg.hidden_size, k = cfg.num_experts_per_tok;
  const std::vector<float> row(x.begin() + 2 * H, x.begin() + 3 * H);
  const MoeRun want = run_moe(test_compute(), cfg, w, row);

  const int64_t I = cfg.moe_intermediate_size;
  const std::vector<float> nan(size_t(I * H), std::numeric_limits<float>::quiet_NaN());
  const kernels::WeightMatrix nan_in{DType::F32, nan.data(), I, H, size_t(H) * 4};
  const kernels::WeightMatrix nan_out{DType::F32, nan.data(), H, I, size_t(I) * 4};
  MoeWeights poisoned = w;
  int unread = 0;
  for (int e = 0; e < w.num_experts(); ++e) {
    bool chosen = false;
    for (int64_t j = 0; j < k; ++j) chosen |= want.s.ids[size_t(j)] == e;
    if (chosen) continue;
    poisoned.gate[size_t(e)] = poisoned.up[size_t(e)] = nan_in;
    poisoned.down[size_t(e)] = nan_out;
    ++unread;
  }
  EXPECT_EQ(unread, w.num_experts() - k);
  const MoeRun got = run_moe(test_compute(), cfg, poisoned, row);
  EXPECT_EQ(0, std::memcmp(got.out.data(), want.out.data(), size_t(H) * 4));
}

// image_native: the official processor's patches through the vision tower, the image rows put in
// place of the image pads, MRoPE positions from the golden; prompt hidden states, logits and
// routes, then 16 greedy tokens fed back one at a time with their routes.
TEST(Moe, ImagePromptMatchesOfficialImplementation) {
  const Golden g("tiny-qwen35-moe/golden/image_native.safetensors");
  const Model& m = tiny_moe_model();
  const TextConfig& cfg = m.config().text;
  const int64_t H = cfg.hidden_size, V = cfg.vocab_size;
  ASSERT_NE(m.vision(), nullptr);
  const auto thw = g.i64("image_grid_thw");
  const std::vector<ImageGrid> grids = {ImageGrid{thw[0], thw[1], thw[2]}};
  const std::vector<float> embeds = m.vision()->encode(test_compute(), g.f32("pixel_values"), grids);
  EXPECT_LE(max_rel_error(embeds, g.f32("image_embeds")), 1e-4) << "image_embeds";

  const auto ids = g.i64("input_ids");
  const auto pos64 = g.i64("position_ids");
  const int64_t P = int64_t(ids.size());
  std::vector<int32_t> ids32(ids.begin(), ids.end()), pos(pos64.begin(), pos64.end());
  std::vector<float> x(size_t(P * H));
  int64_t next = 0;
  for (int64_t t = 0; t < P; ++t) {
    if (ids[size_t(t)] == m.config().image_token_id) {
      std::copy_n(embeds.begin() + next++ * H, H, x.begin() + t * H);
    } else {
      m.decoder().embed(&ids32[size_t(t)], 1, x.data() + t * H);
    }
  }
  ASSERT_EQ(next * H, int64_t(embeds.size()));

  struct Routes : DecoderObserver {
    std::vector<LayerRoutes> layers;
    std::vector<std::vector<float>> hidden;
    int64_t H = 0;
    void on_layer_output(int layer, const float* y, int64_t T) override {
      if (hidden.size() <= size_t(layer)) hidden.resize(size_t(layer) + 1);
      hidden[size_t(layer)].insert(hidden[size_t(layer)].end(), y, y + T * H);
    }
    void on_moe_routing(int layer, const MoeRouting& r) override {
      if (layers.size() <= size_t(layer)) layers.resize(size_t(layer) + 1);
      layers[size_t(layer)].append(r);
    }
  } obs;
  obs.H = H;
  const kernels::Compute c = test_compute();
  DecoderState state = DecoderState::create(cfg);
  DecoderWorkspace ws;
  std::vector<float> out(size_t(P * H)), logits(size_t(P * V));
  m.decoder().forward(c, x.data(), pos.data(), P, state, ws, out.data(), DeltaRuleMode::kAuto, &obs);
  m.decoder().logits(c, out.data(), P, logits.data());
  for (int i = 0; i < cfg.num_layers; ++i)
    EXPECT_LE(max_rel_error(obs.hidden[size_t(i)], g.f32("hidden." + std::to_string(i))), 1e-4) << "hidden." << i;
  EXPECT_LE(max_rel_error(out, g.f32("final_norm")), 1e-4);
  expect_logits_match(g, "logits", logits, P, V);

  // Greedy: each generated token is fed back at its golden position (decode_position_ids lists all
  // but the last's, which follows), and routed: the golden's routes have P + 16 rows.
  const auto want = g.i64("generated_ids");
  const auto dpos = g.i64("decode_position_ids");
  std::vector<float> row(logits.end() - V, logits.end());
  std::vector<float> e(static_cast<size_t>(H)), h(static_cast<size_t>(H));
  for (size_t step = 0; step < want.size(); ++step) {
    expect_step_logits_match(g, "", int64_t(step), row.data(), V);
    ASSERT_EQ(argmax(row.data(), V), want[step]) << "step " << step;  // golden gaps >= 1.3e-3 (README)
    const int32_t id = int32_t(want[step]);
    const int32_t p = int32_t(step < dpos.size() ? dpos[step] : dpos.back() + 1), p3[3] = {p, p, p};
    m.decoder().embed(&id, 1, e.data());
    m.decoder().forward(c, e.data(), p3, 1, state, ws, h.data(), DeltaRuleMode::kAuto, &obs);
    m.decoder().logits(c, h.data(), 1, row.data());
  }
  const int64_t rows = P + int64_t(want.size());
  EXPECT_EQ(int64_t(obs.layers[0].shared_gate.size()), rows);
  EXPECT_EQ(expect_layer_routes_match(g, "", obs.layers, cfg.num_layers, rows), rows);
}

// --weights on an MoE folder: float types convert every expert, the router keeps its stored floats
// (the block presets: quantized_moe_test).
TEST(Moe, WeightsAtLoadConvertFloats) {
  ModelLoadOptions o;
  o.weights = "f16";
  auto m = Model::load(tiny_moe_model_dir(), o);
  const LayerWeights& L = m->text_weights().layers[5];
  EXPECT_EQ(L.moe.gate[7].dtype, DType::F16);
  EXPECT_EQ(L.moe.down[15].dtype, DType::F16);
  EXPECT_EQ(L.moe.router.dtype, DType::BF16);
  EXPECT_EQ(L.moe.shared_gate.dtype, DType::BF16);
  EXPECT_EQ(m->mtp()->weights().layer.moe.up[2].dtype, DType::F16);
  const Golden g("tiny-qwen35-moe/golden/text_L7.safetensors");
  const auto ids = g.i64("input_ids");
  DecoderState a = DecoderState::create(m->config().text), b = a;
  const RunResult f16 = run_tokens(*m, ids, a, 7), bf16 = run_tokens(tiny_moe_model(), ids, b, 7);
  // F16 keeps BF16's 8 significant bits; only values below F16's normal range round. The logits stay
  // within the golden tolerance of the BF16 run's.
  EXPECT_LE(max_abs_error(f16.logits, bf16.logits), 1e-3);
}

// A decoded token's MoE FFN costs three passes over the pool whatever k: the router's (with the
// shared expert's gate and up), the k experts' gate and up, and the k + 1 down projections.
TEST(Moe, ADecodedTokenTakesThreePoolPasses) {
  const Golden g("tiny-qwen35-moe/golden/text_L7.safetensors");
  const Model& m = tiny_moe_model();
  const TextConfig& cfg = m.config().text;
  const MoeWeights& w = m.text_weights().layers[1].moe;
  const std::vector<float> x = g.f32("moe_trace.input");
  const std::vector<float> row(x.begin(), x.begin() + cfg.hidden_size);
  ThreadPool two(2);
  for (const kernels::KernelTable* table : kernels::supported_tables()) {
    const uint64_t before = two.sync_count();
    run_moe({table, &two}, cfg, w, row);
    EXPECT_EQ(two.sync_count() - before, 3u) << table->name;
  }
}

// A block's MoE FFN costs the same passes over the pool whatever experts its rows choose, and
// however many: on float weights the router's, the routing's, the gather's, every chosen expert's
// gate and up, the SwiGLU of all rows, every down projection with the shared expert's, and the
// weighted sums (7); on block-format weights three more quantize the block's rows, the gathered rows
// and the SwiGLU rows (10). Blocks of 17 rows and more: smaller ones split fewer of these loops.
TEST(Moe, ABlockTakesTheSamePoolPassesWhateverItsExperts) {
  const Golden g("tiny-qwen35-moe/golden/text_L7.safetensors");
  const std::vector<float> x = g.f32("moe_trace.input");
  ThreadPool two(2);
  for (const kernels::KernelTable* table : kernels::supported_tables()) {
    ModelLoadOptions o;
    o.weights = "q4_k_m";
    o.table = table;
    const std::unique_ptr<Model> quantized = Model::load(tiny_moe_model_dir(), o);
    for (const Model* m : {&tiny_moe_model(), static_cast<const Model*>(quantized.get())}) {
      const TextConfig& cfg = m->config().text;
      const MoeWeights& w = m->text_weights().layers[1].moe;
      const int64_t H = cfg.hidden_size, T = int64_t(x.size()) / H;
      const uint64_t want = m == quantized.get() ? 10u : 7u;
      // One row repeated (its k experts only), and rows in many arrangements (most experts).
      for (int64_t rows : {17, 40, 96}) {
        for (bool one_row : {true, false}) {
          std::vector<float> block;
          for (int64_t i = 0; i < rows; ++i) {
            const int64_t t = one_row ? 2 : (5 * i + 3) % T;
            block.insert(block.end(), x.begin() + t * H, x.begin() + (t + 1) * H);
          }
          const uint64_t before = two.sync_count();
          const MoeRun r = run_moe({table, &two}, cfg, w, block);
          std::vector<int32_t> chosen(r.s.ids.begin(), r.s.ids.begin() + rows * cfg.num_experts_per_tok);
          std::sort(chosen.begin(), chosen.end());
          const int64_t experts = std::unique(chosen.begin(), chosen.end()) - chosen.begin();
          EXPECT_EQ(two.sync_count() - before, want) << table->name << " " << rows << " rows, " << experts << " experts";
        }
      }
    }
  }
}

}  // namespace
}  // namespace qwen35::test
