// Incremental decoding against the goldens of the dense and the MoE tiny model: greedy generation
// through the cache (prefill, then one token per step), and a second turn appended to a cached
// state as one multi-token block; for the MoE model also every routing decision on the way.
#include <gtest/gtest.h>

#include <string>

#include "decoder_harness.h"
#include "moe_checks.h"
#include "support/logit_checks.h"
#include "support/test_data.h"

namespace qwen35::test {
namespace {

// Greedy decode of `steps` tokens after `prompt`; checks every step's logits and ids.
// At a near tie (golden gap < tolerance) either of the two best ids is right; if the engine took
// the other one, the continuation legitimately diverges and comparison stops there.
void check_greedy(const Model& m, const Golden& g, const std::string& p, const std::vector<int64_t>& prompt,
                  int64_t block) {
  const int64_t V = m.config().text.vocab_size;
  const auto want = g.i64(p + "generated_ids");
  const auto gaps = g.f32(p + "step_top1_top2_gap");
  const auto top_ids = g.i64(p + "step_top_ids");
  const int64_t K = g.shape(p + "step_top_ids")[1];

  DecoderState state = DecoderState::create(m.config().text);
  RunResult r = run_tokens(m, prompt, state, block);
  std::vector<LayerRoutes> routes;
  append_routes(routes, r);
  std::vector<float> row(r.logits.end() - V, r.logits.end());
  // The MoE golden routes the prompt and then each generated token as it is fed back.
  auto check_routes = [&] {
    if (!m.config().text.is_moe()) return;
    const int64_t rows = int64_t(routes.empty() ? 0 : routes[0].shared_gate.size());
    EXPECT_EQ(expect_layer_routes_match(g, p, routes, m.config().text.num_layers, rows), rows);
  };
  for (size_t step = 0; step < want.size(); ++step) {
    expect_step_logits_match(g, p, int64_t(step), row.data(), V);
    const int64_t got = argmax(row.data(), V);
    if (gaps[step] < kLogitTol) {
      ASSERT_TRUE(got == top_ids[step * size_t(K)] || got == top_ids[step * size_t(K) + 1]) << p << " step " << step;
      if (got != want[step]) return check_routes();  // took the other near-tie token
    } else {
      ASSERT_EQ(got, want[step]) << p << " step " << step;
    }
    RunResult next = run_tokens(m, {got}, state, 1);
    append_routes(routes, next);
    row = next.logits;
  }
  if (m.config().text.is_moe()) {
    EXPECT_EQ(int64_t(routes[0].shared_gate.size()), int64_t(prompt.size() + want.size())) << p;
  }
  check_routes();
}

class ModelGolden : public ::testing::TestWithParam<std::string> {};

TEST_P(ModelGolden, GreedyMatchesOfficialGreedyTokensAndStepLogits) {
  const Golden g(GetParam() + "/golden/greedy.safetensors");
  const Model& m = bundled_model(GetParam());
  for (const char* p : {"p0.", "p1.", "p2."}) {
    if (!g.has(std::string(p) + "prompt_ids")) continue;  // the MoE golden has p0 and p1
    SCOPED_TRACE(p);
    check_greedy(m, g, p, g.i64(std::string(p) + "prompt_ids"), 512);
    check_greedy(m, g, p, g.i64(std::string(p) + "prompt_ids"), 5);
  }
}

TEST_P(ModelGolden, MultiturnSecondTurnAppendedAsOneBlockMatchesRecomputation) {
  const Golden g(GetParam() + "/golden/multiturn.safetensors");
  const Model& m = bundled_model(GetParam());
  const TextConfig& cfg = m.config().text;
  const int64_t V = cfg.vocab_size;

  // Turn 1: prompt as a block, then each generated token fed one at a time.
  DecoderState state = DecoderState::create(cfg);
  std::vector<LayerRoutes> routes;
  append_routes(routes, run_tokens(m, g.i64("turn1_prompt_ids"), state, 512));
  for (int64_t id : g.i64("turn1_generated_ids")) append_routes(routes, run_tokens(m, {id}, state, 1));

  auto check_state = [&](const std::string& p) {
    int di = 0, ai = 0;
    for (int i = 0; i < cfg.num_layers; ++i) {
      const std::string q = p + std::to_string(i) + ".";
      if (cfg.layer_kinds[size_t(i)] == LayerKind::kDeltaNet) {
        EXPECT_LE(max_rel_error(state.deltanet[size_t(di)].conv, g.f32(q + "conv_state")), 1e-4) << q;
        EXPECT_LE(max_rel_error(state.deltanet[size_t(di++)].recurrent, g.f32(q + "recurrent_state")), 1e-4) << q;
      } else {
        const KvCache& kv = state.kv[size_t(ai++)];
        EXPECT_LE(max_rel_error(kv_as_heads_major(kv, cfg.num_kv_heads, cfg.head_dim, true), g.f32(q + "key")), 1e-4) << q;
        EXPECT_LE(max_rel_error(kv_as_heads_major(kv, cfg.num_kv_heads, cfg.head_dim, false), g.f32(q + "value")), 1e-4)
            << q;
      }
    }
  };
  check_state("state_after_turn1.");

  // Turn 2: the new input as ONE multi-token block on top of the cached state (the reference
  // restarts the state here; we must continue it), then greedy tokens fed back one by one.
  const auto turn2_in = g.i64("turn2_input_ids");
  const auto turn2_gen = g.i64("turn2_generated_ids");
  RunResult r = run_tokens(m, turn2_in, state, 512);
  append_routes(routes, r);
  std::vector<float> logits = r.logits;
  for (size_t s = 0; s + 1 < turn2_gen.size(); ++s) {
    EXPECT_EQ(argmax(logits.data() + (logits.size() / size_t(V) - 1) * size_t(V), V), turn2_gen[s]) << "turn 2 step " << s;
    RunResult next = run_tokens(m, {turn2_gen[s]}, state, 1);
    append_routes(routes, next);
    logits.insert(logits.end(), next.logits.begin(), next.logits.end());
  }
  expect_logits_match(g, "turn2_logits", logits, int64_t(logits.size()) / V, V);
  append_routes(routes, run_tokens(m, {turn2_gen.back()}, state, 1));
  check_state("state_final.");
  std::vector<int64_t> full = g.i64("full_sequence_ids");
  EXPECT_EQ(state.n_past, int64_t(full.size()));
  if (cfg.is_moe()) {
    const int64_t n = int64_t(full.size());
    EXPECT_EQ(expect_layer_routes_match(g, "", routes, cfg.num_layers, n), n);
  }
}

INSTANTIATE_TEST_SUITE_P(Models, ModelGolden, ::testing::Values("tiny-qwen35", "tiny-qwen35-moe"),
                         [](const auto& info) { return info.param == "tiny-qwen35" ? "dense" : "moe"; });

}  // namespace
}  // namespace qwen35::test
