// One sequence's timeline: the tokens processed so far, their cache keys, the decoder state and
// the MRoPE offset for what comes next. Feeding tokens is the only way the state advances;
// rewinding is explicit (DeltaNetSave + KV truncation, or a whole snapshot).
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "model/decoder_state.h"
#include "model/text_decoder.h"
#include "runtime/engine_impl.h"

namespace qwen35 {

// Cache key of a prompt token: the id for text, a value derived from the image's content hash and
// the token's index in the image for image pads (identical pad ids of different images must not
// match), always outside the id range.
uint64_t image_token_key(uint64_t image_hash, int64_t index);

// Everything a snapshot holds: deep copies, sized to the tokens actually used.
struct SnapshotData {
  std::vector<int32_t> tokens;
  std::vector<uint64_t> keys;
  std::vector<DeltaNetState> deltanet;
  std::vector<std::vector<uint8_t>> keys_rows, value_rows;  // per attention layer: [length] rows in the cache's dtype
  int64_t rope_delta = 0;
  size_t bytes() const;
};

class Sequence {
 public:
  explicit Sequence(const EngineImpl& engine);

  int64_t length() const { return int64_t(tokens_.size()); }
  const std::vector<int32_t>& tokens() const { return tokens_; }
  const std::vector<uint64_t>& keys() const { return keys_; }
  int64_t rope_delta() const { return rope_delta_; }
  void set_rope_delta(int64_t d) { rope_delta_ = d; }

  // Processes n tokens: embeddings [n, H], positions [3, n]. Writes logits of the last `n_logits`
  // rows (0..n) to `logits` ([n_logits, vocab]).
  void feed(const int32_t* ids, const uint64_t* keys, const float* embeddings, const int32_t* positions, int64_t n,
            DeltaRuleMode mode, int64_t n_logits, float* logits);
  // Text tokens at decode positions (index + rope_delta on all axes).
  void feed_text(const int32_t* ids, int64_t n, DeltaRuleMode mode, int64_t n_logits, float* logits);

  // Cheap rewind for speculative checks: the DeltaNet states only (KV rewinds by truncation).
  struct DeltaNetSave {
    std::vector<DeltaNetState> states;
    int64_t length = 0;
  };
  void save_deltanet(DeltaNetSave& save) const;
  void rewind(const DeltaNetSave& save);

  std::unique_ptr<SnapshotData> snapshot() const;
  void restore(const SnapshotData& snap);
  void reset();

 private:
  const EngineImpl& engine_;
  DecoderState state_;
  DecoderWorkspace ws_;
  std::vector<int32_t> tokens_;
  std::vector<uint64_t> keys_;
  int64_t rope_delta_ = 0;
  std::vector<float> hidden_, emb_;
  std::vector<int32_t> pos_;
  std::vector<uint64_t> key_buf_;
};

}  // namespace qwen35
