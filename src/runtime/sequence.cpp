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
  n += mtp_key_rows.size() + mtp_value_rows.size() + (mtp_hidden.size() + mtp_embedding.size()) * sizeof(float);
  n += mtp_position.size() * sizeof(int32_t);
  if (device) n += device->bytes();
  return n;
}

Sequence::Sequence(const EngineImpl& engine)
    : engine_(engine), state_(DecoderState::create(engine.text_config(), engine.kv_dtype)), mtp_(engine.mtp) {
  const int64_t reserve = std::min<int64_t>(engine.context_size, 4096);
  state_.reserve(reserve);
  if (mtp_) {
    mtp_kv_ = mtp_->make_cache(engine.kv_dtype);
    mtp_kv_.reserve(reserve);
    // Room for the most pending rows the decode loop leaves (a full lag plus a verified block).
    const size_t rows = size_t(kMaxMtpPending + SpeculativeParams::kMaxDraft + 2), H = size_t(engine.text_config().hidden_size);
    mtp_hidden_.reserve(rows * H);
    mtp_embedding_.reserve(rows * H);
    mtp_position_.reserve(rows * 3);
  }
}

void Sequence::feed(const int32_t* ids, const uint64_t* keys, const float* embeddings, const int32_t* positions,
                    int64_t n, DeltaRuleMode mode, int64_t n_logits, float* logits, BatchGate* gate) {
  if (n <= 0) return;
  begin_block(ids, keys, embeddings, positions, n, mode);
  advance_block(0, n_logits, logits, gate);
}

void Sequence::begin_block(const int32_t* ids, const uint64_t* keys, const float* embeddings,
                           const int32_t* positions, int64_t n, DeltaRuleMode mode) {
  if (block_.n > 0) fail("Sequence: a block is still part-way through the decoder");
  if (n <= 0) fail("Sequence: a block of ", n, " tokens");
  if (length() + n > engine_.context_size)
    fail("sequence of ", length() + n, " tokens exceeds the context of ", engine_.context_size);
  const int64_t H = engine_.text_config().hidden_size;
  // Pairs of tokens fed before this block only: a rewind to this point keeps its pending rows.
  if (has_mtp() && length() - mtp_pairs() > kMaxMtpPending) flush_mtp();
  traced_from_ = ws_.trace ? length() : -1;
  traced_tokens_ = ws_.trace ? n : 0;
  block_.ids.assign(ids, ids + n);
  block_.keys.assign(keys, keys + n);
  block_.rows.assign(embeddings, embeddings + n * H);
  if (has_mtp()) block_.embeddings.assign(embeddings, embeddings + n * H);
  block_.positions.assign(positions, positions + 3 * n);
  block_.n = n;
  block_.mode = mode;
  block_.next_layer = 0;
}

