#include "server/worker/worker.h"

#include <algorithm>

namespace qwen35::server {

// ---------------------------------------------------------------------------------------------
// Job

Job::State Job::wait_started(std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait_for(lock, timeout, [&] { return state_ != State::kQueued; });
  return state_;
}

Job::Batch Job::take_events(std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait_for(lock, timeout, [&] { return !events_.empty() || state_ == State::kFinished; });
  Batch b;
  b.events.reserve(events_.size());
  for (GenerationEvent& ev : events_) b.events.push_back(std::move(ev));
  events_.clear();
  b.finished = state_ == State::kFinished;  // every event is pushed before the job finishes
  return b;
}

bool Job::wait_finished(std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(mu_);
  return cv_.wait_for(lock, timeout, [&] { return state_ == State::kFinished; });
}

void Job::set_listener(std::function<void()> on_change) {
  bool finished;
  {
    std::lock_guard<std::mutex> lock(mu_);
    finished = state_ == State::kFinished;
    if (!finished) listener_ = std::move(on_change);
  }
  if (finished && on_change) on_change();
}

void Job::notify() {
  std::function<void()> f;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (state_ == State::kFinished) f = std::move(listener_);  // the last call: drop it
    else f = listener_;
    if (state_ == State::kFinished) listener_ = nullptr;
  }
  if (f) f();
}

Job::State Job::state() const {
  std::lock_guard<std::mutex> lock(mu_);
  return state_;
}

Status Job::status() const {
  std::lock_guard<std::mutex> lock(mu_);
  return status_;
}

GenerationResult Job::result() const {
  std::lock_guard<std::mutex> lock(mu_);
  return result_;
}

int Job::session() const {
  std::lock_guard<std::mutex> lock(mu_);
  return session_;
}

int64_t Job::start_order() const {
  std::lock_guard<std::mutex> lock(mu_);
  return start_order_;
}

bool Job::push_event(const GenerationEvent& ev) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    events_.push_back(ev);
  }
  cv_.notify_all();
  notify();
  return !cancel_.load();
}

void Job::set_running(int session, int64_t order) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    state_ = State::kRunning;
    session_ = session;
    start_order_ = order;
  }
  cv_.notify_all();
  notify();
}

void Job::set_finished(Status status, GenerationResult result) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    state_ = State::kFinished;
    status_ = std::move(status);
    result_ = std::move(result);
  }
  cv_.notify_all();
  notify();
}

// ---------------------------------------------------------------------------------------------
// Worker

Worker::Worker(const Engine& engine, WorkerOptions options, Metrics* metrics)
    : engine_(engine), options_(options), metrics_(metrics), cache_(options.cache_bytes), batch_(engine) {
  options_.parallel = std::max(1, options_.parallel);
  for (int i = 0; i < options_.parallel; ++i) sessions_.push_back(engine_.new_session(&cache_));
  session_busy_.assign(size_t(options_.parallel), false);
  session_used_.assign(size_t(options_.parallel), 0);
  thread_ = std::thread([this] { run(); });
}

Worker::~Worker() { stop(); }

std::shared_ptr<Job> Worker::submit(JobInput input) {
  auto job = std::make_shared<Job>(std::move(input));
  {
    std::lock_guard<std::mutex> lock(mu_);
    // Room for max_queue waiting requests beyond the sessions that are free right now.
    const size_t free_sessions = sessions_.size() - std::min(sessions_.size(), active_count_.load());
    if (stopping_ || queue_.size() >= options_.max_queue + free_sessions) return nullptr;
    queue_.push_back(job);
  }
  cv_.notify_all();
  return job;
}

void Worker::cancel(const std::shared_ptr<Job>& job) {
  job->cancel_.store(true);
  bool was_queued = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = std::find(queue_.begin(), queue_.end(), job);
    if (it != queue_.end()) {
      queue_.erase(it);
      was_queued = true;
    }
  }
  if (was_queued) fail_job(job, Status::Error(StatusCode::kCancelled, "the request was cancelled"));
}

void Worker::stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

size_t Worker::queue_length() const {
  std::lock_guard<std::mutex> lock(mu_);
  return queue_.size();
}

void Worker::fail_job(const std::shared_ptr<Job>& job, Status status) {
  if (metrics_) metrics_->add_generation({}, status.code == StatusCode::kCancelled ? "cancelled" : "error");
  job->set_finished(std::move(status), {});
}

int Worker::choose_session(const std::vector<int32_t>& hint) const {
  int best = -1;
  size_t best_len = 0;
  for (int i = 0; i < int(sessions_.size()); ++i) {
    if (session_busy_[size_t(i)]) continue;
    const std::vector<int32_t>& own = sessions_[size_t(i)]->tokens();
    const size_t n = std::min(own.size(), hint.size());
    size_t len = size_t(std::mismatch(own.begin(), own.begin() + ptrdiff_t(n), hint.begin()).first - own.begin());
    if (len < kMinAffinity) len = 0;
    if (best < 0 || len > best_len || (len == best_len && session_used_[size_t(i)] < session_used_[size_t(best)])) {
      best = i;
      best_len = len;
    }
  }
  return best;
}

