// qwen35 bench: llama-bench's job for this engine. Prompt processing (pp) and token generation
// (tg) speed on random token ids, repeated, per thread count, with the bytes a decode step reads,
// the bandwidth that makes, the machine's measured read bandwidth and peak memory.
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "apps/qwen35/args.h"
#include "apps/qwen35/engine_options.h"
#include "core/error.h"
#include "qwen35/bench.h"

namespace qwen35::app {
namespace {

const char* kHelp =
    "usage: qwen35 bench [-m MODEL] [-p 512] [-n 128] [-d 0] [-t 1,2] [-np 1,4] [-r 5] [--json] [--weights TYPE]\n\n"
    "Measures prompt processing (pp: -p tokens in prefill blocks, logits of the last) and token\n"
    "generation (tg: -n single-token steps with full logits) on random token ids, after -d tokens\n"
    "of context, for each thread count of -t, -r times each (after a warm-up: one prompt run, or 8 generated tokens), like\n"
    "llama-bench. Prints tok/s (min / median / max), the weight bytes one decode step reads, the\n"
    "bandwidth that is, the machine's read bandwidth (the best of six 1 GiB read passes, probed\n"
    "before each tg repetition; the median of those) and the share of it reached, the same for a\n"
    "plain read of the weights a decode step streams (the ceiling on this run's memory), peak\n"
    "resident memory, and synchronisation points per token; after the table, the fastest tenth of\n"
    "the decode steps beside that plain read (a shared host slows some steps by half, and this\n"
    "shows the decode undisturbed: JSON step_ms_p10, p10_step_GBps). With -np, tg also runs with that many\n"
    "sequences decoding at once, batched as the server batches conversations (aggregate tok/s;\n"
    "llama-batched-bench's S_TG). --json: one object per test with\n"
    "llama-bench's field names (n_prompt, n_gen, n_depth, n_threads, avg_ts, stddev_ts, samples_ts).\n\n"
    "options:\n"
    "  -p N                  prompt tokens (0: no pp test; default 512)\n"
    "  -n N                  generated tokens (0: no tg test; default 128)\n"
    "  -d N                  context depth before each test (default 0)\n"
    "  -t LIST               thread counts, comma separated; the model is loaded once per count\n"
    "                        (default: all cores)\n"
    "  -np LIST              sequences decoding at once in tg, comma separated (default 1)\n"
    "  -r N                  repetitions (default 5)\n"
    "  --json                JSON output\n";

// The read probe runs in a child process, so that its gigabyte of buffer counts in neither the peak
// RSS nor the memory the model competes for. The child only maps memory and starts its own
// threads (glibc keeps malloc usable across fork); it never touches the engine's pool.
double read_bandwidth_in_child(int threads) {
  int fds[2];
  if (pipe(fds) != 0) return measure_read_bandwidth(threads);
  const pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    double bw = 0;
    try {
      bw = measure_read_bandwidth(threads);
    } catch (...) {
    }
    ssize_t w = write(fds[1], &bw, sizeof bw);
    (void)w;
    _exit(0);
  }
  close(fds[1]);
  double bw = 0;
  if (pid < 0 || read(fds[0], &bw, sizeof bw) != ssize_t(sizeof bw)) bw = 0;
  close(fds[0]);
  if (pid > 0) waitpid(pid, nullptr, 0);
  return bw;
}

size_t peak_rss_bytes() {
  struct rusage u;
  getrusage(RUSAGE_SELF, &u);
  return size_t(u.ru_maxrss) * 1024;
}

struct Stats {
  double min = 0, median = 0, max = 0, mean = 0, stddev = 0;
};

std::string format(const char* fmt, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, fmt, v);
  return buf;
}

// "61% of 76.3 GB/s": a decode's GB/s as a share of a read bandwidth.
std::string share_cell(double gbps, double bw) {
  return bw > 0 ? format("%.0f%%", 100 * gbps / bw) + " of " + format("%.1f GB/s", bw) : "-";
}

// The p-quantile of v (nearest rank), 0 when v is empty.
double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, size_t(p * double(v.size())))];
}

Stats stats(std::vector<double> v) {
  Stats s;
  if (v.empty()) return s;
  std::sort(v.begin(), v.end());
  s.min = v.front();
  s.max = v.back();
  s.median = v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
  for (double x : v) s.mean += x;
  s.mean /= double(v.size());
  for (double x : v) s.stddev += (x - s.mean) * (x - s.mean);
  s.stddev = v.size() > 1 ? std::sqrt(s.stddev / double(v.size() - 1)) : 0;
  return s;
}

std::string iso_time() {
  char buf[32];
  const std::time_t t = std::time(nullptr);
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
  return buf;
}

