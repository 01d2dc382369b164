// The LM-head rows an MTP draft step scores. A draft only has to be a good guess: the main model
// verifies every draft token, and both acceptance rules (greedy, and sampled with a one-hot draft)
// compare it with the main model's own pick, so the output never depends on the draft. At 9B the
// full head (248320 x 4096) is 85% of a draft step; a subset cuts that in proportion:
//
//   ids [0, first)   a byte-level BPE vocabulary numbers its tokens in merge order, so the first
//                    ids are the bytes and the earliest (most frequent) merges
//   added tokens     <|im_end|>, <think>, </think>, tool-call tags: the model emits them at turn and
//                    thought boundaries, where a draft that cannot name them would always miss
//
// Ids outside the subset score -inf for the draft. Every range starts on a group of 16 rows (the
// packed layouts' group), so each is a view of the head's bytes (kernels::weight_rows), no copy.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "kernels/compute.h"

namespace qwen35 {

class DraftVocab {
 public:
  struct Range {
    int64_t begin = 0, end = 0;  // ids [begin, end)
    kernels::WeightMatrix rows;  // the head's rows [begin, end)
  };

  // Every row of the head: the draft is the head's own argmax.
  static DraftVocab full(const kernels::WeightMatrix& lm_head);
  // Ids [0, first) (first rounded up to a group, clamped to the vocabulary) and the groups that
  // hold the `extra` ids (ids outside the vocabulary are ignored). first <= 0, or a subset that
  // covers the vocabulary: full(lm_head).
  static DraftVocab subset(const kernels::WeightMatrix& lm_head, int64_t first, std::span<const int32_t> extra);

  const std::vector<Range>& ranges() const { return ranges_; }
  int64_t rows() const;  // ids scored
  bool is_full() const { return ranges_.size() == 1 && ranges_[0].begin == 0 && ranges_[0].end == vocab_; }
  bool contains(int32_t id) const;

  // The subset's highest-scoring id for one hidden row [H], lowest id on exact ties (as the
  // sampler's argmax). Writes the logits of the subset's ids into logits[vocab] at their ids and
  // leaves the other entries alone; `in` is the caller's scratch for the quantized input.
  int32_t argmax(const kernels::Compute& c, const float* hidden, float* logits, kernels::Activations& in) const;

  static constexpr int64_t kGroupRows = 16;

 private:
  int64_t vocab_ = 0;
  std::vector<Range> ranges_;  // sorted, disjoint, not adjacent
};

}  // namespace qwen35
