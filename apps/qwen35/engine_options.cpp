#include "apps/qwen35/engine_options.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <thread>

#include "core/error.h"

namespace qwen35::app {

const std::set<std::string>& engine_option_names() {
  static const std::set<std::string> names = {"-m",          "--model",         "--threads",         "--ctx",
                                                "--image-size", "--prefill-block", "--decoding-prefill-block", "--decoding-prefill-layers", "--decoding-prefill-share", "--image-min-pixels", "--image-max-pixels",
                                                "--image-max-tokens", "--mmproj",    "--mtp",
                                                "--weights",    "--kv-type",       "--weights-cache", "--spec",       "--device",
                                                "--draft-max",  "--draft-vocab"};
  return names;
}

const char* kEngineOptionsHelp =
    "  -m, --model PATH      Hugging Face model folder (config.json, safetensors, tokenizer.json)\n"
    "                        or a GGUF file (any part of a split one)\n"
    "  --mmproj FILE         GGUF vision projector (default: an mmproj*.gguf beside the model; 'none': text only)\n"
    "  --mtp FILE            GGUF MTP-only sidecar (the MTP head's weights)\n"
    "  --threads N           worker threads (default 0: one per core; at most 4 per core)\n"
    "  --ctx N               context size in tokens (default: min(model maximum, 32768))\n"
    "  --image-size N        resize images to N x N first (multiple of 32); default: native size\n"
    "  --image-min-pixels N, --image-max-pixels N\n"
    "                        pixel limits of smart_resize (default: preprocessor_config.json)\n"
    "  --image-max-tokens N  larger images are resized down to at most N tokens, 32x32 pixels\n"
    "                        each (default 1024, about one megapixel; 0: only the pixel limits)\n"
    "  --prefill-block N     prompt tokens per prefill step (default 512)\n"
    "  --decoding-prefill-block N, --decoding-prefill-layers N, --decoding-prefill-share F\n"
    "                        (diagnostic; outputs are the same under any value) while other\n"
    "                        conversations decode, one prompt at a time advances by N tokens\n"
    "                        (default 64; rounded up to a multiple of 64, and only when\n"
    "                        --prefill-block is one) through N layers per step (default 2), the\n"
    "                        rest in the next steps; layers 0: paced, as many as keep a step\n"
    "                        within 1 + F (default 0.5; 0.01-16) times a step of decoding alone\n"
    "  --weights TYPE        convert float weights at load: q4_k_m, q8_0, q4_0, ..., bf16, f16, f32\n"
    "                        (default: the checkpoint's own types, or q4_k_m when they would not\n"
    "                        fit comfortably in memory)\n"
    "  --kv-type f16|f32     attention KV cache elements (default f16; f32: the reference's math)\n"
    "  --device auto|cpu|vulkan|vulkan:N  where the text decoder runs (default auto: a Vulkan GPU\n"
    "                        when there is one, else the CPU; a software rasterizer such as\n"
    "                        lavapipe counts as none; N: `qwen35 info --devices`). On a device:\n"
    "                        no speculative decoding or prefix-cache snapshots yet, no MoE models\n"
    "  --weights-cache DIR|on|off  keep the prepared (repacked) weights of models over 1 GiB in DIR\n"
    "                        and map them on later starts (default $QWEN35_CACHE_DIR, else\n"
    "                        $XDG_CACHE_HOME/qwen35, else ~/.cache/qwen35; one file per model;\n"
    "                        on: that default folder for a model of any size; it keeps 2 GiB\n"
    "                        or 5% of the disk free, removing least recently used files)\n"