bool Sequence::advance_block(int layers, int64_t n_logits, float* logits, BatchGate* gate) {
  if (block_.n == 0) fail("Sequence::advance_block: no block is part-way through the decoder");
  const TextDecoder& dec = engine_.model->decoder();
  const int L = engine_.text_config().num_layers;
  const int64_t H = engine_.text_config().hidden_size, n = block_.n;
  const int first = block_.next_layer, end = layers <= 0 ? L : std::min(L, first + layers);
  n_logits = end == L ? std::min(n_logits, n) : 0;
  // (A device keeps a traced block's traces in the sequence's device state.)
  std::vector<DeltaNetTrace>* traces = ws_.trace ? &ws_.traces : nullptr;
  try {
    if (gate) {
      // The gate's batched pass; the rows come back as the solo pass leaves them, and the traces
      // land in this sequence's workspace.
      float* hidden = engine_.device && !has_mtp() ? nullptr : block_.rows.data();
      BatchGate::Feed f{&state_, block_.rows.data(), block_.positions.data(), n, block_.mode, n_logits, logits,
                        hidden, traces, first, end};
      gate->forward(f);
    } else if (engine_.device) {
      // One pass on the device, from the rows to the logits; the final-normed rows come back only
      // for the MTP head, which runs on the host.
      const DecoderSegment seg{&state_, n, block_.mode, traces, first, end};
      std::lock_guard<std::mutex> lock(engine_.device_mutex);
      dec.forward_on(*engine_.device, block_.rows.data(), block_.positions.data(),
                     std::span<const DecoderSegment>(&seg, 1), has_mtp() ? block_.rows.data() : nullptr);
      logit_rows_.resize(size_t(n_logits));
      for (int64_t i = 0; i < n_logits; ++i) logit_rows_[size_t(i)] = n - n_logits + i;
      dec.logits_on(*engine_.device, logit_rows_, logits);
    } else {
      const DecoderSegment seg{&state_, n, block_.mode, traces, first, end};
      dec.forward_batch(engine_.compute, block_.rows.data(), block_.positions.data(),
                        std::span<const DecoderSegment>(&seg, 1), ws_, block_.rows.data());
      if (n_logits > 0) dec.logits(engine_.compute, block_.rows.data() + (n - n_logits) * H, n_logits, logits);
    }
  } catch (...) {
    discard_block();  // some layers have the block and some not: no state to keep
    throw;
  }
  block_.next_layer = end;
  if (end < L) return false;
  block_.n = 0;
  tokens_.insert(tokens_.end(), block_.ids.begin(), block_.ids.end());
  keys_.insert(keys_.end(), block_.keys.begin(), block_.keys.end());
  if (has_mtp()) {
    mtp_hidden_.insert(mtp_hidden_.end(), block_.rows.begin(), block_.rows.begin() + n * H);
    mtp_embedding_.insert(mtp_embedding_.end(), block_.embeddings.begin(), block_.embeddings.begin() + n * H);
    for (int64_t t = 0; t < n; ++t)
      for (int a = 0; a < 3; ++a) mtp_position_.push_back(block_.positions[size_t(a * n + t)]);
  }
  return true;
}

void Sequence::discard_block() {
  if (block_.n == 0) return;
  reset();
}

void Sequence::leave_device() {
  if (!state_.device) return;
  std::lock_guard<std::mutex> lock(engine_.device_mutex);
  state_.device.reset();
}

void Sequence::require_no_block(const char* what) const {
  if (block_.n > 0) fail("Sequence::", what, ": a block is still part-way through the decoder");
}

void Sequence::feed_text(const int32_t* ids, int64_t n, DeltaRuleMode mode, int64_t n_logits, float* logits,
                         bool traced, BatchGate* gate) {
  const int64_t H = engine_.text_config().hidden_size;
  if (int64_t(emb_.size()) < n * H) emb_.resize(size_t(n * H));
  if (int64_t(pos_.size()) < 3 * n) pos_.resize(size_t(3 * n));
  engine_.model->decoder().embed(ids, n, emb_.data());
  for (int64_t t = 0; t < n; ++t) {
    const int32_t p = int32_t(length() + t + rope_delta_);
    pos_[size_t(t)] = pos_[size_t(n + t)] = pos_[size_t(2 * n + t)] = p;
  }
  key_buf_.assign(ids, ids + n);
  ws_.trace = traced;
  try {
    feed(ids, key_buf_.data(), emb_.data(), pos_.data(), n, mode, n_logits, logits, gate);
  } catch (...) {
    ws_.trace = false;
    throw;
  }
  ws_.trace = false;
}

void Sequence::run_mtp(int64_t n, const float* next_embedding) {
  const int64_t H = engine_.text_config().hidden_size;
  const int64_t rows = n + (next_embedding ? 1 : 0);
  if (rows == 0) return;
  // Pair j: hidden and position of pending token j, embedding of pending token j + 1 (or `next`).
  mtp_in_emb_.resize(size_t(rows * H));
  mtp_in_pos_.resize(size_t(3 * rows));
  mtp_out_.resize(size_t(rows * H));
  std::copy_n(mtp_embedding_.begin() + H, n * H, mtp_in_emb_.begin());
  if (next_embedding) std::copy_n(next_embedding, H, mtp_in_emb_.begin() + n * H);
  for (int64_t j = 0; j < rows; ++j)
    for (int a = 0; a < 3; ++a) mtp_in_pos_[size_t(a * rows + j)] = mtp_position_[size_t(3 * j + a)];
  mtp_->forward(engine_.compute, mtp_in_emb_.data(), mtp_hidden_.data(), mtp_in_pos_.data(), rows, mtp_kv_, mtp_ws_,
                mtp_out_.data());
  mtp_hidden_.erase(mtp_hidden_.begin(), mtp_hidden_.begin() + n * H);
  mtp_embedding_.erase(mtp_embedding_.begin(), mtp_embedding_.begin() + n * H);
  mtp_position_.erase(mtp_position_.begin(), mtp_position_.begin() + 3 * n);
}

