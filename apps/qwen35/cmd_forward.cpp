// qwen35 forward: run the decoder over given ids and write what it computed to a safetensors file.
#include <algorithm>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "apps/qwen35/args.h"
#include "apps/qwen35/engine_options.h"
#include "core/error.h"
#include "core/thread_pool.h"
#include "io/image.h"
#include "io/safetensors.h"
#include "model/image_processor.h"
#include "model/model.h"
#include "model/mrope_positions.h"

namespace qwen35::app {
namespace {

const char* kUsage =
    "usage: qwen35 forward -m MODEL --ids 1,2,3 [--image FILE ...] --out FILE.safetensors [options]\n"
    "\n"
    "Runs the decoder over the ids (prefill in blocks) and writes F32 tensors:\n"
    "  logits                  [T, vocab]   logits at every position\n"
    "  position_ids            [3, T] I64   MRoPE positions used (rows temporal, height, width)\n"
    "  input_ids               [T] I64      the ids after image-token expansion\n"
    "with --image (the ids hold one <|image_pad|> per image, expanded here as the processor does):\n"
    "  pixel_values            [patches, C*T*P*P]  processor output of all images\n"
    "  image_grid_thw          [images, 3] I64     (t, h, w) in patches\n"
    "  image_embeds            [image tokens, hidden]  vision tower output\n"
    "with --dump hidden:\n"
    "  hidden.<i>              [T, hidden]  residual stream after decoder layer i\n"
    "  final_norm              [T, hidden]  output of the final RMSNorm (input of the LM head)\n"
    "with --dump cache (state after the whole sequence):\n"
    "  cache.<i>.conv_state      [conv_dim, K]   DeltaNet layer i: last K pre-conv inputs, oldest first\n"
    "  cache.<i>.recurrent_state [Hv, dk, dv]    DeltaNet layer i: recurrent state S\n"
    "  cache.<i>.key             [n_kv, T, hd]   attention layer i: keys after k_norm and RoPE\n"
    "  cache.<i>.value           [n_kv, T, hd]   attention layer i: values\n"
    "\n"
    "options:\n"
    "  -m, --model PATH     Hugging Face model folder (config.json + safetensors) or GGUF file\n"
    "  --mmproj FILE        GGUF vision projector (default: mmproj*.gguf beside the model; 'none')\n"
    "  --ids LIST           comma-separated token ids\n"
    "  --out FILE           output safetensors file\n"
    "  --dump WHAT          comma-separated: hidden, cache\n"
    "  --image FILE         an image for the next <|image_pad|> (repeat for several)\n"
    "  --image-size N       resize images to N x N first (multiple of 32); default: native size\n"
    "  --block N            prefill block size in tokens (default 512)\n"
    "  --threads N          worker threads (default: all cores)\n"
    "  --delta-rule MODE    auto | chunked | recurrent (diagnostic; default auto)\n";

class HiddenCollector : public DecoderObserver {
 public:
  HiddenCollector(int layers, int64_t hidden) : hidden_(hidden), rows_(size_t(layers)) {}
  void on_layer_output(int layer, const float* x, int64_t T) override {
    rows_[size_t(layer)].insert(rows_[size_t(layer)].end(), x, x + T * hidden_);
  }
  const std::vector<float>& layer(int i) const { return rows_[size_t(i)]; }

