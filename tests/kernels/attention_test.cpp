// Softmax attention over a KV cache: every kernel table against the scalar twin on odd head sizes,
// GQA groups, causal and full masks (full ones also at the vision tower's shapes), f32 and f16
// caches, strided misaligned rows and peaked softmaxes; and the invariant prompt lookup decoding
// and batching rely on: a query row gives the same bits alone, in any block and at any place in it.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "core/half.h"
#include "kernels/kernels.h"
#include "kernels/ref/ref_ops.h"

namespace qwen35::kernels {
namespace {

// n_q query tokens of `group` heads over a cache of n_keys positions, rows laid out as the model
// lays them out but wider (strides) and one element past an allocation (nothing aligned).
struct Case {
  int64_t n_q, n_keys;
  int group, hd;
  DType dtype;
  int64_t q_stride, kv_stride;
  std::vector<float> q, k32, v32;
  std::vector<uint16_t> k16, v16;

  Case(int64_t n_q, int64_t n_keys, int group, int hd, DType dtype, float q_scale, std::mt19937& rng)
      : n_q(n_q), n_keys(n_keys), group(group), hd(hd), dtype(dtype), q_stride(int64_t(group) * hd + 5),
        kv_stride(hd + 3) {
    std::normal_distribution<float> n01(0.0f, 1.0f);
    q.resize(size_t(1 + n_q * q_stride));
    for (float& x : q) x = q_scale * n01(rng);
    k32.resize(size_t(1 + std::max<int64_t>(n_keys, 1) * kv_stride));
    v32.resize(k32.size());
    for (float& x : k32) x = n01(rng);
    for (float& x : v32) x = n01(rng);
    if (dtype == DType::F16) {  // the f32 copies hold the f16 values, for the f32 oracle
      for (auto [f32, f16] : {std::pair{&k32, &k16}, std::pair{&v32, &v16}})
        for (float& x : *f32) {
          f16->push_back(f32_to_f16(x));
          x = f16_to_f32(f16->back());
        }
    }
  }

  // Tokens [t0, t0 + n) of the block, which sees n_kv0 keys at its first token when causal.
  AttnArgs args(std::vector<float>& o, int64_t t0, int64_t n, int64_t n_kv0, bool causal, DType as) {
    AttnArgs a;
    a.q = q.data() + 1 + t0 * q_stride;
    a.q_stride = q_stride;
    a.o = o.data() + 1 + t0 * q_stride;
    a.o_stride = q_stride;
    if (as == DType::F16) {
      a.k = k16.data() + 1;
      a.v = v16.data() + 1;
    } else {
      a.k = k32.data() + 1;
      a.v = v32.data() + 1;
    }
    a.kv_stride = kv_stride;
    a.kv_dtype = as;
    a.n_q = n;
    a.group = group;
    a.head_dim = hd;
    a.n_kv0 = causal ? n_kv0 + t0 : n_kv0;
    a.causal = causal;
    a.scale = 1.0f / std::sqrt(float(hd));
    return a;
  }

