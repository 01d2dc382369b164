// Prompt lookup decoding: drafts for greedy generation copied from earlier in the conversation.
// The draft is only a guess; the generation loop verifies it against the model in one block and
// keeps exactly the tokens plain greedy decoding would have produced.
#pragma once

#include <cstdint>
#include <vector>

namespace qwen35 {

class PromptLookup {
 public:
  static constexpr int kMaxNgram = 3;
  static constexpr int kMaxDraft = 16;
  static constexpr int kMaxSkip = 32;

  // Draft of up to max_tokens tokens following the latest earlier occurrence of the longest
  // suffix n-gram (kMaxNgram down to 1) of `history`, continued periodically when the occurrence
  // runs into the suffix itself. Empty when nothing matches or while backing off after misses.
  void draft(const std::vector<int32_t>& history, int max_tokens, std::vector<int32_t>& out);
  // Outcome of the last verified draft: a miss (nothing accepted) doubles the number of steps to
  // skip drafting; any accepted token resets it.
  void report(int drafted, int accepted);

 private:
  int skip_ = 0;
  int backoff_ = 1;
};

}  // namespace qwen35
