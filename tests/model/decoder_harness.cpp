#include "decoder_harness.h"

#include <algorithm>
#include <stdexcept>

#include "support/test_data.h"

namespace qwen35::test {

const Model& tiny_model() {
  static std::unique_ptr<Model> m = Model::load(tiny_model_dir());
  return *m;
}

const Model& tiny_moe_model() {
  static std::unique_ptr<Model> m = Model::load(tiny_moe_model_dir());
  return *m;
}

const Model& bundled_model(const std::string& folder) {
  if (folder == "tiny-qwen35") return tiny_model();
  if (folder == "tiny-qwen35-moe") return tiny_moe_model();
  throw std::invalid_argument("no bundled model " + folder);
}

void LayerRoutes::append(const MoeRouting& r) {
  const size_t E = size_t(r.num_experts), k = size_t(r.top_k), T = size_t(r.T);
  logits.insert(logits.end(), r.logits, r.logits + T * E);
  ids.insert(ids.end(), r.ids, r.ids + T * k);
  weights.insert(weights.end(), r.weights, r.weights + T * k);
  shared_gate.insert(shared_gate.end(), r.shared_gate, r.shared_gate + T);
}

GgufExportOptions uniform_gguf_options(DType type) {
  GgufExportOptions o;
  o.matrix_type = uniform_matrix_type(type);
  o.file_type = type == DType::F32 ? 0 : type == DType::F16 ? 1 : type == DType::BF16 ? 32 : 7;
  return o;
}

kernels::Compute test_compute() {
  static ThreadPool pool(2);
  return kernels::Compute{&kernels::active_table(), &pool};
}

void append_routes(std::vector<LayerRoutes>& all, const RunResult& r) {
  if (all.size() < r.routes.size()) all.resize(r.routes.size());
  for (size_t i = 0; i < r.routes.size(); ++i) {
    LayerRoutes& a = all[i];
    const LayerRoutes& b = r.routes[i];
    a.logits.insert(a.logits.end(), b.logits.begin(), b.logits.end());
    a.ids.insert(a.ids.end(), b.ids.begin(), b.ids.end());
    a.weights.insert(a.weights.end(), b.weights.begin(), b.weights.end());
    a.shared_gate.insert(a.shared_gate.end(), b.shared_gate.begin(), b.shared_gate.end());
  }
}

namespace {
class Collector : public DecoderObserver {
 public:
  explicit Collector(RunResult& r) : r_(r) {}
  void on_layer_output(int layer, const float* x, int64_t T) override {
    if (r_.hidden.size() <= size_t(layer)) r_.hidden.resize(size_t(layer) + 1);
    r_.hidden[size_t(layer)].insert(r_.hidden[size_t(layer)].end(), x, x + T * h_);
  }
  void on_moe_routing(int layer, const MoeRouting& r) override {
    if (r_.routes.size() <= size_t(layer)) r_.routes.resize(size_t(layer) + 1);
    r_.routes[size_t(layer)].append(r);
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
