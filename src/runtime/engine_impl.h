// What an Engine holds once loaded. Immutable after Engine::load (see engine.h's thread contract).
#pragma once

#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include "core/thread_pool.h"
#include "grammar/token_mask.h"
#include "kernels/compute.h"
#include "model/decoder_backend.h"
#include "model/draft_vocab.h"
#include "model/image_processor.h"
#include "model/video_processor.h"
#include "model/model.h"
#include "qwen35/engine.h"
#include "text/tokenizer.h"

namespace qwen35 {

struct EngineImpl {
  EngineOptions options;
  std::unique_ptr<Model> model;
  std::unique_ptr<Tokenizer> tokenizer;
  ImageProcessorConfig image_config;
  VideoProcessorConfig video_config;
  std::unique_ptr<ThreadPool> pool;
  kernels::Compute compute;
  ModelInfo info;
  SamplingParams defaults;
  std::vector<int32_t> eos_ids;  // generation stops on any of them
  int32_t think_start_id = -1;   // <think>
  int32_t think_end_id = -1;     // </think>
  std::vector<int32_t> thought_closing_ids;  // kThoughtClosing; empty when the tokenizer has no </think>
  int32_t image_pad_id = -1;     // <|image_pad|>
  int32_t video_pad_id = -1;     // <|video_pad|>
  int64_t context_size = 0;
  const MtpHead* mtp = nullptr;  // the MTP head when requests may use it (options.speculative)
  std::optional<DraftVocab> draft_vocab;  // the ids its drafts pick from, when it runs
  DType kv_dtype = DType::F16;
  // The text decoder's backend when it runs on a device (options.device), else null (the CPU's
  // kernel table through `compute`). One forward at a time: device_mutex.
  std::unique_ptr<DecoderBackend> device;
  mutable std::mutex device_mutex;

  const TextConfig& text_config() const { return model->config().text; }
  bool is_eos(int32_t id) const;
  // The vocabulary as constrained decoding sees it (every token but the special ones, <think>
  // and </think>), built on first use.
  std::shared_ptr<const grammar::TokenVocab> grammar_vocab() const;
  mutable std::once_flag grammar_vocab_once;
  mutable std::shared_ptr<const grammar::TokenVocab> grammar_vocab_;
};

}  // namespace qwen35
