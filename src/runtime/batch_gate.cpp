#include "runtime/batch_gate.h"

#include <algorithm>
#include <cstring>

#include "runtime/engine_impl.h"

namespace qwen35 {

BatchGate::BatchGate(const EngineImpl& engine) : engine_(engine) {}

void BatchGate::begin_round(int participants) {
  std::lock_guard<std::mutex> lock(mu_);
  running_ += participants;
}

void BatchGate::leave() {
  std::unique_lock<std::mutex> lock(mu_);
  --running_;
  maybe_run(lock);
}

BatchGate::Outside::Outside(BatchGate* gate) : gate_(gate) {
  if (gate_) gate_->leave();
}

BatchGate::Outside::~Outside() {
  if (gate_) gate_->begin_round(1);
}

uint64_t BatchGate::batches() const {
  std::lock_guard<std::mutex> lock(mu_);
  return batches_;
}

uint64_t BatchGate::batched_rows() const {
  std::lock_guard<std::mutex> lock(mu_);
  return rows_;
}

void BatchGate::forward(const Feed& feed) {
  Pending p{&feed};
  std::unique_lock<std::mutex> lock(mu_);
  pending_.push_back(&p);
  maybe_run(lock);
  cv_.wait(lock, [&] { return p.done; });
  if (p.error) std::rethrow_exception(p.error);
}

void BatchGate::maybe_run(std::unique_lock<std::mutex>& lock) {
  while (!executing_ && !pending_.empty() && int(pending_.size()) >= running_) {
    executing_ = true;
    std::vector<Pending*> batch;
    batch.swap(pending_);
    lock.unlock();
    std::exception_ptr error;
    try {
      run(batch);
    } catch (...) {
      error = std::current_exception();
    }
    lock.lock();
    ++batches_;
    for (Pending* p : batch) {
      rows_ += uint64_t(p->feed->n);
      p->error = error;
      p->done = true;
    }
    executing_ = false;
    cv_.notify_all();
  }
}

void BatchGate::run(std::vector<Pending*>& batch) {
  const TextDecoder& dec = engine_.model->decoder();
  const int64_t H = engine_.text_config().hidden_size, V = engine_.text_config().vocab_size;
  const int L = engine_.text_config().num_layers;
  // Logit rows of a pass: only of one that leaves the last layer.
  auto logit_rows_of = [&](const Feed& f) {
    return f.end_layer < 0 || f.end_layer == L ? std::min(f.n_logits, f.n) : int64_t(0);
  };
  int64_t total = 0, logit_rows = 0;
  for (const Pending* p : batch) {
    total += p->feed->n;
    logit_rows += logit_rows_of(*p->feed);
  }
  emb_.resize(size_t(total * H));
  pos_.resize(size_t(3 * total));
  hidden_.resize(size_t(total * H));
  segments_.clear();
  int64_t row = 0;
  for (const Pending* p : batch) {
    const Feed& f = *p->feed;
    std::memcpy(emb_.data() + row * H, f.embeddings, size_t(f.n * H) * sizeof(float));
    for (int a = 0; a < 3; ++a) std::copy_n(f.positions + a * f.n, f.n, pos_.data() + a * total + row);
    segments_.push_back({f.state, f.n, f.mode, f.traces, f.first_layer, f.end_layer});
    row += f.n;
  }
  if (engine_.device) {
    // One pass on the device from the rows to the logits; hidden rows come back only where a
    // feed asks for them.
    bool want_hidden = false;
    device_rows_.clear();
    row = 0;
    for (const Pending* p : batch) {
      const Feed& f = *p->feed;
      want_hidden = want_hidden || f.hidden;
      const int64_t k = logit_rows_of(f);
      for (int64_t i = 0; i < k; ++i) device_rows_.push_back(row + f.n - k + i);
      row += f.n;
    }
    logits_.resize(size_t(logit_rows * V));
    std::lock_guard<std::mutex> lock(engine_.device_mutex);
    dec.forward_on(*engine_.device, emb_.data(), pos_.data(), segments_, want_hidden ? hidden_.data() : nullptr);
    dec.logits_on(*engine_.device, device_rows_, logits_.data());
  } else {
    dec.forward_batch(engine_.compute, emb_.data(), pos_.data(), segments_, ws_, hidden_.data());
  }
  row = 0;
  for (const Pending* p : batch) {
    const Feed& f = *p->feed;
    if (f.hidden) std::memcpy(f.hidden, hidden_.data() + row * H, size_t(f.n * H) * sizeof(float));
    row += f.n;
  }
  if (logit_rows == 0) return;
  if (!engine_.device) {
    // One pass of the LM head over every row that wants logits.
    rows_in_.resize(size_t(logit_rows * H));
    logits_.resize(size_t(logit_rows * V));
    row = 0;
    int64_t out = 0;
    for (const Pending* p : batch) {
      const Feed& f = *p->feed;
      const int64_t k = logit_rows_of(f);
      std::memcpy(rows_in_.data() + out * H, hidden_.data() + (row + f.n - k) * H, size_t(k * H) * sizeof(float));
      row += f.n;
      out += k;
    }
    dec.logits(engine_.compute, rows_in_.data(), logit_rows, logits_.data());
  }
  int64_t out = 0;
  for (const Pending* p : batch) {
    const Feed& f = *p->feed;
    const int64_t k = logit_rows_of(f);
    if (k > 0) std::memcpy(f.logits, logits_.data() + out * V, size_t(k * V) * sizeof(float));
    out += k;
  }
}

}  // namespace qwen35
