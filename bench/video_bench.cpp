// Time to first token for a video question, split by stage: a clip of N seconds (synthesized in
// memory with FFmpeg's mpeg4 encoder at 640x360 and 30 fps, a keyframe every 2 s, or
// QWEN35_BENCH_VIDEO=FILE) asked about once per iteration, with the prefix cache off:
//
//   QWEN35_BENCH_MODEL=/tmp/qwen35-9b-random build/bin/video_bench --benchmark_format=json --benchmark_out=video.json
//
// Without QWEN35_BENCH_MODEL it runs on the bundled tiny model (vision and prefill then cost
// nothing worth reporting; decode and processing do). A GGUF model takes its projector from
// QWEN35_BENCH_MMPROJ (else an mmproj*.gguf beside it); QWEN35_BENCH_VIDEO_FPS and
// QWEN35_BENCH_VIDEO_MAX_TOKENS set the request's sampling rate and token cap (default: the
// official 2 fps and the processor's budget), e.g. 4 and 16384 to sample what llama-mtmd-cli
// samples (bench/compare_video.sh). `video_bench --write-clip SECONDS FILE` writes the clip a case
// synthesizes (in Matroska), for the other engine. real_time is seconds to the first token;
// counters: decode_s (opening the file and decoding the sampled frames alone, measured apart),
// load_s (decode + sampling + resize + patches, as the engine reports it), vision_s (the tower
// over every pair), prefill_s, and frames_sampled, frames_decoded, video_tokens, prompt_tokens.
// Cases video/seconds:<10|30|120>/threads:2.
#include <benchmark/benchmark.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "model/video_processor.h"
#include "qwen35/engine.h"
#include "runtime/video_source.h"
#include "support/video_test_encoders.h"

