// Follows a chat generation in and out of its thoughts and says when a reasoning budget is used
// up (SamplingParams::reasoning_budget). The generation loop reports every token it emits, sampled
// or forced; once the budget is spent inside a thought, the loop feeds the closing tokens
// instead of sampling, and the thought ends at their </think>.
//
// The thought boundaries are those of OutputStream: a thought is open from the start (the prompt
// ended with "<think>\n") or from an emitted <think>, and ends at the next </think>. The budget
// counts the tokens between the markers (a nested <think> included), over all thoughts of the
// answer; the closing sentence counts too, so a thought cut at budget N has N plus the
// sentence's tokens (what reasoning_tokens reports).
//
// Speculation: room() is how many more thought tokens may be emitted before the closing is
// due, so a draft limited to room() - 1 tokens (its verify step emits one more) never runs past
// the budget, and the forced tokens start after exactly N thought tokens whether drafts ran or not.
//
// Thread contract: one per generation, used by the thread that drives it.
#pragma once

#include <cstdint>
#include <limits>
#include <vector>

namespace qwen35 {

class ThoughtBudget {
 public:
  static constexpr int64_t kUnlimited = std::numeric_limits<int64_t>::max();

  // budget: -1 unlimited. closing: the forced tokens, ending with think_end (empty: thoughts are
  // counted but never closed). Ids of -1 disable the tracking (raw completions).
  ThoughtBudget(int64_t budget, bool starts_in_thought, int32_t think_start, int32_t think_end,
                const std::vector<int32_t>& closing);

  // An emitted token, in order.
  void observe(int32_t token);
  // Thought tokens that may still be emitted before the closing is due; kUnlimited outside a
  // thought, without a budget, or while the closing is being fed.
  int64_t room() const;
  bool closing_due() const { return room() == 0; }
  // The tokens to force now (closing_due() must be true); room() is kUnlimited from here until
  // their </think> has been observed.
  const std::vector<int32_t>& begin_closing();
  // Tokens emitted inside thoughts so far.
  int64_t thought_tokens() const { return count_; }

 private:
  int64_t budget_;
  int32_t think_start_, think_end_;
  const std::vector<int32_t>& closing_;
  bool in_thought_;
  bool closing_now_ = false;
  int64_t count_ = 0;
};

}  // namespace qwen35
