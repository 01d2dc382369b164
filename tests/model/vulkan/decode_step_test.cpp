// The text decoder's decode step on the Vulkan device, one token per pass, through the backend's
// ops in the order of model/text_decoder.cpp, deltanet.cpp, attention.cpp and mlp.cpp, with the
// weights uploaded once, the DeltaNet states and the f16 KV cache resident on the device and only
// the logits coming back. Checked against the official model's greedy goldens (logits 1e-3).
// A stand-in until the forward itself runs on the backend seam (docs/VULKAN.md); it shares no code
// path with the model beyond the weights, the config and the rotary angles (host bookkeeping).
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <vector>

#include "model/model.h"
#include "model/rope.h"
#include "support/logit_checks.h"
#include "support/test_data.h"
#include "vk_testing.h"

namespace qwen35::vk {
namespace {

using testing::to_device;
using testing::zeros;

struct DevMatrix {
  std::unique_ptr<Buffer> buf;
  DeviceMatrix m;
};

DevMatrix upload(Device& dev, const kernels::WeightMatrix& w) {
  if (w.layout != 0) fail("a repacked weight matrix: load with prepare = false");
  DevMatrix d;
  d.buf = std::make_unique<Buffer>(dev, w.bytes());
  dev.upload(*d.buf, 0, w.data, w.bytes());
  d.m = {w.dtype, d.buf->address(), w.rows, w.cols, w.row_bytes};
  return d;
}

void linear(Pass& p, const DevMatrix& w, Addr x, Addr y) { matmul(p, w.m, x, 1, w.m.cols, y, w.m.rows); }

struct DeviceLayer {
  LayerKind kind;
  std::unique_ptr<Buffer> input_norm, post_norm;
  DevMatrix gate, up, down;
  // DeltaNet
  DevMatrix in_qkv, in_z, in_b, in_a, out;
  std::unique_ptr<Buffer> conv_t, neg_a, dt_bias, norm, conv_state, S;
  bool tiled = false;
  // attention
  DevMatrix q, k, v, o;
  std::unique_ptr<Buffer> q_norm, k_norm, kcache, vcache;
};

class DeviceDecoder {
 public:
  DeviceDecoder(Device& dev, const Model& m, int64_t max_tokens)
      : dev_(dev), cfg_(m.config().text), rope_(cfg_), max_tokens_(max_tokens) {
    const TextWeights& w = m.text_weights();
    embed_ = upload(dev, w.embed);
    lm_head_ = upload(dev, w.lm_head);
    final_norm_ = to_device(dev, w.final_norm);
    const int64_t C = cfg_.conv_dim(), K = cfg_.conv_kernel;
    const int64_t S = int64_t(cfg_.linear_value_heads) * cfg_.linear_key_dim * cfg_.linear_value_dim;
    const int64_t KD = int64_t(cfg_.num_kv_heads) * cfg_.head_dim;
    for (const LayerWeights& L : w.layers) {
      DeviceLayer d;
      d.kind = L.kind;
      d.input_norm = to_device(dev, L.input_norm);
      d.post_norm = to_device(dev, L.post_norm);
      d.gate = upload(dev, L.mlp.gate);
      d.up = upload(dev, L.mlp.up);
      d.down = upload(dev, L.mlp.down);
      if (L.kind == LayerKind::kDeltaNet) {
        const DeltaNetWeights& n = L.deltanet;
        d.in_qkv = upload(dev, n.in_qkv);
        d.in_z = upload(dev, n.in_z);
        d.in_b = upload(dev, n.in_b);
        d.in_a = upload(dev, n.in_a);
        d.out = upload(dev, n.out);
        d.conv_t = to_device(dev, n.conv_t);
        d.neg_a = to_device(dev, n.neg_a);
        d.dt_bias = to_device(dev, n.dt_bias);
        d.norm = to_device(dev, n.norm);
        d.tiled = n.v_heads_tiled;
        d.conv_state = zeros<float>(dev, size_t(C * K));
        d.S = zeros<float>(dev, size_t(S));
      } else {
        const AttentionWeights& a = L.attention;
        d.q = upload(dev, a.q);
        d.k = upload(dev, a.k);
        d.v = upload(dev, a.v);
        d.o = upload(dev, a.o);
        d.q_norm = to_device(dev, a.q_norm);
        d.k_norm = to_device(dev, a.k_norm);
        d.kcache = zeros<uint16_t>(dev, size_t(max_tokens * KD));  // f16 rows, as --kv-type f16
        d.vcache = zeros<uint16_t>(dev, size_t(max_tokens * KD));
      }
      layers_.push_back(std::move(d));
    }
    const int64_t H = cfg_.hidden_size, big = std::max({C, int64_t(cfg_.intermediate_size),
                                                        int64_t(cfg_.num_heads) * cfg_.head_dim * 2, H});
    id_ = zeros<uint32_t>(dev, 1);
    x_ = zeros<float>(dev, size_t(H));
    normed_ = zeros<float>(dev, size_t(H));
    mixed_ = zeros<float>(dev, size_t(H));
    a_ = zeros<float>(dev, size_t(big));
    b_ = zeros<float>(dev, size_t(big));
    c_ = zeros<float>(dev, size_t(big));
    qk_ = zeros<float>(dev, size_t(std::max(2 * cfg_.linear_key_heads * cfg_.linear_key_dim,
                                            (cfg_.num_heads + 2 * cfg_.num_kv_heads) * cfg_.head_dim)));
    beta_ = zeros<float>(dev, size_t(cfg_.linear_value_heads));
    g_ = zeros<float>(dev, size_t(cfg_.linear_value_heads));
    cos_ = zeros<float>(dev, size_t(rope_.half()));
    sin_ = zeros<float>(dev, size_t(rope_.half()));
    logits_ = zeros<float>(dev, size_t(cfg_.vocab_size));
  }

