#include "runtime/spec_policy.h"

#include <algorithm>

namespace qwen35 {
namespace {

constexpr double kEma = 0.2;               // weight of the newest measurement or observation
constexpr double kPriorSlope = 0.15;       // verify(n) ~ decode * (1 + 0.15 (n - 1)) before measuring
constexpr double kPriorMtpStep = 0.15;     // an MTP draft step ~ 0.15 decode steps (one layer + LM head)
constexpr double kPriorAccept[2] = {0.7, 0.5};  // MTP, prompt lookup
constexpr int kFirstProbe = 4, kLastProbe = 64;
constexpr int kRemeasure = 64;  // drafting steps between two plain ones that re-measure a decode step

void ema(double& avg, double x) { avg = avg > 0 ? avg + kEma * (x - avg) : x; }

}  // namespace

void SpecCosts::record_block(int n, double ms) {
  if (!frozen_ && n >= 1 && n <= kMaxBlock && ms > 0) ema(block_[size_t(n)], ms);
}

void SpecCosts::record_mtp_step(double ms) {
  if (!frozen_ && ms > 0) ema(mtp_step_, ms);
}

double SpecCosts::block_ms(int n) const {
  n = std::clamp(n, 1, kMaxBlock);
  if (n == 1 && measured(1)) return block_[1];
  // A block does all a decode step does and more: never cheaper than one (timings on a busy
  // machine can say otherwise, and would make drafts that all fail look worth verifying).
  if (measured(n)) return std::max(block_[size_t(n)], block_ms(1));
  // The decode step, or what the measured blocks imply for it under the prior.
  double t1 = block_[1];
  if (t1 <= 0) {
    for (int m = 2; m <= kMaxBlock && t1 <= 0; ++m)
      if (measured(m)) t1 = block_[size_t(m)] / (1 + kPriorSlope * (m - 1));
    if (t1 <= 0) t1 = 1;  // nothing measured: costs in units of a decode step
  }
  // Interpolate between the nearest measured sizes around n (size 1 is t1); beyond the largest,
  // extend the line from size 1 through it; with none, the prior slope.
  int lo = 1, hi = 0;
  for (int m = 2; m <= kMaxBlock; ++m) {
    if (!measured(m)) continue;
    if (m < n) lo = m;
    if (m > n && hi == 0) hi = m;
  }
  const double t_lo = lo == 1 ? t1 : block_[size_t(lo)];
  if (hi > 0) return std::max(t1, t_lo + (block_[size_t(hi)] - t_lo) * double(n - lo) / double(hi - lo));
  if (lo > 1) return std::max(t1, t1 + (t_lo - t1) * double(n - 1) / double(lo - 1));
  return t1 * (1 + kPriorSlope * (n - 1));
}

double SpecCosts::mtp_step_ms() const { return mtp_step_ > 0 ? mtp_step_ : kPriorMtpStep * block_ms(1); }

SpecPolicy::SpecPolicy(const SpeculativeParams& params, bool mtp_available, SpecCosts& costs)
    : params_(params), mtp_(mtp_available), costs_(costs) {
  for (size_t s = 0; s < 2; ++s) accept_[s].fill(kPriorAccept[s]);
}

double SpecPolicy::expected_tokens(DraftSource source, int k) const {
  double e = 1, reach = 1;
  for (int j = 1; j <= k; ++j) e += (reach *= accept_[index(source)][size_t(j)]);
  return e;
}

double SpecPolicy::expected_ms(DraftSource source, int k) const {
  // A rejection costs no forward pass: the accepted part of the block is kept by replaying the
  // DeltaNet recurrences (Sequence::rewind(save, keep)), small beside the block's matmuls.
  return (source == DraftSource::kMtp ? k * costs_.mtp_step_ms() : 0.0) + costs_.block_ms(k + 1);
}

std::pair<int, double> SpecPolicy::best(DraftSource source, int max_tokens) const {
  std::pair<int, double> b{0, 0.0};
  for (int k = 1; k <= max_tokens; ++k) {
    const double rate = expected_tokens(source, k) / expected_ms(source, k);
    if (rate > b.second) b = {k, rate};
  }
  return b;
}

SpecPolicy::Plan SpecPolicy::plan(int max_tokens, int pld_tokens) {
  max_tokens = std::min(max_tokens, params_.draft_max);
  if (max_tokens <= 0) return {};
  switch (params_.mode) {
    case SpecMode::kOff: return {};
    case SpecMode::kMtp: return mtp_ ? Plan{DraftSource::kMtp, max_tokens} : Plan{};
    case SpecMode::kPld: return pld_tokens > 0 ? Plan{DraftSource::kPld, std::min(pld_tokens, max_tokens)} : Plan{};
    case SpecMode::kAuto: break;
  }
  // Everything is relative to a plain decode step: measure one first, and again now and then
  // (costs grow with the context), or a verify cost steeper than the prior would go unseen.
  if (!costs_.measured(1) || drafting_steps_ >= kRemeasure) {
    drafting_steps_ = 0;
    return {};
  }
  Plan choice;
  double rate = 1.0 / costs_.block_ms(1);  // plain decoding
  if (mtp_) {
    const auto [k, r] = best(DraftSource::kMtp, max_tokens);
    if (r > rate) choice = {DraftSource::kMtp, k}, rate = r;
  }
  if (pld_tokens > 0) {
    const auto [k, r] = best(DraftSource::kPld, std::min(pld_tokens, max_tokens));
    if (r > rate) choice = {DraftSource::kPld, k}, rate = r;
  }
  if (choice.source != DraftSource::kNone) {
    plain_steps_ = 0;
    ++drafting_steps_;
    return choice;
  }
  drafting_steps_ = 0;
  // Nothing pays at the current estimates: now and then a one-token draft to re-measure them.
  if (++plain_steps_ < probe_after_) return {};
  const DraftSource probe = pld_tokens > 0 ? DraftSource::kPld : mtp_ ? DraftSource::kMtp : DraftSource::kNone;
  if (probe == DraftSource::kNone) return {};
  probing_ = true;
  plain_steps_ = 0;
  return {probe, 1};
}

void SpecPolicy::report(DraftSource source, int drafted, int accepted) {
  if (source == DraftSource::kNone || drafted <= 0) return;
  auto& a = accept_[index(source)];
  for (int j = 1; j <= std::min(drafted, accepted + 1) && j <= SpeculativeParams::kMaxDraft; ++j)
    a[size_t(j)] += kEma * ((j <= accepted ? 1.0 : 0.0) - a[size_t(j)]);
  if (probing_) {
    probe_after_ = accepted > 0 ? kFirstProbe : std::min(kLastProbe, probe_after_ * 2);
    probing_ = false;
  } else if (accepted > 0) {
    probe_after_ = kFirstProbe;
  }
}

}  // namespace qwen35
