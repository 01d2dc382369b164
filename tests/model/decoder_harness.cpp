#include "decoder_harness.h"

#include <algorithm>

#include "support/test_data.h"

namespace qwen35::test {

const Model& tiny_model() {
  static std::unique_ptr<Model> m = Model::load(tiny_model_dir());
  return *m;
}

kernels::Compute test_compute() {
  static ThreadPool pool(2);
  return kernels::Compute{&kernels::active_table(), &pool};
}

namespace {
class Collector : public DecoderObserver {
 public:
  explicit Collector(RunResult& r) : r_(r) {}
  void on_layer_output(int layer, const float* x, int64_t T) override {
    if (r_.hidden.size() <= size_t(layer)) r_.hidden.resize(size_t(layer) + 1);
    r_.hidden[size_t(layer)].insert(r_.hidden[size_t(layer)].end(), x, x + T * h_);
  }
  int64_t h_ = 0;

 private:
  RunResult& r_;
};
}  // namespace

RunResult run_tokens(const Model& m, const std::vector<int64_t>& ids, DecoderState& state, int64_t block,
                     DeltaRuleMode mode, const kernels::Compute* compute) {
  const TextConfig& cfg = m.config().text;
  const int64_t T = int64_t(ids.size()), H = cfg.hidden_size, V = cfg.vocab_size;
  RunResult r;
  Collector collector(r);
  collector.h_ = H;
  r.logits.resize(size_t(T * V));
  r.final_norm.resize(size_t(T * H));
  DecoderWorkspace ws;
  const kernels::Compute c = compute ? *compute : test_compute();
  for (int64_t t0 = 0; t0 < T; t0 += block) {
    const int64_t n = std::min(block, T - t0);
    std::vector<int32_t> ids32(ids.begin() + t0, ids.begin() + t0 + n), pos(size_t(3 * n));
    for (int a = 0; a < 3; ++a)
      for (int64_t t = 0; t < n; ++t) pos[size_t(a * n + t)] = int32_t(state.n_past + t);
    std::vector<float> emb(size_t(n * H));
    m.decoder().embed(ids32.data(), n, emb.data());
    m.decoder().forward(c, emb.data(), pos.data(), n, state, ws, r.final_norm.data() + t0 * H, mode, &collector);
    m.decoder().logits(c, r.final_norm.data() + t0 * H, n, r.logits.data() + t0 * V);
  }
  return r;
}

std::vector<float> kv_as_heads_major(const KvCache& kv, int n_kv, int hd, bool keys) {
  const int64_t T = kv.length();
  std::vector<float> out(size_t(n_kv * T * hd)), row(size_t(n_kv * hd));
  for (int64_t t = 0; t < T; ++t) {
    if (keys) kv.key_f32(t, row.data());
    else kv.value_f32(t, row.data());
    for (int h = 0; h < n_kv; ++h)
      for (int d = 0; d < hd; ++d) out[size_t((h * T + t) * hd + d)] = row[size_t(h * hd + d)];
  }
  return out;
}

}  // namespace qwen35::test
