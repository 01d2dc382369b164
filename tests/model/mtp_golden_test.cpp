// The MTP head against the goldens built from the official code's blocks (golden/mtp.safetensors,
// vLLM's conventions): the main model's hidden states, the teacher-forced head over each prompt,
// its KV cache, and a 3-step greedy draft with post-norm feedback.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <tuple>

#include "decoder_harness.h"
#include "moe_checks.h"
#include "model/mtp.h"
#include "support/logit_checks.h"
#include "support/test_data.h"

namespace qwen35::test {
namespace {

constexpr double kStateRelTol = 1e-4;  // as the decoder goldens
constexpr int kDraftSteps = 3;

class Collector : public MtpObserver {
 public:
  explicit Collector(int64_t H) : H_(H) {}
  void on_fc_out(const float* z, int64_t T) override { fc.insert(fc.end(), z, z + T * H_); }
  void on_layer_out(const float* x, int64_t T) override { layer.insert(layer.end(), x, x + T * H_); }
  void on_moe_routing(const MoeRouting& r) override { routes.append(r); }
  std::vector<float> fc, layer;
  LayerRoutes routes;

 private:
  int64_t H_;
};

std::vector<float> rows(const std::vector<float>& m, int64_t first, int64_t count, int64_t width) {
  return std::vector<float>(m.begin() + first * width, m.begin() + (first + count) * width);
}

std::vector<int32_t> text_positions(int64_t first, int64_t n) {
  std::vector<int32_t> pos(size_t(3 * n));
  for (int a = 0; a < 3; ++a)
    for (int64_t t = 0; t < n; ++t) pos[size_t(a * n + t)] = int32_t(first + t);
  return pos;
}

// Checks one logit row against row r of the golden records <p><lse>, <p><top>_ids, <p><top>_vals
// (logsumexp, top-k values, argmax; a near tie accepts either of the two best). Returns the argmax.
int64_t expect_row(const Golden& g, const std::string& p, const std::string& lse, const std::string& top, int64_t r,
                   const float* row, int64_t V, double* worst) {
  auto check = [&](double got, double want, const std::string& field) {
    const double d = std::fabs(got - want);
    *worst = std::max(*worst, d);
    EXPECT_LE(d, kLogitTol) << p << field << " row " << r << ": got " << got << ", want " << want;
  };
  check(logsumexp(row, V), g.f32(p + lse)[size_t(r)], lse);
  const auto ids = g.i64(p + top + "_ids");
  const auto vals = g.f32(p + top + "_vals");
  const int64_t K = g.shape(p + top + "_ids")[1];
  for (int64_t j = 0; j < K; ++j) check(row[ids[size_t(r * K + j)]], vals[size_t(r * K + j)], top + "_vals");
  const int64_t got = argmax(row, V);
  const double gap = double(vals[size_t(r * K)]) - double(vals[size_t(r * K + 1)]);
  if (gap >= kLogitTol) {
    EXPECT_EQ(got, ids[size_t(r * K)]) << p << top << " argmax row " << r;
  } else {  // a near tie (the manifest lists them): either of the two best is right
    EXPECT_TRUE(got == ids[size_t(r * K)] || got == ids[size_t(r * K + 1)]) << p << top << " near tie row " << r;
  }
  return got;
}

struct PromptPass {
  std::vector<float> main_hidden;  // [T, H]
  int32_t greedy = -1;             // x_T
  KvCache kv;
  std::vector<float> out;          // [T, H] post-norm
  Collector collector{0};
};

// Main model over the prompt, then the MTP prompt pass over its T pairs in calls of `block` pairs.
PromptPass prompt_pass(const Model& m, const Golden& g, const std::string& p, int64_t block) {
  const TextConfig& cfg = m.config().text;
  const MtpHead& head = *m.mtp();
  const kernels::Compute c = test_compute();
  const int64_t H = cfg.hidden_size, V = cfg.vocab_size;
  const auto prompt = g.i64(p + "prompt_ids");
  const int64_t T = int64_t(prompt.size());

  PromptPass r{.main_hidden = {}, .greedy = -1, .kv = head.make_cache(DType::F32), .out = {}, .collector = Collector(H)};
  DecoderState state = DecoderState::create(cfg);
  RunResult main = run_tokens(m, prompt, state, 512);
  r.main_hidden = main.final_norm;
  r.greedy = int32_t(argmax(main.logits.data() + (T - 1) * V, V));

  std::vector<int32_t> next(prompt.begin() + 1, prompt.end());  // x_1 .. x_{T-1}, x_T
  next.push_back(r.greedy);
  r.out.resize(size_t(T * H));
  MtpWorkspace ws;
  for (int64_t t0 = 0; t0 < T; t0 += block) {
    const int64_t n = std::min(block, T - t0);
    std::vector<float> emb(size_t(n * H));
    head.embed(next.data() + t0, n, emb.data());
    const auto pos = text_positions(t0, n);
    head.forward(c, emb.data(), r.main_hidden.data() + t0 * H, pos.data(), n, r.kv, ws, r.out.data() + t0 * H,
                 &r.collector);
  }
  return r;
}

class MtpGolden : public ::testing::TestWithParam<std::tuple<std::string, int>> {};

TEST_P(MtpGolden, TeacherForcedLogitsCacheAndDraftMatchOfficialBlocks) {
  const auto& [folder, prompt_index] = GetParam();
  const Golden g(folder + "/golden/mtp.safetensors");
  const std::string p = std::string("p") + std::to_string(prompt_index) + ".";
  const Model& m = bundled_model(folder);
  ASSERT_NE(m.mtp(), nullptr) << "the tiny model has mtp.* tensors";
  const TextConfig& cfg = m.config().text;
  const MtpHead& head = *m.mtp();
  const kernels::Compute c = test_compute();
  const int64_t H = cfg.hidden_size, V = cfg.vocab_size;
  const int64_t T = int64_t(g.i64(p + "prompt_ids").size());

  PromptPass r = prompt_pass(m, g, p, 512);
  EXPECT_LE(max_rel_error(r.main_hidden, g.f32(p + "main_hidden")), kStateRelTol) << "main_hidden";
  EXPECT_EQ(r.greedy, g.i64(p + "main_greedy_ids")[0]);
  const auto prompt = g.i64(p + "prompt_ids");
  std::vector<int64_t> next(prompt.begin() + 1, prompt.end());
  next.push_back(r.greedy);
  EXPECT_EQ(next, g.i64(p + "mtp_input_ids"));

  // Teacher-forced rows 0 .. T-2.
  EXPECT_LE(max_rel_error(rows(r.collector.fc, 0, T - 1, H), g.f32(p + "mtp_fc_out")), kStateRelTol) << "mtp_fc_out";
  EXPECT_LE(max_rel_error(rows(r.collector.layer, 0, T - 1, H), g.f32(p + "mtp_layer_out")), kStateRelTol)
      << "mtp_layer_out";
  EXPECT_LE(max_rel_error(rows(r.out, 0, T - 1, H), g.f32(p + "mtp_hidden")), kStateRelTol) << "mtp_hidden";
  std::vector<float> logits(size_t(T * V));
  head.logits(c, r.out.data(), T, logits.data());
  double worst = 0;
  for (int64_t t = 0; t + 1 < T; ++t) expect_row(g, p, "mtp_logits_lse", "mtp_top", t, logits.data() + t * V, V, &worst);
  // The full rows kept: the last two teacher-forced rows (dense golden) or the last one (MoE).
  const bool two = g.has(p + "mtp_logits_last2");
  const auto last = g.f32(p + (two ? "mtp_logits_last2" : "mtp_logits_last"));
  const int64_t n_full = two ? 2 : 1;
  double full_err = 0;
  for (int64_t j = 0; j < n_full; ++j)
    for (int64_t v = 0; v < V; ++v)
      full_err =
          std::max(full_err, std::fabs(double(logits[size_t((T - 1 - n_full + j) * V + v)]) - last[size_t(j * V + v)]));
  EXPECT_LE(full_err, kLogitTol) << "mtp_logits_last";

  // The cache after the prompt pass: T rows, positions 0 .. T-1.
  ASSERT_EQ(r.kv.length(), T);
  EXPECT_LE(max_rel_error(kv_as_heads_major(r.kv, cfg.num_kv_heads, cfg.head_dim, true), g.f32(p + "mtp_k")),
            kStateRelTol)
      << "mtp_k";
  EXPECT_LE(max_rel_error(kv_as_heads_major(r.kv, cfg.num_kv_heads, cfg.head_dim, false), g.f32(p + "mtp_v")),
            kStateRelTol)
      << "mtp_v";

  // Draft: step 1 is the prompt pass's last row; step k > 1 feeds back (hm_{k-1}, d_{k-1}).
  std::vector<int64_t> draft;
  std::vector<float> fed_back(size_t(kDraftSteps * H));
  std::copy_n(r.out.data() + (T - 1) * H, H, fed_back.data());
  MtpWorkspace ws;
  std::vector<float> emb(static_cast<size_t>(H)), row(static_cast<size_t>(V));
  for (int k = 0; k < kDraftSteps; ++k) {
    if (k > 0) {
      const int32_t prev = int32_t(draft.back());
      head.embed(&prev, 1, emb.data());
      const auto pos = text_positions(T - 1 + k, 1);
      head.forward(c, emb.data(), fed_back.data() + (k - 1) * H, pos.data(), 1, r.kv, ws, fed_back.data() + k * H,
                   &r.collector);
    }
    head.logits(c, fed_back.data() + k * H, 1, row.data());
    draft.push_back(expect_row(g, p, "draft_lse", "draft_top", k, row.data(), V, &worst));
  }
  EXPECT_EQ(draft, g.i64(p + "draft_ids"));
  EXPECT_LE(max_rel_error(fed_back, g.f32(p + "draft_hidden")), kStateRelTol) << "draft_hidden";
  ASSERT_EQ(r.kv.length(), T + kDraftSteps - 1);
  const auto k_all = kv_as_heads_major(r.kv, cfg.num_kv_heads, cfg.head_dim, true);
  const auto v_all = kv_as_heads_major(r.kv, cfg.num_kv_heads, cfg.head_dim, false);
  std::vector<float> k_draft, v_draft;  // rows T, T+1 of each head
  const int64_t L = r.kv.length(), hd = cfg.head_dim;
  for (int h = 0; h < cfg.num_kv_heads; ++h) {
    k_draft.insert(k_draft.end(), k_all.begin() + (h * L + T) * hd, k_all.begin() + (h * L + L) * hd);
    v_draft.insert(v_draft.end(), v_all.begin() + (h * L + T) * hd, v_all.begin() + (h * L + L) * hd);
  }
  EXPECT_LE(max_rel_error(k_draft, g.f32(p + "draft_k")), kStateRelTol) << "draft_k";
  EXPECT_LE(max_rel_error(v_draft, g.f32(p + "draft_v")), kStateRelTol) << "draft_v";
  // The MoE head's routing: the T pairs of the prompt pass, then draft steps 2 and 3.
  if (cfg.is_moe()) {
    EXPECT_EQ(expect_routes_match(g, p + "route.mtp.", r.collector.routes, T + 2), T + 2);
  } else {
    EXPECT_TRUE(r.collector.routes.ids.empty());
  }
  std::printf("%smax |logit - golden| teacher-forced %.2e, full rows %.2e\n", p.c_str(), worst, full_err);
}

INSTANTIATE_TEST_SUITE_P(Prompts, MtpGolden,
                         ::testing::Combine(::testing::Values("tiny-qwen35", "tiny-qwen35-moe"), ::testing::Values(0, 1, 2)),
                         [](const auto& info) {
                           return std::string(std::get<0>(info.param) == "tiny-qwen35" ? "dense" : "moe") + "_p" +
                                  std::to_string(std::get<1>(info.param));
                         });

// Every row of the head is computed the same way whatever the number of pairs per call: one call
// over the prompt, one pair per call and odd-sized calls agree bit for bit (drafting and the
// teacher-forced catch-up after verification rely on it).
class MtpModels : public ::testing::TestWithParam<std::string> {};

TEST_P(MtpModels, RowsDoNotDependOnTheCallSize) {
  const Golden g(GetParam() + "/golden/mtp.safetensors");
  const Model& m = bundled_model(GetParam());
  const PromptPass one = prompt_pass(m, g, "p1.", 512);
  for (int64_t block : {1, 3, 7}) {
    const PromptPass other = prompt_pass(m, g, "p1.", block);
    ASSERT_EQ(one.out.size(), other.out.size());
    EXPECT_EQ(0, std::memcmp(one.out.data(), other.out.data(), one.out.size() * sizeof(float))) << block;
    const auto k1 = kv_as_heads_major(one.kv, 2, 64, true), k2 = kv_as_heads_major(other.kv, 2, 64, true);
    EXPECT_EQ(0, std::memcmp(k1.data(), k2.data(), k1.size() * sizeof(float))) << block;
  }
}

INSTANTIATE_TEST_SUITE_P(Models, MtpModels, ::testing::Values("tiny-qwen35", "tiny-qwen35-moe"),
                         [](const auto& info) { return info.param == "tiny-qwen35" ? "dense" : "moe"; });

}  // namespace
}  // namespace qwen35::test
