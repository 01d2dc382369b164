// Speculative decoding's costs and pay-off: one decode step, one MTP draft step, verifying k draft
// tokens (a traced block of k + 1 through the recurrent delta rule) for k = 1..8, keeping part of
// a verified block (the rejection path), and end-to-end decode speed at controlled acceptance.
//
//   build/bin/make_random_model --out /tmp/qwen35-9b-random          # real 9B shapes, with mtp.*
//   build/bin/spec_bench --model /tmp/qwen35-9b-random [--weights q4_k_m] --summary spec.json
//       [--threads N] [--prompt 64] [--tokens 24] [--alphas 0,0.25,0.5,0.75,0.9,1] [--ks 2,4] [--iterations 3]
//       [--draft-vocab N|full] [--temperature T]
//       [--benchmark_format=json --benchmark_out=spec_gbench.json]
//
// Without --model it runs on the bundled tiny model. $QWEN35_CACHE_DIR: keep the prepared weights
// there (as `qwen35 --weights-cache`). Controlled acceptance: the plain greedy
// continuation is recorded first; in the speculative runs the MTP head drafts as usual (its cost
// is real) and each draft is then replaced by the recorded continuation, the token at depth j kept
// right with probability alpha while the ones before it were (a fixed-seed draw), wrong after. So
// alpha is the per-token acceptance probability; the summary also gives the measured
// accepted / drafted. Output is identical to plain decoding by construction (checked).
// --temperature T > 0 times sampled requests (seed 1234) the same way: the recorded continuation is
// then plain sampling's, which speculative sampling reproduces token for token (checked), so a
// draft token is accepted exactly when it is the recorded one.
//
// The summary (stderr, and --summary FILE) has the step costs, the speed-up curve against alpha
// for each k, the speed-up the cost model predicts, and each k's break-even alpha.
#include <benchmark/benchmark.h>

#include <time.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "qwen35/engine.h"
#include "runtime/engine_impl.h"
#include "runtime/engine_internal.h"
#include "runtime/sequence.h"
#include "runtime/session_impl.h"

