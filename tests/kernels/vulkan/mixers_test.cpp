// The DeltaNet recurrent step, its chunkwise-parallel form and causal attention over an f16 KV
// cache against the scalar reference, on odd shapes (tolerances of
// tests/kernels/delta_rule_test.cpp and attention_test.cpp).
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "core/half.h"
#include "kernels/kernels.h"
#include "kernels/quant_testing.h"
#include "kernels/ref/ref_ops.h"
#include "vk_testing.h"

namespace qwen35::vk {
namespace {

using kernels::testing::random_floats;
using testing::from_device;
using testing::to_device;
using testing::zeros;

double rel_err(const std::vector<float>& a, const std::vector<float>& b) {
  double m = 0, s = 1e-30;
  for (size_t i = 0; i < a.size(); ++i) {
    m = std::max(m, double(std::fabs(a[i] - b[i])));
    if (std::isnan(a[i]) != std::isnan(b[i])) m = 1e30;
    s = std::max(s, double(std::fabs(b[i])));
  }
  return m / s;
}

void normalize(float* v, int n, float scale) {
  kernels::ref::l2_norm(v, scale, 1e-6f, v, n);
}

// One delta-rule case on odd strides: unit-norm q (scaled) and k per key head, gates in range, a
// random start state; S_ref / o_ref are for the reference to fill.
struct DeltaCase {
  bool tiled;
  int64_t T, Hk = 2, Hv;
  int dk = 12, dv = 20;
  int64_t qk_stride = Hk * dk + 1, v_stride = Hv * dv + 2, gate_stride = Hv + 1, o_stride = Hv * dv + 3;
  std::vector<float> q, k, v, beta, g, S0, S_ref, o_ref;

  DeltaCase(std::mt19937& rng, bool tiled_heads, int64_t tokens, int64_t v_heads)
      : tiled(tiled_heads), T(tokens), Hv(v_heads) {
    q = random_floats(size_t(T * qk_stride), rng);
    k = random_floats(size_t(T * qk_stride), rng);
    for (int64_t t = 0; t < T; ++t)
      for (int64_t h = 0; h < Hk; ++h) {
        normalize(q.data() + t * qk_stride + h * dk, dk, 1.0f / std::sqrt(float(dk)));
        normalize(k.data() + t * qk_stride + h * dk, dk, 1.0f);
      }
    v = random_floats(size_t(T * v_stride), rng);
    beta.resize(size_t(T * gate_stride));
    g.resize(size_t(T * gate_stride));
    std::uniform_real_distribution<float> ub(0.05f, 0.95f), ug(-2.0f, -0.01f);
    for (auto& b : beta) b = ub(rng);
    for (auto& x : g) x = ug(rng);
    S0 = random_floats(size_t(Hv * dk * dv), rng, 0.3f);
    S_ref = S0;
    o_ref.assign(size_t(T * o_stride), 0.0f);
  }
  int64_t key_head(int64_t h) const { return tiled ? h % Hk : h / (Hv / Hk); }
  // Value head h's reference arguments from token t0 on.
  kernels::DeltaRuleHead head(int64_t h, int64_t t0) {
    const int64_t kh = key_head(h);
    return {q.data() + t0 * qk_stride + kh * dk, k.data() + t0 * qk_stride + kh * dk, qk_stride,
            v.data() + t0 * v_stride + h * dv,   v_stride,
            beta.data() + t0 * gate_stride + h,  g.data() + t0 * gate_stride + h,
            gate_stride,                         o_ref.data() + t0 * o_stride + h * dv,
            o_stride};
  }

