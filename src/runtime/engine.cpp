#include <algorithm>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "io/gguf.h"
#include "text/chat_template_check.h"
#include "text/tokenizer_gguf.h"
#include "runtime/device_choice.h"
#include "runtime/engine_internal.h"
#include "runtime/output_constraint.h"
#include "runtime/session_impl.h"

namespace qwen35 {
namespace {

// Sampling defaults and stop ids from generation_config.json, when the folder has one.
void read_generation_config(const std::string& dir, SamplingParams& p, std::vector<int32_t>& eos) {
  std::ifstream in(dir + "/generation_config.json");
  if (!in) return;
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception& e) {
    fail(dir, "/generation_config.json: not valid JSON (", e.what(), ")");
  }
  if (!j.is_object()) return;
  auto num = [&](const char* key, auto& out) {
    if (j.contains(key) && j[key].is_number()) out = j[key].get<std::decay_t<decltype(out)>>();
  };
  const bool sample = !j.contains("do_sample") || !j["do_sample"].is_boolean() || j["do_sample"].get<bool>();
  num("temperature", p.temperature);
  num("top_p", p.top_p);
  num("top_k", p.top_k);
  num("repetition_penalty", p.repetition_penalty);
  if (!sample) p.temperature = 0;
  auto e = j.find("eos_token_id");
  if (e != j.end()) {
    if (e->is_number_integer()) eos.push_back(e->get<int32_t>());
    if (e->is_array())
      for (const auto& x : *e)
        if (x.is_number_integer()) eos.push_back(x.get<int32_t>());
  }
}

}  // namespace

bool EngineImpl::is_eos(int32_t id) const { return std::find(eos_ids.begin(), eos_ids.end(), id) != eos_ids.end(); }

std::shared_ptr<const grammar::TokenVocab> EngineImpl::grammar_vocab() const {
  std::call_once(grammar_vocab_once, [&] {
    grammar_vocab_ = grammar::TokenVocab::from_tokenizer(*tokenizer, {think_start_id, think_end_id});
  });
  return grammar_vocab_;
}