    "  --spec MODE           speculative decoding, never changing the output (default auto):\n"
    "                          auto  per step the draft and length that pay, from measured costs and\n"
    "                                acceptance (the model's MTP head or prompt lookup), or none\n"
    "                          mtp   always --draft-max tokens from the MTP head\n"
    "                          pld   prompt lookup only (drafts copied from earlier text)\n"
    "                          off   none; with off or pld the MTP head is not run at all\n"
    "  --draft-max N         most draft tokens verified per step, 1..16 (default 8)\n"
    "  --draft-vocab N|full  the MTP head drafts from token ids [0, N) (rounded up to 16) and the\n"
    "                        added tokens only (default 32768: a BPE vocabulary's first, most\n"
    "                        frequent, merges); cheaper draft steps, same output. 0 or full: every id\n";

int64_t max_threads() { return std::max<int64_t>(64, 4 * int64_t(std::thread::hardware_concurrency())); }

std::string bundled_model_dir() {
  namespace fs = std::filesystem;
  if (const char* env = std::getenv("QWEN35_DEFAULT_MODEL"); env && *env) return env;
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (ec) return "";
  // Installed (bin/../share/qwen35), or in the build tree (build/bin/../../tests/data).
  for (const fs::path& dir : {exe.parent_path() / ".." / "share" / "qwen35" / "tiny-qwen35",
                             exe.parent_path() / ".." / ".." / "tests" / "data" / "tiny-qwen35"})
    if (fs::exists(dir / "config.json", ec)) return fs::weakly_canonical(dir, ec).string();
  return "";
}

std::string default_weights(const std::string& model_dir, std::string* notice) {
  namespace fs = std::filesystem;
  notice->clear();
  std::error_code ec;
  if (!fs::is_directory(model_dir, ec)) return "";
  uintmax_t bytes = 0;
  for (const auto& entry : fs::directory_iterator(model_dir, ec))
    if (entry.path().extension() == ".safetensors") bytes += entry.file_size(ec);
  const double memory = double(sysconf(_SC_PHYS_PAGES)) * double(sysconf(_SC_PAGESIZE));
  // "Comfortably": the weights plus caches, activations and everything else on the machine.
  if (memory <= 0 || double(bytes) <= 0.6 * memory) return "";
  char buf[400];
  std::snprintf(buf, sizeof buf,
                "qwen35: the checkpoint's %.1f GB of float weights would not fit comfortably in this machine's %.1f GB"
                " of memory; quantizing them at load to q4_k_m (about 0.31 of that size). --weights bf16 keeps them,"
                " --weights q8_0 quantizes less.\n",
                double(bytes) / 1e9, memory / 1e9);
  *notice = buf;
  return "q4_k_m";
}

// The bytes of a model's weight files (a GGUF file, or a folder's safetensors).
uint64_t model_file_bytes(const std::string& model) {
  std::error_code ec;
  if (!std::filesystem::is_directory(model, ec)) return std::filesystem::file_size(model, ec);
  uint64_t n = 0;
  for (const auto& e : std::filesystem::directory_iterator(model, ec))
    if (e.path().extension() == ".safetensors") n += e.file_size(ec);
  return n;
}

std::string default_cache_dir() {
  if (const char* d = std::getenv("QWEN35_CACHE_DIR"); d && *d) return d;
  if (const char* d = std::getenv("XDG_CACHE_HOME"); d && *d) return std::string(d) + "/qwen35";
  if (const char* h = std::getenv("HOME"); h && *h) return std::string(h) + "/.cache/qwen35";
  return "";
}

std::string model_or_bundled(const std::string& given) {
  if (!given.empty()) return given;
  const std::string dir = bundled_model_dir();
  if (dir.empty())
    fail("no model given and the bundled tiny model was not found; use -m MODEL or set QWEN35_DEFAULT_MODEL");
  std::fprintf(stderr,
               "qwen35: no model given (-m): using the bundled tiny test model %s\n"
               "        its weights are random, so its answers are gibberish; use -m MODEL for a real model\n",
               dir.c_str());
  return dir;
}

std::string model_or_bundled(const Args& args) {
  return model_or_bundled(args.get("-m").value_or(args.get_or("--model", "")));
}

EngineOptions engine_options_from(const Args& args) {
  EngineOptions o;
  o.model_dir = model_or_bundled(args);
  std::error_code ec;
  if (!std::filesystem::exists(o.model_dir, ec)) fail("model '", o.model_dir, "' does not exist");
  o.mmproj_path = args.get_or("--mmproj", "");
  if (o.mmproj_path == "none") o.mmproj_path.clear(), o.no_mmproj = true;
  o.mtp_path = args.get_or("--mtp", "");
  o.threads = int(args.get_int_in("--threads", 0, 0, max_threads()));
  o.context_size = args.get_int_in("--ctx", 0, 0, int64_t(1) << 24);
  o.image_size = int(args.get_int_in("--image-size", 0, 0, 8192));
  if (o.image_size % 32 != 0) fail("option --image-size must be a multiple of 32, got ", o.image_size);
  o.prefill_block = args.get_int_in("--prefill-block", 512, 1, 65536);
  DecodingPrefillDiagnostics& d = o.decoding_prefill;
  d.block = args.get_int_in("--decoding-prefill-block", d.block, 1, 65536);
  d.layers = int(args.get_int_in("--decoding-prefill-layers", d.layers, 0, 4096));
  d.share = args.get_double_in("--decoding-prefill-share", d.share, 0.01, 16);
  o.image_min_pixels = args.get_int_in("--image-min-pixels", 0, 0, int64_t(1) << 30);
  o.image_max_pixels = args.get_int_in("--image-max-pixels", 0, 0, int64_t(1) << 30);
  o.kv_type = args.get_or("--kv-type", "f16");
  if (o.kv_type != "f16" && o.kv_type != "f32") fail("option --kv-type must be f16 or f32, got ", o.kv_type);
  o.device = args.get_or("--device", "auto");
  o.weights = args.get_or("--weights", "");
  if (!args.has("--weights")) {
    std::string notice;
    o.weights = default_weights(o.model_dir, &notice);
    if (!notice.empty()) std::fputs(notice.c_str(), stderr);
  }
  const std::string cache = args.get_or("--weights-cache", "");
  // "on" is the default folder whatever the model's size (not a folder named "on" here).
  if (cache == "off" || cache == "none") o.weights_cache_dir.clear();
  else if (cache == "on") o.weights_cache_dir = default_cache_dir();
  else if (!cache.empty()) o.weights_cache_dir = cache;
  else if (model_file_bytes(o.model_dir) > (uint64_t(1) << 30)) o.weights_cache_dir = default_cache_dir();
  o.on_notice = [](const std::string& line) { std::fprintf(stderr, "qwen35: %s\n", line.c_str()); };
  if (o.image_min_pixels > 0 && o.image_max_pixels > 0 && o.image_min_pixels > o.image_max_pixels)
    fail("--image-min-pixels is larger than --image-max-pixels");
  o.image_max_tokens = args.get_int_in("--image-max-tokens", kDefaultImageMaxTokens, 0, int64_t(1) << 20);
  const std::string spec = args.get_or("--spec", "auto");
  if (!parse_spec_mode(spec, &o.speculative.mode)) fail("--spec must be auto, mtp, pld or off, got '", spec, "'");
  o.speculative.draft_max = int(args.get_int_in("--draft-max", o.speculative.draft_max, 1, SpeculativeParams::kMaxDraft));
  if (args.get_or("--draft-vocab", "") == "full") o.draft_vocab = 0;
  else o.draft_vocab = args.get_int_in("--draft-vocab", o.draft_vocab, 0, int64_t(1) << 30);
  return o;
}

std::unique_ptr<Engine> load_engine(const EngineOptions& options) {
  Status st;
  std::unique_ptr<Engine> engine = Engine::load(options, &st);
  if (!engine) fail(st.message);
  for (const std::string& w : engine->info().warnings) std::fprintf(stderr, "qwen35: warning: %s\n", w.c_str());
  return engine;
}

const std::set<std::string>& sampling_option_names() {
  static const std::set<std::string> names = {"--temp",  "--top-p",           "--top-k",
                                              "--min-p", "--seed",            "--presence-penalty",
                                              "--stop",  "--frequency-penalty", "--repeat-penalty", "--reasoning-budget"};
  return names;
}

const char* kSamplingOptionsHelp =
    "  --temp T              temperature, 0..2 (0 = greedy)\n"
    "  --top-p P, --top-k K, --min-p P   sampling filters (top-p in (0, 1], top-k >= 0, min-p 0..1)\n"
    "  --presence-penalty X, --frequency-penalty X (-2..2), --repeat-penalty X (0..10]\n"
    "  --seed S              random seed >= 0 (same seed, same output)\n"
    "  --stop TEXT           stop string (not printed)\n"
    "  --reasoning-budget N  thinking tokens before the engine closes the thought and the model\n"
    "                        answers (default -1: unlimited; 0: close it at once)\n";

int64_t reasoning_budget_from(const Args& args) {
  return args.get_int_in("--reasoning-budget", -1, -1, int64_t(1) << 30);
}

// The same ranges as the API's (server/openai/request.cpp).
SamplingParams sampling_from(const Args& args, SamplingParams p) {
  p.temperature = float(args.get_double_in("--temp", p.temperature, 0, 2));
  p.top_p = float(args.get_double_in("--top-p", p.top_p, 0, 1));
  if (args.has("--top-p") && p.top_p <= 0) fail("option --top-p must be above 0, got ", p.top_p);
  p.top_k = int(args.get_int_in("--top-k", p.top_k, 0, int64_t(1) << 30));
  p.min_p = float(args.get_double_in("--min-p", p.min_p, 0, 1));
  p.presence_penalty = float(args.get_double_in("--presence-penalty", p.presence_penalty, -2, 2));
  p.frequency_penalty = float(args.get_double_in("--frequency-penalty", p.frequency_penalty, -2, 2));
  p.repetition_penalty = float(args.get_double_in("--repeat-penalty", p.repetition_penalty, 0, 10));
  if (args.has("--repeat-penalty") && p.repetition_penalty <= 0)
    fail("option --repeat-penalty must be above 0, got ", p.repetition_penalty);
  if (args.has("--seed")) p.seed = uint64_t(args.get_int_in("--seed", 0, 0, INT64_MAX));
  if (auto s = args.get("--stop")) {
    if (s->empty()) fail("option --stop must not be empty");
    p.stop.push_back(*s);
  }
  p.reasoning_budget = reasoning_budget_from(args);
  return p;
}

}  // namespace qwen35::app
