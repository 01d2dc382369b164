// qwen35 forward: run the decoder over given ids and write what it computed to a safetensors file.
#include <algorithm>
#include <cstdio>
#include <memory>
#include <sstream>
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
#include "model/mtp.h"

namespace qwen35::app {
namespace {

const char* kUsage =
    "usage: qwen35 forward [-m MODEL] --ids 1,2,3 [--image FILE ...] --out FILE.safetensors [options]\n"
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
    "with --dump mtp (the multi-token-prediction head, vLLM's conventions; pair t = (h_t, x_{t+1}) at\n"
    "the main model's position of token t, x_T = the main model's greedy next token):\n"
    "  mtp_logits        [T, vocab]      row t: the head on (h_t, x_{t+1}), predicting x_{t+2}; the last\n"
    "                                    row is draft step 1\n"
    "  mtp_hidden        [T, hidden]     the head's output after mtp.norm (input of the LM head)\n"
    "  mtp_k, mtp_v      [n_kv, T, hd]   the head's KV cache after the T pairs (keys after k_norm, RoPE)\n"
    "  mtp_draft_ids     [K] I64         greedy draft d_1..d_K (d_k guesses x_{T+k}); step k > 1 feeds\n"
    "                                    back (mtp_hidden of step k-1, d_{k-1}) one position further on\n"
    "  mtp_draft_logits  [K, vocab]      the logits each draft token was taken from\n"
    "  main_greedy_id    [1] I64         x_T\n"
    "\n"
    "options:\n"
    "  -m, --model PATH     Hugging Face model folder (config.json + safetensors) or GGUF file\n"
    "  --mmproj FILE        GGUF vision projector (default: mmproj*.gguf beside the model; 'none')\n"
    "  --ids LIST           comma-separated token ids\n"
    "  --out FILE           output safetensors file\n"
    "  --dump WHAT          comma-separated: hidden, cache, mtp\n"
    "  --draft K            draft steps of --dump mtp (default 3)\n"
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

// [n_kv, T, hd] copy of a KV cache (the layout of the reference's cache tensors).
std::vector<float> heads_major(const KvCache& kv, int64_t nkv, int64_t hd, bool keys) {
  const int64_t T = kv.length();
  std::vector<float> out(size_t(nkv * T * hd)), row(size_t(nkv * hd));
  for (int64_t t = 0; t < T; ++t) {
    if (keys) kv.key_f32(t, row.data());
    else kv.value_f32(t, row.data());
    for (int64_t h = 0; h < nkv; ++h)
      for (int64_t d = 0; d < hd; ++d) out[size_t((h * T + t) * hd + d)] = row[size_t(h * hd + d)];
  }
  return out;
}

int32_t argmax_row(const float* row, int64_t n) {
  int32_t best = 0;  // lowest id on exact ties, as greedy sampling
  for (int64_t i = 1; i < n; ++i)
    if (row[i] > row[best]) best = int32_t(i);
  return best;
}

// The MTP head over the prompt's T pairs (h_t, x_{t+1}), then `draft` greedy draft steps.
void add_mtp(SafetensorsWriter& out, const kernels::Compute& c, const Model& model, const std::vector<int32_t>& ids,
             const std::vector<float>& embeddings, const std::vector<float>& hidden, const MropePositions& mp,
             const std::vector<float>& logits, int64_t block, int64_t draft) {
  const MtpHead* head = model.mtp();
  if (!head) fail("--dump mtp: this model has no MTP head (no mtp.* tensors)");
  const TextConfig& cfg = model.config().text;
  const int64_t T = int64_t(ids.size()), H = cfg.hidden_size, V = cfg.vocab_size;
  const int32_t greedy = argmax_row(logits.data() + (T - 1) * V, V);

  // Pair t: the embedding of token t+1 as the main model saw it (image rows included), the
  // hidden state and position of token t.
  std::vector<float> next_emb(size_t(T * H));
  std::copy(embeddings.begin() + H, embeddings.end(), next_emb.begin());
  head->embed(&greedy, 1, next_emb.data() + (T - 1) * H);
  KvCache kv = head->make_cache(DType::F32);  // the reference's math, like the trunk's cache here
  kv.reserve(T + draft);
  MtpWorkspace ws;
  std::vector<float> mtp_hidden(size_t(T * H)), pos;
  std::vector<int32_t> block_pos;
  for (int64_t t0 = 0; t0 < T; t0 += block) {
    const int64_t n = std::min(block, T - t0);
    block_pos.resize(size_t(3 * n));
    for (int a = 0; a < 3; ++a) std::copy_n(mp.axis(a) + t0, n, block_pos.data() + a * n);
    head->forward(c, next_emb.data() + t0 * H, hidden.data() + t0 * H, block_pos.data(), n, kv, ws,
                  mtp_hidden.data() + t0 * H);
  }
  std::vector<float> mtp_logits(size_t(T * V));
  head->logits(c, mtp_hidden.data(), T, mtp_logits.data());
  const std::vector<float> k_rows = heads_major(kv, cfg.num_kv_heads, cfg.head_dim, true);
  const std::vector<float> v_rows = heads_major(kv, cfg.num_kv_heads, cfg.head_dim, false);

  // Draft: step 1 is the last pair; step k > 1 runs (hm_{k-1}, d_{k-1}) at the decode position of
  // token T-2+k (cache index + rope delta on all axes).
  std::vector<int64_t> draft_ids;
  std::vector<float> draft_logits(size_t(draft * V)), fed_back(mtp_hidden.end() - H, mtp_hidden.end()),
      emb(static_cast<size_t>(H));
  for (int64_t k = 0; k < draft; ++k) {
    if (k > 0) {
      const int32_t prev = int32_t(draft_ids.back());
      head->embed(&prev, 1, emb.data());
      const int32_t p = int32_t(decode_position(T - 1 + k, mp.rope_delta));
      const int32_t p3[3] = {p, p, p};
      head->forward(c, emb.data(), fed_back.data(), p3, 1, kv, ws, fed_back.data());
    }
    head->logits(c, fed_back.data(), 1, draft_logits.data() + k * V);
    draft_ids.push_back(argmax_row(draft_logits.data() + k * V, V));
  }

  out.add_f32("mtp_logits", Shape{T, V}, mtp_logits.data());
  out.add_f32("mtp_hidden", Shape{T, H}, mtp_hidden.data());
  out.add_f32("mtp_k", Shape{cfg.num_kv_heads, T, cfg.head_dim}, k_rows.data());
  out.add_f32("mtp_v", Shape{cfg.num_kv_heads, T, cfg.head_dim}, v_rows.data());
  out.add_i64("mtp_draft_ids", Shape{draft}, draft_ids.data());
  out.add_f32("mtp_draft_logits", Shape{draft, V}, draft_logits.data());
  const int64_t g64 = greedy;
  out.add_i64("main_greedy_id", Shape{1}, &g64);
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
      out.add_f32(p + "key", Shape{nkv, T, hd}, heads_major(kv, nkv, hd, true).data());
      out.add_f32(p + "value", Shape{nkv, T, hd}, heads_major(kv, nkv, hd, false).data());
    }
  }
}

