// Checks of an MoE model's routing against the tiny MoE goldens (tests/data/tiny-qwen35-moe,
// README "Near ties"): per decision the chosen expert ids (best first), their weights, the router
// logits and the shared expert's gate.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "decoder_harness.h"
#include "support/test_data.h"

namespace qwen35::test {

// A decision whose k-th chosen probability leads the best unchosen one by less than this (relative,
// the golden's kth_gap_rel) may fairly go the other way in another float32 engine (README: compare
// ids only above about 1e-4; the manifest lists every decision below 1e-5).
constexpr double kRouteNearTie = 1e-4;
// |a - b| of a renormalised weight, beyond what the router logits' own difference from the golden
// explains (moe_checks.cpp; in the last layers of 300 tokens those differ by ~1e-5 relative, as the
// official code's own prefill and token-by-token runs do: README "Observed reproducibility").
constexpr double kRouteWeightTol = 1e-5;
constexpr double kRouteRelTol = 1e-4;     // router logits and shared gates, max |a - b| / max |b|

// Checks rows [0, n) of `r` against the golden group `group` ("route.3.", "p0.route.mtp.") rows
// [0, n). Returns how many leading rows are comparable downstream: n, or the first row where the
// engine chose other experts at a golden near tie (its numbers legitimately differ from there on).
// A different choice anywhere else is a test failure.
int64_t expect_routes_match(const Golden& g, const std::string& group, const LayerRoutes& r, int64_t n);

// The same for every layer's group `<prefix>route.<layer>.`; the smallest comparable count.
int64_t expect_layer_routes_match(const Golden& g, const std::string& prefix, const std::vector<LayerRoutes>& routes,
                                  int num_layers, int64_t n);

}  // namespace qwen35::test
