// A loaded Qwen3.5 model: config, mapped weights (a Hugging Face folder or GGUF files), bound
// weights. Immutable after load.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/thread_pool.h"
#include "io/checkpoint.h"
#include "io/gguf.h"
#include "model/config.h"
#include "model/mtp.h"
#include "model/mtp_weights.h"
#include "model/nextn_tensors.h"
#include "model/text_decoder.h"
#include "model/text_weights.h"
#include "model/vision.h"
#include "core/mapped_file.h"
#include "model/weight_prep.h"

namespace qwen35 {

struct ModelLoadOptions {
  // GGUF models only: a clip mmproj GGUF (the vision projector). Empty: an mmproj*.gguf next to the
  // model file that fits (a projection_dim equal to the model's hidden size).
  std::string mmproj;
  bool no_mmproj = false;  // text only, even when a projector lies next to the model
  std::string mtp;         // an MTP-only sidecar GGUF (gguf.md D2)
  // `--weights`: "" keeps the checkpoint's types; otherwise weight_type_rule()'s values.
  std::string weights;
  // The kernel table the weights are prepared (repacked) for; nullptr: the active table.
  const kernels::KernelTable* table = nullptr;
  // Runs the preparation; nullptr: a pool of one thread per core for the duration of the load.
  ThreadPool* pool = nullptr;
  std::function<void(double fraction)> on_prepare_progress;
  // false: keep the weights as bound (views into the files, no repacking, no --weights), for tools
  // that read tensors rather than run the model fast (convert, info).
  bool prepare = true;
  // A folder for prepared weights (weight_cache.h): the first load writes them there, later loads
  // of the same files, --weights and table map them. Empty: no cache.
  std::string weights_cache_dir;
  // Hears what the cache did ("weight cache: ..."), e.g. for a start-up line.
  std::function<void(const std::string&)> on_notice;
};

class Model {
 public:
  // `path`: a Hugging Face model folder (config.json + safetensors) or a GGUF file (any part of a
  // split one). Throws qwen35::Error on any problem.
  static std::unique_ptr<Model> load(const std::string& path, const ModelLoadOptions& options = {});

  const std::string& dir() const { return dir_; }  // the folder, or the GGUF file's folder
  const std::string& path() const { return path_; }
  bool is_gguf() const { return gguf_ != nullptr; }
  const ModelConfig& config() const { return config_; }
  // The HF checkpoint (throws for a GGUF model).
  const Checkpoint& checkpoint() const;
  // The GGUF files; nullptr when absent.
  const GgufFile* gguf() const { return gguf_.get(); }
  const GgufFile* mmproj() const { return mmproj_.get(); }
  const TextDecoder& decoder() const { return *decoder_; }
  const TextWeights& text_weights() const { return text_; }
  // The vision tower; nullptr for a text-only model (no vision_config or no model.visual.*; a GGUF
  // without mmproj).
  const VisionTower* vision() const { return vision_.get(); }
  // The GGUF MTP block (bundled or from the sidecar); empty when there is none. HF folders keep
  // theirs as mtp.* tensors of checkpoint().
  const NextnTensors& nextn() const { return nextn_; }
  // The multi-token-prediction head (mtp.* of a folder, a GGUF MTP block or sidecar); nullptr
  // when the model has none.
  const MtpHead* mtp() const { return mtp_.get(); }

  // Bytes of the weights as the kernels read them (prepared copies and the mapped views in use),
  // and the vision tower's share of them.
  size_t weight_bytes() const { return weight_bytes_; }
  size_t vision_weight_bytes() const { return vision_weight_bytes_; }
  // The storage type as a user names it: llama.cpp's file type for a GGUF ("Q4_K_M", "BF16"), the
  // dominant matrix dtype for safetensors.
  std::string file_type() const;

 private:
  Model() = default;
  std::string dir_, path_;
  ModelConfig config_;
  std::unique_ptr<Checkpoint> checkpoint_;
  std::unique_ptr<GgufFile> gguf_, mmproj_, mtp_file_;
  WeightStore store_;  // before the weights that point into it
  std::unique_ptr<MappedFile> weight_cache_;  // the mapped prepared weights, when they came from the cache
  TextWeights text_;
  std::unique_ptr<TextDecoder> decoder_;
  std::unique_ptr<VisionTower> vision_;
  NextnTensors nextn_;
  MtpWeights mtp_weights_;
  std::unique_ptr<MtpHead> mtp_;
  size_t weight_bytes_ = 0;
  size_t vision_weight_bytes_ = 0;
};

// Every matrix of the text decoder (and of the vision tower when given), GGUF-named, in
// llama-quantize's order (non-layer tensors first, then by layer).
std::vector<NamedMatrix> named_matrices(TextWeights& text, VisionWeights* vision);
// llama.cpp's general.file_type names (gguf.md section 9): 15 -> "Q4_K_M"; "" for an unknown id.
std::string_view llama_ftype_name(int64_t ftype);
// The mmproj*.gguf files in `model_file`'s folder, sorted by name.
std::vector<std::string> mmproj_candidates(const std::string& model_file);

}  // namespace qwen35
