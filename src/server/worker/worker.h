// The single worker thread that owns every Session of the server.
//
// Design
//   * A pool of `parallel` sessions shares one PrefixCache (the --cache-ram budget), so a prompt
//     prefix computed for one conversation is reused by any other.
//   * Requests wait in one bounded FIFO queue (submit() answers nullptr when it is full: 503).
//     The head of the queue starts as soon as a session is free, on the free session whose
//     timeline shares the longest prefix with the request (a follow-up turn lands where its
//     state already is). A prefix shorter than kMinAffinity tokens (the chat template's first
//     tokens, shared by every conversation) does not count, so an unrelated request takes an
//     empty or the least recently used session instead of a conversation's state.
//   * Active generations advance in rounds, one Generation::step() each per round (a step is one
//     prefill block, one vision slice or one decode/verify step), so a long prompt stalls the
//     others by one prefill block at most (--prefill-block sets it). The model passes of a round
//     run as one batch (GenerationBatch: continuous batching), each weight streamed once for all
//     conversations, every conversation getting the bits it gets alone.
//   * Events go into the job's own buffer; HTTP threads take them from there. Neither side ever
//     waits for the other while holding the engine. A job's listener (set_listener) hears of
//     every change, so the HTTP side needs no thread waiting for it.
//   * Chat requests arrive prepared (Engine::prepare_chat on the caller's thread: template,
//     tokens, decoded and preprocessed images), so the worker only runs the model.
//
// Thread contract: submit/cancel/stop and every Job method are safe from any thread; the
// sessions and generations are touched only by the worker thread and, during a round, by the
// step threads it waits for.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "qwen35/engine.h"
#include "server/worker/metrics.h"

namespace qwen35::server {

struct WorkerOptions {
  int parallel = 1;                         // sessions, i.e. conversations progressing at once
  size_t max_queue = 64;                    // waiting requests beyond the active ones
  size_t cache_bytes = size_t(1024) << 20;  // shared prefix cache budget
};

struct JobInput {
  bool is_chat = true;
  std::shared_ptr<PreparedChat> prepared;  // is_chat: the prepared chat (consumed when it starts)
  ChatRequest chat;                  // is_chat without `prepared`: prepared on the worker thread
  std::vector<int32_t> prompt;       // !is_chat: raw prompt ids
  SamplingParams params;
  std::vector<int32_t> prefix_hint;  // the prompt's tokens as far as known: chooses the session
};

// One request's life: queued -> running -> finished.
class Job {
 public:
  enum class State { kQueued, kRunning, kFinished };
  struct Batch {
    std::vector<GenerationEvent> events;
    bool finished = false;  // the job is over and no event is left
  };

  explicit Job(JobInput input) : input_(std::move(input)) {}

  // Blocks until the job has left the queue (running or finished) or `timeout` passed.
  State wait_started(std::chrono::milliseconds timeout);
  // Takes the events produced so far, waiting up to `timeout` for one when there is none.
  Batch take_events(std::chrono::milliseconds timeout);
  // Blocks until finished or `timeout` passed; true when finished.
  bool wait_finished(std::chrono::milliseconds timeout);
  // `on_change` runs (on the worker's thread, or the caller's for a job cancelled in the queue)
  // after every new event and state change, the last time when the job finishes; the job drops
  // it then. It must be quick and must not call back into the worker. Runs once at once when
  // the job is already finished.
  void set_listener(std::function<void()> on_change);

  State state() const;
  Status status() const;            // why it failed (start or run); Ok otherwise
  GenerationResult result() const;  // final once finished
  int session() const;              // the session that ran it (-1: none)
  int64_t start_order() const;      // 1, 2, ... in the order jobs left the queue (0: never started)
  bool cancel_requested() const { return cancel_.load(); }
  const JobInput& input() const { return input_; }

 private:
  friend class Worker;
  bool push_event(const GenerationEvent& ev);  // false once cancelled
  void set_running(int session, int64_t order);
  void set_finished(Status status, GenerationResult result);
  void notify();

  JobInput input_;
  std::function<void()> listener_;  // under mu_
  std::atomic<bool> cancel_{false};
  mutable std::mutex mu_;
  std::condition_variable cv_;
  State state_ = State::kQueued;
  std::deque<GenerationEvent> events_;
  Status status_;
  GenerationResult result_;
  int session_ = -1;
  int64_t start_order_ = 0;
};

class Worker {
 public:
  static constexpr size_t kMinAffinity = 16;

  // `metrics` may be null; it must outlive the worker.
  Worker(const Engine& engine, WorkerOptions options, Metrics* metrics = nullptr);
  ~Worker();  // stop()
  Worker(const Worker&) = delete;
  Worker& operator=(const Worker&) = delete;

  // Queues a request; nullptr when the queue is full or the worker is stopping.
  std::shared_ptr<Job> submit(JobInput input);
  // Stops a job: a queued one finishes at once (kCancelled), a running one at its next step.
  void cancel(const std::shared_ptr<Job>& job);
  // Finishes every job (kUnavailable) and joins the thread.
  void stop();

  size_t queue_length() const;
  size_t active() const { return active_count_.load(); }
  uint64_t batched_passes() const { return batch_.batches(); }  // any thread
  uint64_t batched_rows() const { return batch_.batched_rows(); }
  int parallel() const { return options_.parallel; }
  const PrefixCache& cache() const { return cache_; }

 private:
  struct Active {
    std::shared_ptr<Job> job;
    int session;
    std::unique_ptr<Generation> gen;
  };

  void run();
  void admit(std::vector<Active>& active);
  void start(const std::shared_ptr<Job>& job, std::vector<Active>& active);
  int choose_session(const std::vector<int32_t>& hint) const;
  void finish(Active& a, Status status);
  void fail_job(const std::shared_ptr<Job>& job, Status status);

  const Engine& engine_;
  WorkerOptions options_;
  Metrics* metrics_;
  PrefixCache cache_;
  GenerationBatch batch_;                        // worker thread only
  std::vector<Generation*> round_;               // worker thread only: this round's steps
  std::vector<GenerationBatch::Outcome> outcomes_;
  std::vector<std::unique_ptr<Session>> sessions_;
  std::vector<bool> session_busy_;      // worker thread only
  std::vector<uint64_t> session_used_;  // worker thread only: last use, for LRU ties
  uint64_t clock_ = 0;
  int64_t started_ = 0;                 // worker thread only: jobs started so far

  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::shared_ptr<Job>> queue_;
  bool stopping_ = false;
  std::atomic<size_t> active_count_{0};
  std::thread thread_;
};

}  // namespace qwen35::server