  std::vector<float> out() const { return std::vector<float>(q.size(), 0.0f); }
  // The n_q x group x hd output values, without the stride gaps.
  std::vector<float> values(const std::vector<float>& o) const {
    std::vector<float> v;
    for (int64_t t = 0; t < n_q; ++t) v.insert(v.end(), o.begin() + 1 + t * q_stride, o.begin() + 1 + t * q_stride + group * hd);
    return v;
  }
};

double rel_err(const std::vector<float>& a, const std::vector<float>& b) {
  double m = 0, s = 1e-30;
  for (size_t i = 0; i < a.size(); ++i) {
    m = std::max(m, double(std::fabs(a[i] - b[i])));
    if (std::isnan(a[i]) != std::isnan(b[i])) m = 1e30;
    s = std::max(s, double(std::fabs(b[i])));
  }
  return m / s;
}

std::string where(const KernelTable& kt, const Case& c, int64_t n_kv0, bool causal, float q_scale) {
  return std::string(kt.name) + " n_q=" + std::to_string(c.n_q) + " n_kv0=" + std::to_string(n_kv0) +
         " group=" + std::to_string(c.group) + " hd=" + std::to_string(c.hd) + " " +
         std::string(dtype_name(c.dtype)) + (causal ? " causal" : " full") + " q_scale=" + std::to_string(q_scale);
}

TEST(Attention, EveryTableMatchesTheScalarTwin) {
  std::mt19937 rng(3);
  for (const KernelTable* kt : supported_tables())
    for (DType dt : {DType::F32, DType::F16})
      for (int hd : {40, 72, 127, 256})
        for (int group : {1, 3, 4})
          for (auto [n_q, n_kv0] : {std::pair<int64_t, int64_t>{1, 1}, {1, 33}, {1, 200}, {5, 31}, {17, 1}, {17, 64}})
            for (float q_scale : {1.0f, 30.0f}) {  // 30: scores in the hundreds, most weights underflow
              for (bool causal : {true, false}) {
                Case c(n_q, n_kv0 + (causal ? n_q - 1 : 0), group, hd, dt, q_scale, rng);
                std::vector<float> o_ref = c.out(), o = c.out();
                ref::attention(c.args(o_ref, 0, n_q, n_kv0, causal, DType::F32));
                kt->attention(c.args(o, 0, n_q, n_kv0, causal, dt));
                // Scores near 100 carry ~1e-5 of absolute rounding in any summation order, which the
                // exponential turns into relative error of the weights.
                const double tol = q_scale > 1.0f ? 5e-5 : 2e-6;
                EXPECT_LE(rel_err(c.values(o), c.values(o_ref)), tol) << where(*kt, c, n_kv0, causal, q_scale);
              }
            }
}

// Prompt lookup decoding verifies a draft as one block and must equal one-token decoding; a
// batched or re-chunked prefill must equal the plain one.
TEST(Attention, RowsGiveTheSameBitsInAnyBlock) {
  std::mt19937 rng(4);
  for (const KernelTable* kt : supported_tables())
    for (DType dt : {DType::F32, DType::F16})
      for (int hd : {72, 256})
        for (int group : {1, 2, 4})
          for (bool causal : {true, false}) {
            const int64_t n_q = 23, n_kv0 = 40;
            Case c(n_q, n_kv0 + n_q - 1, group, hd, dt, 4.0f, rng);
            std::vector<float> whole = c.out(), single = c.out(), split = c.out();
            kt->attention(c.args(whole, 0, n_q, n_kv0, causal, dt));
            for (int64_t t = 0; t < n_q; ++t) kt->attention(c.args(single, t, 1, n_kv0, causal, dt));
            for (auto [t0, t1] : {std::pair<int64_t, int64_t>{0, 3}, {3, 4}, {4, 13}, {13, 23}})
              kt->attention(c.args(split, t0, t1 - t0, n_kv0, causal, dt));
            const std::string at = std::string(kt->name) + " " + std::string(dtype_name(dt)) +
                                   " hd=" + std::to_string(hd) + " group=" + std::to_string(group) +
                                   (causal ? " causal" : " full");
            EXPECT_EQ(std::memcmp(whole.data(), single.data(), whole.size() * sizeof(float)), 0) << at;
            EXPECT_EQ(std::memcmp(whole.data(), split.data(), whole.size() * sizeof(float)), 0) << at;
          }
}

// Full (non-causal) attention as the vision tower runs it: 72-wide heads, batches of rows past
// the kernels' 64 and key counts off every key tile (both vector widths take 48 keys a tile), so
// partial row vectors, partial tiles and partial micro-tiles of keys and head elements all occur.
TEST(Attention, FullAttentionAtVisionShapesMatchesTheScalarTwin) {
  std::mt19937 rng(7);
  for (const KernelTable* kt : supported_tables())
    for (int hd : {72, 40, 13})
      for (int group : {1, 2})
        for (int64_t n_q : {1, 15, 64, 65, 130})
          for (int64_t n_kv : {1, 5, 31, 47, 48, 49, 97, 250})
            for (float q_scale : {1.0f, 30.0f}) {
              Case c(n_q, n_kv, group, hd, DType::F32, q_scale, rng);
              std::vector<float> o_ref = c.out(), o = c.out();
              ref::attention(c.args(o_ref, 0, n_q, n_kv, false, DType::F32));
              kt->attention(c.args(o, 0, n_q, n_kv, false, DType::F32));
              const double tol = q_scale > 1.0f ? 5e-5 : 2e-6;  // as EveryTableMatchesTheScalarTwin
              EXPECT_LE(rel_err(c.values(o), c.values(o_ref)), tol) << where(*kt, c, n_kv, false, q_scale);
            }
}

// The vision tower slices its queries into tasks of 64 rows and runs them on any thread: a row's
// bits must not depend on the slice it came in, across batch boundaries too.
TEST(Attention, FullAttentionRowsGiveTheSameBitsInAnySlice) {
  std::mt19937 rng(8);
  for (const KernelTable* kt : supported_tables())
    for (int group : {1, 3}) {
      const int64_t n_q = 150, n_kv = 101;
      Case c(n_q, n_kv, group, 72, DType::F32, 4.0f, rng);
      std::vector<float> whole = c.out(), single = c.out(), split = c.out();
      kt->attention(c.args(whole, 0, n_q, n_kv, false, DType::F32));
      for (int64_t t = 0; t < n_q; ++t) kt->attention(c.args(single, t, 1, n_kv, false, DType::F32));
      for (auto [t0, t1] : {std::pair<int64_t, int64_t>{0, 7}, {7, 71}, {71, 72}, {72, 150}})
        kt->attention(c.args(split, t0, t1 - t0, n_kv, false, DType::F32));
      const std::string at = std::string(kt->name) + " group=" + std::to_string(group);
      EXPECT_EQ(std::memcmp(whole.data(), single.data(), whole.size() * sizeof(float)), 0) << at;
      EXPECT_EQ(std::memcmp(whole.data(), split.data(), whole.size() * sizeof(float)), 0) << at;
    }
}

// The twin reads an f16 cache by converting its rows: exactly its f32 result on the same values.
TEST(Attention, F16CacheIsItsValuesInF32) {
  std::mt19937 rng(5);
  Case c(6, 50, 4, 72, DType::F16, 2.0f, rng);
  std::vector<float> a = c.out(), b = c.out();
  ref::attention(c.args(a, 0, 6, 45, true, DType::F16));
  ref::attention(c.args(b, 0, 6, 45, true, DType::F32));
  EXPECT_EQ(std::memcmp(a.data(), b.data(), a.size() * sizeof(float)), 0);
}

// A row that sees no key at all gets zeros, not NaN, from every table.
TEST(Attention, RowWithoutKeysIsZero) {
  std::mt19937 rng(6);
  for (const KernelTable* kt : supported_tables()) {
    Case c(3, 2, 2, 40, DType::F32, 1.0f, rng);
    std::vector<float> o(c.q.size(), 7.0f);
    kt->attention(c.args(o, 0, 3, 0, true, DType::F32));  // token 0 sees no key, tokens 1, 2 see 1, 2
    const std::vector<float> v = c.values(o);
    for (int i = 0; i < 2 * 40; ++i) EXPECT_EQ(v[size_t(i)], 0.0f) << kt->name;
    for (float x : v) EXPECT_TRUE(std::isfinite(x)) << kt->name;
    std::vector<float> full(c.q.size(), 7.0f);
    kt->attention(c.args(full, 0, 3, 0, false, DType::F32));  // full attention over no keys
    for (float x : c.values(full)) EXPECT_EQ(x, 0.0f) << kt->name << " full";
  }
}

}  // namespace
}  // namespace qwen35::kernels