void Sequence::flush_mtp() {
  if (!has_mtp() || length() == 0) return;
  run_mtp(length() - 1 - mtp_pairs(), nullptr);
}

void Sequence::mtp_draft(int32_t next, int k, std::vector<int32_t>& out) {
  require_no_block("mtp_draft");
  out.clear();
  if (!has_mtp()) fail("Sequence::mtp_draft: the engine does not run the MTP head");
  if (length() == 0 || k <= 0) return;
  const int64_t H = engine_.text_config().hidden_size, V = engine_.text_config().vocab_size;
  const kernels::Compute& c = engine_.compute;
  emb_.resize(size_t(H));
  mtp_->embed(&next, 1, emb_.data());
  const int64_t pending_pairs = length() - 1 - mtp_pairs();
  const int64_t fed_pairs = length() - 1;  // what the cache keeps afterwards
  run_mtp(pending_pairs, emb_.data());     // its last row, (h_{n-1}, next), is draft step 1
  float* hm = mtp_out_.data() + pending_pairs * H;
  mtp_logits_.resize(size_t(V));
  // Greedy over the engine's draft vocabulary (the main model checks every draft token).
  auto pick = [&](const float* hidden) { out.push_back(engine_.draft_vocab->argmax(c, hidden, mtp_logits_.data(), mtp_head_in_)); };
  pick(hm);
  // Step j + 1 runs (hm of step j, d_j) at the decode position of token n - 1 + j.
  for (int j = 1; j < k; ++j) {
    mtp_->embed(&out.back(), 1, emb_.data());
    const int32_t p = int32_t(length() - 1 + j + rope_delta_);
    const int32_t p3[3] = {p, p, p};
    mtp_->forward(c, emb_.data(), hm, p3, 1, mtp_kv_, mtp_ws_, hm);
    pick(hm);
  }
  mtp_kv_.truncate(fed_pairs);
}

void Sequence::save_deltanet(DeltaNetSave& save) const {
  require_no_block("save_deltanet");
  save.length = length();
  if (state_.device) {
    // A device copy; a save's buffers are reused by the next save.
    std::lock_guard<std::mutex> lock(engine_.device_mutex);
    if (save.device) save.device->assign(*state_.device, false);
    else save.device = state_.device->copy(false);
    return;
  }
  save.device.reset();
  save.states.resize(state_.deltanet.size());
  for (size_t i = 0; i < state_.deltanet.size(); ++i) {
    // Assignment into existing vectors reuses their buffers: no allocation after the first save.
    save.states[i].conv.assign(state_.deltanet[i].conv.begin(), state_.deltanet[i].conv.end());
    save.states[i].recurrent.assign(state_.deltanet[i].recurrent.begin(), state_.deltanet[i].recurrent.end());
  }
  save.length = length();
}

