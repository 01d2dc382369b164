#include "runtime/prefill_pacer.h"

#include <algorithm>
#include <cmath>

namespace qwen35 {

PrefillPacer::PrefillPacer(int64_t min_budget, int64_t max_budget, int64_t start, double share)
    : min_(std::max<int64_t>(1, min_budget)),
      max_(std::max(min_, max_budget)),
      budget_(std::clamp(start, min_, max_)),
      share_(share) {}

void PrefillPacer::decode_round(double seconds) {
  if (!(seconds > 0) || !std::isfinite(seconds)) return;
  // A running mean that follows the machine (and the number of streams) within a few rounds.
  decode_s_ = decode_s_ > 0 ? 0.75 * decode_s_ + 0.25 * seconds : seconds;
}

void PrefillPacer::prefill_round(double seconds, int64_t token_layers) {
  if (decode_s_ <= 0 || token_layers <= 0 || !(seconds > 0) || !std::isfinite(seconds)) return;
  // The prefill's share of the round; a round no slower than a plain one says little about the
  // cost (noise), so it only lets the budget grow by the largest step.
  const double extra = std::max(seconds - decode_s_, 0.0);
  const double wanted = extra > 0 ? share_ * decode_s_ * double(token_layers) / extra : double(max_);
  // Geometric damping, and at most a factor of 2 either way per round: one noisy round moves the
  // budget a little, a change of machine state within a few rounds.
  const double next = wanted >= double(max_) ? 2.0 * double(budget_)  // all of it fits: no need to creep up
                     : std::clamp(std::sqrt(double(budget_) * wanted), 0.5 * double(budget_), 2.0 * double(budget_));
  budget_ = std::clamp(int64_t(std::llround(next)), min_, max_);
}

}  // namespace qwen35