namespace {

using namespace qwen35;
using Clock = std::chrono::steady_clock;
double ms_since(Clock::time_point t0) { return std::chrono::duration<double, std::milli>(Clock::now() - t0).count(); }
// CPU time of the whole process (all threads), in ms: on a shared machine the ratios of CPU times
// are steadier than those of wall times.
double cpu_ms() {
  timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return double(ts.tv_sec) * 1e3 + double(ts.tv_nsec) * 1e-6;
}

struct Options {
  std::string model = QWEN35_SOURCE_DIR "/tests/data/tiny-qwen35";
  std::string weights;  // --weights: "" the checkpoint's types, or a preset (q4_k_m, q8_0, ...)
  std::string summary;
  int threads = 0;
  int prompt = 64;
  int tokens = 24;
  int iterations = 3;  // of every benchmark, end-to-end runs included; figures are their medians
  int64_t draft_vocab = EngineOptions{}.draft_vocab;  // --draft-vocab: the engine's default; 0: the full head
  float temperature = 0;  // end-to-end runs: greedy, or sampled with seed 1234
  std::vector<double> alphas = {0, 0.25, 0.5, 0.75, 0.9, 1.0};
  std::vector<int> ks = {2, 4};
};

Options g_opt;

struct Fixture {
  std::unique_ptr<Engine> engine;
  std::unique_ptr<Sequence> seq;
  Sequence::DeltaNetSave save;
  std::vector<int32_t> prompt;
  std::vector<float> logits;
};

Fixture& fixture() {
  static Fixture f = [] {
    Fixture f;
    EngineOptions o;
    o.model_dir = g_opt.model;
    o.weights = g_opt.weights;
    o.threads = g_opt.threads;
    o.context_size = 4096;
    o.speculative.mode = SpecMode::kMtp;
    o.draft_vocab = g_opt.draft_vocab;
    // A 9B model quantized at load takes minutes; with $QWEN35_CACHE_DIR later runs map the result.
    if (const char* d = std::getenv("QWEN35_CACHE_DIR"); d && *d) o.weights_cache_dir = d;
    Status st;
    f.engine = Engine::load(o, &st);
    if (!f.engine) {
      std::fprintf(stderr, "spec_bench: %s\n", st.message.c_str());
      std::exit(1);
    }
    if (!f.engine->info().mtp_active) {
      std::fprintf(stderr, "spec_bench: %s has no MTP head (mtp.*)\n", g_opt.model.c_str());
      std::exit(1);
    }
    for (int i = 0; i < g_opt.prompt; ++i) f.prompt.push_back(1000 + 37 * i);
    f.seq = std::make_unique<Sequence>(impl_of(*f.engine));
    f.seq->feed_text(f.prompt.data(), int64_t(f.prompt.size()), DeltaRuleMode::kAuto, 0, nullptr);
    f.seq->flush_mtp();
    f.seq->save_deltanet(f.save);
    f.logits.resize(size_t(17 * impl_of(*f.engine).text_config().vocab_size));
    return f;
  }();
  return f;
}

std::map<std::string, double> g_ms;  // measured ms per step or per block, by name: the median of the iterations

// The timed span of a benchmark on CLOCK_MONOTONIC (steady_clock's), in seconds, to stderr: a
// profile taken with `perf record -k CLOCK_MONOTONIC` can then be cut to one benchmark with
// `perf report --time START,END`.
void print_span(const std::string& name, Clock::time_point t0) {
  auto s = [](Clock::time_point t) { return std::chrono::duration<double>(t.time_since_epoch()).count(); };
  std::fprintf(stderr, "spec_bench: span %s %.6f,%.6f\n", name.c_str(), s(t0), s(Clock::now()));
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// Feeds n tokens (traced and recurrent when verifying, as the generation does) and rewinds.
void BM_Block(benchmark::State& state, int n, const std::string& name) {
  Fixture& f = fixture();
  std::vector<int32_t> block(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) block[size_t(i)] = 5000 + i;
  auto feed = [&] {
    f.seq->feed_text(block.data(), n, n == 1 ? DeltaRuleMode::kAuto : DeltaRuleMode::kRecurrent, n, f.logits.data(),
                     /*traced=*/n > 1);
  };
  feed();  // warm-up, untimed: weights paged in, buffers grown
  f.seq->rewind(f.save);
  std::vector<double> wall, cpu;
  const auto span0 = Clock::now();
  for (auto _ : state) {
    const auto t0 = Clock::now();
    const double c0 = cpu_ms();
    feed();
    cpu.push_back(cpu_ms() - c0);
    wall.push_back(ms_since(t0));
    f.seq->rewind(f.save);
  }
  print_span(name, span0);
  g_ms[name] = median(wall);
  g_ms["cpu." + name] = median(cpu);
  state.counters["ms"] = g_ms[name];
  state.counters["cpu_ms"] = g_ms["cpu." + name];
}

// One verified block of k + 1 whose first half is kept: the replay that replaces a re-feed.
void BM_KeepHalf(benchmark::State& state, int k) {
  Fixture& f = fixture();
  std::vector<int32_t> block(size_t(k + 1));
  for (int i = 0; i <= k; ++i) block[size_t(i)] = 5000 + i;
  std::vector<double> wall;
  for (auto _ : state) {
    f.seq->feed_text(block.data(), k + 1, DeltaRuleMode::kRecurrent, 0, nullptr, true);
    const auto t0 = Clock::now();
    f.seq->rewind(f.save, (k + 1) / 2);
    wall.push_back(ms_since(t0));
    f.seq->rewind(f.save);
  }
  g_ms["keep_half." + std::to_string(k)] = median(wall);
  state.counters["ms"] = median(wall);
}

// k MTP draft steps after the prompt (the first one also runs the pending pair).
void BM_MtpDraft(benchmark::State& state, int k) {
  Fixture& f = fixture();
  std::vector<int32_t> out;
  f.seq->mtp_draft(4242, k, out);  // warm-up, untimed
  std::vector<double> wall, cpu;
  const auto span0 = Clock::now();
  for (auto _ : state) {
    const auto t0 = Clock::now();
    const double c0 = cpu_ms();
    f.seq->mtp_draft(4242, k, out);
    cpu.push_back(cpu_ms() - c0);
    wall.push_back(ms_since(t0));
  }
  print_span("mtp_draft." + std::to_string(k), span0);
  g_ms["mtp_draft." + std::to_string(k)] = median(wall);
  g_ms["cpu.mtp_draft." + std::to_string(k)] = median(cpu);
  state.counters["ms_per_step"] = median(wall) / k;
}

// End to end: decode of g_opt.tokens tokens after the prompt (restored from a snapshot of its
// first P - 1 tokens, so each run prefills one token), plain or with drafts at acceptance alpha.
// Rates are the medians over the runs (one per iteration); counts are summed.
struct EndToEnd {
  std::vector<double> run_tok_s, run_tok_per_cpu_s;  // cpu: the whole run's, prefill of one token included
  int64_t runs = 0, drafted = 0, accepted = 0;
  double tok_s() const { return median(run_tok_s); }
  double tok_per_cpu_s() const { return median(run_tok_per_cpu_s); }
};
std::vector<int32_t> g_recorded;                       // the recorded plain continuation
std::map<std::pair<int, int>, EndToEnd> g_e2e;      // (alpha in 1/1000, k) -> result; k = 0 plain
std::unique_ptr<Snapshot> g_prefix;

void BM_EndToEnd(benchmark::State& state, double alpha, int k) {
  Fixture& f = fixture();
  auto session = f.engine->new_session();
  Status st;
  if (!g_prefix) {
    SamplingParams p;
    p.temperature = 0;
    p.max_tokens = 0;
    session->complete(std::vector<int32_t>(f.prompt.begin(), f.prompt.end() - 1), p, nullptr, &st);
    g_prefix = session->snapshot();
  }
  EndToEnd sum;
  for (auto _ : state) {
    session->restore(*g_prefix);
    SamplingParams p;
    p.temperature = g_opt.temperature;
    p.seed = 1234;
    p.max_tokens = g_opt.tokens;
    p.ignore_eos = true;
    p.speculative.mode = k == 0 ? SpecMode::kOff : SpecMode::kMtp;
    p.speculative.draft_max = std::max(k, 1);
    auto gen = session->start_completion(f.prompt, p, nullptr, &st);
    if (!gen) {
      state.SkipWithError(st.message.c_str());
      return;
    }
    std::mt19937 rng(uint32_t(1000 * alpha) * 31 + uint32_t(k));
    std::uniform_real_distribution<double> u(0, 1);
    impl_of(*gen).rewrite_mtp_draft = [&](const std::vector<int32_t>& history, std::vector<int32_t>& d) {
      const size_t done = history.size() - f.prompt.size();
      bool right = true;
      for (size_t i = 0; i < d.size(); ++i) {
        const int32_t want = done + i < g_recorded.size() ? g_recorded[done + i] : 0;
        right = right && u(rng) < alpha;
        d[i] = right ? want : (want + 1) % 1000;
      }
    };
    const double c0 = cpu_ms();
    while (gen->step()) {
    }
    const double run_cpu_ms = cpu_ms() - c0;
    const GenerationResult& r = gen->result();
    if (k == 0 && g_recorded.empty()) g_recorded = r.tokens;
    if (r.tokens != g_recorded) {
      state.SkipWithError("speculative output differs from plain decoding");
      return;
    }
    if (r.timings.decode_ms > 0) sum.run_tok_s.push_back(1000.0 * double(r.timings.decode_tokens) / r.timings.decode_ms);
    if (run_cpu_ms > 0) sum.run_tok_per_cpu_s.push_back(1000.0 * double(r.timings.decode_tokens) / run_cpu_ms);
    ++sum.runs;
    sum.drafted += r.drafted();
    sum.accepted += r.accepted();
  }
  g_e2e[{int(std::lround(alpha * 1000)), k}] = sum;
  state.counters["tok_s"] = sum.tok_s();
  state.counters["tok_per_cpu_s"] = sum.tok_per_cpu_s();
  state.counters["accepted_per_drafted"] = sum.drafted ? double(sum.accepted) / double(sum.drafted) : 0;
}

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream in(s);
  for (std::string w; std::getline(in, w, ',');) out.push_back(w);
  return out;
}

// Consumes our options and leaves Google Benchmark's.
void parse_options(int& argc, char** argv) {
  int w = 1;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&] {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "spec_bench: %s needs a value\n", a.c_str());
        std::exit(2);
      }
      return std::string(argv[++i]);
    };
    if (a == "--model") g_opt.model = value();
    else if (a == "--weights") g_opt.weights = value();
    else if (a == "--summary") g_opt.summary = value();
    else if (a == "--threads") g_opt.threads = std::stoi(value());
    else if (a == "--prompt") g_opt.prompt = std::stoi(value());
    else if (a == "--tokens") g_opt.tokens = std::stoi(value());
    else if (a == "--iterations") g_opt.iterations = std::stoi(value());
    else if (a == "--temperature") g_opt.temperature = std::stof(value());
    else if (a == "--draft-vocab") {
      const std::string v = value();
      g_opt.draft_vocab = v == "full" ? 0 : std::stoll(v);
    }
    else if (a == "--alphas") {
      g_opt.alphas.clear();
      for (const auto& x : split(value())) g_opt.alphas.push_back(std::stod(x));
    } else if (a == "--ks") {
      g_opt.ks.clear();
      for (const auto& x : split(value())) g_opt.ks.push_back(std::stoi(x));
    } else argv[w++] = argv[i];
  }
  argc = w;
  if (g_opt.prompt < 2 || g_opt.tokens < 2 || g_opt.iterations < 1) {
    std::fprintf(stderr, "spec_bench: --prompt and --tokens must be >= 2, --iterations >= 1\n");
    std::exit(2);
  }
}

