// The decoder's non-matmul hot loops at the 9B shapes, per kernel table, on one thread:
//
//   build/bin/deltanet_bench --benchmark_format=json --benchmark_out=deltanet.json
//
// delta_recurrent: one decode step of one DeltaNet layer (32 value heads, dk = dv = 128), cycling
//   through 24 layers' states (48 MiB) as decoding does, so the state comes from memory, not L2.
// delta_chunk: a 512-token prefill of one layer, 8 chunks of 64 per head, 32 heads.
// attention_decode: one token, 16 query heads over 4 KV heads of 256, 4096 cached keys.
// attention_prefill: 512 new tokens over themselves (causal), same heads.
// GFLOPs counts the algorithm's nominal work, the same for every table: recurrent 7 dk dv per head
// and token (decay, S^T k, rank-1 update, S^T q); chunk 6 n dk dv + 2 n^2 (dk + dv) per chunk of n
// (K S0, Q S0, the state update, the two triangles of n x n dots and the two triangular n x n x dv
// products); attention 4 hd per query head and visible key. GBps: state bytes read and written
// (recurrent), K/V bytes read (attention decode).
#include <benchmark/benchmark.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "core/half.h"
#include "kernels/kernels.h"

namespace {

using namespace qwen35;
using namespace qwen35::kernels;

constexpr int kDk = 128, kDv = 128, kKeyHeads = 16, kValueHeads = 32, kLayers = 24;
constexpr int kQHeads = 16, kKvHeads = 4, kHeadDim = 256;

std::vector<float> random_floats(size_t n, float sd, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0.0f, sd);
  std::vector<float> v(n);
  for (float& x : v) x = d(rng);
  return v;
}

// T tokens of DeltaNet inputs laid out as deltanet.cpp lays them out: q and k [T, 16 heads * dk]
// (l2-normalised rows), v [T, 32 * dv], beta and g [T, 32].
struct DeltaInputs {
  int64_t T;
  std::vector<float> q, k, v, beta, g, o;
  explicit DeltaInputs(int64_t T) : T(T) {
    q = random_floats(size_t(T * kKeyHeads * kDk), 1.0f, 1);
    k = random_floats(size_t(T * kKeyHeads * kDk), 1.0f, 2);
    v = random_floats(size_t(T * kValueHeads * kDv), 1.0f, 3);
    for (auto* m : {&q, &k})
      for (int64_t r = 0; r < T * kKeyHeads; ++r) {
        float* x = m->data() + r * kDk;
        float ss = 0;
        for (int i = 0; i < kDk; ++i) ss += x[i] * x[i];
        const float s = (m == &q ? 1.0f / std::sqrt(float(kDk)) : 1.0f) / std::sqrt(ss);
        for (int i = 0; i < kDk; ++i) x[i] *= s;
      }
    std::mt19937 rng(4);
    std::uniform_real_distribution<float> u(0.0f, 1.0f);
    for (int64_t i = 0; i < T * kValueHeads; ++i) {
      beta.push_back(u(rng));
      g.push_back(-0.5f * u(rng));
    }
    o.assign(size_t(T * kValueHeads * kDv), 0.0f);
  }
  DeltaRuleHead head(int h, int64_t t0) {
    const int64_t QK = kKeyHeads * kDk, VS = kValueHeads * kDv, kh = h / (kValueHeads / kKeyHeads);
    return DeltaRuleHead{q.data() + t0 * QK + kh * kDk, k.data() + t0 * QK + kh * kDk, QK,
                         v.data() + t0 * VS + h * kDv,  VS,
                         beta.data() + t0 * kValueHeads + h, g.data() + t0 * kValueHeads + h, kValueHeads,
                         o.data() + t0 * VS + h * kDv, VS};
  }
};

