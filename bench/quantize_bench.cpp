// Quantization from f32 per weight block format, one thread, at a 9B row width.
//
//   build/bin/quantize_bench --benchmark_format=json --benchmark_out=quantize.json
//
// Input: 16 rows of 4096 Gaussian values with sd 0.02 (the scale of real weights). Counters:
// ns_per_weight, and the minutes one core would take for the 8.9e9 weights of Qwen3.5-9B if
// they were all this format (the real Q4_K_M mix is ~80% Q4_K, ~20% Q6_K).
#include <benchmark/benchmark.h>

#include <random>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "kernels/quant/quantize.h"

namespace {

using namespace qwen35;

constexpr int64_t kRows = 16, kCols = 4096;
constexpr double k9BWeights = 8.9e9;

void run(benchmark::State& state, DType t) {
  std::vector<float> x(size_t(kRows * kCols));
  std::mt19937 rng(1);
  std::normal_distribution<float> d(0, 0.02f);
  for (float& v : x) v = d(rng);
  std::vector<uint8_t> out(size_t(kRows) * dtype_bytes(t, kCols));
  for (auto _ : state) {
    kernels::quant::quantize_rows(t, x.data(), kRows, kCols, out.data());
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
  const double weights = double(kRows * kCols);
  state.counters["ns_per_weight"] =
      benchmark::Counter(weights * 1e-9, benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
  state.counters["minutes_9B_one_core"] =
      benchmark::Counter(weights * 60 / k9BWeights, benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
}

void register_all() {
  for (DType t : {DType::Q8_0, DType::Q4_0, DType::Q4_1, DType::Q5_0, DType::Q5_1, DType::Q2_K, DType::Q3_K, DType::Q4_K,
                  DType::Q5_K, DType::Q6_K, DType::IQ4_NL, DType::IQ4_XS})
    benchmark::RegisterBenchmark(("quantize/" + std::string(dtype_name(t))).c_str(), [t](benchmark::State& s) { run(s, t); })
        ->Unit(benchmark::kMillisecond);
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
