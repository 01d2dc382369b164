#include "runtime/prefill_pacer.h"

#include <algorithm>
#include <cmath>

namespace qwen35 {

PrefillPacer::PrefillPacer(int64_t min_budget, int64_t max_budget, int64_t start, double share)
    : min_(std::max<int64_t>(1, min_budget)),
      max_(std::max(min_, max_budget)),
      budget_(std::clamp(start, min_, max_)),
      share_(share) {}

void PrefillPacer::decode_round(double seconds, int streams) {
  if (!(seconds > 0) || !std::isfinite(seconds) || streams <= 0 || streams > 4096) return;
  if (decode_s_.size() <= size_t(streams)) decode_s_.resize(size_t(streams) + 1, 0.0);
  // A running mean that follows the machine within a few rounds.
  double& d = decode_s_[size_t(streams)];
  d = d > 0 ? 0.75 * d + 0.25 * seconds : seconds;
}

void PrefillPacer::prefill_round(double seconds, int64_t token_layers, int streams) {
  if (streams <= 0 || size_t(streams) >= decode_s_.size() || decode_s_[size_t(streams)] <= 0) return;
  if (token_layers <= 0 || !(seconds > 0) || !std::isfinite(seconds)) return;
  const double plain = decode_s_[size_t(streams)];
  // The prefill's share of the round; a round no slower than a plain one says little about the
  // cost (noise), so it only lets the budget grow by the largest step.
  const double extra = std::max(seconds - plain, 0.0);
  const double wanted = extra > 0 ? share_ * plain * double(token_layers) / extra : double(max_);
  // Geometric damping, and at most a factor of 2 either way per round: one noisy round moves the
  // budget a little, a change of machine state within a few rounds.
  const double next = wanted >= double(max_) ? 2.0 * double(budget_)  // all of it fits: no need to creep up
                     : std::clamp(std::sqrt(double(budget_) * wanted), 0.5 * double(budget_), 2.0 * double(budget_));
  budget_ = std::clamp(int64_t(std::llround(next)), min_, max_);
}

}  // namespace qwen35
