// Block-format matmuls (int8 activations) at the 9B decoder's shapes, per kernel table and
// thread count, through kernels::linear (activation quantization included).
//
//   build/bin/qmatmul_bench --benchmark_format=json --benchmark_out=qmatmul.json
//
// Arguments: dtype index (kTypes), tokens T, threads. Decoding streams weights from memory, so
// each iteration uses the next of several matrices (about 1.5 GB in all) to keep them out of the
// caches; they live in huge-page-advised memory like the engine's weights. Counters: weight GB/s and integer GOPS (2 per multiply-add), per second of the main
// thread's CPU time (Google Benchmark's default), which a busy shared machine disturbs less than
// wall time; with 2 threads they overstate by the second thread's share.
//
// qhot/<table> runs the same kernels on one matrix of 128 x 4096 (0.17-0.56 MB) that stays in the caches:
// its GB/s is the kernel's compute ceiling, what it would stream if memory were free.
//
// read/<table> streams the same matrices with a plain load loop: the memory's speed beside q/.
//
// q/ref is the scalar reference, which every table used for the formats it had no kernel for:
// one thread, T = 1 and 64, one matrix (it is far from memory-bound).
#include <benchmark/benchmark.h>

#include <cstring>
#include <memory>
#include <random>
#include <vector>

#include "core/half.h"
#include "core/page_buffer.h"
#include "core/thread_pool.h"
#include "kernels/compute.h"