void delta_recurrent(benchmark::State& state, const KernelTable& table) {
  DeltaInputs in(1);
  std::vector<float> S = random_floats(size_t(kLayers) * kValueHeads * kDk * kDv, 0.1f, 5);
  int layer = 0;
  for (auto _ : state) {
    float* Sl = S.data() + size_t(layer) * kValueHeads * kDk * kDv;
    for (int h = 0; h < kValueHeads; ++h) table.delta_recurrent(in.head(h, 0), 1, kDk, kDv, Sl + h * kDk * kDv);
    benchmark::DoNotOptimize(in.o.data());
    layer = (layer + 1) % kLayers;
  }
  const double per_head = double(kDk) * kDv;
  state.counters["GFLOPs"] =
      benchmark::Counter(7 * per_head * kValueHeads * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
  state.counters["state_GBps"] =
      benchmark::Counter(2 * 4 * per_head * kValueHeads * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
}

void delta_chunk(benchmark::State& state, const KernelTable& table) {
  constexpr int64_t T = 512;
  DeltaInputs in(T);
  std::vector<float> S = random_floats(size_t(kValueHeads) * kDk * kDv, 0.1f, 6), S0 = S;
  std::vector<float> work(delta_chunk_work_floats(kDk, kDv));
  for (auto _ : state) {
    for (int h = 0; h < kValueHeads; ++h)
      for (int64_t t0 = 0; t0 < T; t0 += kDeltaChunk)
        table.delta_chunk(in.head(h, t0), kDeltaChunk, kDk, kDv, S.data() + h * kDk * kDv, work.data());
    benchmark::DoNotOptimize(in.o.data());
    state.PauseTiming();
    S = S0;  // keep the state from growing over the iterations
    state.ResumeTiming();
  }
  const double n = double(kDeltaChunk), chunks = double(T / kDeltaChunk) * kValueHeads;
  const double flops = chunks * (6 * n * kDk * kDv + 2 * n * n * (kDk + kDv));
  state.counters["GFLOPs"] = benchmark::Counter(flops * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
}

// T new query tokens [T, 16 heads, 256] over a cache of `past + T` positions [pos, 4 heads, 256].
struct AttentionInputs {
  int64_t T, n_keys;
  DType dtype;
  std::vector<float> q, o, k32, v32;
  std::vector<uint16_t> k16, v16;
  AttentionInputs(int64_t T, int64_t past, DType dtype) : T(T), n_keys(past + T), dtype(dtype) {
    q = random_floats(size_t(T * kQHeads * kHeadDim), 1.0f, 7);
    o.assign(q.size(), 0.0f);
    k32 = random_floats(size_t(n_keys * kKvHeads * kHeadDim), 1.0f, 8);
    v32 = random_floats(k32.size(), 1.0f, 9);
    for (float x : k32) k16.push_back(f32_to_f16(x));
    for (float x : v32) v16.push_back(f32_to_f16(x));
  }
  AttnArgs args(int kvh) {
    const int group = kQHeads / kKvHeads;
    const bool f16 = dtype == DType::F16;
    const size_t off = size_t(kvh) * kHeadDim;
    AttnArgs a;
    a.q = q.data() + kvh * group * kHeadDim;
    a.q_stride = kQHeads * kHeadDim;
    a.o = o.data() + kvh * group * kHeadDim;
    a.o_stride = a.q_stride;
    a.k = f16 ? static_cast<const void*>(k16.data() + off) : static_cast<const void*>(k32.data() + off);
    a.v = f16 ? static_cast<const void*>(v16.data() + off) : static_cast<const void*>(v32.data() + off);
    a.kv_stride = kKvHeads * kHeadDim;
    a.kv_dtype = dtype;
    a.n_q = T;
    a.group = group;
    a.head_dim = kHeadDim;
    a.n_kv0 = n_keys - T + 1;
    a.scale = 1.0f / std::sqrt(float(kHeadDim));
    return a;
  }
};

void attention(benchmark::State& state, const KernelTable& table, DType dtype) {
  const int64_t T = state.range(0), past = state.range(1);
  AttentionInputs in(T, past, dtype);
  for (auto _ : state) {
    for (int kvh = 0; kvh < kKvHeads; ++kvh) table.attention(in.args(kvh));
    benchmark::DoNotOptimize(in.o.data());
  }
  double pairs = 0;  // (query token, visible key)
  for (int64_t t = 0; t < T; ++t) pairs += double(past + t + 1);
  state.counters["GFLOPs"] =
      benchmark::Counter(pairs * kQHeads * 4.0 * kHeadDim * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
  const double kv_bytes = 2.0 * double(in.n_keys) * kKvHeads * kHeadDim * (dtype == DType::F16 ? 2 : 4);
  state.counters["kv_GBps"] = benchmark::Counter(kv_bytes * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
}

void register_all() {
  for (const KernelTable* t : supported_tables()) {
    const std::string name(t->name);
    benchmark::RegisterBenchmark(("delta_recurrent/" + name).c_str(), [t](benchmark::State& s) {
      delta_recurrent(s, *t);
    })->Unit(benchmark::kMillisecond);
    benchmark::RegisterBenchmark(("delta_chunk/" + name).c_str(), [t](benchmark::State& s) {
      delta_chunk(s, *t);
    })->Unit(benchmark::kMillisecond);
    for (DType d : {DType::F32, DType::F16}) {
      const std::string suffix = name + "/" + (d == DType::F16 ? "f16" : "f32");
      benchmark::RegisterBenchmark(("attention_decode/" + suffix).c_str(), [t, d](benchmark::State& s) {
        attention(s, *t, d);
      })->Unit(benchmark::kMillisecond)->Args({1, 4096});
      benchmark::RegisterBenchmark(("attention_prefill/" + suffix).c_str(), [t, d](benchmark::State& s) {
        attention(s, *t, d);
      })->Unit(benchmark::kMillisecond)->Args({512, 0});
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  register_all();
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
