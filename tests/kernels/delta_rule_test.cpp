// The chunkwise-parallel delta rule against the recurrent oracle (spec 4.4: they agree to fp32
// rounding), across lengths, chunk boundaries, carried-in states and extreme decays.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "kernels/kernels.h"
#include "kernels/ref/ref_ops.h"

namespace qwen35::kernels {
namespace {

struct HeadData {
  int64_t T;
  int dk, dv;
  std::vector<float> q, k, v, beta, g;
};

HeadData random_head(int64_t T, int dk, int dv, float decay_scale, std::mt19937& rng) {
  std::normal_distribution<float> n01(0.0f, 1.0f);
  std::uniform_real_distribution<float> u01(0.0f, 1.0f);
  HeadData h{T, dk, dv, {}, {}, {}, {}, {}};
  h.q.resize(size_t(T * dk));
  h.k.resize(size_t(T * dk));
  h.v.resize(size_t(T * dv));
  for (float& x : h.v) x = n01(rng);
  for (auto* m : {&h.q, &h.k})
    for (int64_t t = 0; t < T; ++t) {  // unit-norm rows (q also scaled, as the model does)
      float ss = 0;
      for (int i = 0; i < dk; ++i) ss += ((*m)[size_t(t * dk + i)] = n01(rng)) * (*m)[size_t(t * dk + i)];
      const float s = (m == &h.q ? 1.0f / std::sqrt(float(dk)) : 1.0f) / std::sqrt(ss);
      for (int i = 0; i < dk; ++i) (*m)[size_t(t * dk + i)] *= s;
    }
  for (int64_t t = 0; t < T; ++t) {
    h.beta.push_back(u01(rng));
    h.g.push_back(-decay_scale * u01(rng));
  }
  return h;
}

DeltaRuleHead view(HeadData& d, std::vector<float>& o) {
  o.assign(size_t(d.T * d.dv), 0.0f);
  return DeltaRuleHead{d.q.data(), d.k.data(), d.dk, d.v.data(), d.dv, d.beta.data(), d.g.data(), 1, o.data(), d.dv};
}

void run_chunked(const KernelTable& kt, HeadData& d, int64_t chunk_limit, std::vector<float>& S, std::vector<float>& o) {
  DeltaRuleHead h = view(d, o);
  std::vector<float> work(delta_chunk_work_floats(d.dk, d.dv));
  for (int64_t t0 = 0; t0 < d.T; t0 += chunk_limit) {
    const int64_t n = std::min(chunk_limit, d.T - t0);
    DeltaRuleHead part = h;
    part.q += t0 * d.dk;
    part.k += t0 * d.dk;
    part.v += t0 * d.dv;
    part.beta += t0;
    part.g += t0;
    part.o += t0 * d.dv;
    kt.delta_chunk(part, n, d.dk, d.dv, S.data(), work.data());
  }
}

double rel_err(const std::vector<float>& a, const std::vector<float>& b) {
  double m = 0, s = 1e-30;
  for (size_t i = 0; i < a.size(); ++i) {
    m = std::max(m, double(std::fabs(a[i] - b[i])));
    s = std::max(s, double(std::fabs(b[i])));
  }
  return m / s;
}

TEST(DeltaRule, ChunkedEqualsRecurrentForManyLengthsAndBoundaries) {
  std::mt19937 rng(11);
  for (const KernelTable* kt : supported_tables()) {
    for (int64_t T : {1, 2, 3, 17, 63, 64, 65, 127, 128, 129, 200}) {
      for (int64_t chunk : {int64_t(1), int64_t(7), int64_t(64)}) {
        for (float decay : {0.05f, 3.0f, 60.0f}) {  // up to decays that underflow e^{gamma} in a chunk
          HeadData d = random_head(T, 16, 24, decay, rng);
          std::vector<float> S0(16 * 24);
          std::normal_distribution<float> n01(0.0f, 0.3f);
          for (float& x : S0) x = n01(rng);  // a carried-in state
          std::vector<float> S_rec = S0, S_chk = S0, o_rec, o_chk;
          DeltaRuleHead h = view(d, o_rec);
          ref::delta_recurrent(h, T, d.dk, d.dv, S_rec.data());
          run_chunked(*kt, d, chunk, S_chk, o_chk);
          EXPECT_LE(rel_err(S_chk, S_rec), 1e-5) << kt->name << " T=" << T << " chunk=" << chunk << " decay=" << decay;
          EXPECT_LE(rel_err(o_chk, o_rec), 1e-5) << kt->name << " T=" << T << " chunk=" << chunk << " decay=" << decay;
          for (float x : o_chk) ASSERT_TRUE(std::isfinite(x));
        }
      }
    }
  }
}

TEST(DeltaRule, RecurrentTablesMatchReference) {
  std::mt19937 rng(5);
  for (const KernelTable* kt : supported_tables()) {
    HeadData d = random_head(33, 32, 32, 1.0f, rng);
    std::vector<float> S1(32 * 32, 0.1f), S2 = S1, o1, o2;
    DeltaRuleHead h1 = view(d, o1);
    ref::delta_recurrent(h1, d.T, d.dk, d.dv, S1.data());
    DeltaRuleHead h2 = view(d, o2);
    kt->delta_recurrent(h2, d.T, d.dk, d.dv, S2.data());
    EXPECT_LE(rel_err(S2, S1), 1e-5) << kt->name;
    EXPECT_LE(rel_err(o2, o1), 1e-5) << kt->name;
  }
}

// Padding rows (beta = 0, g = 0, k = q = v = 0) leave the state exactly as after the last real
// token: a partly filled chunk is exact.
TEST(DeltaRule, PaddedTokensLeaveStateUnchanged) {
  std::mt19937 rng(9);
  for (int64_t real : {1, 5, 40, 63}) {
    HeadData d = random_head(64, 16, 16, 1.0f, rng);
    HeadData padded = d;
    for (int64_t t = real; t < 64; ++t) {
      padded.beta[size_t(t)] = 0;
      padded.g[size_t(t)] = 0;
      for (int i = 0; i < 16; ++i) padded.q[size_t(t * 16 + i)] = padded.k[size_t(t * 16 + i)] = padded.v[size_t(t * 16 + i)] = 0;
    }
    std::vector<float> S_real(256, 0.2f), S_pad = S_real, o1, o2;
    HeadData prefix = d;
    prefix.T = real;
    run_chunked(ref_table(), prefix, 64, S_real, o1);
    run_chunked(ref_table(), padded, 64, S_pad, o2);
    EXPECT_LE(rel_err(S_pad, S_real), 1e-6) << real;
    for (int64_t t = 0; t < real * 16; ++t) EXPECT_NEAR(o2[size_t(t)], o1[size_t(t)], 1e-5f);
  }
}

TEST(DeltaRule, BlockDoublingInverseIsExact) {
  std::mt19937 rng(2);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  for (int64_t n : {1, 2, 3, 5, 8, 13, 32, 64}) {
    const int64_t ld = 64;
    std::vector<float> A(size_t(ld * ld), 0.0f), Tinv(A.size()), tmp(A.size());
    for (int64_t r = 0; r < n; ++r)
      for (int64_t c = 0; c < r; ++c) A[size_t(r * ld + c)] = 0.3f * u(rng);
    ref::invert_unit_lower(A.data(), n, ld, Tinv.data(), tmp.data());
    // (I + A) * Tinv == I
    for (int64_t r = 0; r < n; ++r)
      for (int64_t c = 0; c < n; ++c) {
        double s = Tinv[size_t(r * ld + c)];
        for (int64_t m = 0; m < r; ++m) s += double(A[size_t(r * ld + m)]) * Tinv[size_t(m * ld + c)];
        EXPECT_NEAR(s, r == c ? 1.0 : 0.0, 1e-5) << "n=" << n << " r=" << r << " c=" << c;
      }
  }
}

}  // namespace
}  // namespace qwen35::kernels