  // Feeds one token at the next position; returns its logits.
  std::vector<float> step(int64_t id) {
    if (pos_ >= max_tokens_) fail("the device decoder's cache is full");
    const uint32_t id32 = uint32_t(id);
    dev_.upload(*id_, 0, &id32, 4);
    std::vector<float> cs(size_t(rope_.half())), sn(size_t(rope_.half()));
    rope_.angles(pos_, pos_, pos_, cs.data(), sn.data());  // text: the same position on all axes
    dev_.upload(*cos_, 0, cs.data(), cs.size() * 4);
    dev_.upload(*sin_, 0, sn.data(), sn.size() * 4);

    const int64_t H = cfg_.hidden_size;
    const float eps = cfg_.rms_norm_eps;
    Pass p(dev_);
    dequant_rows(p, embed_.m, id_->address(), 1, x_->address());
    for (DeviceLayer& L : layers_) {
      rms_norm(p, x_->address(), H, L.input_norm->address(), eps, normed_->address(), H, H, 1);
      if (L.kind == LayerKind::kDeltaNet) deltanet(p, L);
      else attention(p, L);
      add(p, mixed_->address(), x_->address(), H);
      rms_norm(p, x_->address(), H, L.post_norm->address(), eps, normed_->address(), H, H, 1);
      linear(p, L.gate, normed_->address(), a_->address());
      linear(p, L.up, normed_->address(), b_->address());
      swiglu(p, a_->address(), b_->address(), a_->address(), cfg_.intermediate_size);
      linear(p, L.down, a_->address(), mixed_->address());
      add(p, mixed_->address(), x_->address(), H);
    }
    rms_norm(p, x_->address(), H, final_norm_->address(), eps, normed_->address(), H, H, 1);
    linear(p, lm_head_, normed_->address(), logits_->address());
    p.run();
    ++pos_;
    return testing::from_device<float>(dev_, *logits_, size_t(cfg_.vocab_size));
  }

 private:
  // normed_ -> mixed_: projections, conv, gates, q/k norms, the delta rule, the gated norm, out.
  void deltanet(Pass& p, DeviceLayer& L) {
    const int64_t C = cfg_.conv_dim(), Hk = cfg_.linear_key_heads, Hv = cfg_.linear_value_heads;
    const int dk = cfg_.linear_key_dim, dv = cfg_.linear_value_dim;
    const int64_t QK = Hk * dk, VS = Hv * dv;
    linear(p, L.in_qkv, normed_->address(), a_->address());  // qkv [C]
    linear(p, L.in_z, normed_->address(), c_->address());    // z [VS]
    linear(p, L.in_b, normed_->address(), beta_->address());
    linear(p, L.in_a, normed_->address(), g_->address());
    causal_conv(p, {a_->address(), L.conv_t->address(), L.conv_state->address(), b_->address(), 1, C, cfg_.conv_kernel});
    decay_gate(p, L.neg_a->address(), L.dt_bias->address(), g_->address(), Hv);
    sigmoid(p, beta_->address(), beta_->address(), Hv);
    l2_norm(p, b_->address(), dk, 1.0f / std::sqrt(float(dk)), 1e-6f, qk_->address(), dk, dk, Hk);
    l2_norm(p, b_->address(4 * QK), dk, 1.0f, 1e-6f, qk_->address(4 * QK), dk, dk, Hk);
    DeltaDeviceArgs d;
    d.q = qk_->address();
    d.k = qk_->address(4 * QK);
    d.v = b_->address(4 * 2 * QK);
    d.beta = beta_->address();
    d.g = g_->address();
    d.S = L.S->address();
    d.o = a_->address();  // qkv is spent: the core outputs [VS]
    d.T = 1;
    d.Hv = Hv;
    d.Hk = Hk;
    d.dk = dk;
    d.dv = dv;
    d.qk_stride = QK;
    d.v_stride = C;
    d.gate_stride = Hv;
    d.o_stride = VS;
    d.tiled = L.tiled;
    delta_recurrent(p, d);
    gated_rms_norm(p, a_->address(), dv, L.norm->address(), c_->address(), dv, cfg_.rms_norm_eps, a_->address(), dv, dv,
                   Hv);
    linear(p, L.out, a_->address(), mixed_->address());
  }

