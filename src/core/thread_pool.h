// A fixed set of worker threads for data-parallel loops inside one forward pass.
// Thread contract: parallel_for may be called from any thread; concurrent callers are served one
// after the other. It blocks until every chunk is done; the calling thread works as worker 0.
// It must not be called from inside a chunk (no nesting).
#pragma once

#include <condition_variable>
#include <exception>
#include <cstddef>
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

  // Splits [0, n) into contiguous ranges, at least `grain` items each, and runs
  // fn(begin, end) on them across the pool. If a chunk throws, the others still finish and the
  // first exception is rethrown here.
  void parallel_for(size_t n, size_t grain, const std::function<void(size_t, size_t)>& fn);

 private:
  void worker_loop(int index);

  std::vector<std::thread> workers_;
  std::mutex caller_mu_;  // one parallel_for at a time
  std::mutex mu_;
  std::condition_variable start_cv_;
  std::condition_variable done_cv_;
  const std::function<void(size_t, size_t)>* job_ = nullptr;
  size_t job_n_ = 0;
  size_t job_chunks_ = 0;
  size_t next_chunk_ = 0;
  size_t chunks_done_ = 0;
  std::exception_ptr job_error_;  // first exception thrown by a chunk of the current job
  uint64_t generation_ = 0;
  bool stop_ = false;

  void run_chunks();
};

}  // namespace qwen35
