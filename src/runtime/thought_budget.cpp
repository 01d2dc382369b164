#include "runtime/thought_budget.h"

#include <algorithm>

namespace qwen35 {

ThoughtBudget::ThoughtBudget(int64_t budget, bool starts_in_thought, int32_t think_start, int32_t think_end,
                             const std::vector<int32_t>& closing)
    : budget_(budget),
      think_start_(think_start),
      think_end_(think_end),
      closing_(closing),
      in_thought_(starts_in_thought && think_start >= 0 && think_end >= 0) {}

void ThoughtBudget::observe(int32_t token) {
  if (think_start_ < 0 || think_end_ < 0) return;
  if (!in_thought_) {
    in_thought_ = token == think_start_;  // a </think> outside a thought changes nothing
    return;
  }
  if (token == think_end_) {
    in_thought_ = false;
    closing_now_ = false;
    return;
  }
  ++count_;
}

int64_t ThoughtBudget::room() const {
  if (!in_thought_ || closing_now_ || budget_ < 0 || closing_.empty()) return kUnlimited;
  return std::max<int64_t>(0, budget_ - count_);
}

const std::vector<int32_t>& ThoughtBudget::begin_closing() {
  closing_now_ = true;
  return closing_;
}

}  // namespace qwen35
