// qwen35 convert: write a model as GGUF that llama.cpp opens (HF folder -> GGUF, or GGUF -> GGUF
// requantized), and its vision tower as an mmproj.
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <string>

#include "apps/qwen35/args.h"
#include "apps/qwen35/engine_options.h"
#include "apps/qwen35/quant_presets.h"
#include "core/error.h"
#include "core/thread_pool.h"
#include "io/gguf_writer.h"
#include "model/gguf_export.h"
#include "model/image_processor.h"
#include "model/model.h"
#include "text/tokenizer_gguf.h"
#include "text/tokenizer_json.h"

namespace qwen35::app {
namespace {

const char* kUsage =
    "usage: qwen35 convert [-m HF_DIR|MODEL.gguf] --out MODEL.gguf [--type TYPE] [--mmproj OUT.gguf]\n"
    "                      [--mmproj-type f16|bf16|f32|q8_0] [--no-mtp] [--threads N]\n"
    "\n"
    "Writes the model as a GGUF file for llama.cpp and qwen35 (names, metadata, tokenizer, chat\n"
    "template and value-head order as llama.cpp's converter writes them; the tensor types of\n"
    "llama-quantize's preset). A GGUF input is requantized (its tokenizer and metadata are kept).\n"
    "\n"
    "options:\n"
    "  -m, --model PATH   Hugging Face folder, or a GGUF file (with its mmproj*.gguf next to it,\n"
    "                     or --mmproj-in FILE, for --mmproj)\n"
    "  --out FILE         the text model GGUF to write\n"
    "  --type TYPE        bf16 (default for a folder) or another llama-quantize preset:\n"
    "                     %s\n"
    "  --mmproj FILE      also write the vision projector (clip mmproj)\n"
    "  --mmproj-type T    its matrices: f16 (default), bf16, f32 or q8_0\n"
    "  --mmproj-in FILE   the mmproj of a GGUF input (default: found next to it)\n"
    "  --no-mtp           leave out the MTP block (blk.N.nextn.*)\n"
    "  --threads N        encoding threads (default: all cores)\n";

// One line, rewritten at most every half second.
void progress_line(const char* what, size_t done, size_t total, std::chrono::steady_clock::time_point start) {
  static double last = -1;
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (done != total && done != 1 && s - last < 0.5) return;
  last = s;
  std::fprintf(stderr, "\r%s: tensor %zu/%zu (%.0f%%, %.1f s)", what, done, total, 100.0 * double(done) / double(total), s);
  if (done == total) std::fprintf(stderr, "\n");
}

}  // namespace

int cmd_convert(int argc, char** argv) {
  Args args(argc, argv, {"-m", "--model", "--out", "--type", "--mmproj", "--mmproj-type", "--mmproj-in", "--threads"},
            {"--no-mtp", "--help", "-h"});
  if (args.has("--help") || args.has("-h")) {
    std::printf(kUsage, preset_names().c_str());
    return 0;
  }
  const std::string input = model_or_bundled(args);
  const std::string out = args.require("--out");
  const bool from_gguf = is_gguf_file(input);
  const std::string type_name = args.get_or("--type", from_gguf ? "" : "bf16");
  if (type_name.empty()) fail("--type is required when the input is a GGUF (requantizing)");
  const QuantPreset preset = find_preset(type_name);
  const std::string mmproj_out = args.get_or("--mmproj", "");
  const QuantPreset mmproj_preset = find_preset(args.get_or("--mmproj-type", "f16"));
  if (!mmproj_preset_ok(mmproj_preset)) fail("--mmproj-type must be f16, bf16, f32 or q8_0");
  if (std::filesystem::absolute(out) == std::filesystem::absolute(input)) fail("--out must differ from the input");

  ModelLoadOptions files;
  files.prepare = false;  // the tensors as stored: no repacking for a kernel table
  files.mmproj = args.get_or("--mmproj-in", "");
  files.no_mmproj = mmproj_out.empty();
  std::unique_ptr<Model> model = Model::load(input, files);
  ThreadPool pool(int(args.get_int("--threads", 0)));

  GgufExportOptions o;
  o.mtp = !args.has("--no-mtp");
  o.pool = &pool;
  // general.name: the folder's or the file's name ("Qwen3.5-9B"), as llama.cpp's converter names it.
  std::filesystem::path named = std::filesystem::path(input).lexically_normal();
  if (named.filename().empty()) named = named.parent_path();
  o.name = from_gguf ? named.stem().string() : named.filename().string();
  if (from_gguf)  // requantizing keeps the source's name, as llama-quantize does
    if (auto n = model->gguf()->get_string_opt("general.name")) o.name = std::string(*n);
  const TextConfig& tc = model->config().text;
  o.file_type = preset_file_type(preset);
  o.plan_types = preset_plan(preset, tc.num_heads / tc.num_kv_heads, tc.num_experts);
  GgufWriter w;
  export_text_gguf(*model, o, w);
  if (from_gguf) {
    copy_tokenizer_keys(*model->gguf(), w);
  } else {
    const TokenizerSpec spec = load_tokenizer_json(model->dir());
    write_tokenizer_gguf(spec, tokenizer_keys_from_hf(model->dir(), spec, model->config().text.vocab_size), w);
  }
  const auto start = std::chrono::steady_clock::now();
  w.write(out, [&](size_t d, size_t n) { progress_line(out.c_str(), d, n, start); });

  if (!mmproj_out.empty()) {
    if (!model->vision())
      fail(input, " has no vision tower", from_gguf ? " (no mmproj next to it; give --mmproj-in FILE)" : "");
    GgufExportOptions v = o;
    v.file_type = preset_file_type(mmproj_preset);
    v.plan_types = preset_plan(mmproj_preset, 1, 0);
    std::array<double, 3> mean{0.5, 0.5, 0.5}, stdev{0.5, 0.5, 0.5};
    if (from_gguf) {
      for (int i = 0; i < 3; ++i) {
        mean[size_t(i)] = model->mmproj()->get_array("clip.vision.image_mean").float_at(uint64_t(i));
        stdev[size_t(i)] = model->mmproj()->get_array("clip.vision.image_std").float_at(uint64_t(i));
      }
    } else {
      const ImageProcessorConfig pc = ImageProcessorConfig::load(model->dir());
      mean = pc.image_mean;
      stdev = pc.image_std;
    }
    GgufWriter mw;
    export_mmproj_gguf(*model, v, mean, stdev, mw);
    const auto mstart = std::chrono::steady_clock::now();
    mw.write(mmproj_out, [&](size_t d, size_t n) { progress_line(mmproj_out.c_str(), d, n, mstart); });
  }
  return 0;
}

}  // namespace qwen35::app
