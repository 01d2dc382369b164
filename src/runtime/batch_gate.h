// Continuous batching by rendezvous: the generations of one round step on threads of their own,
// each handed the round's gate, and every model pass they make through it (Sequence::feed with
// the gate) waits until each generation still stepping has either asked for one too or finished
// its step; the passes then run as one batched forward (TextDecoder::forward_batch), every weight
// streamed once for all of them. The generation code stays what it is alone, and so do its bits:
// the decoder computes a segment's rows the same way in any batch.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <exception>
#include <mutex>
#include <vector>

#include "model/decoder_state.h"
#include "model/text_decoder.h"

namespace qwen35 {

struct EngineImpl;

class BatchGate {
 public:
  explicit BatchGate(const EngineImpl& engine);

  // Before a round's participants start: how many will step.
  void begin_round(int participants);
  // A participant's step is over (it makes no more passes this round).
  void leave();

  // One model pass of a participant: n rows into `state` through layers [first_layer, end_layer)
  // (see DecoderSegment), then, past the last layer, logits of the last n_logits rows.
  struct Feed {
    DecoderState* state = nullptr;
    const float* embeddings = nullptr;  // [n, H] the rows entering first_layer
    const int32_t* positions = nullptr;  // [3, n]
    int64_t n = 0;
    DeltaRuleMode mode = DeltaRuleMode::kAuto;
    int64_t n_logits = 0;
    float* logits = nullptr;  // [n_logits, vocab]
    float* hidden = nullptr;  // [n, H] the rows leaving end_layer - 1 (final-normed after the last)
    std::vector<DeltaNetTrace>* traces = nullptr;  // the DeltaNet layers' block inputs (nullptr: not traced)
    int first_layer = 0;
    int end_layer = -1;  // -1: the last
  };
  // Blocks until the batch holding this pass has run; rethrows that batch's error.
  void forward(const Feed& feed);

  // A participant's step on its own thread: its end, however the step ends, is the
  // participant's leave().
  class Participant {
   public:
    explicit Participant(BatchGate& gate) : gate_(gate) {}
    ~Participant() { gate_.leave(); }
    Participant(const Participant&) = delete;
    Participant& operator=(const Participant&) = delete;

   private:
    BatchGate& gate_;
  };

  // While one lives, a participant of `gate` does work outside the model passes that may take
  // long (the vision tower): the others' batches do not wait for it. nullptr: not in a round.
  class Outside {
   public:
    explicit Outside(BatchGate* gate);
    ~Outside();
    Outside(const Outside&) = delete;
    Outside& operator=(const Outside&) = delete;

   private:
    BatchGate* gate_;
  };

  uint64_t batches() const;       // batched passes run so far
  uint64_t batched_rows() const;  // rows they held

 private:
  struct Pending {
    const Feed* feed;
    bool done = false;
    std::exception_ptr error;
  };
  // With mu_ held: runs the pending passes once every participant still stepping waits in one.
  void maybe_run(std::unique_lock<std::mutex>& lock);
  void run(std::vector<Pending*>& batch);

  const EngineImpl& engine_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  int running_ = 0;   // participants still stepping and not Outside
  bool executing_ = false;
  std::vector<Pending*> pending_;
  uint64_t batches_ = 0, rows_ = 0;
  // Buffers of the batched pass (used by the executing thread only).
  DecoderWorkspace ws_;
  std::vector<float> emb_, hidden_, rows_in_, logits_;
  std::vector<int64_t> device_rows_;  // the rows whose logits a device pass returns
  std::vector<int32_t> pos_;
  std::vector<DecoderSegment> segments_;
};

}  // namespace qwen35
