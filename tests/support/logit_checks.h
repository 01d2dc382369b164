// Comparisons of computed logits with the golden logit records (lse, top-k, vocab subset,
// argmax, last position in full). Tolerance: |a - b| <= 1e-3 as the goldens' README suggests
// (observed errors of a float32 engine are 20-50x smaller).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "support/test_data.h"

namespace qwen35::test {

constexpr double kLogitTol = 1e-3;

// logsumexp of one row, in double.
double logsumexp(const float* row, int64_t n);

// Checks rows [0, T) of `logits` ([T, V]) against the record `prefix` ("logits", "turn2_logits")
// of `g`: prefix.lse, .top_ids/.top_vals, .subset (with vocab_subset; when stored), .argmax, .last_full.
// Adds GoogleTest failures; returns the largest absolute difference seen.
double expect_logits_match(const Golden& g, const std::string& prefix, const std::vector<float>& logits, int64_t T,
                           int64_t V);

// Per-step records of greedy goldens: `<prefix>step_lse` [S], `step_top_ids`/`step_top_vals` [S, k] and optionally
// `step_subset` [S, 512]; checks step s against logits row `row`.
double expect_step_logits_match(const Golden& g, const std::string& prefix, int64_t step, const float* row, int64_t V);

// The argmax, and whether the golden step was a near tie (top1 - top2 < tolerance).
int64_t argmax(const float* row, int64_t n);

}  // namespace qwen35::test