void Worker::start(const std::shared_ptr<Job>& job, std::vector<Active>& active) {
  const int s = choose_session(job->input().prefix_hint);
  Job* j = job.get();  // alive as long as `active` holds it
  EventCallback on_event = [j](const GenerationEvent& ev) { return j->push_event(ev); };
  Status st;
  std::unique_ptr<Generation> gen;
  JobInput& in = job->input_;
  Session& session = *sessions_[size_t(s)];
  try {
    if (in.is_chat && in.prepared) {
      gen = session.start_prepared(std::move(*in.prepared), in.params, std::move(on_event), &st);
      in.prepared.reset();
    } else {
      gen = in.is_chat ? session.start_chat(in.chat, in.params, std::move(on_event), &st)
                       : session.start_completion(in.prompt, in.params, std::move(on_event), &st);
    }
  } catch (const std::exception& e) {
    gen.reset();
    st = Status::Error(StatusCode::kInternal, e.what());
  }
  if (!gen) {
    fail_job(job, st.ok() ? Status::Error(StatusCode::kInternal, "the generation did not start") : st);
    return;
  }
  session_busy_[size_t(s)] = true;
  session_used_[size_t(s)] = ++clock_;
  active.push_back({job, s, std::move(gen)});
  active_count_.store(active.size());
  job->set_running(s, ++started_);
}

void Worker::admit(std::vector<Active>& active) {
  while (active.size() < sessions_.size()) {
    std::shared_ptr<Job> job;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (queue_.empty() || stopping_) break;
      job = std::move(queue_.front());
      queue_.pop_front();
    }
    if (job->cancel_requested()) {
      fail_job(job, Status::Error(StatusCode::kCancelled, "the request was cancelled"));
      continue;
    }
    start(job, active);
  }
  active_count_.store(active.size());
}

void Worker::finish(Active& a, Status status) {
  GenerationResult r = a.gen->result();
  a.gen.reset();
  session_busy_[size_t(a.session)] = false;
  session_used_[size_t(a.session)] = ++clock_;
  if (status.ok() && r.stop_reason == StopReason::kCancelled)
    status = Status::Error(StatusCode::kCancelled, "the request was cancelled");
  if (metrics_) {
    const char* outcome = !status.ok() ? (status.code == StatusCode::kCancelled ? "cancelled" : "error")
                          : r.stop_reason == StopReason::kMaxTokens || r.stop_reason == StopReason::kContextFull
                              ? "length"
                              : "stop";
    metrics_->add_generation(r, outcome);
  }
  a.job->set_finished(std::move(status), std::move(r));
}

void Worker::run() {
  std::vector<Active> active;
  for (;;) {
    {
      std::unique_lock<std::mutex> lock(mu_);
      if (active.empty()) cv_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
      if (stopping_) break;
    }
    admit(active);
    // One round: every active generation does one bounded step; the model passes of the round
    // run as one batch (continuous batching), each generation getting the bits it gets alone.
    round_.clear();
    for (Active& a : active) {
      if (a.job->cancel_requested()) a.gen->cancel();
      else round_.push_back(a.gen.get());
    }
    if (!round_.empty()) batch_.step(round_, outcomes_);
    size_t next = 0;
    for (size_t i = 0; i < active.size();) {
      Active& a = active[i];
      bool more = false;
      Status st;
      if (next < round_.size() && round_[next] == a.gen.get()) {
        const GenerationBatch::Outcome& o = outcomes_[next++];
        more = o.more;
        if (o.error) {
          more = false;
          try {
            std::rethrow_exception(o.error);
          } catch (const std::exception& e) {
            st = failure_status(e);
          } catch (...) {
            st = Status::Error(StatusCode::kInternal, "the generation failed");
          }
        }
      }
      if (more) {
        ++i;
        continue;
      }
      finish(a, st);
      active.erase(active.begin() + ptrdiff_t(i));
    }
    active_count_.store(active.size());
  }
  for (Active& a : active) {
    a.gen->cancel();
    finish(a, Status::Error(StatusCode::kUnavailable, "the server is shutting down"));
  }
  active.clear();
  active_count_.store(0);
  std::deque<std::shared_ptr<Job>> left;
  {
    std::lock_guard<std::mutex> lock(mu_);
    left.swap(queue_);
  }
  for (auto& job : left) fail_job(job, Status::Error(StatusCode::kUnavailable, "the server is shutting down"));
}

}  // namespace qwen35::server
