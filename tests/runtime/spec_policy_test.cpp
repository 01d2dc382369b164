// Speculation's policy: the cost model, the choice of source and length, backing off and probing.
#include <gtest/gtest.h>

#include <random>

#include "runtime/engine_internal.h"
#include "runtime/session_impl.h"
#include "runtime/spec_policy.h"
#include "runtime_harness.h"

namespace qwen35::test {
namespace {

SpeculativeParams spec(SpecMode mode, int draft_max = 8) {
  SpeculativeParams p;
  p.mode = mode;
  p.draft_max = draft_max;
  return p;
}

// Memory-bound blocks: verifying n tokens costs 100 + 10 (n - 1) ms, an MTP step 10 ms.
SpecCosts cheap_blocks() {
  SpecCosts c;
  for (int n = 1; n <= SpecCosts::kMaxBlock; ++n) c.record_block(n, 100 + 10.0 * (n - 1));
  c.record_mtp_step(10);
  return c;
}

TEST(SpecCosts, PriorInterpolationAndExtrapolation) {
  SpecCosts c;
  EXPECT_DOUBLE_EQ(c.block_ms(1), 1.0);  // nothing measured: units of a decode step
  EXPECT_DOUBLE_EQ(c.block_ms(3), 1.3);  // prior slope 0.15
  c.record_block(1, 200);
  EXPECT_DOUBLE_EQ(c.block_ms(1), 200);
  EXPECT_DOUBLE_EQ(c.block_ms(5), 200 * 1.6);
  EXPECT_DOUBLE_EQ(c.mtp_step_ms(), 30);  // prior: 0.15 decode steps
  c.record_block(5, 400);
  EXPECT_DOUBLE_EQ(c.block_ms(3), 300);   // between sizes 1 and 5
  EXPECT_DOUBLE_EQ(c.block_ms(9), 600);   // the line through them, further on
  c.record_block(5, 500);                 // running average: 400 + 0.2 * 100
  EXPECT_DOUBLE_EQ(c.block_ms(5), 420);
  c.record_mtp_step(12);
  EXPECT_DOUBLE_EQ(c.mtp_step_ms(), 12);
  SpecCosts only_big;
  only_big.record_block(11, 250);  // implies a decode step of 100 under the prior
  EXPECT_NEAR(only_big.block_ms(1), 100, 1e-9);
  EXPECT_NEAR(only_big.block_ms(6), 175, 1e-9);
}

TEST(SpecPolicy, ForcedModesAndLimits) {
  SpecCosts c = cheap_blocks();
  SpecPolicy mtp(spec(SpecMode::kMtp, 5), true, c);
  EXPECT_EQ(mtp.plan(8, 0).source, DraftSource::kMtp);
  EXPECT_EQ(mtp.plan(8, 0).tokens, 5);
  EXPECT_EQ(mtp.plan(3, 9).tokens, 3);
  EXPECT_EQ(mtp.plan(0, 0).source, DraftSource::kNone);
  SpecPolicy no_head(spec(SpecMode::kMtp, 5), false, c);
  EXPECT_EQ(no_head.plan(8, 0).source, DraftSource::kNone);
  SpecPolicy pld(spec(SpecMode::kPld, 6), true, c);
  EXPECT_EQ(pld.plan(8, 0).source, DraftSource::kNone);
  EXPECT_EQ(pld.plan(8, 9).source, DraftSource::kPld);
  EXPECT_EQ(pld.plan(8, 9).tokens, 6);
  EXPECT_EQ(pld.plan(8, 2).tokens, 2);
  SpecPolicy off(spec(SpecMode::kOff), true, c);
  EXPECT_EQ(off.plan(8, 9).source, DraftSource::kNone);
}

TEST(SpecPolicy, ExpectedTokensAndCost) {
  SpecCosts c = cheap_blocks();
  SpecPolicy p(spec(SpecMode::kAuto), true, c);
  EXPECT_DOUBLE_EQ(p.expected_tokens(DraftSource::kMtp, 0), 1);
  EXPECT_NEAR(p.expected_tokens(DraftSource::kMtp, 2), 1 + 0.7 + 0.49, 1e-12);
  EXPECT_DOUBLE_EQ(p.expected_ms(DraftSource::kMtp, 3), 3 * 10 + 130);
  EXPECT_DOUBLE_EQ(p.expected_ms(DraftSource::kPld, 3), 130);  // prompt lookup drafts for free
  p.report(DraftSource::kMtp, 3, 1);  // depth 1 accepted, depth 2 rejected, depth 3 not reached
  EXPECT_NEAR(p.acceptance(DraftSource::kMtp, 1), 0.76, 1e-12);
  EXPECT_NEAR(p.acceptance(DraftSource::kMtp, 2), 0.56, 1e-12);
  EXPECT_NEAR(p.acceptance(DraftSource::kMtp, 3), 0.7, 1e-12);
}

// Cheap verification and good acceptance: draft, and longer drafts as acceptance grows; costly
// verification (compute-bound blocks): never.
TEST(SpecPolicy, DraftsWhenItPays) {
  SpecCosts cheap = cheap_blocks();
  SpecPolicy p(spec(SpecMode::kAuto, 8), true, cheap);
  SpecPolicy::Plan first = p.plan(8, 0);
  EXPECT_EQ(first.source, DraftSource::kMtp);
  EXPECT_GE(first.tokens, 2);
  for (int i = 0; i < 30; ++i) p.report(DraftSource::kMtp, 8, 8);
  EXPECT_EQ(p.plan(8, 0).tokens, 8);
  // A prompt-lookup draft on offer wins once its acceptance is better (and it costs no steps).
  for (int i = 0; i < 30; ++i) p.report(DraftSource::kMtp, 8, 0);
  EXPECT_EQ(p.plan(8, 5).source, DraftSource::kPld);

  SpecCosts dear;
  for (int n = 1; n <= SpecCosts::kMaxBlock; ++n) dear.record_block(n, 100.0 * n);
  dear.record_mtp_step(10);
  SpecPolicy q(spec(SpecMode::kAuto, 8), true, dear);
  EXPECT_EQ(q.plan(8, 0).source, DraftSource::kNone);
}

// Costs are relative to a measured plain step: none yet, or 64 drafting steps since the last one,
// and the step is plain.
TEST(SpecPolicy, PlainStepsMeasureTheDecodeCost) {
  SpecCosts c;
  c.record_block(4, 130);
  c.record_mtp_step(10);
  SpecPolicy p(spec(SpecMode::kAuto, 3), true, c);
  EXPECT_EQ(p.plan(3, 0).source, DraftSource::kNone);
  c.record_block(1, 100);
  for (int i = 0; i < 64; ++i) ASSERT_EQ(p.plan(3, 0).source, DraftSource::kMtp) << i;
  EXPECT_EQ(p.plan(3, 0).source, DraftSource::kNone);
  EXPECT_EQ(p.plan(3, 0).source, DraftSource::kMtp);
}

// Drafts that keep failing: no drafts, then one-token probes after 4, 8, 16 .. 64 plain steps;
// an accepted probe brings drafting back.
TEST(SpecPolicy, BacksOffAndProbes) {
  SpecCosts c = cheap_blocks();
  SpecPolicy p(spec(SpecMode::kAuto, 8), true, c);
  for (int i = 0; i < 20; ++i) p.report(DraftSource::kMtp, 4, 0);
  for (int wait : {4, 8, 16, 32, 64, 64}) {
    for (int i = 1; i < wait; ++i) ASSERT_EQ(p.plan(8, 0).source, DraftSource::kNone) << wait << " " << i;
    const SpecPolicy::Plan probe = p.plan(8, 0);
    ASSERT_EQ(probe.source, DraftSource::kMtp) << wait;
    EXPECT_EQ(probe.tokens, 1);
    p.report(DraftSource::kMtp, 1, 0);
  }
  for (int i = 1; i < 64; ++i) p.plan(8, 0);
  ASSERT_EQ(p.plan(8, 0).tokens, 1);
  p.report(DraftSource::kMtp, 1, 1);
  for (int i = 0; i < 10; ++i) p.report(DraftSource::kMtp, 1, 1);  // acceptance recovers
  EXPECT_EQ(p.plan(8, 0).source, DraftSource::kMtp);
}

// On the random tiny model the head's drafts are nearly always wrong: `auto` stops drafting soon,
// and the output stays plain greedy. The session's step costs are fixed first (a decode step 10
// ms, blocks on the prior's slope, a cheap 1 ms draft step, so only the failing drafts can stop
// it): measured ones on a loaded machine moved the point where it stops.
TEST(SpecPolicy, AutoBacksOffWhenDraftsFail) {
  const Engine& engine = tiny_engine();
  std::mt19937 rng(21);
  std::vector<int32_t> prompt(9);
  for (auto& t : prompt) t = int32_t(rng() % 150000);
  Status st;
  const GenerationResult plain = engine.new_session()->complete(prompt, greedy(60, SpecMode::kOff), nullptr, &st);
  auto session = engine.new_session();
  SpecCosts& costs = impl_of(*session).spec_costs;
  for (int n = 1; n <= SpecCosts::kMaxBlock; ++n) costs.record_block(n, 10.0 * (1 + 0.15 * (n - 1)));
  costs.record_mtp_step(1.0);
  costs.freeze();
  const GenerationResult autod = session->complete(prompt, greedy(60, SpecMode::kAuto), nullptr, &st);
  ASSERT_TRUE(st.ok());
  EXPECT_EQ(autod.tokens, plain.tokens);
  EXPECT_EQ(costs.block_ms(1), 10.0);  // frozen
  EXPECT_GT(autod.drafted(), 0);
  EXPECT_LT(autod.drafted(), 20) << autod.mtp_drafted << " drafted, " << autod.mtp_accepted << " accepted";
}

}  // namespace
}  // namespace qwen35::test