 private:
  int64_t hidden_;
  std::vector<std::vector<float>> rows_;
};

DeltaRuleMode parse_mode(const std::string& s) {
  if (s == "auto") return DeltaRuleMode::kAuto;
  if (s == "chunked") return DeltaRuleMode::kChunked;
  if (s == "recurrent") return DeltaRuleMode::kRecurrent;
  fail("--delta-rule must be auto, chunked or recurrent, got '", s, "'");
}

void add_cache(SafetensorsWriter& out, const TextConfig& cfg, const TextWeights& w, const DecoderState& state) {
  int di = 0, ai = 0;
  for (int i = 0; i < cfg.num_layers; ++i) {
    const std::string p = "cache." + std::to_string(i) + ".";
    if (cfg.layer_kinds[size_t(i)] == LayerKind::kDeltaNet) {
      // HF's value-head order whatever the weights' order (GGUF weights are tiled).
      std::vector<float> conv, recurrent;
      deltanet_state_hf_order(cfg, w.layers[size_t(i)].deltanet, state.deltanet[size_t(di++)], conv, recurrent);
      out.add_f32(p + "conv_state", Shape{cfg.conv_dim(), cfg.conv_kernel}, conv.data());
      out.add_f32(p + "recurrent_state", Shape{cfg.linear_value_heads, cfg.linear_key_dim, cfg.linear_value_dim},
                  recurrent.data());
    } else {
      const KvCache& kv = state.kv[size_t(ai++)];
      const int64_t T = kv.length(), nkv = cfg.num_kv_heads, hd = cfg.head_dim;
      std::vector<float> k(size_t(nkv * T * hd)), v(k.size());
      for (int64_t t = 0; t < T; ++t)
        for (int64_t h = 0; h < nkv; ++h)
          for (int64_t d = 0; d < hd; ++d) {
            k[size_t((h * T + t) * hd + d)] = kv.key(t)[h * hd + d];
            v[size_t((h * T + t) * hd + d)] = kv.value(t)[h * hd + d];
          }
      out.add_f32(p + "key", Shape{nkv, T, hd}, k.data());
      out.add_f32(p + "value", Shape{nkv, T, hd}, v.data());
    }
  }
}

int run_forward(int argc, char** argv) {
  Args args(argc, argv,
            {"-m", "--model", "--ids", "--out", "--dump", "--block", "--threads", "--delta-rule", "--image-size",
             "--mmproj"},
            {"--help", "-h"}, {"--image"});
  if (args.has("--help") || args.has("-h")) {
    std::fputs(kUsage, stdout);
    return 0;
  }
  const std::string model_dir = args.get("-m").value_or(args.get_or("--model", ""));
  if (model_dir.empty()) fail("missing -m MODEL (see --help)");
  std::vector<int32_t> ids = parse_id_list(args.require("--ids"));
  const std::string out_path = args.require("--out");
  const std::string dump = args.get_or("--dump", "");
  const bool dump_hidden = dump.find("hidden") != std::string::npos;
  const bool dump_cache = dump.find("cache") != std::string::npos;
  const int64_t block = args.get_int_in("--block", 512, 1, 65536);
  const DeltaRuleMode mode = parse_mode(args.get_or("--delta-rule", "auto"));
  ThreadPool pool(int(args.get_int_in("--threads", 0, 0, max_threads())));
  kernels::Compute c{&kernels::active_table(), &pool};

  ModelLoadOptions files;
  files.mmproj = args.get_or("--mmproj", "");
  files.no_mmproj = files.mmproj == "none";
  if (files.no_mmproj) files.mmproj.clear();
  std::unique_ptr<Model> model = Model::load(model_dir, files);
  const TextConfig& cfg = model->config().text;
  const TextDecoder& dec = model->decoder();

  // Images: processor, vision tower, expansion of each <|image_pad|>, MRoPE positions.
  const std::vector<std::string> image_files = args.get_all("--image");
  const int image_size = int(args.get_int_in("--image-size", 0, 0, 8192));
  std::vector<ImageGrid> grids;
  std::vector<float> pixel_values, image_embeds;
  int64_t patch_dim = 0;
  if (!image_files.empty()) {
    if (!model->vision()) fail("this model has no vision tower");
    const ImageProcessorConfig pcfg =
        model->mmproj() ? ImageProcessorConfig::from_mmproj(*model->mmproj()) : ImageProcessorConfig::load(model_dir);
    for (const std::string& f : image_files) {
      ProcessedImage img = preprocess_image(load_image_file(f), pcfg, image_size);
      grids.push_back(img.grid);
      patch_dim = img.patch_dim;
      pixel_values.insert(pixel_values.end(), img.pixel_values.begin(), img.pixel_values.end());
    }
    ids = expand_image_tokens(ids, model->config().image_token_id, grids, pcfg.merge_size);
  }
  const int merge = model->config().vision.present ? model->config().vision.spatial_merge_size : 2;
  const MropePositions mp = get_rope_index(ids, model->config().image_token_id, grids, merge);
  const std::vector<int32_t>& positions = mp.positions;
  const int64_t T = int64_t(ids.size()), H = cfg.hidden_size, V = cfg.vocab_size;

  DecoderState state = DecoderState::create(cfg);
  state.reserve(T);
  DecoderWorkspace ws;
  HiddenCollector collector(cfg.num_layers, H);
  std::vector<float> hidden(size_t(T * H)), logits(size_t(T * V)), emb, pos_block;
  std::vector<int32_t> block_pos;
  if (!grids.empty()) image_embeds = model->vision()->encode(c, pixel_values, grids);
  int64_t image_row = 0;
  for (int64_t t0 = 0; t0 < T; t0 += block) {
    const int64_t n = std::min(block, T - t0);
    emb.resize(size_t(n * H));
    dec.embed(ids.data() + t0, n, emb.data());
    for (int64_t t = 0; t < n; ++t)  // image pads take the vision tower's rows, in order
      if (ids[size_t(t0 + t)] == model->config().image_token_id)
        std::copy_n(image_embeds.data() + image_row++ * H, H, emb.data() + t * H);
    block_pos.resize(size_t(3 * n));
    for (int a = 0; a < 3; ++a)
      std::copy_n(positions.data() + a * T + t0, n, block_pos.data() + a * n);
    dec.forward(c, emb.data(), block_pos.data(), n, state, ws, hidden.data() + t0 * H, mode,
                dump_hidden ? &collector : nullptr);
    dec.logits(c, hidden.data() + t0 * H, n, logits.data() + t0 * V);
  }

  SafetensorsWriter out;
  out.add_f32("logits", Shape{T, V}, logits.data());
  std::vector<int64_t> pos64(positions.begin(), positions.end());
  out.add_i64("position_ids", Shape{3, T}, pos64.data());
  std::vector<int64_t> ids64(ids.begin(), ids.end());
  out.add_i64("input_ids", Shape{T}, ids64.data());
  if (!grids.empty()) {
    std::vector<int64_t> thw;
    for (const ImageGrid& g : grids) thw.insert(thw.end(), {g.t, g.h, g.w});
    out.add_f32("pixel_values", Shape{int64_t(pixel_values.size()) / patch_dim, patch_dim}, pixel_values.data());
    out.add_i64("image_grid_thw", Shape{int64_t(grids.size()), 3}, thw.data());
    out.add_f32("image_embeds", Shape{int64_t(image_embeds.size()) / H, H}, image_embeds.data());
  }
  if (dump_hidden) {
    for (int i = 0; i < cfg.num_layers; ++i) out.add_f32("hidden." + std::to_string(i), Shape{T, H}, collector.layer(i).data());
    out.add_f32("final_norm", Shape{T, H}, hidden.data());
  }
  if (dump_cache) add_cache(out, cfg, model->text_weights(), state);
  out.write(out_path);
  return 0;
}

}  // namespace

// Errors (qwen35::Error) are reported by main() as "qwen35 forward: message", exit status 1.
int cmd_forward(int argc, char** argv) { return run_forward(argc, argv); }

}  // namespace qwen35::app