void Sequence::rewind(const DeltaNetSave& save) {
  require_no_block("rewind");
  if (save.length > length()) fail("Sequence::rewind: save is ahead of the sequence");
  if (save.device && state_.device) {
    std::lock_guard<std::mutex> lock(engine_.device_mutex);
    state_.device->assign(*save.device, false);
    state_.device->truncate_kv(save.length);
  } else {
    if (save.device) fail("Sequence::rewind: a save on a device, of a sequence no longer there");
    // A save from before the states moved to the device: the host's vectors have not changed since.
    leave_device();
    for (size_t i = 0; i < state_.deltanet.size(); ++i) {
      std::copy(save.states[i].conv.begin(), save.states[i].conv.end(), state_.deltanet[i].conv.begin());
      std::copy(save.states[i].recurrent.begin(), save.states[i].recurrent.end(),
                state_.deltanet[i].recurrent.begin());
    }
    for (KvCache& kv : state_.kv) kv.truncate(save.length);
  }
  tokens_.resize(size_t(save.length));
  keys_.resize(size_t(save.length));
  state_.n_past = save.length;
  if (has_mtp()) {
    // feed() only runs the head on pairs fed before it, so the pairs never pass the save point
    // and the pending rows of the tokens up to it are all still here.
    if (mtp_pairs() > std::max<int64_t>(0, save.length - 1)) fail("Sequence::rewind: the MTP head ran past the save");
    const size_t H = size_t(engine_.text_config().hidden_size), keep = size_t(save.length - mtp_pairs());
    mtp_hidden_.resize(keep * H);
    mtp_embedding_.resize(keep * H);
    mtp_position_.resize(keep * 3);
  }
}

void Sequence::rewind(const DeltaNetSave& save, int64_t keep) {
  require_no_block("rewind");
  if (keep == 0) return rewind(save);
  if (traced_from_ != save.length || keep < 0 || keep > traced_tokens_ || save.length + keep > length())
    fail("Sequence::rewind: ", keep, " tokens after the save were not fed in one traced block");
  const int64_t to = save.length + keep;
  if (engine_.device && !(save.device && state_.device)) {
    // A save from before the states moved to the device: rewind to it and feed the kept tokens
    // again, recurrently as the verify block ran them (the same bits: rows do not depend on their
    // block). Still traced, so that what is left of the block can be kept by a later rewind.
    refeed_.assign(tokens_.begin() + save.length, tokens_.begin() + to);
    rewind(save);
    feed_text(refeed_.data(), keep, DeltaRuleMode::kRecurrent, 0, nullptr, /*traced=*/true);
    return;
  }
  if (engine_.device) {  // the states back from the save's device copy, replayed from the device's traces
    std::lock_guard<std::mutex> lock(engine_.device_mutex);
    state_.device->assign(*save.device, false);
    engine_.device->replay_deltanet(state_, keep);
    state_.device->truncate_kv(to);
  } else {
    for (size_t i = 0; i < state_.deltanet.size(); ++i) {
      std::copy(save.states[i].conv.begin(), save.states[i].conv.end(), state_.deltanet[i].conv.begin());
      std::copy(save.states[i].recurrent.begin(), save.states[i].recurrent.end(),
                state_.deltanet[i].recurrent.begin());
    }
    engine_.model->decoder().replay_deltanet(engine_.compute, ws_, keep, state_);
    for (KvCache& kv : state_.kv) kv.truncate(to);
  }
  tokens_.resize(size_t(to));
  keys_.resize(size_t(to));
  state_.n_past = to;
  traced_tokens_ = keep;  // what is left of the block
  if (has_mtp()) {
    if (mtp_pairs() > std::max<int64_t>(0, save.length - 1)) fail("Sequence::rewind: the MTP head ran past the save");
    const size_t H = size_t(engine_.text_config().hidden_size), rows = size_t(to - mtp_pairs());
    mtp_hidden_.resize(rows * H);
    mtp_embedding_.resize(rows * H);
    mtp_position_.resize(rows * 3);
  }
}

std::unique_ptr<SnapshotData> Sequence::snapshot() const {
  require_no_block("snapshot");
  auto s = std::make_unique<SnapshotData>();
  s->tokens = tokens_;
  s->keys = keys_;
  s->rope_delta = rope_delta_;
  snapshot_mtp(*s);
  if (state_.device) {
    std::lock_guard<std::mutex> lock(engine_.device_mutex);
    s->device = state_.device->copy(true);
    return s;
  }
  s->deltanet = state_.deltanet;
  for (const KvCache& kv : state_.kv) {
    const size_t n = size_t(kv.length()) * kv.row_bytes();
    const uint8_t* k = static_cast<const uint8_t*>(kv.key_row(0));
    const uint8_t* v = static_cast<const uint8_t*>(kv.value_row(0));
    s->keys_rows.emplace_back(k, k + n);
    s->value_rows.emplace_back(v, v + n);
  }
  return s;
}

