// The text decoder's forward (TextDecoder::forward_on, the one the CPU runs) on the Vulkan backend,
// against the official model's greedy goldens: the prompt as one block, then each generated token
// fed back, every step's logits at the goldens' tolerance (1e-3), with the weights uploaded once,
// the states and the f16 KV cache on the device and only the logits coming back.
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/error.h"
#include "core/thread_pool.h"
#include "kernels/kernels.h"
#include "model/model.h"
#include "model/vulkan/decoder_vulkan.h"
#include "support/logit_checks.h"
#include "support/test_data.h"
#include "vk_testing.h"

namespace qwen35 {
namespace {

using vk::Device;  // QWEN35_NEED_VULKAN names it

std::unique_ptr<Model> load_tiny(const std::string& folder = "tiny-qwen35") {
  ModelLoadOptions opt;
  opt.prepare = false;  // the matrices as stored (bf16 rows), which the device reads
  return Model::load(test::data_path(folder), opt);
}

// Each MoE layer's routing decisions of every row fed, in order, and how often the residual
// stream was observed.
struct RouteRecorder final : DecoderObserver {
  std::vector<std::vector<int32_t>> ids;  // per layer [rows, k]
  std::vector<std::vector<float>> weights, logits, shared;
  int outputs = 0;
  void on_layer_output(int, const float*, int64_t) override { ++outputs; }
  void on_moe_routing(int layer, const MoeRouting& r) override {
    const size_t L = size_t(layer) + 1;
    if (ids.size() < L) ids.resize(L), weights.resize(L), logits.resize(L), shared.resize(L);
    ids[L - 1].insert(ids[L - 1].end(), r.ids, r.ids + r.T * r.top_k);
    weights[L - 1].insert(weights[L - 1].end(), r.weights, r.weights + r.T * r.top_k);
    logits[L - 1].insert(logits[L - 1].end(), r.logits, r.logits + r.T * r.num_experts);
    shared[L - 1].insert(shared[L - 1].end(), r.shared_gate, r.shared_gate + r.T);
  }
};

double max_abs_diff(const std::vector<float>& a, const std::vector<float>& b) {
  double d = 0;
  for (size_t i = 0; i < std::min(a.size(), b.size()); ++i) d = std::max(d, double(std::fabs(a[i] - b[i])));
  return d;
}

// Text positions: the same on all three MRoPE axes.
std::vector<int32_t> text_positions(int64_t first, int64_t T) {
  std::vector<int32_t> pos(size_t(3 * T));
  for (int a = 0; a < 3; ++a)
    for (int64_t t = 0; t < T; ++t) pos[size_t(a * T + t)] = int32_t(first + t);
  return pos;
}

// One sequence fed through the decoder on `b`; returns the logits of the block's last row.
std::vector<float> feed(const TextDecoder& dec, DecoderBackend& b, DecoderState& state, const std::vector<int32_t>& ids,
                        DecoderObserver* observer = nullptr, DeltaRuleMode mode = DeltaRuleMode::kAuto,
                        std::vector<DeltaNetTrace>* traces = nullptr) {
  const TextConfig& cfg = dec.config();
  const int64_t T = int64_t(ids.size());
  std::vector<float> emb(size_t(T * cfg.hidden_size));
  dec.embed(ids.data(), T, emb.data());
  const std::vector<int32_t> pos = text_positions(state.n_past, T);
  const DecoderSegment seg{&state, T, mode, traces};
  dec.forward_on(b, emb.data(), pos.data(), std::span<const DecoderSegment>(&seg, 1), nullptr, observer);
  std::vector<float> logits(size_t(cfg.vocab_size));
  const int64_t last = T - 1;
  dec.logits_on(b, std::span<const int64_t>(&last, 1), logits.data());
  return logits;
}

TEST(VulkanDecoder, TinyModelMatchesTheGreedyGoldenLogits) {
  QWEN35_NEED_VULKAN();
  const std::unique_ptr<Model> m = load_tiny();
  const TextDecoder& dec = m->decoder();
  const TextConfig& cfg = m->config().text;
  VulkanDecoderBackend b(*dev, cfg, m->text_weights());
  const test::Golden g("tiny-qwen35/golden/greedy.safetensors");
  for (const char* p : {"p0.", "p2."}) {
    SCOPED_TRACE(p);
    const auto prompt = g.i64(std::string(p) + "prompt_ids");
    const auto gen = g.i64(std::string(p) + "generated_ids");
    constexpr int64_t kSteps = 6;  // lavapipe runs the 248320-row LM head once per step
    DecoderState state = DecoderState::create(cfg, DType::F16);
    std::vector<float> logits = feed(dec, b, state, std::vector<int32_t>(prompt.begin(), prompt.end()));
    for (int64_t s = 0; s < kSteps; ++s) {
      const double err = test::expect_step_logits_match(g, p, s, logits.data(), cfg.vocab_size);
      EXPECT_LE(err, test::kLogitTol) << "step " << s;
      logits = feed(dec, b, state, {int32_t(gen[size_t(s)])});
    }
    EXPECT_EQ(state.n_past, int64_t(prompt.size()) + kSteps);
  }
}

// The tiny mixture-of-experts model on the device (router logits brought back, experts chosen by
// the host's moe_route, the experts' matrices on the device): each step's logits at 1e-3 and every
// layer's routing of every row fed (the prompt as a block, then token by token) against the
// official model's, with its f32 cache: the same experts in the same order (the goldens have no
// near tie), weights and shared gates at 1e-5, router logits at 1e-4 (the CPU golden tests'
// tolerances). The observer also sees every layer's output.
TEST(VulkanDecoder, TinyMoeModelMatchesTheGreedyGoldenLogitsAndRoutes) {
  QWEN35_NEED_VULKAN();
  const std::unique_ptr<Model> m = load_tiny("tiny-qwen35-moe");
  const TextDecoder& dec = m->decoder();
  const TextConfig& cfg = m->config().text;
  ASSERT_TRUE(cfg.is_moe());
  VulkanDecoderBackend b(*dev, cfg, m->text_weights());
  const test::Golden g("tiny-qwen35-moe/golden/greedy.safetensors");
  for (const std::string p : {"p0.", "p1."}) {
    SCOPED_TRACE(p);
    const auto prompt = g.i64(p + "prompt_ids");
    const auto gen = g.i64(p + "generated_ids");
    constexpr int64_t kSteps = 4;
    DecoderState state = DecoderState::create(cfg, DType::F32);  // the official model's f32 cache
    RouteRecorder routes;
    std::vector<float> logits = feed(dec, b, state, std::vector<int32_t>(prompt.begin(), prompt.end()), &routes);
    for (int64_t s = 0; s < kSteps; ++s) {
      const double err = test::expect_step_logits_match(g, p, s, logits.data(), cfg.vocab_size);
      EXPECT_LE(err, test::kLogitTol) << "step " << s;
      logits = feed(dec, b, state, {int32_t(gen[size_t(s)])}, &routes);
    }
    const int64_t rows = int64_t(prompt.size()) + kSteps, k = cfg.num_experts_per_tok, E = cfg.num_experts;
    EXPECT_EQ(routes.outputs, (1 + kSteps) * cfg.num_layers);
    ASSERT_EQ(int(routes.ids.size()), cfg.num_layers);
    for (int L = 0; L < cfg.num_layers; ++L) {
      SCOPED_TRACE("layer " + std::to_string(L));
      const std::string r = p + "route." + std::to_string(L) + ".";
      const auto want_ids = g.i64(r + "topk_ids");
      ASSERT_EQ(int64_t(routes.ids[size_t(L)].size()), rows * k);
      EXPECT_EQ(routes.ids[size_t(L)], std::vector<int32_t>(want_ids.begin(), want_ids.begin() + rows * k));
      const auto want_w = g.f32(r + "topk_weights"), want_logits = g.f32(r + "router_logits");
      const auto want_shared = g.f32(r + "shared_gate");
      EXPECT_LE(max_abs_diff(routes.weights[size_t(L)], {want_w.begin(), want_w.begin() + rows * k}), 1e-5);
      EXPECT_LE(max_abs_diff(routes.logits[size_t(L)], {want_logits.begin(), want_logits.begin() + rows * E}), 1e-4);
      EXPECT_LE(max_abs_diff(routes.shared[size_t(L)], {want_shared.begin(), want_shared.begin() + rows}), 1e-5);
    }
  }
}

// A prefill block in the chunkwise-parallel form on the device (delta_chunk.comp) against the CPU's
// forward of the same block in the same form, on blocks that end part-way through a chunk of 64
// (and one that crosses into a second): the rows, then a decoded token's logits over the states
// the block left, at the goldens' tolerance.
TEST(VulkanDecoder, ChunkedPrefillMatchesTheCpuPath) {
  QWEN35_NEED_VULKAN();
  const std::unique_ptr<Model> m = load_tiny();
  const std::unique_ptr<Model> cpu_model = Model::load(test::data_path("tiny-qwen35"), ModelLoadOptions{});
  const TextDecoder& dec = m->decoder();
  const TextDecoder& cpu = cpu_model->decoder();
  const TextConfig& cfg = m->config().text;
  const int64_t H = cfg.hidden_size;
  VulkanDecoderBackend b(*dev, cfg, m->text_weights());
  static ThreadPool pool(2);
  const kernels::Compute c{&kernels::active_table(), &pool};
  for (int64_t T : {37, 70}) {
    SCOPED_TRACE("T=" + std::to_string(T));
    std::vector<int32_t> ids(static_cast<size_t>(T));
    for (int64_t t = 0; t < T; ++t) ids[size_t(t)] = int32_t((t * 7919 + 13) % 150000);
    std::vector<float> emb(size_t(T * H)), on_device(size_t(T * H)), on_cpu(size_t(T * H));
    dec.embed(ids.data(), T, emb.data());
    const std::vector<int32_t> pos = text_positions(0, T);
    DecoderState sd = DecoderState::create(cfg, DType::F16), sc = DecoderState::create(cfg, DType::F16);
    const DecoderSegment seg{&sd, T, DeltaRuleMode::kChunked};
    dec.forward_on(b, emb.data(), pos.data(), std::span<const DecoderSegment>(&seg, 1), on_device.data());
    DecoderWorkspace ws;
    cpu.forward(c, emb.data(), pos.data(), T, sc, ws, on_cpu.data(), DeltaRuleMode::kChunked);
    double err = 0;
    for (size_t i = 0; i < on_cpu.size(); ++i) err = std::max(err, double(std::fabs(on_device[i] - on_cpu[i])));
    EXPECT_LE(err, test::kLogitTol);
    // The next token over the states the block left, on each.
    const int32_t next = 3555;
    std::vector<float> e1(static_cast<size_t>(H)), h1(static_cast<size_t>(H));
    std::vector<float> want(static_cast<size_t>(cfg.vocab_size));
    const std::vector<float> got = feed(dec, b, sd, {next});
    cpu.embed(&next, 1, e1.data());
    const std::vector<int32_t> p1 = text_positions(T, 1);
    cpu.forward(c, e1.data(), p1.data(), 1, sc, ws, h1.data());
    cpu.logits(c, h1.data(), 1, want.data());
    double lerr = 0;
    for (size_t i = 0; i < want.size(); ++i) lerr = std::max(lerr, double(std::fabs(got[i] - want[i])));
    EXPECT_LE(lerr, test::kLogitTol);
  }
}

// A traced verify block (recurrent, as the engine feeds one), rewound to a device copy of the
// states before it and replayed over its first n tokens from the device's traces, leaves the
// states that feeding those n tokens again leaves: the next token's logits bit for bit. A second
// rewind to the same save keeps fewer of them (what is left of the trace).
TEST(VulkanDecoder, AReplayedTracedBlockEqualsFeedingItsPrefixAgain) {
  QWEN35_NEED_VULKAN();
  const std::unique_ptr<Model> m = load_tiny();
  const TextDecoder& dec = m->decoder();
  const TextConfig& cfg = m->config().text;
  VulkanDecoderBackend b(*dev, cfg, m->text_weights());
  const std::vector<int32_t> prompt = {9707, 11, 1879, 0, 3555}, block = {374, 279, 220, 17};
  const int64_t P = int64_t(prompt.size());
  const int32_t next = 3838;
  auto fed_again = [&](int64_t n) {
    DecoderState c = DecoderState::create(cfg, DType::F16);
    feed(dec, b, c, prompt);
    feed(dec, b, c, std::vector<int32_t>(block.begin(), block.begin() + n), nullptr, DeltaRuleMode::kRecurrent);
    return feed(dec, b, c, {next});
  };
  for (int64_t n : {3, 1}) {
    SCOPED_TRACE("n=" + std::to_string(n));
    DecoderState a = DecoderState::create(cfg, DType::F16);
    feed(dec, b, a, prompt);
    const std::unique_ptr<BackendState> save = a.device->copy(false);
    std::vector<DeltaNetTrace> traces;  // the host's; the device keeps its own
    feed(dec, b, a, block, nullptr, DeltaRuleMode::kRecurrent, &traces);
    for (int64_t keep : {int64_t(3), n}) {  // n = 1: kept 3, then rewound again to keep 1
      a.device->assign(*save, false);
      b.replay_deltanet(a, keep);
      a.device->truncate_kv(P + keep);
      a.n_past = P + keep;
    }
    if (n == 1) {
      EXPECT_THROW(b.replay_deltanet(a, 2), Error);  // past what is left of the trace
    }
    EXPECT_EQ(feed(dec, b, a, {next}), fed_again(n));
  }
}

// Two sequences in one call give each the bits it gets alone (the device's batch invariance): each
// row's experts too, grouped with the other sequence's rows that chose them.
void expect_batched_equals_solo(Device& dev, const std::string& folder) {
  const std::unique_ptr<Model> m = load_tiny(folder);
  const TextDecoder& dec = m->decoder();
  const TextConfig& cfg = m->config().text;
  const int64_t H = cfg.hidden_size;
  VulkanDecoderBackend b(dev, cfg, m->text_weights());
  const std::vector<int32_t> a_ids = {9707, 11, 1879, 0, 3555}, b_ids = {3838, 374};
  auto run_solo = [&](const std::vector<int32_t>& ids) {
    DecoderState st = DecoderState::create(cfg, DType::F16);
    std::vector<float> emb(ids.size() * size_t(H)), out(ids.size() * size_t(H));
    dec.embed(ids.data(), int64_t(ids.size()), emb.data());
    const std::vector<int32_t> pos = text_positions(0, int64_t(ids.size()));
    const DecoderSegment seg{&st, int64_t(ids.size())};
    dec.forward_on(b, emb.data(), pos.data(), std::span<const DecoderSegment>(&seg, 1), out.data());
    std::vector<float> logits(size_t(cfg.vocab_size));
    const int64_t last = int64_t(ids.size()) - 1;
    dec.logits_on(b, std::span<const int64_t>(&last, 1), logits.data());
    return std::make_pair(out, logits);
  };
  const auto [solo_a, logits_a] = run_solo(a_ids);
  const auto [solo_b, logits_b] = run_solo(b_ids);

  DecoderState sa = DecoderState::create(cfg, DType::F16), sb = DecoderState::create(cfg, DType::F16);
  std::vector<int32_t> ids = a_ids;
  ids.insert(ids.end(), b_ids.begin(), b_ids.end());
  const int64_t T = int64_t(ids.size()), Ta = int64_t(a_ids.size()), Tb = int64_t(b_ids.size());
  std::vector<float> emb(size_t(T * H)), out(size_t(T * H));
  dec.embed(ids.data(), T, emb.data());
  std::vector<int32_t> pos(size_t(3 * T));
  for (int a = 0; a < 3; ++a)
    for (int64_t t = 0; t < T; ++t) pos[size_t(a * T + t)] = int32_t(t < Ta ? t : t - Ta);
  const DecoderSegment segs[] = {{&sa, Ta}, {&sb, Tb}};
  dec.forward_on(b, emb.data(), pos.data(), segs, out.data());
  EXPECT_EQ(std::vector<float>(out.begin(), out.begin() + Ta * H), solo_a);
  EXPECT_EQ(std::vector<float>(out.begin() + Ta * H, out.end()), solo_b);
  // The LM head over rows that are not consecutive (each sequence's last).
  const int64_t V = cfg.vocab_size, rows[] = {Ta - 1, T - 1};
  std::vector<float> logits(size_t(2 * V));
  dec.logits_on(b, rows, logits.data());
  EXPECT_EQ(std::vector<float>(logits.begin(), logits.begin() + V), logits_a);
  EXPECT_EQ(std::vector<float>(logits.begin() + V, logits.end()), logits_b);
}

TEST(VulkanDecoder, BatchedSequencesGiveTheBitsOfSoloRuns) {
  QWEN35_NEED_VULKAN();
  expect_batched_equals_solo(*dev, "tiny-qwen35");
}

TEST(VulkanDecoder, BatchedMoeSequencesGiveTheBitsOfSoloRuns) {
  QWEN35_NEED_VULKAN();
  expect_batched_equals_solo(*dev, "tiny-qwen35-moe");
}

}  // namespace
}  // namespace qwen35
