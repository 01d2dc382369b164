// The gated delta rule of every kernel table against the scalar recurrent oracle (spec 4.4: the
// chunkwise form agrees to fp32 rounding), across lengths, chunk boundaries, carried-in states,
// odd head sizes, misaligned and strided rows and extreme decays; and the invariants the runtime
// relies on: T recurrent tokens in one call give the bits of T one-token calls, and results never
// depend on the scratch memory's old contents.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "kernels/kernels.h"
#include "kernels/ref/ref_ops.h"

namespace qwen35::kernels {
namespace {

// One head's inputs laid out as the model lays them out: rows wider than the vectors (strides),
// every buffer starting one float past an allocation, so nothing is 16-byte aligned.
struct HeadData {
  int64_t T;
  int dk, dv;
  int64_t qk_stride, v_stride, gate_stride, o_stride;
  std::vector<float> q, k, v, beta, g;

  float* at(std::vector<float>& b, int64_t t, int64_t stride) { return b.data() + 1 + t * stride; }
};

HeadData random_head(int64_t T, int dk, int dv, float decay_scale, std::mt19937& rng) {
  std::normal_distribution<float> n01(0.0f, 1.0f);
  std::uniform_real_distribution<float> u01(0.0f, 1.0f);
  HeadData h{T, dk, dv, dk + 3, dv + 5, 3, dv + 1, {}, {}, {}, {}, {}};
  h.q.assign(size_t(1 + T * h.qk_stride), 0.0f);
  h.k = h.q;
  h.v.assign(size_t(1 + T * h.v_stride), 0.0f);
  h.beta.assign(size_t(1 + T * h.gate_stride), 0.0f);
  h.g = h.beta;
  for (int64_t t = 0; t < T; ++t) {
    for (int j = 0; j < dv; ++j) h.at(h.v, t, h.v_stride)[j] = n01(rng);
    for (auto* m : {&h.q, &h.k}) {  // unit-norm rows (q also scaled, as the model does)
      float* row = h.at(*m, t, h.qk_stride);
      float ss = 0;
      for (int i = 0; i < dk; ++i) {
        row[i] = n01(rng);
        ss += row[i] * row[i];
      }
      const float s = (m == &h.q ? 1.0f / std::sqrt(float(dk)) : 1.0f) / std::sqrt(ss);
      for (int i = 0; i < dk; ++i) row[i] *= s;
    }
    *h.at(h.beta, t, h.gate_stride) = u01(rng);
    *h.at(h.g, t, h.gate_stride) = -decay_scale * u01(rng);
  }
  return h;
}

// Output rows [T, o_stride] (one float of offset, like the inputs).
struct Out {
  std::vector<float> buf;
  float* rows() { return buf.data() + 1; }
};

DeltaRuleHead view(HeadData& d, Out& o) {
  o.buf.assign(size_t(1 + d.T * d.o_stride), 0.0f);
  return DeltaRuleHead{d.at(d.q, 0, 0), d.at(d.k, 0, 0), d.qk_stride, d.at(d.v, 0, 0), d.v_stride,
                       d.at(d.beta, 0, 0), d.at(d.g, 0, 0), d.gate_stride, o.rows(), d.o_stride};
}

// A [dk, dv] state one float past its allocation.
struct State {
  std::vector<float> buf;
  State(int dk, int dv, float sd, std::mt19937& rng) : buf(size_t(1 + dk * dv)) {
    std::normal_distribution<float> n(0.0f, sd);
    for (float& x : buf) x = sd > 0 ? n(rng) : 0.0f;
  }
  float* data() { return buf.data() + 1; }
  std::vector<float> values() const { return {buf.begin() + 1, buf.end()}; }
};

// Only the T x dv output values (not the stride gaps).
std::vector<float> out_values(const HeadData& d, Out& o) {
  std::vector<float> v;
  for (int64_t t = 0; t < d.T; ++t) v.insert(v.end(), o.rows() + t * d.o_stride, o.rows() + t * d.o_stride + d.dv);
  return v;
}

DeltaRuleHead advance(DeltaRuleHead h, int64_t t0) {
  h.q += t0 * h.qk_stride;
  h.k += t0 * h.qk_stride;
  h.v += t0 * h.v_stride;
  h.beta += t0 * h.gate_stride;
  h.g += t0 * h.gate_stride;
  h.o += t0 * h.o_stride;
  return h;
}

void run_chunked(const KernelTable& kt, HeadData& d, int64_t chunk_limit, State& S, Out& o, float work_fill = 0) {
  DeltaRuleHead h = view(d, o);
  std::vector<float> work(delta_chunk_work_floats(d.dk, d.dv), work_fill);
  for (int64_t t0 = 0; t0 < d.T; t0 += chunk_limit)
    kt.delta_chunk(advance(h, t0), std::min(chunk_limit, d.T - t0), d.dk, d.dv, S.data(), work.data());
}

void run_oracle(HeadData& d, State& S, Out& o) {
  DeltaRuleHead h = view(d, o);
  ref::delta_recurrent(h, d.T, d.dk, d.dv, S.data());
}

double rel_err(const std::vector<float>& a, const std::vector<float>& b) {
  double m = 0, s = 1e-30;
  for (size_t i = 0; i < a.size(); ++i) {
    m = std::max(m, double(std::fabs(a[i] - b[i])));
    s = std::max(s, double(std::fabs(b[i])));
  }
  return m / s;
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

struct Shape {
  int dk, dv;
};
// Not multiples of 8 or 16 (tails in every loop), both orders, and the real 128 x 128.
constexpr Shape kShapes[] = {{40, 72}, {72, 40}, {127, 33}, {17, 127}, {128, 128}};
// 0: no decay at all; 60: e^{gamma} underflows within a chunk (gamma reaches -3800).
constexpr float kDecays[] = {0.0f, 0.05f, 3.0f, 60.0f};

std::string where(const KernelTable& kt, Shape s, int64_t T, float decay) {
  return std::string(kt.name) + " dk=" + std::to_string(s.dk) + " dv=" + std::to_string(s.dv) +
         " T=" + std::to_string(T) + " decay=" + std::to_string(decay);
}

TEST(DeltaRule, ChunkedEqualsRecurrentForManyLengthsAndBoundaries) {
  std::mt19937 rng(11);
  for (const KernelTable* kt : supported_tables()) {
    for (int64_t T : {1, 2, 3, 17, 63, 64, 65, 127, 128, 129, 200}) {
      for (int64_t chunk : {int64_t(1), int64_t(7), int64_t(64)}) {
        for (float decay : {0.05f, 3.0f, 60.0f}) {
          HeadData d = random_head(T, 16, 24, decay, rng);
          State S_rec(16, 24, 0.3f, rng), S_chk = S_rec;  // a carried-in state
          Out o_rec, o_chk;
          run_oracle(d, S_rec, o_rec);
          run_chunked(*kt, d, chunk, S_chk, o_chk);
          const std::string at = where(*kt, {16, 24}, T, decay) + " chunk=" + std::to_string(chunk);
          EXPECT_LE(rel_err(S_chk.values(), S_rec.values()), 1e-5) << at;
          EXPECT_LE(rel_err(out_values(d, o_chk), out_values(d, o_rec)), 1e-5) << at;
          for (float x : out_values(d, o_chk)) ASSERT_TRUE(std::isfinite(x)) << at;
        }
      }
    }
  }
}

TEST(DeltaRule, ChunkedMatchesRecurrentOracleAtOddAndRealShapes) {
  std::mt19937 rng(21);
  for (const KernelTable* kt : supported_tables())
    for (Shape sh : kShapes)
      for (int64_t T : {1, 6, 64, 100})
        for (float decay : kDecays) {
          HeadData d = random_head(T, sh.dk, sh.dv, decay, rng);
          State S_rec(sh.dk, sh.dv, 0.3f, rng), S_chk = S_rec;
          Out o_rec, o_chk;
          run_oracle(d, S_rec, o_rec);
          run_chunked(*kt, d, kDeltaChunk, S_chk, o_chk);
          const std::string at = where(*kt, sh, T, decay);
          EXPECT_LE(rel_err(S_chk.values(), S_rec.values()), 1e-5) << at;
          EXPECT_LE(rel_err(out_values(d, o_chk), out_values(d, o_rec)), 1e-5) << at;
        }
}

TEST(DeltaRule, RecurrentTablesMatchReference) {
  std::mt19937 rng(5);
  for (const KernelTable* kt : supported_tables())
    for (Shape sh : kShapes)
      for (float decay : kDecays) {
        HeadData d = random_head(33, sh.dk, sh.dv, decay, rng);
        State S1(sh.dk, sh.dv, 0.3f, rng), S2 = S1;
        Out o1, o2;
        run_oracle(d, S1, o1);
        kt->delta_recurrent(view(d, o2), d.T, d.dk, d.dv, S2.data());
        const std::string at = where(*kt, sh, d.T, decay);
        EXPECT_LE(rel_err(S2.values(), S1.values()), 1e-5) << at;
        EXPECT_LE(rel_err(out_values(d, o2), out_values(d, o1)), 1e-5) << at;
      }
}

// Prompt lookup decoding verifies a draft with one recurrent call over the block and relies on it
// giving exactly what one-token decoding gives.
TEST(DeltaRule, RecurrentBlockGivesTheBitsOfSingleTokenSteps) {
  std::mt19937 rng(8);
  for (const KernelTable* kt : supported_tables())
    for (Shape sh : kShapes)
      for (float decay : {0.05f, 60.0f}) {
        HeadData d = random_head(19, sh.dk, sh.dv, decay, rng);
        State S_block(sh.dk, sh.dv, 0.3f, rng), S_steps = S_block;
        Out o_block, o_steps;
        kt->delta_recurrent(view(d, o_block), d.T, d.dk, d.dv, S_block.data());
        const DeltaRuleHead h = view(d, o_steps);
        for (int64_t t = 0; t < d.T; ++t) kt->delta_recurrent(advance(h, t), 1, d.dk, d.dv, S_steps.data());
        const std::string at = where(*kt, sh, d.T, decay);
        EXPECT_TRUE(same_bits(S_block.values(), S_steps.values())) << at;
        EXPECT_TRUE(same_bits(out_values(d, o_block), out_values(d, o_steps))) << at;
      }
}

// Whatever the scratch held before (NaN, or another call's leftovers), the chunk gives the same bits.
TEST(DeltaRule, ChunkIgnoresOldScratchContents) {
  std::mt19937 rng(13);
  for (const KernelTable* kt : supported_tables())
    for (Shape sh : kShapes)
      for (int64_t T : {5, 64, 70}) {
        HeadData d = random_head(T, sh.dk, sh.dv, 1.0f, rng);
        State S1(sh.dk, sh.dv, 0.3f, rng), S2 = S1;
        Out o1, o2;
        run_chunked(*kt, d, kDeltaChunk, S1, o1, std::numeric_limits<float>::quiet_NaN());
        run_chunked(*kt, d, kDeltaChunk, S2, o2, 1e30f);
        const std::string at = where(*kt, sh, T, 1.0f);
        EXPECT_TRUE(same_bits(S1.values(), S2.values())) << at;
        EXPECT_TRUE(same_bits(out_values(d, o1), out_values(d, o2))) << at;
      }
}

// Padding rows (beta = 0, g = 0, k = q = v = 0) leave the state exactly as after the last real
// token: a partly filled chunk is exact.
TEST(DeltaRule, PaddedTokensLeaveStateUnchanged) {
  std::mt19937 rng(9);
  for (const KernelTable* kt : supported_tables())
    for (int64_t real : {1, 5, 40, 63}) {
      HeadData d = random_head(64, 40, 24, 1.0f, rng);
      HeadData padded = d;
      for (int64_t t = real; t < 64; ++t) {
        *padded.at(padded.beta, t, padded.gate_stride) = 0;
        *padded.at(padded.g, t, padded.gate_stride) = 0;
        for (int i = 0; i < d.dk; ++i) padded.at(padded.q, t, d.qk_stride)[i] = padded.at(padded.k, t, d.qk_stride)[i] = 0;
        for (int j = 0; j < d.dv; ++j) padded.at(padded.v, t, d.v_stride)[j] = 0;
      }
      State S_real(40, 24, 0.2f, rng), S_pad = S_real;
      Out o1, o2;
      HeadData prefix = d;
      prefix.T = real;
      run_chunked(*kt, prefix, 64, S_real, o1);
      run_chunked(*kt, padded, 64, S_pad, o2);
      EXPECT_LE(rel_err(S_pad.values(), S_real.values()), 1e-6) << kt->name << " " << real;
      const std::vector<float> a = out_values(prefix, o1), b = out_values(padded, o2);
      for (size_t i = 0; i < a.size(); ++i) EXPECT_NEAR(b[i], a[i], 1e-5f) << kt->name << " " << real;
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
