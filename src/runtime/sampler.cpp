#include "runtime/sampler.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <limits>

#include "core/error.h"

namespace qwen35 {

namespace {

// Up to this top_k a heap pass beats copying the whole row for a quickselect.
constexpr size_t kHeapTopK = 256;

uint64_t seed_from(const SamplingParams& p) {
  if (p.seed) return *p.seed;
  std::random_device rd;
  return (uint64_t(rd()) << 32) ^ uint64_t(rd());
}

}  // namespace

Sampler::Sampler(const SamplingParams& params, int64_t vocab_size)
    : params_(params), vocab_(vocab_size), rng_(seed_from(params)) {
  if (vocab_size <= 0 || vocab_size > std::numeric_limits<int32_t>::max())
    fail("Sampler: vocab_size must be in [1, 2^31), got ", vocab_size);
  // `!(t > 0)` also sends a NaN temperature to the deterministic path.
  greedy_ = !(params.temperature > 0.0f) || params.top_k == 1;
  penalties_ = params.presence_penalty != 0.0f || params.frequency_penalty != 0.0f ||
               params.repetition_penalty != 1.0f;
  if (penalties_) counts_.assign(size_t(vocab_), 0);
  if (!greedy_) cand_.resize(size_t(vocab_));
  top_.resize(size_t(std::clamp<int64_t>(params.top_logprobs, 0, vocab_)));
}

void Sampler::accept(int32_t token) {
  if (!penalties_ || token < 0 || token >= vocab_) return;
  if (counts_[size_t(token)]++ == 0) {
    seen_.push_back(token);
    saved_.push_back(0.0f);  // grows here, not in sample()
  }
}

void Sampler::penalize(float* logits) const {
  const float rep = params_.repetition_penalty;
  for (int32_t t : seen_) {
    float l = logits[t];
    if (rep != 1.0f) l = l > 0.0f ? l / rep : l * rep;
    l -= params_.frequency_penalty * float(counts_[size_t(t)]);
    l -= params_.presence_penalty;
    logits[t] = l;
  }
}

int32_t Sampler::argmax(const float* logits) const {
  // Strict '>' keeps the lowest id among exact ties.
  int32_t best = 0;
  float best_value = logits[0];
  for (int64_t i = 1; i < vocab_; ++i) {
    if (logits[i] > best_value) {
      best_value = logits[i];
      best = int32_t(i);
    }
  }
  return best;
}

size_t Sampler::partition(size_t lo, size_t hi) {
  // Median of three as the pivot, moved to the end; then Lomuto. Deterministic by design.
  const size_t mid = lo + (hi - lo) / 2, last = hi - 1;
  if (better(cand_[mid], cand_[lo])) std::swap(cand_[mid], cand_[lo]);
  if (better(cand_[last], cand_[lo])) std::swap(cand_[last], cand_[lo]);
  if (better(cand_[mid], cand_[last])) std::swap(cand_[mid], cand_[last]);  // median now last
  const Candidate pivot = cand_[last];
  size_t store = lo;
  for (size_t j = lo; j < last; ++j) {
    if (better(cand_[j], pivot)) std::swap(cand_[store++], cand_[j]);
  }
  std::swap(cand_[store], cand_[last]);
  return store;
}

void Sampler::select_best(size_t n, size_t k) {
  // Invariant: everything in [0, lo) beats everything in [lo, n), and the k-th best is in
  // [lo, hi).
  size_t lo = 0, hi = n;
  while (hi - lo > 1) {
    const size_t p = partition(lo, hi);  // [0, p] are now the p + 1 best
    if (p == k || p + 1 == k) return;
    if (k < p) {
      hi = p;
    } else {
      lo = p + 1;
    }
  }
}

size_t Sampler::nucleus(size_t n, double target) {
  // Quickselect on mass: `acc` is the weight of [0, lo), which beats all of [lo, hi), and the
  // cut lies in (lo, hi]. Each step keeps the side of the pivot that holds the cut.
  constexpr size_t kSortBelow = 32;
  if (target <= 0.0) {  // top_p <= 0: the best token alone
    select_best(n, 1);
    return 1;
  }
  size_t lo = 0, hi = n;
  double acc = 0.0;
  while (hi - lo > kSortBelow) {
    const size_t p = partition(lo, hi);
    double upper = 0.0;
    for (size_t j = lo; j < p; ++j) upper += cand_[j].value;
    if (acc + upper >= target) {  // reached before the pivot
      hi = p;
      continue;
    }
    acc += upper + cand_[p].value;
    if (acc >= target) return p + 1;
    lo = p + 1;
  }
  // A short range is left: order it (a total order, so the result is unique) and walk it.
  std::sort(cand_.begin() + ptrdiff_t(lo), cand_.begin() + ptrdiff_t(hi), better);
  for (size_t j = lo; j < hi; ++j) {
    acc += cand_[j].value;
    if (acc >= target) return j + 1;
  }
  return hi;  // n if never reached, or a rounding difference between the two summation orders
}

size_t Sampler::filter(const float* logits) {
  const float inv_t = 1.0f / params_.temperature;
  if (!std::isfinite(inv_t)) return 0;  // temperature so small it is greedy

  // Weights relative to the best token: w = p / p_max = exp((l - max) / T), so w_max == 1 and
  // min_p compares w directly. `total` is the mass of all top_k survivors: top_p needs it even
  // where min_p later removes the token, since HF applies top_p before min_p.
  const float min_p = params_.min_p;
  double total = 0.0;
  size_t n = 0;
  if (params_.top_k > 0 && params_.top_k < vocab_) {
    // top_k on the raw logits (dividing by T > 0 keeps the order).
    const size_t k = size_t(params_.top_k);
    if (k <= kHeapTopK) {
      // One pass against the worst of the k kept so far (a heap on `better`, worst on top);
      // nearly every token fails that single comparison. Sorting the k afterwards makes their
      // order independent of the library's heap layout.
      auto first = cand_.begin();
      for (int64_t i = 0; i < vocab_; ++i) {
        const Candidate c{logits[i], int32_t(i)};
        if (size_t(i) < k) {
          cand_[size_t(i)] = c;
          std::push_heap(first, first + ptrdiff_t(i) + 1, better);
        } else if (better(c, cand_[0])) {
          std::pop_heap(first, first + ptrdiff_t(k), better);
          cand_[k - 1] = c;
          std::push_heap(first, first + ptrdiff_t(k), better);
        }
      }
      std::sort(first, first + ptrdiff_t(k), better);
    } else {
      for (int64_t i = 0; i < vocab_; ++i) cand_[size_t(i)] = {logits[i], int32_t(i)};
      select_best(size_t(vocab_), k);
    }
    float max_logit = cand_[0].value;
    for (size_t j = 1; j < k; ++j) max_logit = std::max(max_logit, cand_[j].value);
    if (!std::isfinite(max_logit)) return 0;  // all -inf, or an inf/NaN row
    for (size_t j = 0; j < k; ++j) {
      const float w = std::exp((cand_[j].value - max_logit) * inv_t);
      total += w;
      if (w >= min_p) cand_[n++] = {w, cand_[j].id};
    }
  } else {
    const float max_logit = logits[argmax(logits)];
    if (!std::isfinite(max_logit)) return 0;
    for (int64_t i = 0; i < vocab_; ++i) {
      const float w = std::exp((logits[i] - max_logit) * inv_t);
      total += w;
      if (w >= min_p) cand_[n++] = {w, int32_t(i)};
    }
  }
  assert(n >= 1);  // the best token has w == 1 >= any min_p <= 1

  // top_p, then min_p. Both keep a best-first prefix of the candidates, so searching the
  // nucleus among the min_p survivors (against the full mass) gives the shorter of the two
  // prefixes: exactly what the two filters in sequence keep.
  if (params_.top_p < 1.0f) n = nucleus(n, double(params_.top_p) * total);
  return n;
}

int32_t Sampler::sample_filtered(const float* logits) {
  const size_t n = filter(logits);
  if (n == 0) return argmax(logits);
  // Draw from the renormalised survivors, in their (deterministic) array order.
  double mass = 0.0;
  for (size_t j = 0; j < n; ++j) mass += cand_[j].value;
  const double u = to_unit(rng_()) * mass;
  double acc = 0.0;
  size_t last_positive = 0;
  for (size_t j = 0; j < n; ++j) {
    if (cand_[j].value <= 0.0f) continue;
    acc += cand_[j].value;
    if (u < acc) return cand_[j].id;
    last_positive = j;
  }
  return cand_[last_positive].id;  // u rounded up to mass (probability ~2^-53)
}

void Sampler::fill_logprob(const float* raw, int32_t token, TokenLogprob* out) {
  // One pass: the max, and the best top_.size() tokens kept sorted by insertion (at most ~20,
  // and most tokens fail the first comparison against the current worst).
  const size_t want = top_.size();
  size_t have = 0;
  float max_logit = raw[0];
  for (int64_t i = 0; i < vocab_; ++i) {
    const float l = raw[i];
    if (l > max_logit) max_logit = l;
    if (want == 0) continue;
    const Candidate c{l, int32_t(i)};
    if (have == want && !better(c, top_[want - 1])) continue;
    size_t j = have < want ? have++ : want - 1;
    while (j > 0 && better(c, top_[j - 1])) {
      top_[j] = top_[j - 1];
      --j;
    }
    top_[j] = c;
  }
  double sum = 0.0;  // float exp (~1 ulp) is plenty for a log-probability, and twice as fast
  for (int64_t i = 0; i < vocab_; ++i) sum += std::exp(raw[i] - max_logit);
  const double lse = double(max_logit) + std::log(sum);

  out->token = token;
  out->logprob = float(double(raw[token]) - lse);
  out->top.clear();
  for (size_t j = 0; j < have; ++j) out->top.emplace_back(top_[j].id, float(double(top_[j].value) - lse));
}

std::vector<std::pair<int32_t, double>> Sampler::distribution(float* logits) {
  for (size_t j = 0; j < seen_.size(); ++j) saved_[j] = logits[seen_[j]];
  penalize(logits);
  const size_t n = greedy_ ? 0 : filter(logits);
  std::vector<std::pair<int32_t, double>> out;
  if (n == 0) {
    out.emplace_back(argmax(logits), 1.0);
  } else {
    double mass = 0.0;
    for (size_t j = 0; j < n; ++j) mass += cand_[j].value;
    for (size_t j = 0; j < n; ++j) out.emplace_back(cand_[j].id, cand_[j].value / mass);
  }
  for (size_t j = 0; j < seen_.size(); ++j) logits[seen_[j]] = saved_[j];
  return out;
}

int32_t Sampler::sample(float* logits, TokenLogprob* logprob) {
  assert(seen_.size() == saved_.size());
  for (size_t j = 0; j < seen_.size(); ++j) saved_[j] = logits[seen_[j]];
  penalize(logits);
  const int32_t token = greedy_ ? argmax(logits) : sample_filtered(logits);
  for (size_t j = 0; j < seen_.size(); ++j) logits[seen_[j]] = saved_[j];
  if (logprob) fill_logprob(logits, token, logprob);
  return token;
}

}  // namespace qwen35
