// Session and Generation internals.
#pragma once

#include <functional>
#include <memory>
#include <vector>

#include "qwen35/engine.h"
#include "runtime/engine_impl.h"
#include "runtime/output_constraint.h"
#include "runtime/output_stream.h"
#include "runtime/prompt_lookup.h"
#include "runtime/prompt_plan.h"
#include "runtime/sampler.h"
#include "runtime/sequence.h"
#include "runtime/thought_budget.h"
#include "runtime/spec_policy.h"
#include "text/streaming_decoder.h"

namespace qwen35 {

struct Session::Impl {
  Impl(const EngineImpl& e, PrefixCache* shared);

  // Moves the sequence to the longest reusable prefix of `plan` (own timeline or cached
  // snapshot) and returns its length: the prompt tokens that need no processing.
  int64_t reuse_prefix(const PromptPlan& plan);

  const EngineImpl& engine;
  Sequence seq;
  std::unique_ptr<PrefixCache> own_cache;
  PrefixCache* cache;
  SpecCosts spec_costs;  // measured step costs for speculation's policy, kept across requests
  bool busy = false;
};

struct Snapshot::Impl {
  std::shared_ptr<const SnapshotData> data;
};

struct PreparedChat::Impl {
  PromptPlan plan;
};

// The prefill block of a generation while others batched with it decode (EngineOptions).
int64_t decoding_prefill_limit(const EngineOptions& o);

class BatchGate;

struct Generation::Impl {
  Impl(Session::Impl& session, PromptPlan plan, const SamplingParams& params, EventCallback on_event);

  // Generation::step(); with a `gate` (GenerationBatch's round) its model passes are batched with
  // the other generations of the round, nullptr: passes of its own. Every step below that makes
  // a pass takes the gate on to it.
  bool step(BatchGate* gate);
  // Prompt tokens the next prefill step takes at most (0: the engine's prefill block); set by
  // GenerationBatch for each round.
  int64_t prefill_limit = 0;
  // Token-layers a prefill step runs at most (0: its whole block through every layer), set the
  // same way: a block of n tokens advances by prefill_layer_budget / n layers (at least one) per
  // step, part-way blocks going on in the next step.
  int64_t prefill_layer_budget = 0;
  int prefill_layers(int64_t n) const;  // for advance_block: 0 = all
  int64_t block_in_flight = 0;          // tokens of the prompt block part-way through the layers
  int64_t prefill_token_layers = 0;     // tokens times layers prefilled so far (for PrefillPacer)
  // A block part-way through the layers when the generation ends leaves the sequence in between:
  // it is reset (the prefix cache still has its snapshots).
  void drop_block_in_flight();
  void prefill_step(BatchGate* gate);
  void decode_step(BatchGate* gate);
  // Feeds `pending` alone and emits the next token.
  void plain_step(BatchGate* gate);
  void decode_with_draft(const std::vector<int32_t>& draft, DraftSource source, BatchGate* gate);
  // Emits the closing of a thought over its budget (forced, not sampled) and feeds it.
  void close_thought(BatchGate* gate);
  // Emits one generated token; false once the generation is over.
  bool handle_token(int32_t token, TokenLogprob* logprob);
  // Samples from one row of logits (the output format's mask applied first) and records the
  // token for the penalties and the format, in emission order.
  int32_t sample_row(float* row, TokenLogprob* logprob);
  void finish(StopReason reason);
  bool emit(std::vector<OutputPiece>& pieces, std::vector<TokenLogprob>* logprobs);
  // One slice of vision for the first image of [from, to) still without embeddings; false
  // when every image there has them.
  bool vision_slice(int64_t from, int64_t to, BatchGate* gate);

  Session::Impl& session;
  const EngineImpl& engine;
  PromptPlan plan;
  SamplingParams params;
  EventCallback on_event;
  Sampler sampler;
  OutputStream output;
  StreamingDecoder decoder;
  ThoughtBudget thought;
  OutputConstraint constraint;
  PromptLookup lookup;
  SpecPolicy policy;
  // Tests replace the prompt-lookup drafter, and rewrite the MTP head's drafts (after the head has
  // drafted, so its state work is done as usual), to force full, partial and failed drafts.
  std::function<void(const std::vector<int32_t>& history, int max_tokens, std::vector<int32_t>& out)> draft_source;
  std::function<void(const std::vector<int32_t>& history, std::vector<int32_t>& draft)> rewrite_mtp_draft;

  GenerationResult result;
  bool done = false;
  bool cancelled = false;
  int64_t next_prompt = 0;      // prompt tokens processed so far
  int32_t pending = -1;         // last generated token, not yet fed to the model
  std::vector<int32_t> history; // prompt + generated, for prompt lookup
  std::vector<float> logits;    // [rows, vocab]
  std::vector<float> embed_buf;
  std::vector<int32_t> pos_buf;
  std::vector<int32_t> draft, pld_draft, block;
  Sequence::DeltaNetSave save;
  std::vector<OutputPiece> pieces;
};

}  // namespace qwen35
