// The mixture-of-experts router of one token: softmax over every expert in f32, torch.topk of the
// probabilities, renormalised over the chosen ones.
#include "kernels/moe_route.h"

#include <algorithm>
#include <cmath>

namespace qwen35::kernels {

void moe_route(const float* logits, int64_t n, int k, float* probs, int32_t* ids, float* weights) {
  float max = logits[0];
  for (int64_t e = 1; e < n; ++e) max = std::max(max, logits[e]);
  float sum = 0;
  for (int64_t e = 0; e < n; ++e) {
    probs[e] = std::exp(logits[e] - max);
    sum += probs[e];
  }
  for (int64_t e = 0; e < n; ++e) probs[e] /= sum;
  // k passes over n experts (k is 8 of 256 in the released models): each takes the largest
  // probability not yet taken; a strict > keeps the lower id of equal ones.
  float chosen = 0;
  for (int j = 0; j < k; ++j) {
    int64_t best = -1;
    for (int64_t e = 0; e < n; ++e) {
      bool taken = false;
      for (int i = 0; i < j && !taken; ++i) taken = ids[i] == e;
      if (!taken && (best < 0 || probs[e] > probs[best])) best = e;
    }
    ids[j] = int32_t(best);
    chosen += probs[best];
  }
  for (int j = 0; j < k; ++j) weights[j] = probs[ids[j]] / chosen;
}

}  // namespace qwen35::kernels
