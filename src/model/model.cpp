#include "model/model.h"

#include <algorithm>
#include <array>
#include <filesystem>
#include <map>

#include "core/error.h"

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

std::unique_ptr<Model> Model::load(const std::string& path, const ModelFiles& files) {
  auto m = std::unique_ptr<Model>(new Model());
  m->path_ = path;
  std::error_code ec;
  if (fs::is_directory(path, ec)) {
    if (!files.mmproj.empty() || !files.mtp.empty())
      fail("--mmproj and --mtp go with a GGUF model file; ", path, " is a Hugging Face folder (its vision tower is inside)");
    m->dir_ = path;
    m->config_ = ModelConfig::load(path);
    m->checkpoint_ = Checkpoint::open(path);
    m->text_ = TextWeights::bind(*m->checkpoint_, m->config_.text);
    m->decoder_ = std::make_unique<TextDecoder>(m->config_.text, m->text_);
    if (m->config_.vision.present && !VisionWeights::prefix(*m->checkpoint_).empty())
      m->vision_ = std::make_unique<VisionTower>(m->config_.vision, VisionWeights::bind(*m->checkpoint_, m->config_.vision));
    return m;
  }
  if (!fs::exists(path, ec)) fail("model '", path, "' does not exist (expected a Hugging Face folder or a .gguf file)");
  if (!is_gguf_file(path)) fail("model '", path, "' is neither a folder nor a GGUF file");
  m->dir_ = fs::absolute(path, ec).parent_path().string();
  m->gguf_ = GgufFile::open(path);
  const GgufFile& f = *m->gguf_;

  std::string mmproj_path = files.mmproj;
  if (mmproj_path.empty() && !files.no_mmproj) {
    // Auto-discovery: the projector published next to the model (mmproj-<type>.gguf).
    const ModelConfig text_only = ModelConfig::from_gguf(f, nullptr);
    for (const std::string& candidate : mmproj_candidates(path)) {
      auto probe = GgufFile::open(candidate);
      if (probe->get_string_opt("general.architecture") != "clip") continue;
      if (probe->get_int_opt("clip.vision.projection_dim") != text_only.text.hidden_size) continue;
      mmproj_path = candidate;
      m->mmproj_ = std::move(probe);
      break;
    }
  } else if (!mmproj_path.empty()) {
    m->mmproj_ = GgufFile::open(mmproj_path);
  }
  m->config_ = ModelConfig::from_gguf(f, m->mmproj_.get());
  m->text_ = TextWeights::bind_gguf(f, m->config_.text);
  m->decoder_ = std::make_unique<TextDecoder>(m->config_.text, m->text_);
  if (m->mmproj_)
    m->vision_ = std::make_unique<VisionTower>(m->config_.vision, VisionWeights::bind_mmproj(*m->mmproj_, m->config_.vision));
  m->nextn_ = bind_nextn(f, m->config_.text);
  if (!files.mtp.empty()) {
    if (!m->nextn_.empty()) fail(path, " already holds an MTP block; --mtp ", files.mtp, " is not needed");
    m->mtp_file_ = GgufFile::open(files.mtp);
    if (m->mtp_file_->get_string_opt("general.architecture") != "qwen35")
      fail(files.mtp, ": an MTP sidecar must have architecture qwen35");
    m->nextn_ = bind_nextn(*m->mtp_file_, m->config_.text);
    if (m->nextn_.empty()) fail(files.mtp, ": has no MTP block (no blk.N.nextn.eh_proj.weight)");
  }
  return m;
}

const Checkpoint& Model::checkpoint() const {
  if (!checkpoint_) fail(path_, " is a GGUF model, not a Hugging Face checkpoint");
  return *checkpoint_;
}

size_t Model::weight_bytes() const {
  if (checkpoint_) return checkpoint_->total_bytes();
  size_t n = 0;
  for (const GgufFile* f : {gguf_.get(), mmproj_.get(), mtp_file_.get()})
    if (f) n += size_t(f->tensor_bytes());
  return n;
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
