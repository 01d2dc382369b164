#include "moe_checks.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

namespace qwen35::test {
namespace {

std::vector<float> head(const std::vector<float>& v, int64_t rows, int64_t width) {
  return std::vector<float>(v.begin(), v.begin() + rows * width);
}

// All groups together: a near tie taken the other way in one layer changes that row in every later
// layer and every later row, so the comparable rows end at the first divergence anywhere.
int64_t check_groups(const Golden& g, const std::vector<std::string>& groups, const std::vector<const LayerRoutes*>& rs,
                     int64_t n) {
  int64_t first = n;  // first row where some group chose other experts
  size_t at = 0;
  for (size_t i = 0; i < groups.size(); ++i) {
    const std::string& group = groups[i];
    const LayerRoutes& r = *rs[i];
    const auto ids = g.i64(group + "topk_ids");
    const int64_t k = g.shape(group + "topk_ids")[1], E = g.shape(group + "router_logits")[1];
    if (int64_t(ids.size()) < n * k || int64_t(r.ids.size()) < n * k || int64_t(r.logits.size()) < n * E) {
      ADD_FAILURE() << group << ": fewer than " << n << " rows (golden " << ids.size() / size_t(k) << ", engine "
                    << r.ids.size() / size_t(k) << ")";
      return 0;
    }
    for (int64_t t = 0; t < first; ++t) {
      bool same = true;
      for (int64_t j = 0; j < k; ++j) same &= int64_t(r.ids[size_t(t * k + j)]) == ids[size_t(t * k + j)];
      if (!same) {
        first = t;
        at = i;
      }
    }
  }
  if (first < n) {
    const double gap = g.f32(groups[at] + "kth_gap_rel")[size_t(first)];
    if (gap >= kRouteNearTie) ADD_FAILURE() << groups[at] << " row " << first << ": other experts chosen (kth_gap_rel " << gap << ")";
  }
  for (size_t i = 0; i < groups.size() && first > 0; ++i) {
    const std::string& group = groups[i];
    const LayerRoutes& r = *rs[i];
    const auto weights = g.f32(group + "topk_weights");
    const auto logits = g.f32(group + "router_logits");
    const int64_t k = g.shape(group + "topk_ids")[1], E = g.shape(group + "router_logits")[1];
    EXPECT_LE(max_rel_error(head(r.logits, first, E), head(logits, first, E)), kRouteRelTol) << group << "router_logits";
    EXPECT_LE(max_rel_error(head(r.shared_gate, first, 1), head(g.f32(group + "shared_gate"), first, 1)), kRouteRelTol)
        << group << "shared_gate";
    for (int64_t t = 0; t < first; ++t) {
      // The weights are the chosen experts' softmax renormalised: w_j = e^l_j / sum_chosen e^l_i.
      // Our weights must be that of our own logits (in double) to float rounding, and the golden's
      // to kRouteWeightTol plus what our logits' difference from the golden's moves them:
      // dw_j = w_j (dl_j - sum_i w_i dl_i), so |dw_j| <= 2 w_j max_i |dl_i|.
      double dl = 0, sum = 0, mx = -1e300;
      for (int64_t j = 0; j < k; ++j) {
        const size_t e = size_t(r.ids[size_t(t * k + j)]);
        dl = std::max(dl, std::fabs(double(r.logits[size_t(t * E) + e]) - double(logits[size_t(t * E) + e])));
        mx = std::max(mx, double(r.logits[size_t(t * E) + e]));
      }
      for (int64_t j = 0; j < k; ++j) sum += std::exp(double(r.logits[size_t(t * E + r.ids[size_t(t * k + j)])]) - mx);
      for (int64_t j = 0; j < k; ++j) {
        const double w = r.weights[size_t(t * k + j)];
        const double own = std::exp(double(r.logits[size_t(t * E + r.ids[size_t(t * k + j)])]) - mx) / sum;
        EXPECT_NEAR(w, own, 1e-6) << group << " row " << t << " slot " << j << ": not the softmax of its own logits";
        EXPECT_NEAR(w, weights[size_t(t * k + j)], kRouteWeightTol + 2 * w * dl) << group << " row " << t << " slot " << j;
      }
    }
  }
  return first;
}

}  // namespace

int64_t expect_routes_match(const Golden& g, const std::string& group, const LayerRoutes& r, int64_t n) {
  return check_groups(g, {group}, {&r}, n);
}

int64_t expect_layer_routes_match(const Golden& g, const std::string& prefix, const std::vector<LayerRoutes>& routes,
                                  int num_layers, int64_t n) {
  if (int(routes.size()) != num_layers) {
    ADD_FAILURE() << "routes of " << routes.size() << " layers, expected " << num_layers;
    return 0;
  }
  std::vector<std::string> groups;
  std::vector<const LayerRoutes*> rs;
  for (int i = 0; i < num_layers; ++i) {
    groups.push_back(prefix + "route." + std::to_string(i) + ".");
    rs.push_back(&routes[size_t(i)]);
  }
  return check_groups(g, groups, rs, n);
}

}  // namespace qwen35::test