// Expected tokens per step with per-token acceptance a and k drafts.
double expected_tokens(double a, int k) {
  double e = 1, reach = 1;
  for (int j = 0; j < k; ++j) e += (reach *= a);
  return e;
}

nlohmann::ordered_json summary() {
  const ModelInfo& info = fixture().engine->info();
  nlohmann::ordered_json s;
  s["model"] = info.name;
  s["layers"] = info.num_layers;
  s["hidden"] = info.hidden_size;
  s["kernels"] = info.kernels;
  s["threads"] = info.threads;
  s["weights"] = info.weights.empty() ? "as stored (bf16 for make_random_model)" : info.weights;
  s["weight_bytes"] = info.weight_bytes;
  s["mtp_draft_vocab"] = info.mtp_draft_vocab;  // LM-head rows a draft step scores
  s["vocab"] = info.vocab_size;
  const double t1 = g_ms["block.1"];
  s["temperature"] = g_opt.temperature;
  s["load_average_at_end"] = [] {
    double l[3] = {0, 0, 0};
    return getloadavg(l, 3) == 3 ? nlohmann::ordered_json{l[0], l[1], l[2]} : nlohmann::ordered_json(nullptr);
  }();
  const double tm = g_ms.count("mtp_draft.4") ? g_ms["mtp_draft.4"] / 4 : g_ms["mtp_draft.1"];
  const double c1 = g_ms["cpu.block.1"];
  const double cm = g_ms.count("cpu.mtp_draft.4") ? g_ms["cpu.mtp_draft.4"] / 4 : g_ms["cpu.mtp_draft.1"];
  s["decode_ms"] = t1;
  s["decode_cpu_ms"] = c1;
  s["mtp_draft_step_ms"] = tm;
  s["mtp_draft_step_over_decode"] = tm / t1;
  s["mtp_draft_step_over_decode_cpu"] = cm / c1;
  nlohmann::ordered_json verify = nlohmann::ordered_json::array();
  for (int k = 1; k <= 8; ++k) {
    const double v = g_ms["block." + std::to_string(k + 1)], vc = g_ms["cpu.block." + std::to_string(k + 1)];
    verify.push_back({{"k", k},
                      {"ms", v},
                      {"over_decode", v / t1},
                      {"over_decode_cpu", vc / c1},
                      {"keep_half_ms", g_ms["keep_half." + std::to_string(k)]}});
  }
  s["verify"] = verify;
  const EndToEnd plain = g_e2e[{0, 0}];
  s["plain_tok_s"] = plain.tok_s();
  s["plain_ms_per_token"] = plain.tok_s() > 0 ? 1000.0 / plain.tok_s() : 0.0;  // cross-check of decode_ms
  nlohmann::ordered_json curves = nlohmann::ordered_json::array();
  for (int k : g_opt.ks) {
    // A step's cost in decode steps, by CPU time (steadier than wall time on a shared machine).
    const double cost = (k * cm + g_ms["cpu.block." + std::to_string(k + 1)]) / c1;
    nlohmann::ordered_json points = nlohmann::ordered_json::array();
    for (double a : g_opt.alphas) {
      const EndToEnd e = g_e2e[{int(std::lround(a * 1000)), k}];
      points.push_back({{"alpha", a},
                        {"runs", e.runs},
                        {"accepted_per_drafted", e.drafted ? double(e.accepted) / double(e.drafted) : 0.0},
                        {"tok_s", e.tok_s()},
                        {"speedup", plain.tok_s() > 0 ? e.tok_s() / plain.tok_s() : 0.0},
                        {"speedup_cpu", plain.tok_per_cpu_s() > 0 ? e.tok_per_cpu_s() / plain.tok_per_cpu_s() : 0.0},
                        {"model_speedup", expected_tokens(a, k) / cost}});
    }
    // Break-even: expected_tokens(a, k) = cost, by bisection on the cost model.
    double lo = 0, hi = 1;
    for (int it = 0; it < 60; ++it) ((expected_tokens((lo + hi) / 2, k) < cost) ? lo : hi) = (lo + hi) / 2;
    curves.push_back({{"k", k},
                      {"step_cost_over_decode", cost},
                      {"break_even_alpha", expected_tokens(1, k) < cost ? nlohmann::ordered_json(nullptr)
                                                                        : nlohmann::ordered_json(hi)},
                      {"points", points}});
  }
  s["end_to_end"] = curves;
  return s;
}

}  // namespace