  // normed_ -> mixed_: q (with its gate), k, v into the cache row, head norms, RoPE, attention,
  // the output gate, o.
  void attention(Pass& p, DeviceLayer& L) {
    const int nq = cfg_.num_heads, nkv = cfg_.num_kv_heads, hd = cfg_.head_dim;
    const int64_t QD = int64_t(nq) * hd, KD = int64_t(nkv) * hd;
    const bool gated = cfg_.attn_output_gate;
    const int64_t head_stride = gated ? 2 * hd : hd;
    const size_t row = size_t(pos_ * KD) * 2;  // this token's f16 row of the caches
    const size_t kf = size_t(QD) * 4, vf = size_t(QD + KD) * 4;  // its f32 k and v after q in qk_
    linear(p, L.q, normed_->address(), a_->address());  // [nq, (query ; gate)]
    linear(p, L.k, normed_->address(), qk_->address(kf));
    linear(p, L.v, normed_->address(), qk_->address(vf));
    rms_norm(p, a_->address(), head_stride, L.q_norm->address(), cfg_.rms_norm_eps, qk_->address(), hd, hd, nq);
    rms_norm(p, qk_->address(kf), hd, L.k_norm->address(), cfg_.rms_norm_eps, qk_->address(kf), hd, hd, nkv);
    RopeArgs r;
    r.cos = cos_->address();
    r.sin = sin_->address();
    r.half = rope_.half();
    r.head_stride = hd;
    r.x = qk_->address();
    r.heads = nq;
    rope(p, r);
    r.x = qk_->address(kf);
    r.heads = nkv;
    rope(p, r);
    to_f16(p, qk_->address(kf), L.kcache->address(row), KD);  // the cache's append
    to_f16(p, qk_->address(vf), L.vcache->address(row), KD);
    AttnDeviceArgs at;
    at.q = qk_->address();
    at.o = b_->address();
    at.k = L.kcache->address();
    at.v = L.vcache->address();
    at.q_stride = QD;
    at.o_stride = QD;
    at.kv_stride = KD;
    at.kv_dtype = DType::F16;
    at.n_q = 1;
    at.n_kv0 = pos_ + 1;
    at.kv_heads = nkv;
    at.group = nq / nkv;
    at.head_dim = hd;
    at.scale = 1.0f / std::sqrt(float(hd));
    vk::attention(p, at);
    if (gated)
      for (int h = 0; h < nq; ++h)
        sigmoid_gate(p, a_->address(size_t(h * 2 * hd + hd) * 4), b_->address(size_t(h * hd) * 4), hd);
    linear(p, L.o, b_->address(), mixed_->address());
  }

  Device& dev_;
  const TextConfig& cfg_;
  MRope rope_;
  int64_t max_tokens_;
  int64_t pos_ = 0;
  DevMatrix embed_, lm_head_;
  std::unique_ptr<Buffer> final_norm_, id_, x_, normed_, mixed_, a_, b_, c_, qk_, beta_, g_, cos_, sin_, logits_;
  std::vector<DeviceLayer> layers_;
};

// Teacher-forced along the golden's greedy path: the prompt token by token, then each generated
// token; every step's logits against the golden's.
TEST(VulkanDecodeStep, TinyModelMatchesTheGreedyGoldenLogits) {
  QWEN35_NEED_VULKAN();
  ModelLoadOptions opt;
  opt.prepare = false;  // the matrices as stored (bf16 rows)
  const std::unique_ptr<Model> m = Model::load(test::data_path("tiny-qwen35"), opt);
  const int64_t V = m->config().text.vocab_size;
  const test::Golden g("tiny-qwen35/golden/greedy.safetensors");
  for (const char* p : {"p0.", "p2."}) {
    SCOPED_TRACE(p);
    const auto prompt = g.i64(std::string(p) + "prompt_ids");
    const auto gen = g.i64(std::string(p) + "generated_ids");
    constexpr int64_t kSteps = 6;  // lavapipe runs the 248320-row LM head once per step
    DeviceDecoder d(*dev, *m, int64_t(prompt.size()) + kSteps);
    std::vector<float> logits;
    for (int64_t id : prompt) logits = d.step(id);
    for (int64_t s = 0; s < kSteps; ++s) {
      const double err = test::expect_step_logits_match(g, p, s, logits.data(), V);
      EXPECT_LE(err, test::kLogitTol) << "step " << s;
      logits = d.step(gen[size_t(s)]);
    }
  }
}

}  // namespace
}  // namespace qwen35::vk
