// qwen35 run: answer one prompt about an image or a video (or '-' for text only), streamed to the terminal.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>

#include "apps/qwen35/args.h"
#include "apps/qwen35/engine_options.h"
#include "apps/qwen35/input_files.h"
#include "core/error.h"
#include "io/image.h"

namespace qwen35::app {
namespace {

const char* kUsage =
    "usage: qwen35 run [-m MODEL_DIR] IMAGE|VIDEO|- \"prompt\" [options]\n"
    "\n"
    "Answers the prompt about IMAGE (JPEG, PNG, WebP, GIF, BMP; at most 64 MiB), VIDEO (MP4/MOV,\n"
    "WebM/MKV, AVI, MPEG-TS, FLV, animated GIF or WebP; at most 1 GiB; 2 frames per second of it are\n"
    "used, as the official processor does), or about nothing with '-'. Which one it is comes from the\n"
    "file's content.\n"
    "The answer goes to stdout as it is generated; the reasoning and one perf line\n"
    "go to stderr: vision ms | prefill tokens and ms | decode tokens and tok/s | drafts accepted.\n"
    "\n"
    "options:\n"
    "  --no-think            answer at once (default: the model thinks first, as in the API and UI)\n"
    "  --system TEXT         system prompt\n"
    "  -n N                  at most N new tokens (default 512; -1: until the answer ends)\n"
    "  --video-fps X         frames of a video sampled per second (default 2, as the official processor)\n"
    "  --video-max-frames N  most frames sampled from a video (default 768)\n"
    "  --video-max-tokens N  most tokens of a video: its frames are made smaller to fit (default 16384,\n"
    "                        above what the official processor's budget gives a clip of 3 frames or more)\n";

// An image or a video, told apart by content (the extension may lie or be missing): an animated
// GIF or WebP is a short video, any other known image format an image, and the rest goes to the
// video decoder, which names the problem if it is no video either.
ContentPart read_media(const std::string& path, const VideoSampling& sampling) {
  const std::string s = read_capped(path, kMaxVideoFileBytes, "image or video file");
  std::vector<uint8_t> bytes(s.begin(), s.end());
  if (sniff_image_format(bytes) != ImageFormat::kUnknown && !is_animated_image(bytes)) {
    if (bytes.size() > kMaxImageFileBytes) fail("image file '", path, "' is larger than ", kMaxImageFileBytes >> 20, " MiB");
    return ContentPart::Image(std::move(bytes));
  }
  return ContentPart::Video(VideoInput::File(std::move(bytes), sampling));
}

int run_run(int argc, char** argv) {
  std::set<std::string> with_value = {"-n", "--system", "--video-fps", "--video-max-frames", "--video-max-tokens"};
  with_value.insert(engine_option_names().begin(), engine_option_names().end());
  with_value.insert(sampling_option_names().begin(), sampling_option_names().end());
  Args args(argc, argv, with_value, {"--think", "--no-think", "--help", "-h"});
  if (args.has("--help") || args.has("-h")) {
    std::printf("%s%s%s", kUsage, kEngineOptionsHelp, kSamplingOptionsHelp);
    return 0;
  }
  if (args.positionals().size() != 2) fail("expected IMAGE, VIDEO (or -) and a prompt (see --help)");
  const std::string media = args.positionals()[0], prompt = args.positionals()[1];
  VideoSampling sampling;
  if (auto fps = args.get("--video-fps")) {
    char* end = nullptr;
    sampling.fps = std::strtod(fps->c_str(), &end);
    if (end == fps->c_str() || *end != '\0' || !(sampling.fps > 0) || sampling.fps > 60)
      fail("option --video-fps: expected a number above 0 and at most 60, got '", *fps, "'");
  }
  sampling.max_frames = args.get_int_in("--video-max-frames", 768, 1, 768);
  sampling.max_tokens = args.get_int_in("--video-max-tokens", 16384, 1, int64_t(1) << 24);

  ChatRequest req;
  if (auto sys = args.get("--system")) req.messages.push_back(ChatMessage::Text("system", *sys));
  ChatMessage user;
  user.role = "user";
  if (media != "-") user.content.push_back(read_media(media, sampling));
  user.content.push_back(ContentPart::Text(prompt));
  req.messages.push_back(std::move(user));
  if (args.has("--think") && args.has("--no-think")) fail("--think and --no-think contradict each other");
  req.enable_thinking = !args.has("--no-think");

  // Every option is checked before the model loads.
  const int64_t max_tokens = args.get_int_in("-n", 512, -1, int64_t(1) << 30);
  sampling_from(args, SamplingParams{});
  const EngineOptions eo = engine_options_from(args);
  std::unique_ptr<Engine> engine = load_engine(eo);
  SamplingParams params = sampling_from(args, engine->default_sampling());
  params.max_tokens = max_tokens;

  const bool color = isatty(STDERR_FILENO);
  bool in_reasoning = false;
  auto session = engine->new_session();
  Status st;
  GenerationResult r = session->chat(
      req, params,
      [&](const GenerationEvent& ev) {
        if (ev.channel == Channel::kReasoning) {
          if (!in_reasoning && color) std::fputs("\x1b[2m", stderr);
          in_reasoning = true;
          std::fwrite(ev.text.data(), 1, ev.text.size(), stderr);
        } else {
          if (in_reasoning) {
            std::fputs(color ? "\x1b[0m\n" : "\n", stderr);
            in_reasoning = false;
          }
          std::fwrite(ev.text.data(), 1, ev.text.size(), stdout);
          std::fflush(stdout);
        }
        return true;
      },
      &st);
  if (in_reasoning) std::fputs(color ? "\x1b[0m\n" : "\n", stderr);
  if (!st.ok()) fail(st.message);
  std::printf("\n");
  const Timings& t = r.timings;
  const double tps = t.decode_ms > 0 ? 1000.0 * double(t.decode_tokens) / t.decode_ms : 0.0;
  std::fprintf(stderr,
               "vision %.0f ms | prefill %lld tokens in %.0f ms (%lld cached) | decode %lld tokens, %.1f tok/s | "
               "drafts %lld/%lld accepted\n",
               t.vision_ms + t.load_images_ms, (long long)t.prefill_tokens, t.prefill_ms, (long long)r.cached_tokens,
               (long long)r.completion_tokens, tps, (long long)r.accepted(), (long long)r.drafted());
  return 0;
}

}  // namespace

// Errors (qwen35::Error) are reported by main() as "qwen35 run: message", exit status 1.
int cmd_run(int argc, char** argv) { return run_run(argc, argv); }

}  // namespace qwen35::app
