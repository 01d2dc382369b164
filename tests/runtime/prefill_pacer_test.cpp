// PrefillPacer: the prefill a batched round carries while others decode is sized by measurement
// to share * (a plain decode round), whatever the machine's speed.
#include <gtest/gtest.h>

#include "runtime/prefill_pacer.h"

namespace qwen35 {
namespace {

// A machine whose plain rounds take d seconds and whose prefill costs c seconds per token-layer:
// rounds alternate, the prefill rounds carrying the pacer's budget.
int64_t settle(PrefillPacer& p, double d, double c, int rounds = 40) {
  for (int i = 0; i < rounds; ++i) {
    p.decode_round(d, 2);
    p.prefill_round(d + c * double(p.budget()), p.budget(), 2);
  }
  return p.budget();
}

TEST(PrefillPacer, SettlesWhereThePrefillCostsTheShareOfAPlainRound) {
  // 0.1 s rounds, 0.5 ms per token-layer, share 0.5: 0.05 s of prefill is 100 token-layers.
  PrefillPacer p(8, 10000, 128, 0.5);
  EXPECT_EQ(p.budget(), 128);
  EXPECT_NEAR(double(settle(p, 0.1, 0.0005)), 100.0, 2.0);
  // The same pacer on a machine twice as fast at prefill follows it.
  EXPECT_NEAR(double(settle(p, 0.1, 0.00025)), 200.0, 4.0);
  // A share of 1.5: three times the budget.
  PrefillPacer q(8, 10000, 128, 1.5);
  EXPECT_NEAR(double(settle(q, 0.1, 0.0005)), 300.0, 6.0);
}

TEST(PrefillPacer, StaysWithinItsRange) {
  PrefillPacer slow(64, 2048, 128, 0.5);
  EXPECT_EQ(settle(slow, 0.1, 0.01), 64);  // 5 token-layers would fit: the floor, one layer of a block
  PrefillPacer fast(64, 2048, 128, 0.5);
  EXPECT_EQ(settle(fast, 0.1, 1e-7), 2048);  // all of it fits
  PrefillPacer free_prefill(64, 2048, 128, 0.5);
  for (int i = 0; i < 20; ++i) {
    free_prefill.decode_round(0.1, 2);
    free_prefill.prefill_round(0.09, free_prefill.budget(), 2);  // faster than a plain round: noise
  }
  EXPECT_EQ(free_prefill.budget(), 2048);
}

TEST(PrefillPacer, OneOutlierMovesTheBudgetAtMostByHalf) {
  PrefillPacer p(8, 10000, 100, 0.5);
  settle(p, 0.1, 0.0005);
  const int64_t before = p.budget();
  p.prefill_round(10.0, p.budget(), 2);  // a round stalled by something else
  EXPECT_GE(p.budget(), before / 2);
  EXPECT_LT(p.budget(), before);
  EXPECT_NEAR(double(settle(p, 0.1, 0.0005)), 100.0, 2.0);  // and it comes back
}

TEST(PrefillPacer, WaitsForAPlainRoundOfAsManyStreamsAndIgnoresEmptyOnes) {
  PrefillPacer p(8, 10000, 128, 0.5);
  p.prefill_round(5.0, 128, 1);  // no plain round yet to compare with
  EXPECT_EQ(p.budget(), 128);
  p.decode_round(0.1, 1);
  p.prefill_round(5.0, 128, 3);  // three streams: their plain round is unknown
  p.prefill_round(5.0, 0, 1);    // a vision slice: no token-layers
  p.prefill_round(0.0, 128, 1);
  p.decode_round(-1, 1);
  p.decode_round(0.1, 0);
  EXPECT_EQ(p.budget(), 128);
}

TEST(PrefillPacer, EachNumberOfStreamsHasItsOwnPlainRound) {
  // One stream's plain round takes 0.1 s, three streams' 0.2 s; prefill costs 0.5 ms a
  // token-layer: beside three streams, 0.1 s of prefill (200 token-layers) fits in half a round.
  PrefillPacer p(8, 10000, 128, 0.5);
  p.decode_round(0.1, 1);
  for (int i = 0; i < 40; ++i) {
    p.decode_round(0.2, 3);
    p.prefill_round(0.2 + 0.0005 * double(p.budget()), p.budget(), 3);
  }
  EXPECT_NEAR(double(p.budget()), 200.0, 4.0);
}

}  // namespace
}  // namespace qwen35
