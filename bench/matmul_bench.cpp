// Matmul kernels at the 9B decoder's shapes, per kernel table, for one thread.
//
//   build/bin/matmul_bench --benchmark_format=json --benchmark_out=matmul.json
//
// Arguments: tokens T, rows (out features), cols (in features). Counters: GFLOP/s and the weight
// bytes streamed per second (the bound of single-token decoding).
#include <benchmark/benchmark.h>

#include <random>
#include <vector>

#include "core/half.h"
#include "kernels/kernels.h"

namespace {

using namespace qwen35;
using namespace qwen35::kernels;

void run(benchmark::State& state, const KernelTable& table) {
  const int64_t T = state.range(0), rows = state.range(1), cols = state.range(2);
  std::vector<uint16_t> w(size_t(rows * cols));
  std::vector<float> x(size_t(T * cols)), y(size_t(T * rows));
  std::mt19937 rng(1);
  std::normal_distribution<float> d(0, 1);
  for (auto& v : w) v = f32_to_bf16(d(rng) * 0.02f);
  for (auto& v : x) v = d(rng);
  WeightMatrix m{DType::BF16, w.data(), rows, cols, size_t(cols) * 2};
  for (auto _ : state) {
    table.matmul[size_t(DType::BF16)](x.data(), T, cols, m, 0, rows, y.data(), rows);
    benchmark::DoNotOptimize(y.data());
  }
  const double flops = 2.0 * double(T) * double(rows) * double(cols);
  state.counters["GFLOPs"] = benchmark::Counter(flops * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
  state.counters["weight_GBps"] =
      benchmark::Counter(double(rows * cols * 2) * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
}

void register_all() {
  for (const KernelTable* t : supported_tables()) {
    auto* b = benchmark::RegisterBenchmark(("bf16/" + std::string(t->name)).c_str(),
                                           [t](benchmark::State& s) { run(s, *t); });
    b->Unit(benchmark::kMillisecond);
    for (int64_t T : {1, 4, 17, 64, 256}) b->Args({T, 4096, 4096});
    b->Args({1, 12288, 4096})->Args({64, 12288, 4096});
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
