#include "runtime/prompt_lookup.h"

#include <algorithm>

namespace qwen35 {

void PromptLookup::draft(const std::vector<int32_t>& history, int max_tokens, std::vector<int32_t>& out) {
  out.clear();
  if (max_tokens <= 0) return;
  if (skip_ > 0) {
    --skip_;
    return;
  }
  const int64_t n = int64_t(history.size());
  for (int ng = std::min<int64_t>(kMaxNgram, n - 1); ng >= 1; --ng) {
    const int32_t* tail = history.data() + n - ng;
    // Latest occurrence that ends before the tail itself, so at least one token follows it.
    for (int64_t start = n - ng - 1; start >= 0; --start) {
      if (!std::equal(tail, tail + ng, history.data() + start)) continue;
      // Copy what followed; if that runs into the tail itself, the text is periodic with period
      // n - from, so keep copying the draft (a loop of period 1 drafts the repeated token).
      const int64_t from = start + ng, period = n - from;
      const int64_t count = std::min<int64_t>(max_tokens, kMaxDraft);
      for (int64_t i = 0; i < count; ++i) out.push_back(i < period ? history[size_t(from + i)] : out[size_t(i - period)]);
      return;
    }
  }
}

void PromptLookup::report(int drafted, int accepted) {
  if (drafted == 0) return;
  if (accepted > 0) {
    backoff_ = 1;
    skip_ = 0;
  } else {
    skip_ = backoff_;
    backoff_ = std::min(backoff_ * 2, kMaxSkip);
  }
}

}  // namespace qwen35