// "-t 1,2", "-np 1,4": counts in [1, max].
std::vector<int> parse_counts(const std::string& list, const char* option, const char* what, int max) {
  std::vector<int> out;
  for (int32_t v : parse_int_list(list, option, what)) {
    if (v <= 0 || v > max) fail(option, ": ", what, "s must be between 1 and ", max, ", got ", v);
    out.push_back(int(v));
  }
  return out;
}

}  // namespace

int cmd_bench(int argc, char** argv) {
  std::set<std::string> with_value = engine_option_names();
  for (const char* o : {"-p", "-n", "-d", "-t", "-r", "-np"}) with_value.insert(o);
  const Args args(argc, argv, with_value, {"--json", "--help", "-h"});
  if (args.has("--help") || args.has("-h")) {
    std::printf("%s%s", kHelp, kEngineOptionsHelp);
    return 0;
  }
  const int64_t n_prompt = args.get_int("-p", 512), n_gen = args.get_int("-n", 128), depth = args.get_int("-d", 0);
  const int64_t reps = args.get_int("-r", 5);
  if (n_prompt < 0 || n_gen < 0 || depth < 0) fail("-p, -n and -d must be >= 0");
  if (reps < 1 || reps > 1000) fail("-r must be between 1 and 1000");
  const bool json = args.has("--json");
  EngineOptions options = engine_options_from(args);
  const int cores = int(std::max(1u, std::thread::hardware_concurrency()));
  const std::vector<int> threads = args.has("-t") ? parse_counts(args.require("-t"), "-t", "thread count", 1024) : std::vector<int>{cores};
  const std::vector<int> parallel = args.has("-np") ? parse_counts(args.require("-np"), "-np", "sequence count", 64) : std::vector<int>{1};
  options.context_size = std::max<int64_t>(options.context_size, depth + std::max(n_prompt, n_gen) + 16);
  std::unique_ptr<Engine> engine;
  size_t step_bytes = 0;

  nlohmann::json results = nlohmann::json::array();
  std::vector<std::string> step_notes;  // one line per single-stream tg test, printed after the table
  if (!json)
    std::printf("| model | weights | kernels | threads | test | tok/s (min / median / max) | GB/s | of %s | of a plain read of the weights | syncs/token |\n"
                "|---|---|---|---|---|---|---|---|---|---|\n",
                "read bandwidth");
  for (const int t : threads) {
    // An engine's thread pool is part of what it loads (engine.h), so each thread count measures
    // an engine loaded with that many threads, as `--threads` runs one; one model in memory at a time.
    engine.reset();
    options.threads = t;
    if (!json)
      std::fprintf(stderr, "qwen35 bench: loading %s, %d thread%s\n", options.model_dir.c_str(), t, t == 1 ? "" : "s");
    engine = load_engine(options);
    const ModelInfo& info = engine->info();
    step_bytes = decode_weight_bytes(*engine);
    // Tests: pp, then tg once per sequence count.
    std::vector<std::pair<int, int>> tests;  // (kind, sequences)
    tests.push_back({0, 1});
    for (int np : parallel) tests.push_back({1, np});
    for (const auto& [kind, np] : tests) {
      const int64_t n = kind == 0 ? n_prompt : n_gen;
      if (n == 0) continue;
      auto run = [&](uint64_t seed, int64_t tokens) {
        return kind == 0 ? bench_prompt(*engine, tokens, depth, seed)
                         : bench_generate_parallel(*engine, tokens, depth, np, seed);
      };
      // Warm-up (page cache, first touch of the buffers, threads): a short run of the same kind
      // touches every weight and buffer size the timed runs use.
      run(1, kind == 0 ? n : std::min<int64_t>(n, 8));
      std::vector<double> ts, ns, bws, wbs, steps;
      uint64_t syncs = 0, passes = 0;
      for (int64_t r = 0; r < reps; ++r) {
        // The machine's read bandwidth right before each decode repetition: on a shared host it
        // moves by half within minutes, so one probe taken at another time made the share swing
        // from 46% to 89% of it for the same decode speed.
        if (kind == 1) bws.push_back(read_bandwidth_in_child(t));
        // And a plain read of the weights themselves, as a decode step splits them: what the pages
        // this run got give a loop that only loads, the ceiling of the decode beside it.
        if (kind == 1) wbs.push_back(measure_weights_read_bandwidth(*engine, t));
        const BenchRun br = run(uint64_t(r) + 2, n);
        ts.push_back(double(br.tokens) / br.seconds);
        ns.push_back(br.seconds * 1e9);
        steps.insert(steps.end(), br.step_seconds.begin(), br.step_seconds.end());
        syncs = br.sync_points / uint64_t(std::max<int64_t>(1, br.tokens));
        passes = br.steps;
      }
      const Stats s = stats(ts), sn = stats(ns);
      const double read_bw = stats(bws).median, weights_bw = stats(wbs).median;
      // Weights stream once per step, whatever the number of sequences in it.
      const double gbps = kind == 1 ? s.median / double(np) * double(step_bytes) / 1e9 : 0;
      // The fastest tenth of one stream's steps (over all repetitions): the decode undisturbed by
      // the host's other tenants, beside the plain read of the weights.
      const double step_p10 = percentile(steps, 0.1), step_median = percentile(steps, 0.5);
      const double p10_gbps = step_p10 > 0 ? double(step_bytes) / step_p10 / 1e9 : 0;
      const std::string test = (kind == 0 ? "pp" : "tg") + std::to_string(n) + (np > 1 ? " x" + std::to_string(np) : "") +
                               (depth ? " @ d" + std::to_string(depth) : "");
      nlohmann::json o = {{"model_filename", info.path},
                          {"model_type", "qwen35 " + (info.weights.empty() ? std::string("native") : info.weights)},
                          {"model_size", info.weight_bytes},
                          {"kernels", info.kernels},
                          {"device", info.device},
                          {"type_k", info.kv_type},
                          {"type_v", info.kv_type},
                          {"n_threads", t},
                          {"n_prompt", kind == 0 ? n : 0},
                          {"n_gen", kind == 1 ? n : 0},
                          {"n_depth", depth},
                          {"n_parallel", kind == 1 ? np : 1},
                          {"passes_per_run", kind == 1 ? passes : 0},
                          {"test_time", iso_time()},
                          {"avg_ns", int64_t(sn.mean)},
                          {"stddev_ns", int64_t(sn.stddev)},
                          {"avg_ts", s.mean},
                          {"stddev_ts", s.stddev},
                          {"samples_ns", ns},
                          {"samples_ts", ts},
                          {"min_ts", s.min},
                          {"median_ts", s.median},
                          {"max_ts", s.max},
                          {"weight_bytes_per_token", kind == 1 ? step_bytes : 0},
                          {"effective_GBps", gbps},
                          {"read_bandwidth_GBps", read_bw},
                          {"read_bandwidth_samples_GBps", bws},
                          {"bandwidth_share", kind == 1 && read_bw > 0 ? gbps / read_bw : 0},
                          {"weights_read_GBps", weights_bw},
                          {"weights_read_samples_GBps", wbs},
                          {"weights_read_share", kind == 1 && weights_bw > 0 ? gbps / weights_bw : 0},
                          {"step_ms_p10", step_p10 * 1e3},
                          {"step_ms_median", step_median * 1e3},
                          {"p10_step_GBps", p10_gbps},
                          {"p10_step_weights_read_share", weights_bw > 0 ? p10_gbps / weights_bw : 0},
                          {"peak_rss_bytes", peak_rss_bytes()},
                          {"sync_points_per_token", syncs}};
      results.push_back(o);
      if (!json)
        std::printf("| %s | %s | %s | %d | %s | %.2f / %.2f / %.2f | %s | %s | %s | %llu |\n", info.name.c_str(),
                    info.weights.empty() ? "native" : info.weights.c_str(), info.kernels.c_str(), t, test.c_str(), s.min,
                    s.median, s.max, kind == 1 ? format("%.2f", gbps).c_str() : "-",
                    kind == 1 ? share_cell(gbps, read_bw).c_str() : "-", kind == 1 ? share_cell(gbps, weights_bw).c_str() : "-",
                    static_cast<unsigned long long>(syncs));
      if (!json && step_p10 > 0)
        step_notes.push_back(test + ", " + std::to_string(t) + " thread" + (t == 1 ? "" : "s") +
                             ": steps " + format("%.1f ms", step_p10 * 1e3) + " (fastest tenth) / " +
                             format("%.1f ms", step_median * 1e3) + " (median); at the fastest tenth " +
                             format("%.2f GB/s", p10_gbps) + ", " + share_cell(p10_gbps, weights_bw) +
                             " (the plain read)");
      std::fflush(stdout);
    }
  }
  if (json) std::printf("%s\n", results.dump(2).c_str());
  else {
    std::printf("\nweights read per decode step: %.3f GB; peak RSS %.2f GiB\n", double(step_bytes) / 1e9,
                double(peak_rss_bytes()) / double(1ull << 30));
    for (const std::string& note : step_notes) std::printf("%s\n", note.c_str());
  }
  return 0;
}

}  // namespace qwen35::app