namespace {

using namespace qwen35;
using namespace qwen35::kernels;

constexpr int64_t kRows = 12288, kHotRows = 128, kCols = 4096;
const DType kTypes[] = {DType::Q4_0, DType::Q8_0, DType::Q4_K, DType::Q6_K, DType::Q5_K,   DType::IQ4_NL,
                        DType::Q4_1, DType::Q5_0, DType::Q5_1, DType::Q2_K, DType::Q3_K, DType::IQ4_XS};

// Byte offsets of a block's f16 scale fields (set to a small finite value; the rest is random).
std::vector<size_t> f16_fields(DType t) {
  switch (t) {
    case DType::Q4_1:
    case DType::Q5_1:
    case DType::Q4_K:
    case DType::Q5_K: return {0, 2};
    case DType::Q2_K: return {80, 82};
    case DType::Q3_K: return {108};
    case DType::Q6_K: return {208};
    default: return {0};
  }
}

struct Matrices {
  std::vector<PageBuffer> bytes;  // huge-page advised, as the engine's weights
  std::vector<WeightMatrix> m;
};

// Random blocks with small finite f16 scales, packed for the table.
Matrices make(const KernelTable& table, DType t, int64_t rows, size_t total_bytes) {
  Matrices out;
  std::mt19937 rng(1);
  const size_t row_bytes = dtype_bytes(t, kCols);
  const size_t n = std::max<size_t>(1, total_bytes / (row_bytes * size_t(rows)));
  std::vector<uint8_t> plain(row_bytes * size_t(rows));
  for (auto& b : plain) b = uint8_t(rng());
  const DTypeInfo& info = dtype_info(t);
  const uint16_t h = f32_to_f16(0.01f);
  for (size_t b = 0; b < plain.size() / info.block_bytes; ++b)
    for (size_t off : f16_fields(t)) std::memcpy(plain.data() + b * info.block_bytes + off, &h, 2);
  WeightMatrix w{t, plain.data(), rows, kCols, row_bytes};
  for (size_t i = 0; i < n; ++i) {
    const PackedFormat& f = table.packing;
    if (f.layout && f.group_bytes(t, kCols)) {
      const size_t gb = f.group_bytes(t, kCols);
      const int64_t groups = (rows + f.group_rows - 1) / f.group_rows;
      out.bytes.emplace_back(gb * size_t(groups));
      f.pack(w, 0, groups, out.bytes.back().data());
      out.m.push_back(WeightMatrix{t, out.bytes.back().data(), rows, kCols, 0, f.layout, gb});
    } else {
      out.bytes.emplace_back(plain.size());
      std::memcpy(out.bytes.back().data(), plain.data(), plain.size());
      out.m.push_back(WeightMatrix{t, out.bytes.back().data(), rows, kCols, row_bytes});
    }
  }
  return out;
}

// The matrices of the last benchmark, kept while the next one reads the same (table, type, rows).
const Matrices& matrices(const KernelTable& table, DType t, int64_t rows, bool hot) {
  static std::unique_ptr<Matrices> cache;
  static const KernelTable* cache_table = nullptr;
  static DType cache_type = DType::F32;
  static int64_t cache_rows = 0;
  if (!cache || cache_table != &table || cache_type != t || cache_rows != rows) {
    cache.reset();
    cache = std::make_unique<Matrices>(make(table, t, rows, table.name == "ref" || hot ? 0 : size_t(1500) << 20));
    cache_table = &table;
    cache_type = t;
    cache_rows = rows;
  }
  return *cache;
}

void run(benchmark::State& state, const KernelTable& table, bool hot) {
  const DType t = kTypes[state.range(0)];
  const int64_t rows = hot ? kHotRows : kRows;
  const int64_t T = state.range(1);
  const int threads = int(state.range(2));
  const Matrices* cache = &matrices(table, t, rows, hot);
  ThreadPool pool(threads);
  Compute c{&table, &pool};
  std::mt19937 rng(2);
  std::normal_distribution<float> d(0, 1);
  std::vector<float> x(size_t(T * kCols)), y(size_t(T * rows));
  for (auto& v : x) v = d(rng);
  size_t i = 0;
  for (auto _ : state) {
    linear(c, x.data(), T, cache->m[i++ % cache->m.size()], y.data());
    benchmark::DoNotOptimize(y.data());
  }
  const double bytes = double(dtype_bytes(t, kCols)) * double(rows);
  state.counters["weight_GBps"] = benchmark::Counter(bytes * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
  state.counters["GOPS"] =
      benchmark::Counter(2.0 * double(T) * double(rows) * kCols * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
}

// A plain read of the same matrices, split between the threads as one pass of the kernels is:
// what the memory gives a loop that only loads. Interleaved with q/ (same type and threads,
// --benchmark_enable_random_interleaving) it is the share of memory speed a kernel reaches while
// the shared host's bandwidth drifts.
void run_read(benchmark::State& state, const KernelTable& table) {
  const DType t = kTypes[state.range(0)];
  const int threads = int(state.range(1));
  const Matrices& m = matrices(table, t, kRows, false);
  ThreadPool pool(threads);
  const size_t bytes = dtype_bytes(t, kCols) * size_t(kRows), per = bytes / size_t(threads) / 256 * 256;
  std::vector<uint64_t> sink(static_cast<size_t>(threads));
  size_t i = 0;
  for (auto _ : state) {
    const uint8_t* p = static_cast<const uint8_t*>(m.m[i++ % m.m.size()].data);
    pool.parallel_for(size_t(threads), 1, [&](size_t b, size_t e) {
      for (size_t k = b; k < e; ++k) sink[k] += table.stream_read(p + k * per, per);
    });
    benchmark::DoNotOptimize(sink.data());
  }
  state.counters["weight_GBps"] = benchmark::Counter(double(bytes) * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
}

void register_all() {
  for (const KernelTable* table : supported_tables()) {
    const bool ref = table->name == "ref";
    auto* b = benchmark::RegisterBenchmark(("q/" + std::string(table->name)).c_str(),
                                           [table](benchmark::State& s) { run(s, *table, false); });
    b->Unit(benchmark::kMillisecond)->ArgNames({"type", "T", "threads"});
    for (int ti = 0; ti < int(std::size(kTypes)); ++ti)
      for (int64_t T : {1, 4, 16, 64, 512}) {
        if (ref && T != 1 && T != 64) continue;
        for (int threads : {1, 2})
          if (!ref || threads == 1) b->Args({ti, T, threads});
      }
    if (ref) continue;
    auto* r = benchmark::RegisterBenchmark(("read/" + std::string(table->name)).c_str(),
                                           [table](benchmark::State& s) { run_read(s, *table); });
    r->Unit(benchmark::kMillisecond)->ArgNames({"type", "threads"});
    for (int ti = 0; ti < int(std::size(kTypes)); ++ti)
      for (int threads : {1, 2}) r->Args({ti, threads});
    auto* h = benchmark::RegisterBenchmark(("qhot/" + std::string(table->name)).c_str(),
                                           [table](benchmark::State& s) { run(s, *table, true); });
    h->Unit(benchmark::kMicrosecond)->ArgNames({"type", "T", "threads"});
    for (int ti = 0; ti < int(std::size(kTypes)); ++ti)
      for (int64_t T : {1, 4, 8, 64}) h->Args({ti, T, 1});
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
