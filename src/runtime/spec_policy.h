// Speculative decoding's policy: which draft (MTP head or prompt lookup) a decode step verifies,
// and how long, from what a step costs and how often drafts are accepted.
//
// A step that verifies k draft tokens produces 1 + (accepted) tokens. With a_j the running
// probability that draft token j is accepted once the j - 1 before it were,
//   E[tokens](k) = 1 + a_1 + a_1 a_2 + ... + a_1 ... a_k
//   cost(k)      = k * draft step (MTP; prompt lookup is free) + verify(k + 1)
// (a rejection keeps the accepted part by replaying the DeltaNet recurrences, no forward pass),
// and `auto` takes the source and k with the most tokens per millisecond, or no draft when one
// plain decode step beats them all. Verify costs are measured per block size, relative to the
// measured decode step (unmeasured sizes are interpolated, with a prior before any measurement).
// When drafts stop paying it backs off, and probes with a one-token draft after 4, 8, 16 .. 64
// plain steps so the estimates can recover. The first decode step of a session is plain, to
// measure it, and so is one in every 64 drafting steps.
#pragma once

#include <array>

#include "qwen35/engine.h"

namespace qwen35 {

enum class DraftSource { kNone, kMtp, kPld };

// Running averages of one session's step costs (per session, so they carry over from one
// request to the next and follow that session's context length).
class SpecCosts {
 public:
  static constexpr int kMaxBlock = SpeculativeParams::kMaxDraft + 1;
  void record_block(int n, double ms);   // a forward pass of n tokens (1: a decode step)
  void record_mtp_step(double ms);       // one MTP draft step, logits included
  // Estimated milliseconds of a block of n >= 1 tokens, and of one MTP draft step.
  double block_ms(int n) const;
  double mtp_step_ms() const;
  bool measured(int n) const { return n >= 1 && n <= kMaxBlock && block_[size_t(n)] > 0; }
  // Later measurements are ignored (tests: a policy over fixed costs, whatever the machine's load).
  void freeze() { frozen_ = true; }

 private:
  bool frozen_ = false;
  std::array<double, kMaxBlock + 1> block_{};  // [n] EMA in ms; 0: not measured
  double mtp_step_ = 0;
};

class SpecPolicy {
 public:
  struct Plan {
    DraftSource source = DraftSource::kNone;
    int tokens = 0;
  };

  SpecPolicy(const SpeculativeParams& params, bool mtp_available, SpecCosts& costs);

  // A step that may verify up to max_tokens draft tokens; the prompt-lookup draft on offer has
  // pld_tokens tokens (0: none found).
  Plan plan(int max_tokens, int pld_tokens);
  // After verifying: `drafted` tokens from `source`, of which the first `accepted` matched.
  void report(DraftSource source, int drafted, int accepted);

  // The model above (public for tests and the benchmark's report).
  double expected_tokens(DraftSource source, int k) const;
  double expected_ms(DraftSource source, int k) const;
  double acceptance(DraftSource source, int depth) const { return accept_[index(source)][size_t(depth)]; }

 private:
  static size_t index(DraftSource s) { return s == DraftSource::kMtp ? 0 : 1; }
  // Best k in [1, max_tokens] for a source and its tokens per ms.
  std::pair<int, double> best(DraftSource source, int max_tokens) const;

  SpeculativeParams params_;
  bool mtp_;
  SpecCosts& costs_;
  // [source][depth 1..kMaxDraft]: P(draft token accepted | the ones before it were).
  std::array<std::array<double, SpeculativeParams::kMaxDraft + 1>, 2> accept_{};
  int plain_steps_ = 0;     // plain steps since the last draft
  int drafting_steps_ = 0;  // drafting steps since the last plain one
  int probe_after_ = 4;     // plain steps before a probing one-token draft
  bool probing_ = false;
};

}  // namespace qwen35
