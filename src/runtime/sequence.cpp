#include "runtime/sequence.h"

#include <algorithm>
#include <cstring>

#include "core/error.h"
#include "runtime/batch_gate.h"

namespace qwen35 {

uint64_t image_token_key(uint64_t image_hash, int64_t index) {
  uint64_t x = image_hash ^ (uint64_t(index) * 0x9e3779b97f4a7c15ull);
  x ^= x >> 31;
  x *= 0xbf58476d1ce4e5b9ull;
  x ^= x >> 29;
  return x | (1ull << 63);  // never equal to a token id
}

size_t SnapshotData::bytes() const {
  size_t n = tokens.size() * sizeof(int32_t) + keys.size() * sizeof(uint64_t);
  for (const DeltaNetState& d : deltanet) n += (d.conv.size() + d.recurrent.size()) * sizeof(float);
  for (size_t i = 0; i < keys_rows.size(); ++i) n += keys_rows[i].size() + value_rows[i].size();
  return n;
}

Sequence::Sequence(const EngineImpl& engine) : engine_(engine), state_(DecoderState::create(engine.text_config(), engine.kv_dtype)) {
  state_.reserve(std::min<int64_t>(engine.context_size, 4096));
}

void Sequence::feed(const int32_t* ids, const uint64_t* keys, const float* embeddings, const int32_t* positions,
                    int64_t n, DeltaRuleMode mode, int64_t n_logits, float* logits) {
  if (n <= 0) return;
  if (length() + n > engine_.context_size)
    fail("sequence of ", length() + n, " tokens exceeds the context of ", engine_.context_size);
  n_logits = std::min(n_logits, n);
  const TextDecoder& dec = engine_.model->decoder();
  const int64_t H = engine_.text_config().hidden_size;
  if (int64_t(hidden_.size()) < n * H) hidden_.resize(size_t(n * H));
  if (BatchGate* gate = BatchGate::current()) {
    // The gate's batched pass; the rows come back so hidden_ holds what the solo pass leaves.
    gate->forward({&state_, embeddings, positions, n, mode, n_logits, logits, hidden_.data()});
  } else {
    dec.forward(engine_.compute, embeddings, positions, n, state_, ws_, hidden_.data(), mode);
    if (n_logits > 0) dec.logits(engine_.compute, hidden_.data() + (n - n_logits) * H, n_logits, logits);
  }
  tokens_.insert(tokens_.end(), ids, ids + n);
  keys_.insert(keys_.end(), keys, keys + n);
}

void Sequence::feed_text(const int32_t* ids, int64_t n, DeltaRuleMode mode, int64_t n_logits, float* logits) {
  const int64_t H = engine_.text_config().hidden_size;
  if (int64_t(emb_.size()) < n * H) emb_.resize(size_t(n * H));
  if (int64_t(pos_.size()) < 3 * n) pos_.resize(size_t(3 * n));
  engine_.model->decoder().embed(ids, n, emb_.data());
  for (int64_t t = 0; t < n; ++t) {
    const int32_t p = int32_t(length() + t + rope_delta_);
    pos_[size_t(t)] = pos_[size_t(n + t)] = pos_[size_t(2 * n + t)] = p;
  }
  key_buf_.assign(ids, ids + n);
  feed(ids, key_buf_.data(), emb_.data(), pos_.data(), n, mode, n_logits, logits);
}

void Sequence::save_deltanet(DeltaNetSave& save) const {
  save.states.resize(state_.deltanet.size());
  for (size_t i = 0; i < state_.deltanet.size(); ++i) {
    // Assignment into existing vectors reuses their buffers: no allocation after the first save.
    save.states[i].conv.assign(state_.deltanet[i].conv.begin(), state_.deltanet[i].conv.end());
    save.states[i].recurrent.assign(state_.deltanet[i].recurrent.begin(), state_.deltanet[i].recurrent.end());
  }
  save.length = length();
}

void Sequence::rewind(const DeltaNetSave& save) {
  if (save.length > length()) fail("Sequence::rewind: save is ahead of the sequence");
  for (size_t i = 0; i < state_.deltanet.size(); ++i) {
    std::copy(save.states[i].conv.begin(), save.states[i].conv.end(), state_.deltanet[i].conv.begin());
    std::copy(save.states[i].recurrent.begin(), save.states[i].recurrent.end(), state_.deltanet[i].recurrent.begin());
  }
  for (KvCache& kv : state_.kv) kv.truncate(save.length);
  tokens_.resize(size_t(save.length));
  keys_.resize(size_t(save.length));
  state_.n_past = save.length;
}

std::unique_ptr<SnapshotData> Sequence::snapshot() const {
  auto s = std::make_unique<SnapshotData>();
  s->tokens = tokens_;
  s->keys = keys_;
  s->deltanet = state_.deltanet;
  s->rope_delta = rope_delta_;
  for (const KvCache& kv : state_.kv) {
    const size_t n = size_t(kv.length()) * kv.row_bytes();
    const uint8_t* k = static_cast<const uint8_t*>(kv.key_row(0));
    const uint8_t* v = static_cast<const uint8_t*>(kv.value_row(0));
    s->keys_rows.emplace_back(k, k + n);
    s->value_rows.emplace_back(v, v + n);
  }
  return s;
}

void Sequence::restore(const SnapshotData& s) {
  const int64_t n = int64_t(s.tokens.size());
  // A snapshot of another model would overrun the state buffers.
  bool same_shape = s.deltanet.size() == state_.deltanet.size() && s.keys_rows.size() == state_.kv.size();
  for (size_t i = 0; same_shape && i < s.deltanet.size(); ++i)
    same_shape = s.deltanet[i].conv.size() == state_.deltanet[i].conv.size() &&
                 s.deltanet[i].recurrent.size() == state_.deltanet[i].recurrent.size();
  for (size_t i = 0; same_shape && i < s.keys_rows.size(); ++i)
    same_shape = s.keys_rows[i].size() == size_t(n) * state_.kv[i].row_bytes();
  if (!same_shape) fail("snapshot does not belong to this model");
  if (n > engine_.context_size) fail("snapshot of ", n, " tokens exceeds the context of ", engine_.context_size);
  for (size_t i = 0; i < state_.deltanet.size(); ++i) {
    std::copy(s.deltanet[i].conv.begin(), s.deltanet[i].conv.end(), state_.deltanet[i].conv.begin());
    std::copy(s.deltanet[i].recurrent.begin(), s.deltanet[i].recurrent.end(), state_.deltanet[i].recurrent.begin());
  }
  for (size_t i = 0; i < state_.kv.size(); ++i) {
    state_.kv[i].truncate(0);
    state_.kv[i].append_raw(s.keys_rows[i].data(), s.value_rows[i].data(), n);
  }
  tokens_ = s.tokens;
  keys_ = s.keys;
  rope_delta_ = s.rope_delta;
  state_.n_past = n;
}

void Sequence::reset() {
  state_.reset();
  tokens_.clear();
  keys_.clear();
  rope_delta_ = 0;
}

}  // namespace qwen35
