// One sequence's timeline: the tokens processed so far, their cache keys, the decoder state and
// the MRoPE offset for what comes next. Feeding tokens is the only way the state advances;
// rewinding is explicit (DeltaNetSave + KV truncation, or a whole snapshot).
//
// When the engine runs the MTP head, the timeline also carries the head's state: its KV cache
// holds one row per pair (h_t, x_{t+1}) whose two tokens have both been fed (teacher-forced, as
// over a prompt), and every fed token after those pairs waits as a pending row (its final-normed
// hidden state h_t, its input embedding, its position) until the head runs on it. The head runs
// lazily, many pairs per call: when drafting (the pending pairs and the first draft step in one
// call), after a prefill block (flush_mtp), and when the pending rows pass kMaxMtpPending. Rows
// never depend on how many pairs a call holds, so the result is the same as running it eagerly.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "model/decoder_state.h"
#include "model/mtp.h"
#include "model/text_decoder.h"
#include "runtime/engine_impl.h"

namespace qwen35 {

class BatchGate;

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
  // The MTP head's state (empty when the engine does not run the head): cache rows of the pairs,
  // then the pending tokens' hidden states, embeddings and positions (see Sequence).
  std::vector<uint8_t> mtp_key_rows, mtp_value_rows;  // [pairs] rows in the cache's dtype
  std::vector<float> mtp_hidden, mtp_embedding;       // [pending, H]
  std::vector<int32_t> mtp_position;                  // [pending, 3]
  // Of a sequence whose states live on a device: the copy there of its DeltaNet states and KV rows
  // (deltanet, keys_rows and value_rows are then empty).
  std::shared_ptr<const BackendState> device;
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
  // rows (0..n) to `logits` ([n_logits, vocab]). With a `gate` (a round of GenerationBatch) the
  // pass joins the others of the round in one batched forward; nullptr: a pass of its own. The
  // rows are the same bits either way.
  void feed(const int32_t* ids, const uint64_t* keys, const float* embeddings, const int32_t* positions, int64_t n,
            DeltaRuleMode mode, int64_t n_logits, float* logits, BatchGate* gate = nullptr);
  // The same a few layers at a time, so that a prompt block need not hold up the other
  // conversations' decode steps batched with it: begin_block takes the block (copies; nothing
  // runs), each advance_block runs its next `layers` layers (<= 0: all the rest) and, once past
  // the last, finishes it as feed() does and returns true (`gate` as for feed()). The rows are
  // those of one pass. While
  // a block is part-way, the sequence is in between (some layers hold the block, some not): only
  // advance_block and discard_block (which resets the sequence) may follow.
  void begin_block(const int32_t* ids, const uint64_t* keys, const float* embeddings, const int32_t* positions,
                   int64_t n, DeltaRuleMode mode);
  bool advance_block(int layers, int64_t n_logits, float* logits, BatchGate* gate = nullptr);
  bool block_pending() const { return block_.n > 0; }
  int block_layers_done() const { return block_.next_layer; }
  void discard_block();
  // Text tokens at decode positions (index + rope_delta on all axes). With `traced`, the block's
  // DeltaNet inputs are kept so that rewind(save, keep) can later keep part of it. `gate` as for
  // feed().
  void feed_text(const int32_t* ids, int64_t n, DeltaRuleMode mode, int64_t n_logits, float* logits,
                 bool traced = false, BatchGate* gate = nullptr);

  // The MTP head. has_mtp(): the engine runs it for this sequence.
  static constexpr int64_t kMaxMtpPending = 64;
  bool has_mtp() const { return mtp_ != nullptr; }
  int64_t mtp_pairs() const { return has_mtp() ? mtp_kv_.length() : 0; }  // pairs in the head's cache
  // Runs the head on every pending pair whose next token has been fed (no logits).
  void flush_mtp();
  // Greedy draft of k >= 1 tokens following `next`, the token that will be fed next, each the argmax
  // over the engine's draft vocabulary (EngineImpl::draft_vocab): one call on
  // the pending pairs plus (h_{n-1}, next), then k - 1 steps that feed back (post-norm hidden,
  // previous draft token) one position further on. The draft's cache rows are dropped again: only
  // pairs of fed tokens stay, so the timeline is as if the head had not drafted.
  void mtp_draft(int32_t next, int k, std::vector<int32_t>& out);

  // Cheap rewind for speculative checks: the DeltaNet states only (KV rewinds by truncation).
  struct DeltaNetSave {
    std::vector<DeltaNetState> states;
    std::unique_ptr<BackendState> device;  // instead, when the states live on a device: a copy there
    int64_t length = 0;
  };
  void save_deltanet(DeltaNetSave& save) const;
  void rewind(const DeltaNetSave& save);
  // Rewinds to `save` and keeps the first `keep` tokens of the block fed right after it, which
  // must have been fed traced: their DeltaNet states are replayed from the trace (recurrences only,
  // no matmuls) and their KV rows stay, bit-identical to rewinding and feeding them again.
  void rewind(const DeltaNetSave& save, int64_t keep);

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
  std::vector<float> emb_;
  struct Block {
    std::vector<int32_t> ids;
    std::vector<uint64_t> keys;
    std::vector<float> rows;        // [n, H] the residual stream entering next_layer (final-normed at the end)
    std::vector<float> embeddings;  // [n, H] with the MTP head: its input rows
    std::vector<int32_t> positions;  // [3, n]
    int64_t n = 0;                  // 0: none part-way
    DeltaRuleMode mode = DeltaRuleMode::kAuto;
    int next_layer = 0;
  } block_;
  void require_no_block(const char* what) const;
  // A host save or snapshot taken back into a sequence whose states live on a device: the
  // device's copy is dropped, to be made again from the host's states by the next pass.
  void leave_device();
  std::vector<int32_t> pos_;
  std::vector<int64_t> logit_rows_;  // the rows whose logits a device pass returns
  std::vector<uint64_t> key_buf_;
  std::vector<int32_t> refeed_;  // a rewind's kept tokens, fed again (a host save, the states since on a device)
  int64_t traced_from_ = -1, traced_tokens_ = 0;  // the last fed block, when it was traced

  // Runs the head on the first n pending pairs, plus, with `next_embedding`, the pair of the last
  // fed token and that embedding (its post-norm output lands in mtp_out_ row n). Commits the n.
  void run_mtp(int64_t n, const float* next_embedding);
  // A snapshot's part of the MTP head (its cache rows and pending pairs), host-side on every
  // backend: taken, checked against a snapshot of n tokens, put back.
  void snapshot_mtp(SnapshotData& s) const;
  bool mtp_fits(const SnapshotData& s, int64_t n) const;
  void restore_mtp(const SnapshotData& s);
  const MtpHead* mtp_ = nullptr;
  KvCache mtp_kv_;
  std::vector<float> mtp_hidden_, mtp_embedding_;  // pending rows [length - mtp_pairs, H]
  std::vector<int32_t> mtp_position_;              // [pending, 3]
  MtpWorkspace mtp_ws_;
  std::vector<float> mtp_in_hidden_, mtp_in_emb_, mtp_out_, mtp_logits_;
  kernels::Activations mtp_head_in_;  // a draft step's hidden row, quantized for the LM head
  std::vector<int32_t> mtp_in_pos_;
};

}  // namespace qwen35
