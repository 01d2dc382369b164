// The gated delta rule, plain C++: the recurrent form is the oracle; the chunkwise-parallel form
// (spec 4.3) is what prefill uses. Every exponent is a difference gamma_r - gamma_s with s <= r,
// so nothing overflows however fast the state decays inside a chunk. The cumulative decays are
// kept in double: in fp32, gamma of a fast-decaying chunk reaches -2000 where its rounding
// (~1e-4) would turn into a 1e-4 relative error of every e^{gamma_r - gamma_s}.
#include <cmath>

#include "kernels/kernels.h"
#include "kernels/ref/ref_ops.h"

namespace qwen35::kernels::ref {

void delta_recurrent(const DeltaRuleHead& h, int64_t T, int dk, int dv, float* S) {
  for (int64_t t = 0; t < T; ++t) {
    const float* q = h.q + t * h.qk_stride;
    const float* k = h.k + t * h.qk_stride;
    const float* v = h.v + t * h.v_stride;
    const float decay = std::exp(h.g[t * h.gate_stride]);
    const float beta = h.beta[t * h.gate_stride];
    float* o = h.o + t * h.o_stride;
    for (int i = 0; i < dk * dv; ++i) S[i] *= decay;
    // delta = beta * (v - S^T k), accumulated in o as scratch.
    for (int j = 0; j < dv; ++j) o[j] = 0;
    for (int i = 0; i < dk; ++i)
      for (int j = 0; j < dv; ++j) o[j] += S[i * dv + j] * k[i];
    for (int j = 0; j < dv; ++j) o[j] = beta * (v[j] - o[j]);
    for (int i = 0; i < dk; ++i)
      for (int j = 0; j < dv; ++j) S[i * dv + j] += k[i] * o[j];
    for (int j = 0; j < dv; ++j) o[j] = 0;
    for (int i = 0; i < dk; ++i)
      for (int j = 0; j < dv; ++j) o[j] += S[i * dv + j] * q[i];
  }
}

// Inverts the unit lower-triangular n x n matrix L = I + A (A strictly lower, row-major, leading
// dimension ld) into Tinv by block doubling: with both diagonal blocks of a 2b x 2b block
// already inverted, the off-diagonal block is -T22 * A21 * T11. Exact, unlike a truncated
// Neumann series, and each step is a small matrix product.
void invert_unit_lower(const float* A, int64_t n, int64_t ld, float* Tinv, float* tmp) {
  for (int64_t r = 0; r < n; ++r)
    for (int64_t c = 0; c < n; ++c) Tinv[r * ld + c] = r == c ? 1.0f : 0.0f;
  for (int64_t b = 1; b < n; b *= 2) {
    for (int64_t i0 = 0; i0 + b < n; i0 += 2 * b) {
      const int64_t r0 = i0 + b, r1 = std::min(i0 + 2 * b, n);  // rows of block 2
      // tmp = A21 * T11, [r1-r0, b]
      for (int64_t r = r0; r < r1; ++r)
        for (int64_t c = i0; c < r0; ++c) {
          float s = 0;
          for (int64_t m = c; m < r0; ++m) s += A[r * ld + m] * Tinv[m * ld + c];
          tmp[(r - r0) * ld + (c - i0)] = s;
        }
      // T21 = -T22 * tmp
      for (int64_t r = r0; r < r1; ++r)
        for (int64_t c = i0; c < r0; ++c) {
          float s = 0;
          for (int64_t m = r0; m <= r; ++m) s += Tinv[r * ld + m] * tmp[(m - r0) * ld + (c - i0)];
          Tinv[r * ld + c] = -s;
        }
    }
  }
}

void delta_chunk(const DeltaRuleHead& h, int64_t n, int dk, int dv, float* S, float* work) {
  const int64_t C = kDeltaChunk;
  float* A = work;             // [C, C] strictly lower: beta_r e^{g_r - g_s} k_r.k_s
  float* Tinv = A + C * C;     // [C, C] (I + A)^-1
  float* tmp = Tinv + C * C;   // [C, C]
  float* eg = tmp + C * C;     // [C] e^{gamma}
  double gam[kDeltaChunk];     // cumulative log-decay
  float* W = eg + C;           // [C, dk] Tinv diag(beta e^gamma) K
  float* U = W + C * dk;       // [C, dv] Tinv diag(beta) V, then V~ = U - W S
  float* QS = U + C * dv;      // [C, dv]

  auto q = [&](int64_t r) { return h.q + r * h.qk_stride; };
  auto k = [&](int64_t r) { return h.k + r * h.qk_stride; };
  auto v = [&](int64_t r) { return h.v + r * h.v_stride; };
  auto beta = [&](int64_t r) { return h.beta[r * h.gate_stride]; };

  double acc = 0;
  for (int64_t r = 0; r < n; ++r) {
    acc += double(h.g[r * h.gate_stride]);
    gam[r] = acc;
    eg[r] = float(std::exp(acc));
  }
  auto decay = [&](int64_t r, int64_t s) { return float(std::exp(gam[r] - gam[s])); };  // s <= r
  for (int64_t r = 0; r < n; ++r)
    for (int64_t s = 0; s < r; ++s) A[r * C + s] = beta(r) * decay(r, s) * dot(k(r), k(s), dk);
  invert_unit_lower(A, n, C, Tinv, tmp);

  for (int64_t r = 0; r < n; ++r) {
    float* u = U + r * dv;
    float* w = W + r * dk;
    for (int j = 0; j < dv; ++j) u[j] = 0;
    for (int i = 0; i < dk; ++i) w[i] = 0;
    for (int64_t s = 0; s <= r; ++s) {
      const float t = Tinv[r * C + s] * beta(s);
      axpy(t, v(s), u, dv);
      axpy(t * eg[s], k(s), w, dk);
    }
    // V~_r = U_r - W_r S
    for (int i = 0; i < dk; ++i) axpy(-w[i], S + i * dv, u, dv);
  }

  // O_r = e^{gamma_r} q_r S + sum_{s<=r} e^{gamma_r - gamma_s} (q_r . k_s) V~_s
  for (int64_t r = 0; r < n; ++r) {
    float* o = h.o + r * h.o_stride;
    for (int j = 0; j < dv; ++j) QS[j] = 0;
    for (int i = 0; i < dk; ++i) axpy(q(r)[i], S + i * dv, QS, dv);
    for (int j = 0; j < dv; ++j) o[j] = eg[r] * QS[j];
    for (int64_t s = 0; s <= r; ++s) axpy(decay(r, s) * dot(q(r), k(s), dk), U + s * dv, o, dv);
  }

  // S_n = e^{gamma_n} S + sum_s e^{gamma_n - gamma_s} k_s V~_s^T
  for (int i = 0; i < dk * dv; ++i) S[i] *= eg[n - 1];
  for (int64_t s = 0; s < n; ++s) {
    const float d = decay(n - 1, s);
    for (int i = 0; i < dk; ++i) axpy(d * k(s)[i], U + s * dv, S + i * dv, dv);
  }
}

}  // namespace qwen35::kernels::ref