std::unique_ptr<Engine> Engine::load(const EngineOptions& options, Status* status) {
  auto progress = [&](const char* stage, double f) {
    if (options.on_progress) options.on_progress(stage, f);
  };
  try {
    auto engine = std::unique_ptr<Engine>(new Engine());
    engine->impl_ = std::make_unique<EngineImpl>();
    EngineImpl& e = *engine->impl_;
    e.options = options;
    if (options.image_size < 0 || options.image_size % 32 != 0)
      fail("image size ", options.image_size, " must be a positive multiple of 32");
    progress("config", 0.0);
    std::error_code ec;
    const bool folder = std::filesystem::is_directory(options.model_dir, ec);
    if (!folder && !is_gguf_file(options.model_dir))
      fail("model '", options.model_dir, "' is neither a Hugging Face folder nor a GGUF file");
    e.pool = std::make_unique<ThreadPool>(options.threads);
    e.compute = kernels::Compute{&kernels::active_table(), e.pool.get()};
    progress("weights", 0.1);
    std::string device_why;
    int device_index = choose_decoder_device(options.device, device_why);
    ModelLoadOptions load;
    load.prepare = device_index < 0;  // a device reads the weights in their stored formats
    load.mmproj = options.mmproj_path;
    load.no_mmproj = options.no_mmproj;
    load.mtp = options.mtp_path;
    load.weights = options.weights;
    load.table = e.compute.k;
    load.pool = e.pool.get();
    load.on_prepare_progress = [&](double f) { progress("weights", 0.1 + 0.5 * f); };
    load.weights_cache_dir = options.weights_cache_dir;
    load.on_notice = options.on_notice;
    e.model = Model::load(options.model_dir, load);
    if (device_index >= 0) {
      // The device holds the decoder's weights and a sequence's caches; a model that does not fit
      // runs on the CPU (its weights loaded again, prepared for the CPU's kernels).
      const int64_t max_pos = e.model->config().text.max_position_embeddings;
      const int64_t context = options.context_size > 0 ? options.context_size : std::min<int64_t>(max_pos, 32768);
      const std::string misfit =
          decoder_device_misfit(device_index, *e.model, context, options.kv_type == "f32" ? DType::F32 : DType::F16);
      if (!misfit.empty()) {
        device_index = -1;
        device_why = misfit;
        load.prepare = true;
        e.model.reset();
        e.model = Model::load(options.model_dir, load);
      }
    }
    if (options.on_notice) options.on_notice("text decoder on " + device_why);
    progress("tokenizer", 0.6);
    if (e.model->is_gguf()) {
      e.tokenizer = std::make_unique<Tokenizer>(tokenizer_spec_from_gguf(*e.model->gguf()));
      if (e.tokenizer->vocab_size() > e.model->config().text.vocab_size)
        fail(options.model_dir, ": the tokenizer has ", e.tokenizer->vocab_size(), " tokens but the embedding only ",
             e.model->config().text.vocab_size, " rows");
    } else {
      e.tokenizer = std::make_unique<Tokenizer>(Tokenizer::from_file(options.model_dir));
    }
    progress("image processor", 0.9);
    if (e.model->mmproj()) e.image_config = ImageProcessorConfig::from_mmproj(*e.model->mmproj());
    else if (folder) e.image_config = ImageProcessorConfig::load(options.model_dir);
    if (folder && !e.model->mmproj()) {
      e.video_config = VideoProcessorConfig::load(options.model_dir);
    } else {
      // An mmproj has no video settings: the published ones, with the tower's patch geometry and
      // normalisation from the file.
      VideoProcessorConfig& v = e.video_config;
      v.patch_size = e.image_config.patch_size;
      v.merge_size = e.image_config.merge_size;
      v.image_mean = e.image_config.image_mean;
      v.image_std = e.image_config.image_std;
    }
    if (options.image_min_pixels > 0) e.image_config.min_pixels = options.image_min_pixels;
    if (options.image_max_pixels > 0) e.image_config.max_pixels = options.image_max_pixels;
    if (options.image_max_tokens < 0) fail("image max tokens must be positive (0: no limit)");
    if (options.image_max_tokens > 0) {
      // A token covers factor x factor pixels; smart_resize keeps the area within max_pixels.
      ImageProcessorConfig& p = e.image_config;
      const int64_t per_token = int64_t(p.factor()) * p.factor();
      p.max_pixels = std::min(p.max_pixels, std::max<int64_t>(1, options.image_max_tokens) * per_token);
      p.min_pixels = std::min(p.min_pixels, p.max_pixels);
    }
    if (const VisionConfig& v = e.model->config().vision; v.present) {
      // The processor expands and positions image tokens with its own patch and merge sizes;
      // the vision tower produces tokens with the config's. They must agree.
      const ImageProcessorConfig& p = e.image_config;
      if (p.patch_size != v.patch_size || p.temporal_patch_size != v.temporal_patch_size ||
          p.merge_size != v.spatial_merge_size)
        fail("preprocessor_config.json (patch ", p.patch_size, ", temporal ", p.temporal_patch_size, ", merge ",
             p.merge_size, ") disagrees with config.json vision_config (patch ", v.patch_size, ", temporal ",
             v.temporal_patch_size, ", merge ", v.spatial_merge_size, ")");
      const VideoProcessorConfig& q = e.video_config;
      if (q.patch_size != v.patch_size || q.temporal_patch_size != v.temporal_patch_size ||
          q.merge_size != v.spatial_merge_size)
        fail("video_preprocessor_config.json (patch ", q.patch_size, ", temporal ", q.temporal_patch_size, ", merge ",
             q.merge_size, ") disagrees with config.json vision_config (patch ", v.patch_size, ", temporal ",
             v.temporal_patch_size, ", merge ", v.spatial_merge_size, ")");
    }
    const ModelConfig& cfg = e.model->config();
    e.defaults = SamplingParams{};
    if (folder) read_generation_config(options.model_dir, e.defaults, e.eos_ids);
    const SpeculativeParams& spec = options.speculative;
    if (spec.draft_max < 1 || spec.draft_max > SpeculativeParams::kMaxDraft)
      fail("draft max ", spec.draft_max, " must be in [1, ", SpeculativeParams::kMaxDraft, "]");
    if (spec.mode == SpecMode::kMtp && !e.model->mtp())
      fail("speculative mode 'mtp' needs a multi-token-prediction head, and this model has none (no mtp.* tensors, no GGUF MTP block or --mtp sidecar)");
    e.defaults.speculative = spec;
    // On a device, prompt lookup's saves and rewinds are device copies; the MTP head runs on the
    // host over the decoder's final-normed rows, which then come back with the logits.
    if (device_index >= 0) e.device = open_decoder_device(device_index, *e.model);
    if (spec.mode == SpecMode::kAuto || spec.mode == SpecMode::kMtp) e.mtp = e.model->mtp();
    for (int64_t id : cfg.eos_token_ids) e.eos_ids.push_back(int32_t(id));
    for (const char* name : {"<|im_end|>", "<|endoftext|>"})
      if (auto id = e.tokenizer->token_to_id(name)) e.eos_ids.push_back(*id);
    std::sort(e.eos_ids.begin(), e.eos_ids.end());
    e.eos_ids.erase(std::unique(e.eos_ids.begin(), e.eos_ids.end()), e.eos_ids.end());
    e.think_start_id = e.tokenizer->token_to_id("<think>").value_or(-1);
    e.think_end_id = e.tokenizer->token_to_id("</think>").value_or(-1);
    if (options.draft_vocab < 0) fail("draft vocabulary ", options.draft_vocab, " must be >= 0 (0: every id)");
    if (e.mtp) {
      // The added tokens (and whichever stop and thought ids are not among them): ids a draft must
      // be able to name even when they sit at the top of the vocabulary.
      std::vector<int32_t> extra = e.eos_ids;
      for (const AddedToken& t : e.tokenizer->added_tokens()) extra.push_back(t.id);
      extra.push_back(e.think_start_id);
      extra.push_back(e.think_end_id);
      e.draft_vocab = DraftVocab::subset(e.mtp->weights().lm_head, options.draft_vocab, extra);
    }
    if (e.think_start_id >= 0 && e.think_end_id >= 0) e.thought_closing_ids = e.tokenizer->encode(kThoughtClosing);
    e.image_pad_id = int32_t(cfg.image_token_id);
    e.video_pad_id = int32_t(cfg.video_token_id);

    const int64_t max_pos = cfg.text.max_position_embeddings;
    e.context_size = options.context_size > 0 ? options.context_size : std::min<int64_t>(max_pos, 32768);
    if (e.context_size > max_pos) fail("context size ", e.context_size, " exceeds the model's maximum of ", max_pos);
    if (options.prefill_block <= 0) fail("prefill block must be positive");
    if (options.decoding_prefill.block <= 0) fail("prefill block while decoding must be positive");
    if (options.decoding_prefill.layers < 0) fail("prefill layers while decoding must not be negative (0: paced)");
    if (!(options.decoding_prefill.share > 0 && options.decoding_prefill.share <= 16))
      fail("prefill share while decoding must be in (0, 16], got ", options.decoding_prefill.share);
    if (options.kv_type == "f16") e.kv_dtype = DType::F16;
    else if (options.kv_type == "f32") e.kv_dtype = DType::F32;
    else fail("KV cache type '", options.kv_type, "': expected f16 or f32");

    ModelInfo& info = e.info;
    info.path = options.model_dir;
    info.name = std::filesystem::path(options.model_dir).lexically_normal().filename().string();
    if (!folder) {  // "Qwen3.5-9B-Q4_K_M", also for its part "Qwen3.5-9B-Q4_K_M-00001-of-00003"
      info.name = std::filesystem::path(options.model_dir).stem().string();
      static const std::regex split_suffix("-[0-9]{5}-of-[0-9]{5}$");
      info.name = std::regex_replace(info.name, split_suffix, "");
    }
    if (info.name.empty() || info.name == ".")
      info.name = std::filesystem::absolute(options.model_dir).lexically_normal().parent_path().filename().string();
    info.vocab_size = cfg.text.vocab_size;
    info.context_size = e.context_size;
    info.max_position_embeddings = max_pos;
    info.has_vision = e.model->vision() != nullptr;
    info.mtp_active = e.mtp != nullptr;
    info.mtp_draft_vocab = e.draft_vocab ? e.draft_vocab->rows() : 0;
    info.num_layers = cfg.text.num_layers;
    info.hidden_size = cfg.text.hidden_size;
    info.weight_bytes = e.model->weight_bytes();
    info.weights = options.weights;
    info.kv_type = options.kv_type;
    info.device = device_index < 0 ? "cpu" : device_why;
    info.kernels = std::string(e.compute.k->name);
    info.threads = e.pool->size();
    info.format = e.model->is_gguf() ? "gguf" : "safetensors";
    info.file_type = e.model->file_type();
    info.file_bytes = e.model->is_gguf() ? e.model->gguf()->file_bytes() + (e.model->mmproj() ? e.model->mmproj()->file_bytes() : 0)
                                         : uint64_t(e.model->checkpoint().total_bytes());
    if (e.model->mmproj()) info.mmproj_path = e.model->mmproj()->path();
    info.has_mtp = e.model->mtp() != nullptr;
    if (const std::string w = chat_template_warning(options.model_dir); !w.empty()) info.warnings.push_back(w);
    progress("ready", 1.0);
    *status = Status::Ok();
    return engine;
  } catch (const Error& err) {
    *status = Status::Error(StatusCode::kInvalidArgument, err.what());
  } catch (const std::exception& err) {
    *status = Status::Error(StatusCode::kInternal, err.what());
  }
  return nullptr;
}