namespace {

using namespace qwen35;
using Clock = std::chrono::steady_clock;

std::unique_ptr<Engine> load(int threads) {
  EngineOptions o;
  const char* dir = std::getenv("QWEN35_BENCH_MODEL");
  o.model_dir = dir ? dir : QWEN35_SOURCE_DIR "/tests/data/tiny-qwen35";
  if (const char* mmproj = std::getenv("QWEN35_BENCH_MMPROJ")) o.mmproj_path = mmproj;
  o.context_size = 32768;
  o.threads = threads;
  Status st;
  std::unique_ptr<Engine> engine = Engine::load(o, &st);
  if (!engine) {
    std::fprintf(stderr, "video_bench: %s\n", st.message.c_str());
    std::exit(1);
  }
  return engine;
}

std::vector<uint8_t> synthesize_clip(int seconds, const std::string& muxer = "mp4") {
  test::VideoSpec spec;
  spec.muxer = muxer, spec.encoder = "mpeg4", spec.width = 640, spec.height = 360;
  spec.fps = 30, spec.frames = 30 * seconds, spec.keyframe_interval = 60;
  return test::encode_video(spec);
}

const std::vector<uint8_t>& clip(int seconds) {
  static std::map<int, std::vector<uint8_t>> clips;
  auto& bytes = clips[seconds];
  if (bytes.empty()) {
    if (const char* path = std::getenv("QWEN35_BENCH_VIDEO")) {
      std::ifstream in(path, std::ios::binary);
      bytes.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    } else {
      bytes = synthesize_clip(seconds);
    }
  }
  return bytes;
}

// A positive number from the environment variable `name`, or `fallback` when it is unset.
double env_number(const char* name, double fallback) {
  const char* v = std::getenv(name);
  if (!v) return fallback;
  char* end = nullptr;
  const double x = std::strtod(v, &end);
  if (end == v || *end != '\0' || !(x > 0)) {
    std::fprintf(stderr, "video_bench: %s must be a positive number, got '%s'\n", name, v);
    std::exit(2);
  }
  return x;
}

void BM_VideoFirstToken(benchmark::State& state) {
  const int seconds = int(state.range(0)), threads = int(state.range(1));
  static std::map<int, std::unique_ptr<Engine>> engines;
  auto& engine = engines[threads];
  if (!engine) engine = load(threads);
  VideoSampling sampling;
  sampling.fps = env_number("QWEN35_BENCH_VIDEO_FPS", 0);
  sampling.max_tokens = int64_t(env_number("QWEN35_BENCH_VIDEO_MAX_TOKENS", 0));
  const VideoInput video = VideoInput::File(clip(seconds), sampling);

  ChatRequest req;
  ChatMessage u;
  u.role = "user";
  u.content.push_back(ContentPart::Video(video));
  u.content.push_back(ContentPart::Text("What happens in this video?"));
  req.messages.push_back(u);
  req.enable_thinking = false;
  SamplingParams params;
  params.temperature = 0;
  params.max_tokens = 1;
  params.speculative.mode = SpecMode::kOff;

  int64_t video_tokens = 0;
  {
    Status st;
    auto prepared = engine->prepare_chat(req, &st);
    if (!prepared) {
      state.SkipWithError(st.message.c_str());
      return;
    }
    const auto pad = engine->tokenize("<|video_pad|>");
    for (int32_t id : prepared->tokens()) video_tokens += !pad.empty() && id == pad[0];
  }
  double decode_s = 0, load_s = 0, vision_s = 0, prefill_s = 0;
  int64_t sampled = 0, decoded = 0, prompt_tokens = 0;
  for (auto _ : state) {
    // Decoding alone, as the engine does it: open, then only the sampled frames.
    const auto t0 = Clock::now();
    RequestVideo alone(video);
    const VideoFrameSource& source = alone.source();
    const VideoProcessorConfig config =
        video_config_for(VideoProcessorConfig{}, sampling, source.frames, source.height, source.width, source.fps);
    const std::vector<int64_t> indices = sample_frame_indices(source.frames, source.fps, config);
    for (int64_t i : indices) benchmark::DoNotOptimize(source.frame(i));
    decode_s += std::chrono::duration<double>(Clock::now() - t0).count();
    sampled = int64_t(indices.size());
    decoded = alone.decode_stats().frames_decoded;

    Status st;
    auto session = engine->new_session();  // a fresh session and no shared cache: nothing reused
    const auto t1 = Clock::now();
    double first = -1;
    GenerationResult r = session->chat(req, params, [&](const GenerationEvent&) {
      if (first < 0) first = std::chrono::duration<double>(Clock::now() - t1).count();
      return true;
    }, &st);
    const double total = std::chrono::duration<double>(Clock::now() - t1).count();
    if (!st.ok()) {
      state.SkipWithError(st.message.c_str());
      return;
    }
    state.SetIterationTime(first >= 0 ? first : total);
    load_s += r.timings.load_images_ms / 1000;
    vision_s += r.timings.vision_ms / 1000;
    prefill_s += r.timings.prefill_ms / 1000;
    prompt_tokens = r.prompt_tokens;
  }
  const double n = double(state.iterations());
  state.counters["decode_s"] = decode_s / n;
  state.counters["load_s"] = load_s / n;
  state.counters["vision_s"] = vision_s / n;
  state.counters["prefill_s"] = prefill_s / n;
  state.counters["frames_sampled"] = double(sampled);
  state.counters["frames_decoded"] = double(decoded);
  state.counters["video_tokens"] = double(video_tokens);
  state.counters["prompt_tokens"] = double(prompt_tokens);
}

BENCHMARK(BM_VideoFirstToken)
    ->Name("video")
    ->ArgNames({"seconds", "threads"})
    ->Args({10, 2})
    ->Args({30, 2})
    ->Args({120, 2})
    ->UseManualTime()
    ->Iterations(3)
    ->Unit(benchmark::kSecond);

// `--write-clip SECONDS FILE`: the frames, codec and keyframes of the clip a case synthesizes, in
// Matroska, written to FILE for another engine: llama-mtmd-cli pipes a file into ffprobe and
// ffmpeg, which cannot reach an MP4's index at the end of the file from a pipe (and FFmpeg moves
// the index to the front only when it can reopen the output by name).
int write_clip(const char* seconds_arg, const char* path) {
  const int seconds = std::atoi(seconds_arg);
  if (seconds < 1 || seconds > 3600) {
    std::fprintf(stderr, "video_bench: --write-clip SECONDS must be in [1, 3600], got '%s'\n", seconds_arg);
    return 2;
  }
  const std::vector<uint8_t> bytes = synthesize_clip(seconds, "matroska");
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(bytes.data()), std::streamsize(bytes.size()));
  if (!out) {
    std::fprintf(stderr, "video_bench: cannot write %s\n", path);
    return 1;
  }
  std::fprintf(stderr, "video_bench: wrote %s (%d s, 640x360 mpeg4 at 30 fps in Matroska, %zu bytes)\n", path, seconds, bytes.size());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc >= 2 && std::string(argv[1]) == "--write-clip") {
    if (argc != 4) {
      std::fprintf(stderr, "usage: video_bench --write-clip SECONDS FILE\n");
      return 2;
    }
    return write_clip(argv[2], argv[3]);
  }
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
