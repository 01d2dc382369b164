// Cost of verifying a prompt-lookup draft of 16 tokens (one block of 17 through the recurrent
// delta rule) relative to one decode step: that ratio decides when prompt lookup pays on a CPU.
//
//   build/bin/make_random_model --out /tmp/qwen35-9b-random          # real 9B shapes, random weights
//   QWEN35_BENCH_MODEL=/tmp/qwen35-9b-random build/bin/pld_verify_bench
//       --benchmark_format=json --benchmark_out=pld_verify.json     (one command line)
//
// Without QWEN35_BENCH_MODEL it runs on the bundled tiny model. Each iteration feeds tokens after
// a 64-token prompt and rewinds, so every iteration sees the same state. The summary line at the
// end gives verify16 / decode.
#include <benchmark/benchmark.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <vector>

#include "qwen35/engine.h"
#include "runtime/engine_impl.h"
#include "runtime/engine_internal.h"
#include "runtime/sequence.h"

namespace {

using namespace qwen35;

struct Fixture {
  std::unique_ptr<Engine> engine;
  std::unique_ptr<Sequence> seq;
  Sequence::DeltaNetSave save;
  std::vector<float> logits;
};

Fixture& fixture() {
  static Fixture f = [] {
    Fixture f;
    EngineOptions o;
    const char* dir = std::getenv("QWEN35_BENCH_MODEL");
    o.model_dir = dir ? dir : QWEN35_SOURCE_DIR "/tests/data/tiny-qwen35";
    o.context_size = 4096;
    Status st;
    f.engine = Engine::load(o, &st);
    if (!f.engine) {
      std::fprintf(stderr, "pld_verify_bench: %s\n", st.message.c_str());
      std::exit(1);
    }
    const EngineImpl& e = impl_of(*f.engine);
    f.seq = std::make_unique<Sequence>(e);
    std::vector<int32_t> prompt(64);
    for (int i = 0; i < 64; ++i) prompt[size_t(i)] = 1000 + 37 * i;
    f.seq->feed_text(prompt.data(), 64, DeltaRuleMode::kAuto, 0, nullptr);
    f.seq->save_deltanet(f.save);
    f.logits.resize(size_t(17 * e.text_config().vocab_size));
    return f;
  }();
  return f;
}

std::map<std::string, double> g_ms;  // benchmark name -> mean ms per iteration

void feed_block(benchmark::State& state, int64_t n, DeltaRuleMode mode, const char* name) {
  Fixture& f = fixture();
  std::vector<int32_t> block(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) block[size_t(i)] = 5000 + int32_t(i);
  double total_ms = 0;
  for (auto _ : state) {
    const auto t0 = std::chrono::steady_clock::now();
    f.seq->feed_text(block.data(), n, mode, n, f.logits.data());
    total_ms += std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    state.PauseTiming();
    f.seq->rewind(f.save);
    state.ResumeTiming();
  }
  g_ms[name] = total_ms / double(state.iterations());
  state.counters["tokens"] = double(n);
  state.counters["ms_per_block"] = g_ms[name];
}

void BM_DecodeStep(benchmark::State& s) { feed_block(s, 1, DeltaRuleMode::kAuto, "decode"); }
void BM_VerifyDraft16(benchmark::State& s) { feed_block(s, 17, DeltaRuleMode::kRecurrent, "verify16"); }
void BM_PrefillChunked17(benchmark::State& s) { feed_block(s, 17, DeltaRuleMode::kChunked, "chunked17"); }

BENCHMARK(BM_DecodeStep)->Unit(benchmark::kMillisecond)->MinTime(2.0);
BENCHMARK(BM_VerifyDraft16)->Unit(benchmark::kMillisecond)->MinTime(2.0);
BENCHMARK(BM_PrefillChunked17)->Unit(benchmark::kMillisecond)->MinTime(2.0);

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  if (g_ms.count("decode") && g_ms.count("verify16")) {
    const ModelInfo& info = fixture().engine->info();
    std::fprintf(stderr,
                 "{\"model\": \"%s\", \"layers\": %d, \"hidden\": %lld, \"kernels\": \"%s\", \"threads\": %d, "
                 "\"decode_ms\": %.3f, \"verify16_ms\": %.3f, \"verify16_over_decode\": %.3f}\n",
                 info.name.c_str(), info.num_layers, (long long)info.hidden_size, info.kernels.c_str(), info.threads,
                 g_ms["decode"], g_ms["verify16"], g_ms["verify16"] / g_ms["decode"]);
  }
  return 0;
}
