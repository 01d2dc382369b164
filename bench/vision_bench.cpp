// The vision tower at Qwen3.5-9B's shapes (tests/data/configs/qwen3.5-9b.json: 27 blocks of 1152,
// 16 heads of 72, MLP 4304, patch 16 x 16 x 2, merge 2 x 2 into the 4096-wide text hidden) on
// random weights built in memory, one S x S image per iteration, without the text decoder:
//
//   build/bin/vision_bench --benchmark_format=json --benchmark_out=vision.json
//
// Each case (2 threads, then 1) runs 3 repetitions of one image (after a warm-up image) and
// reports their median; real_time is seconds per image and the counters `<stage>_s` split it by
// stage, summed over the blocks (`<stage>_cpu_s`: CPU seconds of all threads, robust to a busy host): patch_embed, positions, qkv (LayerNorm, qkv matmul, bias, rotary), attention, proj,
// mlp (LayerNorm, fc1, GELU, fc2) and merger; `<stage>_gops` is the stage's multiply-adds (the
// matmuls' at their prepared shapes, attention's q.k and p.v) times 2 per second. Cases: a 512 x 512
// image in one slice a stage ("image:512"), and one temporal pair of video frames at 640 x 352 (a
// 640 x 360 clip's size: 22 x 40 patches, 880 rows) run in the engine's slices of
// VisionTower::kSliceRows rows ("pair:640x352"), the unit of the video figure (a 30 s clip is 30 of
// them). Weights are bf16 as in the checkpoint ("bf16") or
// prepared at load like `--weights q8_0` (the vision tower gets Q8_0 under any quantized preset),
// by the same preparation as Model::load, for the kernel table this CPU would use.
#include <benchmark/benchmark.h>
#include <sys/resource.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <deque>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "core/half.h"
#include "core/thread_pool.h"
#include "kernels/compute.h"
#include "model/config.h"
#include "model/vision.h"
#include "model/vision_prep.h"

