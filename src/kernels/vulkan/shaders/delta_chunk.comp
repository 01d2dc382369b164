// The gated delta rule in the chunkwise-parallel (WY) form (kernels.h DeltaChunkFn, spec 4.3),
// over T tokens in chunks of 64 (kDeltaChunk) for every value head at once: a workgroup per value
// head, its steps those of the reference's delta_chunk in the same order of sums:
//   A = strictly lower beta_r e^{gamma_r - gamma_s} k_r.k_s,  Tinv = (I + A)^-1 (exact, by block
//   doubling), W = Tinv diag(beta e^gamma) K, U = Tinv diag(beta) V - W S,
//   O_r = e^{gamma_r} q_r S + sum_{s<=r} e^{gamma_r - gamma_s} (q_r.k_s) U_s,
//   S <- e^{gamma_n} S + sum_s e^{gamma_n - gamma_s} k_s U_s^T.
// The chunk's matrices live in `work` (the workgroup's slice, work_stride floats), written and
// read back by the workgroup's threads between barriers. The cumulative log-decays are summed in
// double where the device has it (GAMMA_F64), as the reference does.
#version 460
#include "common.glsl"
#if defined(GAMMA_F64)
#define GAM double
#else
#define GAM float
#endif

// The chunk's matrices, shared between the workgroup's threads through memory.
layout(buffer_reference, std430, buffer_reference_align = 4) coherent buffer Work { float v[]; };

const uint C = 64u;  // kDeltaChunk
layout(local_size_x = 64) in;
layout(push_constant) uniform Params {
  F32 q;     // key head kh of token t at q + t * qk_stride + kh * dk (l2-normed, q scaled)
  F32 k;
  F32 v;     // value head h of token t at v + t * v_stride + h * dv
  F32 beta;  // [t * gate_stride + h]
  F32 g;     // log-decay, likewise
  F32 S;     // [Hv, dk, dv]
  F32 o;     // value head h of token t at o + t * o_stride + h * dv
  Work work;  // [Hv, work_stride]: A, Tinv, tmp [C, C] each, W [C, dk], U [C, dv]
  uint T, Hv, Hk, dk, dv, qk_stride, v_stride, gate_stride, o_stride, tiled, work_stride;
} p;

shared GAM gam[C];
shared float eg[C], bt[C];

void sync() {
  memoryBarrierBuffer();
  memoryBarrierShared();
  barrier();
}

float decay(uint r, uint s) { return exp_q(float(gam[r] - gam[s])); }  // s <= r

