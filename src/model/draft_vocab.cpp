#include "model/draft_vocab.h"

#include <algorithm>

#include "core/error.h"
#include "kernels/weight_rows.h"

namespace qwen35 {

DraftVocab DraftVocab::full(const kernels::WeightMatrix& lm_head) {
  DraftVocab d;
  d.vocab_ = lm_head.rows;
  d.ranges_.push_back(Range{0, lm_head.rows, lm_head});
  return d;
}

DraftVocab DraftVocab::subset(const kernels::WeightMatrix& lm_head, int64_t first, std::span<const int32_t> extra) {
  const int64_t V = lm_head.rows, g = kGroupRows;
  if (first <= 0) return full(lm_head);
  if (const int64_t packed = kernels::layout_group_rows(lm_head.layout); g % packed != 0)
    fail("the LM head's packed groups of ", packed, " rows do not divide the draft vocabulary's groups of ", g);
  std::vector<std::pair<int64_t, int64_t>> spans = {{0, std::min(V, (first + g - 1) / g * g)}};
  for (int32_t id : extra)
    if (id >= 0 && id < V) spans.push_back({id / g * g, std::min(V, id / g * g + g)});
  std::sort(spans.begin(), spans.end());
  DraftVocab d;
  d.vocab_ = V;
  for (auto [b, e] : spans) {
    if (!d.ranges_.empty() && b <= d.ranges_.back().end) d.ranges_.back().end = std::max(d.ranges_.back().end, e);
    else d.ranges_.push_back(Range{b, e, {}});
  }
  if (d.is_full()) return full(lm_head);
  for (Range& r : d.ranges_) r.rows = kernels::weight_rows(lm_head, r.begin, r.end - r.begin);
  return d;
}

int64_t DraftVocab::rows() const {
  int64_t n = 0;
  for (const Range& r : ranges_) n += r.end - r.begin;
  return n;
}

bool DraftVocab::contains(int32_t id) const {
  for (const Range& r : ranges_)
    if (id >= r.begin && id < r.end) return true;
  return false;
}

int32_t DraftVocab::argmax(const kernels::Compute& c, const float* hidden, float* logits,
                           kernels::Activations& in) const {
  std::vector<kernels::LinearOut> outs;
  outs.reserve(ranges_.size());
  for (const Range& r : ranges_) outs.push_back(kernels::LinearOut{&r.rows, logits + r.begin, r.end - r.begin});
  in.bind(hidden, 1, ranges_[0].rows.cols);
  kernels::linear_fused(c, in, outs);  // one parallel pass over every range
  int64_t best = ranges_[0].begin;
  for (const Range& r : ranges_)  // ascending ids: a later range wins only when strictly higher
    for (int64_t v = r.begin; v < r.end; ++v)
      if (logits[v] > logits[best]) best = v;
  return int32_t(best);
}

}  // namespace qwen35