namespace {

using namespace qwen35;

struct Rng {  // splitmix64, as tools/make_random_model
  uint64_t s;
  uint64_t next() {
    uint64_t z = (s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  float uniform() { return float(next() >> 40) / float(1ull << 24); }  // [0, 1)
};

VisionConfig vision_config() {
  const std::string path = QWEN35_SOURCE_DIR "/tests/data/configs/qwen3.5-9b.json";
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return ModelConfig::parse(text.str(), path).vision;
}

// Random bf16 weights at the config's shapes, drawn like make_random_model's (matrices
// U(-a, a), a = 0.5 sqrt(3 / fan_in); LayerNorm weight 1, bias 0; biases small).
struct RandomVision {
  VisionConfig cfg = vision_config();
  std::deque<std::vector<uint16_t>> storage;
  VisionWeights w;
  Rng rng{1};

  std::vector<float> uniform(size_t n, float a) {
    std::vector<float> v(n);
    for (float& x : v) x = a * (2.0f * rng.uniform() - 1.0f);
    return v;
  }
  LinearWeights linear(int64_t out, int64_t in) {
    const float a = 0.5f * std::sqrt(3.0f / float(in));
    std::vector<uint16_t>& m = storage.emplace_back(size_t(out * in));
    for (uint16_t& h : m) h = f32_to_bf16(a * (2.0f * rng.uniform() - 1.0f));
    return {WeightMatrix{DType::BF16, m.data(), out, in, size_t(in) * 2}, uniform(size_t(out), 0.02f)};
  }
  LayerNormWeights norm(int64_t n) { return {std::vector<float>(size_t(n), 1.0f), std::vector<float>(size_t(n), 0.0f)}; }

  RandomVision() {
    const int64_t D = cfg.hidden_size, I = cfg.intermediate_size, m2 = cfg.spatial_merge_size * cfg.spatial_merge_size;
    w.patch_embed = linear(D, cfg.in_channels * cfg.temporal_patch_size * cfg.patch_size * cfg.patch_size);
    w.pos_table = uniform(size_t(cfg.num_position_embeddings * D), 0.1f);
    for (int j = 0; j < cfg.depth; ++j)
      w.blocks.push_back({norm(D), linear(3 * D, D), linear(D, D), norm(D), linear(I, D), linear(D, I)});
    w.merger_norm = norm(D);
    w.merger_fc1 = linear(D * m2, D * m2);
    w.merger_fc2 = linear(cfg.out_hidden_size, D * m2);
  }
};

ThreadPool& pool() {
  static ThreadPool p(0);
  return p;
}

// The tower with `weights` ("bf16": as built; else a --weights value), prepared once.
const VisionTower& tower(const std::string& weights) {
  struct Prepared {
    WeightStore store;
    std::unique_ptr<VisionTower> tower;
  };
  static RandomVision rv;
  static std::map<std::string, Prepared> prepared;
  Prepared& p = prepared[weights];
  if (!p.tower) {
    VisionWeights w = rv.w;  // views into rv's storage; prepared copies go to p.store
    WeightPrepOptions o;
    o.pool = &pool();
    prepare_vision_weights(w, weights == "bf16" ? "" : weights, p.store, o);
    p.tower = std::make_unique<VisionTower>(rv.cfg, std::move(w));
  }
  return *p.tower;
}

double now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }
// CPU seconds of every thread of the process (user + system): unlike the clock, not inflated by
// other programs on a shared machine (workers spinning for work count, as they keep a core busy).
double cpu_now() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return double(u.ru_utime.tv_sec + u.ru_stime.tv_sec) + 1e-6 * double(u.ru_utime.tv_usec + u.ru_stime.tv_usec);
}

// One image through the tower in slices of `slice_rows`, stage by stage; adds each stage's seconds
// to `stages`.
void run_image(const VisionTower& t, const kernels::Compute& c, const std::vector<float>& pixels, const ImageGrid& g,
               int64_t slice_rows, std::map<std::string, double>& stages, std::map<std::string, double>& cpu) {
  VisionRun run(t, pixels.data(), g.t * g.h * g.w, {g}, nullptr, slice_rows);
  while (!run.done()) {
    const std::string stage = run.stage();
    const double t0 = now(), u0 = cpu_now();
    run.step(c);
    stages[stage] += now() - t0;
    cpu[stage] += cpu_now() - u0;
  }
  benchmark::DoNotOptimize(run.output().data());
}

// Multiply-adds of each stage of one frame of g (a frame attends to itself alone).
std::map<std::string, double> stage_macs(const VisionTower& t, const ImageGrid& g) {
  const VisionWeights& w = t.weights();
  const double np = double(g.h * g.w), D = double(t.config().hidden_size);
  std::map<std::string, double> m;
  m["patch_embed"] = np * double(w.patch_embed.w.rows * w.patch_embed.w.cols);
  for (const VisionBlockWeights& b : w.blocks) {
    m["qkv"] += np * double(b.qkv.w.rows * b.qkv.w.cols);
    m["attention"] += 2 * np * np * D;
    m["proj"] += np * double(b.proj.w.rows * b.proj.w.cols);
    m["mlp"] += np * double(b.fc1.w.rows * b.fc1.w.cols + b.fc2.w.rows * b.fc2.w.cols);
  }
  const double tokens = double(t.num_tokens(std::span(&g, 1)));
  m["merger"] = tokens * double(w.merger_fc1.w.rows * w.merger_fc1.w.cols + w.merger_fc2.w.rows * w.merger_fc2.w.cols);
  for (auto& [name, v] : m) v *= double(g.t);
  return m;
}

// rows x cols patches, the whole stage in one slice (slice_rows 0) or in slices of slice_rows.
void vision_tower(benchmark::State& state, const std::string& weights, int64_t rows, int64_t cols, int64_t slice_rows) {
  const VisionTower& t = tower(weights);
  const int threads = int(state.range(0));
  pool().set_limit(threads);
  const kernels::Compute c{&kernels::active_table(), &pool()};
  const ImageGrid g{1, rows, cols};
  if (slice_rows <= 0) slice_rows = int64_t(1) << 30;
  Rng rng{7};
  std::vector<float> pixels(size_t(g.h * g.w * t.patch_dim()));
  for (float& x : pixels) x = 2.0f * rng.uniform() - 1.0f;  // normalised pixels lie in [-1, 1]
  std::map<std::string, double> warm, stages, cpu;
  run_image(t, c, pixels, g, slice_rows, warm, warm);  // first touch of the run's buffers and the weights
  for (auto _ : state) run_image(t, c, pixels, g, slice_rows, stages, cpu);
  const std::map<std::string, double> macs = stage_macs(t, g);
  const double n = double(state.iterations());
  for (const auto& [name, sec] : stages) {
    state.counters[name + "_s"] = benchmark::Counter(sec, benchmark::Counter::kAvgIterations);
    state.counters[name + "_cpu_s"] = benchmark::Counter(cpu[name], benchmark::Counter::kAvgIterations);
    if (macs.count(name) && sec > 0) state.counters[name + "_gops"] = 2 * macs.at(name) * n / sec / 1e9;
  }
  state.counters["patches"] = double(g.h * g.w);
  state.counters["tokens"] = double(t.num_tokens(std::span(&g, 1)));
  state.SetLabel(std::string(kernels::active_table().name));
  pool().set_limit(0);
}

}  // namespace

int main(int argc, char** argv) {
  struct Case {
    const char* weights;
    const char* shape;
    int64_t rows, cols, slice_rows;
  };
  const Case cases[] = {{"q8_0", "image:512", 32, 32, 0},
                        {"q8_0", "pair:640x352", 22, 40, VisionTower::kSliceRows},
                        {"bf16", "image:512", 32, 32, 0}};
  for (const Case& k : cases) {
    const std::string name = std::string("vision/") + k.weights + "/" + k.shape;
    benchmark::RegisterBenchmark(name.c_str(), [=](benchmark::State& s) {
      vision_tower(s, k.weights, k.rows, k.cols, k.slice_rows);
    })
        ->Arg(2)
        ->Arg(1)
        ->ArgName("threads")
        ->Iterations(1)
        ->Repetitions(3)
        ->ReportAggregatesOnly(true)
        ->UseRealTime()
        ->Unit(benchmark::kSecond);
  }
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