int main(int argc, char** argv) {
  parse_options(argc, argv);
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  const int it = g_opt.iterations;
  benchmark::RegisterBenchmark("decode_step", [](benchmark::State& s) { BM_Block(s, 1, "block.1"); })
      ->Iterations(it)->Unit(benchmark::kMillisecond);
  benchmark::RegisterBenchmark("mtp_draft/1", [](benchmark::State& s) { BM_MtpDraft(s, 1); })
      ->Iterations(it)->Unit(benchmark::kMillisecond);
  benchmark::RegisterBenchmark("mtp_draft/4", [](benchmark::State& s) { BM_MtpDraft(s, 4); })
      ->Iterations(it)->Unit(benchmark::kMillisecond);
  for (int k = 1; k <= 8; ++k) {
    benchmark::RegisterBenchmark(("verify/" + std::to_string(k)).c_str(),
                                 [k](benchmark::State& s) { BM_Block(s, k + 1, "block." + std::to_string(k + 1)); })
        ->Iterations(it)->Unit(benchmark::kMillisecond);
    benchmark::RegisterBenchmark(("keep_half/" + std::to_string(k)).c_str(),
                                 [k](benchmark::State& s) { BM_KeepHalf(s, k); })
        ->Iterations(it)->Unit(benchmark::kMillisecond);
  }
  benchmark::RegisterBenchmark("end_to_end/plain", [](benchmark::State& s) { BM_EndToEnd(s, 0, 0); })
      ->Iterations(it)->Unit(benchmark::kMillisecond);
  for (int k : g_opt.ks)
    for (double a : g_opt.alphas) {
      char name[64];
      std::snprintf(name, sizeof(name), "end_to_end/k%d/alpha%.2f", k, a);
      benchmark::RegisterBenchmark(name, [a, k](benchmark::State& s) { BM_EndToEnd(s, a, k); })
          ->Iterations(it)->Unit(benchmark::kMillisecond);
    }
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  if (!g_ms.count("block.1") || !g_e2e.count({0, 0})) return 0;  // filtered run: no summary
  const std::string text = summary().dump(2);
  std::fprintf(stderr, "%s\n", text.c_str());
  if (!g_opt.summary.empty()) std::ofstream(g_opt.summary) << text << "\n";
  return 0;
}
