// A fixed set of worker threads for data-parallel loops inside one forward pass.
// Thread contract: parallel_for may be called from any thread; concurrent callers are served one
// after the other. It blocks until every chunk is done; the calling thread works as worker 0.
// It must not be called from inside a chunk (no nesting).
//
// A decode step runs a few hundred parallel loops of well under a millisecond each, so workers
// spin briefly on the job counter before they sleep: waking a sleeping thread costs tens of
// microseconds, a spinning one notices within a few hundred nanoseconds.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace qwen35 {

class ThreadPool {
 public:
  // n_threads <= 0 means one per hardware thread.
  explicit ThreadPool(int n_threads = 0);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int size() const { return int(workers_.size()) + 1; }
  // Lets at most n threads (the caller included) take part in later loops (benchmarks of fewer
  // threads on one pool); n <= 0 or > size() means all.
  void set_limit(int n) { limit_.store(n <= 0 || n > size() ? size() : n); }
  int limit() const { return limit_.load(); }

  // Splits [0, n) into contiguous ranges of at least `grain` items (at most `max_chunks` ranges,
  // default one per thread) and runs fn(begin, end) on them across the pool; threads take the
  // next range as they finish one. If a chunk throws, the others still finish and the first
  // exception is rethrown here.
  void parallel_for(size_t n, size_t grain, const std::function<void(size_t, size_t)>& fn, size_t max_chunks = 0);

  // Synchronisation points (parallel loops that used more than one thread) since construction.
  uint64_t sync_count() const { return syncs_.load(std::memory_order_relaxed); }

 private:
  void worker_loop(int index);
  void run_chunks(uint64_t generation);

  std::vector<std::thread> workers_;
  std::mutex caller_mu_;  // one parallel_for at a time

  // The current job; written by the caller before it bumps generation_, and read by a worker only
  // after it claimed a chunk of that generation (the caller cannot start the next job before
  // that chunk is done).
  const std::function<void(size_t, size_t)>* job_ = nullptr;
  size_t job_n_ = 0;
  size_t job_chunks_ = 0;
  // (generation << 32) | (chunks << 16) | next chunk index: a late worker's claim of an older
  // job fails without touching the newer one.
  std::atomic<uint64_t> next_chunk_{0};
  std::atomic<size_t> chunks_done_{0};
  std::atomic<uint64_t> generation_{0};
  std::atomic<bool> stop_{false};
  std::atomic<uint64_t> syncs_{0};
  std::atomic<int> limit_{0};

  std::mutex error_mu_;
  std::exception_ptr job_error_;  // first exception thrown by a chunk of the current job

  // Sleeping workers wait here; the caller notifies only when one is asleep.
  std::mutex sleep_mu_;
  std::condition_variable sleep_cv_;
  std::atomic<int> sleepers_{0};
};

}  // namespace qwen35
