#include "model/model.h"

#include <algorithm>
#include <array>
#include <cstdio>
#include <filesystem>
#include <map>
#include <string>
#include <string_view>
#include <tuple>

#include "core/error.h"
#include "model/weight_cache.h"
#include "model/vision_prep.h"

namespace qwen35 {
namespace fs = std::filesystem;
namespace {

// The dominant dtype among the 2-D tensors of a set of (dtype, shape, bytes) triples.
template <typename Range, typename Get>
std::string dominant_type(const Range& tensors, Get get) {
  std::map<std::string, uint64_t> bytes;
  for (const auto& t : tensors) {
    auto [type, ndim, n] = get(t);
    if (ndim >= 2) bytes[type] += n;
  }
  std::string best;
  uint64_t most = 0;
  for (const auto& [type, n] : bytes)
    if (n > most) best = type, most = n;
  return best;
}

}  // namespace

std::string_view llama_ftype_name(int64_t ftype) {
  static const std::map<int64_t, std::string_view> names = {
      {0, "F32"},      {1, "F16"},     {2, "Q4_0"},    {3, "Q4_1"},    {7, "Q8_0"},     {8, "Q5_0"},
      {9, "Q5_1"},     {10, "Q2_K"},   {11, "Q3_K_S"}, {12, "Q3_K_M"}, {13, "Q3_K_L"},  {14, "Q4_K_S"},
      {15, "Q4_K_M"},  {16, "Q5_K_S"}, {17, "Q5_K_M"}, {18, "Q6_K"},   {19, "IQ2_XXS"}, {20, "IQ2_XS"},
      {21, "Q2_K_S"},  {22, "IQ3_XS"}, {23, "IQ3_XXS"}, {24, "IQ1_S"}, {25, "IQ4_NL"},  {26, "IQ3_S"},
      {27, "IQ3_M"},   {28, "IQ2_S"},  {29, "IQ2_M"},  {30, "IQ4_XS"}, {31, "IQ1_M"},   {32, "BF16"},
      {36, "TQ1_0"},   {37, "TQ2_0"},  {38, "MXFP4_MOE"}, {39, "NVFP4"}, {40, "Q1_0"},  {41, "Q2_0"}};
  auto it = names.find(ftype);
  return it == names.end() ? std::string_view() : it->second;
}

std::vector<std::string> mmproj_candidates(const std::string& model_file) {
  std::vector<std::string> out;
  std::error_code ec;
  const fs::path self = fs::absolute(model_file, ec);
  for (const auto& e : fs::directory_iterator(self.parent_path(), ec)) {
    const std::string name = e.path().filename().string();
    std::string lower = name;
    std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char ch) { return char(std::tolower(ch)); });
    if (lower.find("mmproj") == std::string::npos || lower.size() < 5 || lower.substr(lower.size() - 5) != ".gguf") continue;
    if (e.path() == self || !e.is_regular_file(ec)) continue;
    out.push_back(e.path().string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<NamedMatrix> named_matrices(TextWeights& text, VisionWeights* vision) {
  std::vector<NamedMatrix> out;
  auto add = [&](std::string name, kernels::WeightMatrix& w) { out.push_back(NamedMatrix{std::move(name), &w, false}); };
  for (size_t i = 0; i < text.layers.size(); ++i) {
    const std::string b = "blk." + std::to_string(i) + ".";
    for_each_layer_matrix(text.layers[i], [&](const char* name, kernels::WeightMatrix& w) { add(b + name, w); });
  }
  if (vision)
    for (NamedMatrix& nm : vision_matrices(*vision)) out.push_back(std::move(nm));
  return out;
}

std::unique_ptr<Model> Model::load(const std::string& path, const ModelLoadOptions& options) {
  auto m = std::unique_ptr<Model>(new Model());
  m->path_ = path;
  VisionWeights vision_weights;
  bool has_vision = false;
  std::error_code ec;
  if (fs::is_directory(path, ec)) {
    if (!options.mmproj.empty() || !options.mtp.empty())
      fail("--mmproj and --mtp go with a GGUF model file; ", path, " is a Hugging Face folder (its vision tower is inside)");
    m->dir_ = path;
    m->config_ = ModelConfig::load(path);
    m->checkpoint_ = Checkpoint::open(path);
    m->text_ = TextWeights::bind(*m->checkpoint_, m->config_.text);
    has_vision = m->config_.vision.present && !VisionWeights::prefix(*m->checkpoint_).empty();
    if (has_vision) vision_weights = VisionWeights::bind(*m->checkpoint_, m->config_.vision);
  } else {
    if (!fs::exists(path, ec)) fail("model '", path, "' does not exist (expected a Hugging Face folder or a .gguf file)");
    if (!is_gguf_file(path)) fail("model '", path, "' is neither a folder nor a GGUF file");
    m->dir_ = fs::absolute(path, ec).parent_path().string();
    m->gguf_ = GgufFile::open(path);
    const GgufFile& f = *m->gguf_;
    if (options.mmproj.empty() && !options.no_mmproj) {
      // Auto-discovery: the projector published next to the model (mmproj-<type>.gguf).
      const ModelConfig text_only = ModelConfig::from_gguf(f, nullptr);
      for (const std::string& candidate : mmproj_candidates(path)) {
        auto probe = GgufFile::open(candidate);
        if (probe->get_string_opt("general.architecture") != "clip") continue;
        if (probe->get_int_opt("clip.vision.projection_dim") != text_only.text.hidden_size) continue;
        m->mmproj_ = std::move(probe);
        break;
      }
    } else if (!options.mmproj.empty()) {
      m->mmproj_ = GgufFile::open(options.mmproj);
    }
    m->config_ = ModelConfig::from_gguf(f, m->mmproj_.get());
    m->text_ = TextWeights::bind_gguf(f, m->config_.text);
    has_vision = m->mmproj_ != nullptr;
    if (has_vision) vision_weights = VisionWeights::bind_mmproj(*m->mmproj_, m->config_.vision);
    m->nextn_ = bind_nextn(f, m->config_.text);
    if (!options.mtp.empty()) {
      if (!m->nextn_.empty()) fail(path, " already holds an MTP block; --mtp ", options.mtp, " is not needed");
      m->mtp_file_ = GgufFile::open(options.mtp);
      if (m->mtp_file_->get_string_opt("general.architecture") != f.get_string_opt("general.architecture"))
        fail(options.mtp, ": an MTP sidecar must have the model's architecture (", f.get_string("general.architecture"), ")");
      m->nextn_ = bind_nextn(*m->mtp_file_, m->config_.text);
      if (m->nextn_.empty()) fail(options.mtp, ": has no MTP block (no blk.N.nextn.eh_proj.weight)");
    }
  }

  // Prepare the weights for the kernels. The embedding is read by rows and stays in plain rows,
  // unless the LM head is tied to it: then both are one packed matrix, which the head streams
  // every token and a lookup unpacks a row of (the same bits as the plain row). A plain copy beside
  // it would cost memory, and a lookup in it, left cold by the head's stream, cost this VM
  // 25-80 us a token (0.8B, 2B). The
  // preset's types come from the text decoder's tensors as one list (llama-quantize's counters
  // run over the whole model; without output.weight the embedding gets the output's type); the
  // vision tower, a separate projector file in llama.cpp, gets Q8_0 under any quantized preset.
  std::unique_ptr<ThreadPool> own_pool;
  WeightPrepOptions prep;
  prep.table = options.table;
  prep.pool = options.pool;
  if (!prep.pool) prep.pool = (own_pool = std::make_unique<ThreadPool>(0)).get();
  prep.release_sources = true;
  TextWeights& t = m->text_;
  const TextConfig& tc = m->config_.text;
  const bool tied = tc.tie_word_embeddings;
  std::vector<NamedMatrix> text = named_matrices(t, nullptr);
  text.insert(text.begin(), NamedMatrix{"token_embd.weight", &t.embed, /*row_lookup=*/!tied});
  if (!tied) text.insert(text.begin() + 1, NamedMatrix{"output.weight", &t.lm_head, false});
  WeightModelShape shape;
  shape.n_layers = tc.num_layers;
  shape.n_gqa = tc.num_kv_heads > 0 ? tc.num_heads / tc.num_kv_heads : 1;
  shape.n_experts = tc.num_experts;
  shape.tied_embeddings = tied;
  // The MTP head: mtp.* of a folder or the GGUF MTP block. Under a preset its matrices get the
  // types llama-quantize gives them in a file that bundles the head as one more block, while the
  // trunk keeps those of a file without it (the stock mixes); GGUF blocks keep their stored types.
  // The shared embedding and LM head are the trunk's, taken once those are prepared.
  const bool has_mtp = m->checkpoint_ ? has_mtp_weights(*m->checkpoint_) : !m->nextn_.empty();
  const void* trunk_embed = t.embed.data;
  const void* trunk_head = t.lm_head.data;
  std::vector<NamedMatrix> mtp_mats;
  if (has_mtp) {
    m->mtp_weights_ = m->checkpoint_ ? bind_mtp_weights(*m->checkpoint_, tc, t) : bind_mtp_weights(m->nextn_, tc, t);
    mtp_mats = mtp_named_matrices(m->mtp_weights_, tc.num_layers, t);
  }
  // The prepared matrices, as the weight cache stores them.
  std::vector<CachedMatrix> cached;
  std::string cache_key;
  bool from_cache = false;
  if (options.prepare && !options.weights_cache_dir.empty()) {
    cached.push_back({"token_embd.weight", &t.embed});
    cached.push_back({"output.weight", &t.lm_head});
    for (NamedMatrix& nm : named_matrices(t, has_vision ? &vision_weights : nullptr)) cached.push_back({nm.name, nm.w});
    for (NamedMatrix& nm : mtp_mats) cached.push_back({nm.name, nm.w});
    std::vector<std::string> sources;
    if (m->gguf_) {
      sources = m->gguf_->part_paths();
      if (m->mmproj_) sources.push_back(m->mmproj_->path());
      if (m->mtp_file_) sources.push_back(m->mtp_file_->path());
    } else {
      for (const auto& e : fs::directory_iterator(path))
        if (e.path().extension() == ".safetensors") sources.push_back(e.path().string());
      std::sort(sources.begin(), sources.end());
    }
    const kernels::KernelTable& table = options.table ? *options.table : kernels::active_table();
    cache_key = weight_cache_key(sources, options.weights, std::string(table.name));
    if (load_weight_cache(weight_cache_path(options.weights_cache_dir, cache_key), cache_key, cached, m->weight_cache_)) {
      from_cache = true;
      if (options.on_notice) {
        const FolioReport& f = m->weight_cache_->folios();
        auto mib = [](size_t b) { return std::to_string(b >> 20); };
        std::string note = "weight cache: mapped " + m->weight_cache_->path();
        if (f.known) note += " (" + mib(f.mappable - f.small_after) + " of " + mib(f.mappable) + " MiB in 2 MiB pages)";
        options.on_notice(note);
        if (f.dropped > 0) {
          char secs[32];
          std::snprintf(secs, sizeof secs, "%.1f", f.seconds);
          options.on_notice("weight cache: " + mib(f.small_before) + " MiB were held in small pages, which stream slower; read " +
                            mib(f.dropped) + " MiB of the file again in " + secs + " s");
        }
      }
      // A widened vision MLP (vision_prep) comes back widened: its fc1 bias follows with zeros.
      for (VisionBlockWeights& b : vision_weights.blocks)
        if (int64_t(b.fc1.b.size()) < b.fc1.w.rows) b.fc1.b.resize(size_t(b.fc1.w.rows), 0.0f);
    }
  }
  if (options.prepare && !from_cache) {
    std::vector<DType> types = choose_weight_types(options.weights, text, shape);
    std::vector<DType> mtp_types;
    if (has_mtp) {
      std::vector<NamedMatrix> bundled = text;
      bundled.insert(bundled.end(), mtp_mats.begin(), mtp_mats.end());
      WeightModelShape with_head = shape;
      with_head.n_layers += 1;
      const std::vector<DType> all = choose_weight_types(options.weights, bundled, with_head);
      mtp_types.assign(all.end() - int64_t(mtp_mats.size()), all.end());
    }
    std::vector<NamedMatrix> vision_mats;
    if (has_vision) vision_mats = vision_matrices(vision_weights);
    double total = 0, done = 0;
    for (const auto* list : {&text, &vision_mats, &mtp_mats})
      for (const NamedMatrix& nm : *list) total += double(nm.w->rows) * double(nm.w->cols);
    auto progress_of = [&](const std::vector<NamedMatrix>& mats) {
      double size = 0;
      for (const NamedMatrix& nm : mats) size += double(nm.w->rows) * double(nm.w->cols);
      prep.progress = [&, size](double f) {
        if (options.on_prepare_progress) options.on_prepare_progress(total > 0 ? (done + f * size) / total : 1.0);
      };
      return size;
    };
    auto stage = [&](const std::vector<NamedMatrix>& mats, const std::vector<DType>& ty) {
      const double size = progress_of(mats);
      prepare_weights(mats, ty, m->store_, prep);
      done += size;
    };
    stage({text[0]}, {types[0]});
    if (tied) t.lm_head = t.embed;
    text.erase(text.begin());
    types.erase(types.begin());
    stage(text, types);
    if (has_vision) {
      progress_of(vision_mats);
      prepare_vision_weights(vision_weights, options.weights, m->store_, prep);
    }
    if (has_mtp) stage(mtp_mats, mtp_types);
    if (!cached.empty()) {
      try {
        save_weight_cache(options.weights_cache_dir, cache_key, cached);
        if (options.on_notice) options.on_notice("weight cache: wrote " + weight_cache_path(options.weights_cache_dir, cache_key));
      } catch (const std::exception& e) {
        // save_weight_cache's errors name the cache already.
        constexpr std::string_view kPrefix = "weight cache: ";
        std::string_view why = e.what();
        if (why.starts_with(kPrefix)) why.remove_prefix(kPrefix.size());
        if (options.on_notice) options.on_notice("weight cache: not written: " + std::string(why));
      }
    }
  }
  if (has_mtp) {
    if (m->mtp_weights_.embed.data == trunk_embed) m->mtp_weights_.embed = t.embed;
    if (m->mtp_weights_.lm_head.data == trunk_head) m->mtp_weights_.lm_head = t.lm_head;
  }

  m->weight_bytes_ = t.embed.bytes() + (tied && t.lm_head.data == t.embed.data ? 0 : t.lm_head.bytes());
  for (NamedMatrix& nm : named_matrices(t, has_vision ? &vision_weights : nullptr)) {
    m->weight_bytes_ += nm.w->bytes();
    if (nm.name.rfind("v.", 0) == 0 || nm.name.rfind("mm.", 0) == 0) m->vision_weight_bytes_ += nm.w->bytes();
  }
  for (const NamedMatrix& nm : mtp_mats) m->weight_bytes_ += nm.w->bytes();

  m->decoder_ = std::make_unique<TextDecoder>(m->config_.text, m->text_);
  if (has_vision) m->vision_ = std::make_unique<VisionTower>(m->config_.vision, std::move(vision_weights));
  if (has_mtp) m->mtp_ = std::make_unique<MtpHead>(m->config_.text, m->mtp_weights_);
  return m;
}

const Checkpoint& Model::checkpoint() const {
  if (!checkpoint_) fail(path_, " is a GGUF model, not a Hugging Face checkpoint");
  return *checkpoint_;
}

std::string Model::file_type() const {
  if (gguf_) {
    if (auto ft = gguf_->get_int_opt("general.file_type"); ft && !llama_ftype_name(*ft).empty())
      return std::string(llama_ftype_name(*ft));
    return dominant_type(gguf_->tensors(), [](const GgufTensor& t) {
      return std::tuple{ggml_type_label(t.ggml_type), t.n_dims, t.nbytes};
    });
  }
  std::vector<TensorView> views;
  for (const std::string& name : checkpoint_->names()) views.push_back(checkpoint_->get(name));
  return dominant_type(views, [](const TensorView& t) {
    return std::tuple{std::string(dtype_name(t.dtype)), t.shape.ndim, uint64_t(t.nbytes)};
  });
}

}  // namespace qwen35