void Sequence::snapshot_mtp(SnapshotData& s) const {
  if (!has_mtp()) return;
  const size_t n = size_t(mtp_kv_.length()) * mtp_kv_.row_bytes();
  const uint8_t* k = static_cast<const uint8_t*>(mtp_kv_.key_row(0));
  const uint8_t* v = static_cast<const uint8_t*>(mtp_kv_.value_row(0));
  s.mtp_key_rows.assign(k, k + n);
  s.mtp_value_rows.assign(v, v + n);
  s.mtp_hidden = mtp_hidden_;
  s.mtp_embedding = mtp_embedding_;
  s.mtp_position = mtp_position_;
}

bool Sequence::mtp_fits(const SnapshotData& s, int64_t n) const {
  if (!has_mtp()) return s.mtp_key_rows.empty() && s.mtp_hidden.empty();
  const int64_t H = engine_.text_config().hidden_size;
  const int64_t pending = int64_t(s.mtp_hidden.size()) / H;
  const int64_t pairs = int64_t(s.mtp_key_rows.size() / mtp_kv_.row_bytes());
  return pairs + pending == n && s.mtp_key_rows.size() == size_t(pairs) * mtp_kv_.row_bytes() &&
         s.mtp_value_rows.size() == s.mtp_key_rows.size() && int64_t(s.mtp_hidden.size()) == pending * H &&
         s.mtp_embedding.size() == s.mtp_hidden.size() && int64_t(s.mtp_position.size()) == 3 * pending;
}

void Sequence::restore_mtp(const SnapshotData& s) {
  if (!has_mtp()) return;
  mtp_kv_.truncate(0);
  mtp_kv_.append_raw(s.mtp_key_rows.data(), s.mtp_value_rows.data(), int64_t(s.mtp_key_rows.size() / mtp_kv_.row_bytes()));
  mtp_hidden_ = s.mtp_hidden;
  mtp_embedding_ = s.mtp_embedding;
  mtp_position_ = s.mtp_position;
}

void Sequence::restore(const SnapshotData& s) {
  const int64_t n = int64_t(s.tokens.size());
  if (s.device) {
    if (!mtp_fits(s, n) || s.device->kv_length() != n || s.keys.size() != s.tokens.size())
      fail("snapshot does not belong to this model");
    if (n > engine_.context_size) fail("snapshot of ", n, " tokens exceeds the context of ", engine_.context_size);
    std::lock_guard<std::mutex> lock(engine_.device_mutex);
    if (state_.device) state_.device->assign(*s.device, true);
    else state_.device = s.device->copy(true);
  } else {
    leave_device();
    // A snapshot of another model would overrun the state buffers.
    bool same_shape = s.deltanet.size() == state_.deltanet.size() && s.keys_rows.size() == state_.kv.size();
    for (size_t i = 0; same_shape && i < s.deltanet.size(); ++i)
      same_shape = s.deltanet[i].conv.size() == state_.deltanet[i].conv.size() &&
                   s.deltanet[i].recurrent.size() == state_.deltanet[i].recurrent.size();
    for (size_t i = 0; same_shape && i < s.keys_rows.size(); ++i)
      same_shape = s.keys_rows[i].size() == size_t(n) * state_.kv[i].row_bytes();
    same_shape = same_shape && mtp_fits(s, n);
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
  }
  restore_mtp(s);
  tokens_ = s.tokens;
  keys_ = s.keys;
  rope_delta_ = s.rope_delta;
  state_.n_past = n;
  traced_from_ = -1;
  block_.n = 0;
}

void Sequence::reset() {
  block_.n = 0;
  state_.reset();
  tokens_.clear();
  keys_.clear();
  rope_delta_ = 0;
  traced_from_ = -1;
  if (has_mtp()) {
    mtp_kv_.truncate(0);
    mtp_hidden_.clear();
    mtp_embedding_.clear();
    mtp_position_.clear();
  }
}

}  // namespace qwen35
