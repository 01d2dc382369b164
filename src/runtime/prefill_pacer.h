// How much prompt prefill a batched round may carry while other conversations decode. Their
// next tokens wait for the round, so the prefill it carries is their extra gap; a fixed amount
// is too much on a machine with slow kernels and too little on one with fast ones. The pacer
// measures instead: rounds of decode steps alone give the plain round time d, rounds that also
// carried prefill give its cost per token-layer, and the budget is what fits in share * d. A
// round's plain time grows with the number of streams decoding in it, so d is kept per number.
// Scheduling only: a block's layers compute the same bits however they are spread over rounds.
#pragma once

#include <cstdint>
#include <vector>

namespace qwen35 {

class PrefillPacer {
 public:
  // Budgets in token-layers (a block of n tokens advances budget / n layers a round), kept in
  // [min_budget, max_budget]; `start` until measurements say otherwise.
  PrefillPacer(int64_t min_budget, int64_t max_budget, int64_t start, double share);

  int64_t budget() const { return budget_; }
  // A round of `streams` decode steps only took `seconds`.
  void decode_round(double seconds, int streams);
  // A round of `streams` decode steps that also advanced `token_layers` of prefill took
  // `seconds`; nothing changes before a plain round of as many streams has been seen.
  void prefill_round(double seconds, int64_t token_layers, int streams);

 private:
  int64_t min_, max_, budget_;
  double share_;
  std::vector<double> decode_s_;  // [streams]: running mean of plain rounds; 0 before the first
};

}  // namespace qwen35