Engine::~Engine() = default;

const ModelInfo& Engine::info() const { return impl_->info; }
SamplingParams Engine::default_sampling() const { return impl_->defaults; }

std::unique_ptr<Session> Engine::new_session(PrefixCache* cache) const {
  return ImplAccess::make<Session>(std::make_unique<Session::Impl>(*impl_, cache));
}

std::vector<int32_t> Engine::tokenize(const std::string& text) const { return impl_->tokenizer->encode(text); }

std::string Engine::detokenize(const std::vector<int32_t>& ids, bool skip_special) const {
  return impl_->tokenizer->decode(ids, skip_special);
}

std::unique_ptr<PreparedChat> Engine::prepare_chat(const ChatRequest& request, Status* status) const {
  try {
    auto impl = std::make_unique<PreparedChat::Impl>();
    impl->plan = plan_chat(*impl_, request);
    if (impl->plan.size() + 1 > impl_->context_size) {
      *status = Status::Error(StatusCode::kContextOverflow, "the prompt has " + std::to_string(impl->plan.size()) +
                                                                " tokens but the context is " +
                                                                std::to_string(impl_->context_size) + " tokens");
      return nullptr;
    }
    *status = Status::Ok();
    return ImplAccess::make<PreparedChat>(std::move(impl));
  } catch (const ContextOverflow& e) {
    *status = Status::Error(StatusCode::kContextOverflow, e.what());
  } catch (const std::exception& e) {
    *status = Status::Error(StatusCode::kInvalidArgument, e.what());
  }
  return nullptr;
}

Status Engine::compile_output_format(OutputFormat* format) const { return qwen35::compile_output_format(format); }

Status Engine::render_chat(const ChatRequest& request, std::string* prompt) const {
  try {
    *prompt = render_request(*impl_, request);
    return Status::Ok();
  } catch (const std::exception& e) {
    return Status::Error(StatusCode::kInvalidArgument, e.what());
  }
}

}  // namespace qwen35
