// Constrained decoding inside a generation: the grammar of SamplingParams::format applied to each
// row of logits before sampling, advanced by every emitted token.
//
// Where it applies: inside a thought (after <think>, before </think>) nothing is masked but the
// stop tokens (the answer must still come); in the answer every token the grammar does not allow
// next is removed (-inf), the stop tokens only allowed where the grammar may end. A lazy format
// (tool calls under tool_choice auto) leaves the answer free until the model emits the
// <tool_call> token, and constrains from there on.
//
// Speculative decoding needs no rollback here: a verify step samples its rows in order and
// observes each sampled token before masking the next row, and a rejected draft token is never
// observed, so every row is masked exactly as plain decoding would mask it.
//
// Thread contract: one per generation, used by the thread that drives it.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "grammar/grammar.h"
#include "grammar/matcher.h"
#include "grammar/token_mask.h"
#include "qwen35/chat.h"

namespace qwen35 {

struct EngineImpl;

}  // namespace qwen35

struct qwen35::CompiledOutputFormat {
  std::shared_ptr<const grammar::Grammar> grammar;
  bool lazy = false;
};

namespace qwen35 {

// Sets format->compiled (left empty for kNone). A format that does not compile is the request's
// error: kInvalidArgument, the message naming the schema keyword and its pointer.
Status compile_output_format(OutputFormat* format);

class OutputConstraint {
 public:
  // Inactive when format.kind is kNone. The format must be compiled.
  OutputConstraint(const EngineImpl& engine, const OutputFormat& format, bool starts_in_thought, bool split_reasoning);

  // logits[n]: removes what may not come next.
  void mask(float* logits, int64_t n);
  // Every emitted token, in order, sampled or forced.
  void observe(int32_t token);

 private:
  const EngineImpl& engine_;
  std::shared_ptr<const CompiledOutputFormat> compiled_;
  std::unique_ptr<grammar::GrammarMatcher> matcher_;
  std::unique_ptr<grammar::TokenMasker> masker_;
  std::vector<uint64_t> bits_;
  std::vector<float> eos_logits_;
  bool in_thought_ = false;
  bool triggered_ = true;  // false while a lazy format waits for its trigger
  int32_t think_start_ = -1, think_end_ = -1, trigger_ = -1;
};

}  // namespace qwen35