int run_forward(int argc, char** argv) {
  Args args(argc, argv,
            {"-m", "--model", "--ids", "--out", "--dump", "--block", "--threads", "--delta-rule", "--image-size",
             "--mmproj", "--draft"},
            {"--help", "-h"}, {"--image"});
  if (args.has("--help") || args.has("-h")) {
    std::fputs(kUsage, stdout);
    return 0;
  }
  const std::string model_dir = model_or_bundled(args);
  std::vector<int32_t> ids = parse_id_list(args.require("--ids"));
  const std::string out_path = args.require("--out");
  bool dump_hidden = false, dump_cache = false, dump_mtp = false;
  {
    std::stringstream words(args.get_or("--dump", ""));
    for (std::string w; std::getline(words, w, ',');) {
      if (w == "hidden") dump_hidden = true;
      else if (w == "cache") dump_cache = true;
      else if (w == "mtp") dump_mtp = true;
      else fail("--dump: unknown item '", w, "' (expected hidden, cache, mtp)");
    }
  }
  const int64_t draft = args.get_int_in("--draft", 3, 1, 64);
  if (args.has("--draft") && !dump_mtp) fail("--draft needs --dump mtp");
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
  std::vector<float> hidden(size_t(T * H)), logits(size_t(T * V)), emb, all_emb;
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
    if (dump_mtp) all_emb.insert(all_emb.end(), emb.begin(), emb.end());
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
  if (dump_mtp) add_mtp(out, c, *model, ids, all_emb, hidden, mp, logits, block, draft);
  out.write(out_path);
  return 0;
}

}  // namespace

// Errors (qwen35::Error) are reported by main() as "qwen35 forward: message", exit status 1.
int cmd_forward(int argc, char** argv) { return run_forward(argc, argv); }

}  // namespace qwen35::app
