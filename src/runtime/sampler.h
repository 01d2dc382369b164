// Next-token selection from a row of logits: penalties, greedy or seeded random sampling with the
// usual filters, and the log-probabilities the API reports.
//
// Pipeline for one call of sample(), in this order:
//   1. Penalties, over the tokens passed to accept() (generated tokens only, never the prompt):
//        repetition (HF):    logit > 0 ? logit / repetition_penalty : logit * repetition_penalty
//        frequency (OpenAI): logit -= frequency_penalty * count
//        presence (OpenAI):  logit -= presence_penalty            (once, if count > 0)
//      Repetition first, then the additive ones: the same order as vLLM, so a request gives the
//      same distribution here as there (the multiplicative step would otherwise scale the
//      additive penalties too).
//   2. Greedy (temperature <= 0 or top_k == 1): argmax, the lowest id on exact ties. One pass.
//   3. Otherwise: temperature scaling, top_k, top_p (the smallest set of the most likely tokens
//      whose mass reaches top_p; always at least one), min_p (drop tokens whose probability is
//      below min_p times the largest), renormalise, draw. HF's order of the filters; each one
//      sees the distribution the previous ones left.
//
// Reproducibility: the draw uses std::mt19937_64 (its output sequence is fixed by the standard)
// seeded with params.seed, and turns its raw 64 bits into a double itself, because the
// std::*_distribution classes are implementation-defined. For the same reason the selection
// below is our own code rather than std::nth_element (whose element order is unspecified): the
// candidates' order, and so which token a given draw lands on, is the same everywhere. Same
// seed and same logits -> same tokens, on any machine with the same libm (std::exp).
//
// Cost (248k vocabulary): the vocabulary is never sorted. Candidates are compared by (weight
// descending, id ascending), a total order; top_k is one pass with a k-heap (k <= 256) or a
// quickselect, top_p a quickselect that tracks the mass on each side of the pivot (expected
// linear time for any nucleus size), min_p one filtering pass. Greedy is a single argmax pass.
// Buffers are members sized once, so sample() does not allocate after the first call (apart
// from the caller's TokenLogprob::top).
//
// Thread contract: one Sampler per generation, used by one thread.
#pragma once

#include <cstdint>
#include <random>
#include <utility>
#include <vector>

#include "qwen35/engine.h"

namespace qwen35 {

class Sampler {
 public:
  // Seeds the generator from params.seed, or from std::random_device when it is unset.
  Sampler(const SamplingParams& params, int64_t vocab_size);

  // True when sample() is a deterministic argmax (temperature <= 0 or top_k == 1).
  bool greedy() const { return greedy_; }
  int64_t vocab_size() const { return vocab_; }

  // Picks the next token from logits[vocab_size]. The penalties are applied to the buffer in
  // place and undone before returning, so the caller gets its logits back unchanged.
  //
  // When `logprob` is not null, sets its token, logprob and top (the params.top_logprobs most
  // likely tokens, best first, lowest id first on ties); `text` is left to the caller. These come
  // from the model's own distribution, log_softmax(raw logits), before penalties, temperature
  // and filters: that is what OpenAI-compatible servers report by default (vLLM's "raw
  // logprobs"), it does not depend on the sampling settings, and a filtered-out alternative
  // would otherwise show as -inf.
  int32_t sample(float* logits, TokenLogprob* logprob);

  // Records a generated token for the penalties. Out-of-range ids are ignored, and nothing is
  // recorded when no penalty is active. There is no un-accept: with speculative or prompt-lookup
  // decoding, accept only the tokens that stay in the timeline.
  void accept(int32_t token);

  // The distribution sample() would draw from for these logits, after penalties and filters:
  // (token, probability) in draw order; one (argmax, 1) when the choice is greedy. Draws nothing
  // and leaves the logits as they were. For tests and diagnostics (it allocates).
  std::vector<std::pair<int32_t, double>> distribution(float* logits);

  // Step 1 alone: applies the penalties for the accepted tokens to logits[vocab_size] in place
  // (only the accepted tokens change). sample() uses it and then undoes it.
  void penalize(float* logits) const;

  // Turns the raw 64-bit output of the generator into a double uniform in [0, 1) (its top 53
  // bits). Public so tests can pin it.
  static double to_unit(uint64_t bits) { return double(bits >> 11) * 0x1.0p-53; }

 private:
  struct Candidate {
    float value;  // the logit, then the unnormalised probability exp((logit - max) / T)
    int32_t id;
  };
  // The total order used everywhere: larger value first, then smaller id.
  static bool better(const Candidate& a, const Candidate& b) {
    return a.value > b.value || (a.value == b.value && a.id < b.id);
  }

  int32_t argmax(const float* logits) const;
  // Steps 2-3 up to the draw: leaves the survivors' weights in cand_[0, n) and returns n, or 0
  // when the row cannot be sampled (temperature underflow, non-finite maximum) and the choice
  // falls back to argmax.
  size_t filter(const float* logits);
  int32_t sample_filtered(const float* logits);
  // Splits cand_[lo, hi) around a pivot: better ones first. Returns the pivot's index.
  size_t partition(size_t lo, size_t hi);
  // Rearranges cand_[0, n) so that its k best come first (in no particular order).
  void select_best(size_t n, size_t k);
  // Rearranges cand_[0, n) so that the smallest set of best candidates whose weight reaches
  // `target` comes first, and returns its size (n when the target is never reached).
  size_t nucleus(size_t n, double target);
  void fill_logprob(const float* raw, int32_t token, TokenLogprob* out);

  SamplingParams params_;
  int64_t vocab_;
  bool greedy_;
  bool penalties_;
  std::mt19937_64 rng_;

  std::vector<int32_t> counts_;        // [vocab] accepted occurrences (penalties only)
  std::vector<int32_t> seen_;          // distinct accepted tokens, in first-seen order
  std::vector<float> saved_;           // [seen_] raw logits of those tokens while penalized
  std::vector<Candidate> cand_;        // [vocab] candidate scratch (sampling only)
  std::vector<Candidate> top_;         // [top_logprobs] alternatives scratch
};

}  // namespace qwen35