void main() {
  const uint h = gl_WorkGroupID.x, lid = gl_LocalInvocationID.x;
  const uint kh = p.tiled != 0u ? h % p.Hk : h / (p.Hv / p.Hk);
  const uint dk = p.dk, dv = p.dv, s0 = h * dk * dv;
  const uint A = h * p.work_stride, Ti = A + C * C, tmp = Ti + C * C, W = tmp + C * C, U = W + C * dk;
  for (uint t0 = 0u; t0 < p.T; t0 += C) {
    const uint n = min(C, p.T - t0);
    const uint qk0 = t0 * p.qk_stride + kh * dk;  // token r's q, k at qk0 + r * qk_stride
    if (lid == 0u) {
      GAM acc = GAM(0);
      for (uint r = 0u; r < n; ++r) {
        acc += GAM(p.g.v[(t0 + r) * p.gate_stride + h]);
        gam[r] = acc;
        eg[r] = exp_q(float(acc));
        bt[r] = p.beta.v[(t0 + r) * p.gate_stride + h];
      }
    }
    sync();
    for (uint e = lid; e < n * n; e += 64u) {
      const uint r = e / n, s = e % n;
      p.work.v[Ti + r * C + s] = r == s ? 1.0 : 0.0;
      if (s < r) {
        precise float d = 0.0;
        for (uint i = 0u; i < dk; ++i) {
          precise float prod = p.k.v[qk0 + r * p.qk_stride + i] * p.k.v[qk0 + s * p.qk_stride + i];
          d = d + prod;
        }
        precise float a = bt[r] * decay(r, s);
        p.work.v[A + r * C + s] = a * d;
      }
    }
    sync();
    // Tinv by block doubling: with the diagonal blocks of each 2b x 2b block inverted, its
    // off-diagonal block is -T22 (A21 T11). Entry (r, c) is in one at level b when c's block of
    // 2b starts at i0, c < i0 + b <= r < i0 + 2b.
    for (uint b = 1u; b < n; b *= 2u) {
      for (uint e = lid; e < n * n; e += 64u) {
        const uint r = e / n, c = e % n, i0 = (c / (2u * b)) * 2u * b, r0 = i0 + b;
        if (c >= r0 || r < r0 || r >= min(i0 + 2u * b, n)) continue;
        precise float s = 0.0;
        for (uint m = c; m < r0; ++m) {
          precise float prod = p.work.v[A + r * C + m] * p.work.v[Ti + m * C + c];
          s = s + prod;
        }
        p.work.v[tmp + r * C + c] = s;
      }
      sync();
      for (uint e = lid; e < n * n; e += 64u) {
        const uint r = e / n, c = e % n, i0 = (c / (2u * b)) * 2u * b, r0 = i0 + b;
        if (c >= r0 || r < r0 || r >= min(i0 + 2u * b, n)) continue;
        precise float s = 0.0;
        for (uint m = r0; m <= r; ++m) {
          precise float prod = p.work.v[Ti + r * C + m] * p.work.v[tmp + m * C + c];
          s = s + prod;
        }
        p.work.v[Ti + r * C + c] = -s;
      }
      sync();
    }
    // U = Tinv diag(beta) V, W = Tinv diag(beta e^gamma) K.
    for (uint e = lid; e < n * dv; e += 64u) {
      const uint r = e / dv, j = e % dv;
      precise float u = 0.0;
      for (uint s = 0u; s <= r; ++s) {
        precise float t = p.work.v[Ti + r * C + s] * bt[s];
        precise float prod = t * p.v.v[(t0 + s) * p.v_stride + h * dv + j];
        u = u + prod;
      }
      p.work.v[U + r * dv + j] = u;
    }
    for (uint e = lid; e < n * dk; e += 64u) {
      const uint r = e / dk, i = e % dk;
      precise float w = 0.0;
      for (uint s = 0u; s <= r; ++s) {
        precise float t = p.work.v[Ti + r * C + s] * bt[s];
        precise float te = t * eg[s];
        precise float prod = te * p.k.v[qk0 + s * p.qk_stride + i];
        w = w + prod;
      }
      p.work.v[W + r * dk + i] = w;
    }
    // tmp = e^{gamma_r - gamma_s} q_r.k_s, s <= r (Tinv is done with tmp).
    for (uint e = lid; e < n * n; e += 64u) {
      const uint r = e / n, s = e % n;
      if (s > r) continue;
      precise float d = 0.0;
      for (uint i = 0u; i < dk; ++i) {
        precise float prod = p.q.v[qk0 + r * p.qk_stride + i] * p.k.v[qk0 + s * p.qk_stride + i];
        d = d + prod;
      }
      precise float x = decay(r, s) * d;
      p.work.v[tmp + r * C + s] = x;
    }
    sync();
    // V~ = U - W S.
    for (uint e = lid; e < n * dv; e += 64u) {
      const uint r = e / dv, j = e % dv;
      precise float u = p.work.v[U + r * dv + j];
      for (uint i = 0u; i < dk; ++i) {
        precise float prod = -p.work.v[W + r * dk + i] * p.S.v[s0 + i * dv + j];
        u = u + prod;
      }
      p.work.v[U + r * dv + j] = u;
    }
    sync();
    // O_r = e^{gamma_r} q_r S + sum_{s<=r} tmp_rs V~_s.
    for (uint e = lid; e < n * dv; e += 64u) {
      const uint r = e / dv, j = e % dv;
      precise float qs = 0.0;
      for (uint i = 0u; i < dk; ++i) {
        precise float prod = p.q.v[qk0 + r * p.qk_stride + i] * p.S.v[s0 + i * dv + j];
        qs = qs + prod;
      }
      precise float o = eg[r] * qs;
      for (uint s = 0u; s <= r; ++s) {
        precise float prod = p.work.v[tmp + r * C + s] * p.work.v[U + s * dv + j];
        o = o + prod;
      }
      p.o.v[(t0 + r) * p.o_stride + h * dv + j] = o;
    }
    sync();
    // S = e^{gamma_n} S + sum_s e^{gamma_n - gamma_s} k_s V~_s^T.
    for (uint e = lid; e < dk * dv; e += 64u) {
      const uint i = e / dv, j = e % dv;
      precise float x = p.S.v[s0 + e] * eg[n - 1u];
      for (uint s = 0u; s < n; ++s) {
        precise float d = decay(n - 1u, s) * p.k.v[qk0 + s * p.qk_stride + i];
        precise float prod = d * p.work.v[U + s * dv + j];
        x = x + prod;
      }
      p.S.v[s0 + e] = x;
    }
    sync();
  }
}
