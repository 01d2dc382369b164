// The row operations of every table (norms, residual add, gates, RoPE, the DeltaNet conv) against
// the scalar reference, on odd lengths and misaligned rows, in place. Parts without an e^x give
// the reference's bits on every table; the SiLU and sigmoid in a fused operation are the table's
// own, so there the fused result must equal the table's separate steps bit for bit and the
// reference within the activations' tolerance.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "kernels/kernels.h"

namespace qwen35::kernels {
namespace {

constexpr int64_t kLengths[] = {1, 3, 7, 8, 15, 16, 17, 31, 64, 100, 128, 255, 1000};
constexpr int64_t kOffsets[] = {0, 1, 3};

std::vector<float> random_values(size_t n, float scale, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> nd(0.0f, scale);
  std::vector<float> v(n);
  for (float& x : v) x = nd(rng);
  return v;
}

bool same_bits(const float* a, const float* b, int64_t n) { return std::memcmp(a, b, size_t(n) * sizeof(float)) == 0; }

std::string where(const KernelTable& t, int64_t n, int64_t off) {
  return std::string(t.name) + " n=" + std::to_string(n) + " offset=" + std::to_string(off);
}

TEST(RowOps, NormsAddAndRopeGiveTheReferenceBits) {
  const KernelTable& ref = ref_table();
  uint32_t seed = 1;
  for (int64_t n : kLengths)
    for (int64_t off : kOffsets) {
      const std::vector<float> xs = random_values(size_t(n + off), 2.0f, seed++);
      const std::vector<float> ws = random_values(size_t(n), 1.0f, seed++);
      const float* x = xs.data() + off;
      std::vector<float> want(static_cast<size_t>(n + off)), got(static_cast<size_t>(n + off));
      for (const KernelTable* t : supported_tables()) {
        ref.rms_norm(x, ws.data(), 1e-6f, want.data() + off, n);
        t->rms_norm(x, ws.data(), 1e-6f, got.data() + off, n);
        EXPECT_TRUE(same_bits(want.data() + off, got.data() + off, n)) << "rms_norm " << where(*t, n, off);
        std::vector<float> inplace = xs;
        t->rms_norm(inplace.data() + off, ws.data(), 1e-6f, inplace.data() + off, n);
        EXPECT_TRUE(same_bits(want.data() + off, inplace.data() + off, n)) << "rms_norm in place " << where(*t, n, off);

        ref.l2_norm(x, 0.125f, 1e-6f, want.data() + off, n);
        t->l2_norm(x, 0.125f, 1e-6f, got.data() + off, n);
        EXPECT_TRUE(same_bits(want.data() + off, got.data() + off, n)) << "l2_norm " << where(*t, n, off);

        std::vector<float> y_ref = random_values(size_t(n + off), 1.0f, 99), y_got = y_ref;
        ref.add(x, y_ref.data() + off, n);
        t->add(x, y_got.data() + off, n);
        EXPECT_TRUE(same_bits(y_ref.data(), y_got.data(), n + off)) << "add " << where(*t, n, off);

        // Two heads, the second `n + 5` floats after the first; only the leading 2 * half rotate.
        const int half = int((n + 1) / 2);
        const std::vector<float> cs = random_values(size_t(half), 1.0f, seed++);
        const std::vector<float> sn = random_values(size_t(half), 1.0f, seed++);
        std::vector<float> r_ref = random_values(size_t(off + 2 * (n + 5) + 1), 1.0f, seed++), r_got = r_ref;
        ref.rope(r_ref.data() + off, 2, n + 5, half, cs.data(), sn.data());
        t->rope(r_got.data() + off, 2, n + 5, half, cs.data(), sn.data());
        EXPECT_TRUE(same_bits(r_ref.data(), r_got.data(), int64_t(r_ref.size()))) << "rope " << where(*t, n, off);
      }
    }
}

// The reference's formulas against double, so that the oracle itself is checked.
TEST(RowOps, ReferenceNormsAreTheFormulas) {
  const std::vector<float> x = random_values(300, 3.0f, 7), w = random_values(300, 1.0f, 8);
  std::vector<float> y(300);
  double ss = 0;
  for (float v : x) ss += double(v) * v;
  ref_table().rms_norm(x.data(), w.data(), 1e-6f, y.data(), 300);
  for (size_t i = 0; i < 300; ++i)
    EXPECT_NEAR(y[i], x[i] / std::sqrt(ss / 300 + 1e-6) * w[i], 1e-5 * std::fabs(y[i]) + 1e-7) << i;
  ref_table().l2_norm(x.data(), 0.5f, 1e-6f, y.data(), 300);
  for (size_t i = 0; i < 300; ++i)
    EXPECT_NEAR(y[i], x[i] / std::sqrt(ss + 1e-6) * 0.5, 1e-5 * std::fabs(y[i]) + 1e-7) << i;
  std::vector<float> g = {-30.0f, -1.0f, 0.0f, 0.5f, 19.0f, 25.0f}, neg_a(6, -0.5f), bias(6, 1.0f);
  const std::vector<float> g0 = g;
  ref_table().decay_gate(neg_a.data(), bias.data(), g.data(), 6);
  for (size_t i = 0; i < 6; ++i) {
    const double v = double(g0[i]) + 1.0, softplus = v > 20 ? v : std::log1p(std::exp(v));
    EXPECT_NEAR(g[i], -0.5 * softplus, 1e-6 * std::fabs(g[i]) + 1e-12) << i;
  }
}

TEST(RowOps, FusedGatesAreTheTablesOwnSteps) {
  const KernelTable& ref = ref_table();
  uint32_t seed = 100;
  for (int64_t n : kLengths)
    for (int64_t off : kOffsets) {
      const std::vector<float> xs = random_values(size_t(n + off), 2.0f, seed++),
                               ws = random_values(size_t(n), 1.0f, seed++);
      const std::vector<float> zs = random_values(size_t(n + off), 4.0f, seed++);
      const float* x = xs.data() + off;
      const float* z = zs.data() + off;
      for (const KernelTable* t : supported_tables()) {
        // gated_rms_norm = rms_norm, then times the table's silu(z)
        std::vector<float> steps(static_cast<size_t>(n)), silu(static_cast<size_t>(n)),
            fused(static_cast<size_t>(n + off)), want(static_cast<size_t>(n));
        t->rms_norm(x, ws.data(), 1e-6f, steps.data(), n);
        t->silu(z, silu.data(), n);
        for (int64_t i = 0; i < n; ++i) steps[size_t(i)] *= silu[size_t(i)];
        t->gated_rms_norm(x, ws.data(), z, 1e-6f, fused.data() + off, n);
        EXPECT_TRUE(same_bits(steps.data(), fused.data() + off, n)) << "gated_rms_norm " << where(*t, n, off);
        ref.gated_rms_norm(x, ws.data(), z, 1e-6f, want.data(), n);
        for (int64_t i = 0; i < n; ++i)
          EXPECT_NEAR(fused[size_t(off + i)], want[size_t(i)], 1e-6f * std::fabs(want[size_t(i)]) + 1e-30f)
              << "gated_rms_norm " << where(*t, n, off) << " i=" << i;

        // sigmoid_gate = y times the table's sigmoid(g)
        std::vector<float> y = random_values(size_t(n + off), 1.0f, seed++), y_steps = y, y_ref = y,
                           sig(static_cast<size_t>(n));
        t->sigmoid(z, sig.data(), n);
        for (int64_t i = 0; i < n; ++i) y_steps[size_t(off + i)] *= sig[size_t(i)];
        t->sigmoid_gate(z, y.data() + off, n);
        EXPECT_TRUE(same_bits(y.data(), y_steps.data(), n + off)) << "sigmoid_gate " << where(*t, n, off);
        ref.sigmoid_gate(z, y_ref.data() + off, n);
        for (int64_t i = 0; i < n + off; ++i)
          EXPECT_NEAR(y[size_t(i)], y_ref[size_t(i)], 1e-6f * std::fabs(y_ref[size_t(i)]) + 1e-30f)
              << "sigmoid_gate " << where(*t, n, off);
      }
    }
}

// One layer's conv: C channels, K taps, a state of K inputs per channel.
struct ConvCase {
  int64_t C;
  int K;
  std::vector<float> taps, state, x;
  ConvCase(int64_t channels, int k, int64_t T, uint32_t seed)
      : C(channels),
        K(k),
        taps(random_values(size_t(k * channels), 0.5f, seed)),
        state(random_values(size_t(channels * k), 1.0f, seed + 1)),
        x(random_values(size_t(T * channels), 1.0f, seed + 2)) {}
  ConvArgs args(const float* in, int64_t T, float* st, float* y, int64_t c0, int64_t c1) const {
    ConvArgs a;
    a.x = in;
    a.T = T;
    a.C = C;
    a.K = K;
    a.taps = taps.data();
    a.state = st;
    a.y = y;
    a.c0 = c0;
    a.c1 = c1;
    return a;
  }
};

// Every table's conv is the reference's taps (bits) through its own SiLU; a block of T tokens
// equals T one-token calls and any split of the channels; the state ends as the reference's.
TEST(RowOps, CausalConvIsTheReferencesTapsAtAnyBlockSize) {
  const KernelTable& ref = ref_table();
  uint32_t seed = 500;
  for (int K : {2, 4})
    for (int64_t C : {1, 5, 16, 37, 130})
      for (int64_t T : {1, 2, 3, 6, 9}) {
        const ConvCase cc(C, K, T, seed += 3);
        // The taps alone: the reference's pre-SiLU sums in double-free float, in tap order.
        std::vector<float> pre(static_cast<size_t>(T * C));
        for (int64_t t = 0; t < T; ++t)
          for (int64_t ch = 0; ch < C; ++ch) {
            float acc = 0;
            for (int64_t j = 0; j < K; ++j) {
              const int64_t src = t - (K - 1) + j;
              acc += cc.taps[size_t(j * C + ch)] *
                     (src >= 0 ? cc.x[size_t(src * C + ch)] : cc.state[size_t(ch * K + K + src)]);
            }
            pre[size_t(t * C + ch)] = acc;
          }
        std::vector<float> ref_state = cc.state, ref_y(static_cast<size_t>(T * C));
        ref.causal_conv(cc.args(cc.x.data(), T, ref_state.data(), ref_y.data(), 0, C));
        for (const KernelTable* t : supported_tables()) {
          const std::string at =
              std::string(t->name) + " K=" + std::to_string(K) + " C=" + std::to_string(C) + " T=" + std::to_string(T);
          std::vector<float> want(static_cast<size_t>(T * C));
          t->silu(pre.data(), want.data(), T * C);
          // one call over all channels
          std::vector<float> state = cc.state, y(static_cast<size_t>(T * C));
          t->causal_conv(cc.args(cc.x.data(), T, state.data(), y.data(), 0, C));
          EXPECT_TRUE(same_bits(want.data(), y.data(), T * C)) << "block " << at;
          EXPECT_TRUE(same_bits(ref_state.data(), state.data(), C * K)) << "state " << at;
          for (int64_t i = 0; i < T * C; ++i)
            EXPECT_NEAR(y[size_t(i)], ref_y[size_t(i)], 1e-6f * std::fabs(ref_y[size_t(i)]) + 1e-30f) << at;
          // token by token, channels split in two ranges
          std::vector<float> state2 = cc.state, y2(static_cast<size_t>(T * C));
          const int64_t mid = C / 3;
          for (int64_t tok = 0; tok < T; ++tok)
            for (auto [c0, c1] : {std::pair{int64_t(0), mid}, std::pair{mid, C}})
              if (c0 < c1)
                t->causal_conv(cc.args(cc.x.data() + tok * C, 1, state2.data(), y2.data() + tok * C, c0, c1));
          EXPECT_TRUE(same_bits(y.data(), y2.data(), T * C)) << "token by token " << at;
          EXPECT_TRUE(same_bits(state.data(), state2.data(), C * K)) << "state token by token " << at;
        }
      }
}

TEST(RowOps, GeluErfIsTheExactGelu) {
  const std::vector<float> x = random_values(200, 3.0f, 11);
  for (const KernelTable* t : supported_tables()) {
    std::vector<float> y(200);
    t->gelu_erf(x.data(), y.data(), 200);
    for (size_t i = 0; i < 200; ++i) {
      const double exact = 0.5 * x[i] * (1.0 + std::erf(x[i] / std::sqrt(2.0)));
      EXPECT_NEAR(y[i], exact, 1e-6 * std::fabs(exact) + 1e-7) << t->name << " x=" << x[i];
    }
  }
}

}  // namespace
}  // namespace qwen35::kernels