  // The case on the device, `record` adding the shader under test to the pass; the state and the
  // outputs against the reference's within 1e-5.
  template <class Record>
  void expect_device_matches(Device& dev, Record record) const {
    auto qd = to_device(dev, q), kd = to_device(dev, k), vd = to_device(dev, v), bd = to_device(dev, beta),
         gd = to_device(dev, g), Sd = to_device(dev, S0);
    auto od = zeros<float>(dev, o_ref.size());
    DeltaDeviceArgs a;
    a.q = qd->address();
    a.k = kd->address();
    a.v = vd->address();
    a.beta = bd->address();
    a.g = gd->address();
    a.S = Sd->address();
    a.o = od->address();
    a.T = T;
    a.Hv = Hv;
    a.Hk = Hk;
    a.dk = dk;
    a.dv = dv;
    a.qk_stride = qk_stride;
    a.v_stride = v_stride;
    a.gate_stride = gate_stride;
    a.o_stride = o_stride;
    a.tiled = tiled;
    Pass p(dev);
    record(p, a);
    p.run();
    const std::string at = "tiled=" + std::to_string(tiled) + " T=" + std::to_string(T);
    EXPECT_LE(rel_err(from_device<float>(dev, *Sd, S_ref.size()), S_ref), 1e-5) << at;
    EXPECT_LE(rel_err(from_device<float>(dev, *od, o_ref.size()), o_ref), 1e-5) << at;
  }
};

TEST(VulkanMixers, DeltaRecurrentMatchesTheReference) {
  QWEN35_NEED_VULKAN();
  std::mt19937 rng(7);
  for (bool tiled : {false, true})
    for (int64_t T : {1, 3}) {
      DeltaCase c(rng, tiled, T, 6);
      for (int64_t h = 0; h < c.Hv; ++h)
        kernels::ref::delta_recurrent(c.head(h, 0), T, c.dk, c.dv, c.S_ref.data() + h * c.dk * c.dv);
      c.expect_device_matches(*dev, [](Pass& p, const DeltaDeviceArgs& a) { delta_recurrent(p, a); });
    }
}

// The chunkwise-parallel form against the reference's delta_chunk run chunk by chunk (as the CPU's
// DeltaNet layer runs it), on blocks that end part-way through a chunk, both head orders.
TEST(VulkanMixers, DeltaChunkMatchesTheReference) {
  QWEN35_NEED_VULKAN();
  std::mt19937 rng(9);
  for (bool tiled : {false, true})
    for (int64_t T : {2, 37, 64, 65, 150}) {
      DeltaCase c(rng, tiled, T, 4);
      std::vector<float> work(kernels::delta_chunk_work_floats(c.dk, c.dv));
      for (int64_t h = 0; h < c.Hv; ++h)
        for (int64_t t0 = 0; t0 < T; t0 += kernels::kDeltaChunk)
          kernels::ref::delta_chunk(c.head(h, t0), std::min(kernels::kDeltaChunk, T - t0), c.dk, c.dv,
                                    c.S_ref.data() + h * c.dk * c.dv, work.data());
      auto wd = zeros<float>(*dev, size_t(c.Hv) * delta_chunk_work_floats(c.dk, c.dv));
      c.expect_device_matches(*dev, [&](Pass& p, const DeltaDeviceArgs& a) { delta_chunk(p, a, wd->address()); });
    }
}

TEST(VulkanMixers, AttentionOverAnF16CacheMatchesTheReference) {
  QWEN35_NEED_VULKAN();
  std::mt19937 rng(8);
  const int kv_heads = 2, group = 3, hd = 38;
  const int64_t n_ctx = 150;  // crosses the shader's key tiles of 64
  const int64_t kv_stride = kv_heads * hd + 2;
  const auto kf = random_floats(size_t(n_ctx * kv_stride), rng), vf = random_floats(size_t(n_ctx * kv_stride), rng);
  std::vector<uint16_t> k16(kf.size()), v16(vf.size());
  for (size_t i = 0; i < kf.size(); ++i) {
    k16[i] = f32_to_f16(kf[i]);
    v16[i] = f32_to_f16(vf[i]);
  }
  auto kd = to_device(*dev, k16), vd = to_device(*dev, v16);
  for (bool causal : {true, false})
    for (int64_t n_q : {1, 4}) {
      const int64_t n_kv0 = causal ? n_ctx - n_q + 1 : n_ctx;  // the block's own keys are the last n_q rows
      const int64_t q_stride = kv_heads * group * hd + 1;
      const auto q = random_floats(size_t(n_q * q_stride), rng);
      std::vector<float> o_ref(q.size(), 0.0f);
      for (int kh = 0; kh < kv_heads; ++kh) {
        kernels::AttnArgs a;
        a.q = q.data() + kh * group * hd;
        a.q_stride = q_stride;
        a.o = o_ref.data() + kh * group * hd;
        a.o_stride = q_stride;
        a.k = k16.data() + kh * hd;
        a.v = v16.data() + kh * hd;
        a.kv_stride = kv_stride;
        a.kv_dtype = DType::F16;
        a.n_q = n_q;
        a.group = group;
        a.head_dim = hd;
        a.n_kv0 = n_kv0;
        a.causal = causal;
        a.scale = 1.0f / std::sqrt(float(hd));
        kernels::ref::attention(a);
      }
      auto qd = to_device(*dev, q);
      auto od = zeros<float>(*dev, q.size());
      AttnDeviceArgs a;
      a.q = qd->address();
      a.o = od->address();
      a.k = kd->address();
      a.v = vd->address();
      a.q_stride = q_stride;
      a.o_stride = q_stride;
      a.kv_stride = kv_stride;
      a.kv_dtype = DType::F16;
      a.n_q = n_q;
      a.n_kv0 = n_kv0;
      a.kv_heads = kv_heads;
      a.group = group;
      a.head_dim = hd;
      a.causal = causal;
      a.scale = 1.0f / std::sqrt(float(hd));
      Pass p(*dev);
      attention(p, a);
      p.run();
      auto got = from_device<float>(*dev, *od, q.size());
      for (int64_t t = 0; t < n_q; ++t) got[size_t(t * q_stride + q_stride - 1)] = 0.0f;  // the stride gap
      EXPECT_LE(rel_err(got, o_ref), 2e-6) << "causal=" << causal << " n_q=" << n_q;
    }
}

}  // namespace
}  // namespace qwen35::vk
