#include "core/thread_pool.h"

#include <algorithm>
#include <exception>
#include <utility>

namespace qwen35 {

ThreadPool::ThreadPool(int n_threads) {
  if (n_threads <= 0) n_threads = int(std::max(1u, std::thread::hardware_concurrency()));
  for (int i = 1; i < n_threads; ++i) workers_.emplace_back([this, i] { worker_loop(i); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  start_cv_.notify_all();
  for (std::thread& t : workers_) t.join();
}

void ThreadPool::run_chunks() {
  // Called with mu_ held; releases it while running a chunk.
  std::unique_lock<std::mutex> lock(mu_, std::adopt_lock);
  while (job_ && next_chunk_ < job_chunks_) {
    size_t c = next_chunk_++;
    const auto* fn = job_;
    size_t n = job_n_, chunks = job_chunks_;
    lock.unlock();
    size_t begin = n * c / chunks, end = n * (c + 1) / chunks;
    std::exception_ptr error;
    try {
      (*fn)(begin, end);
    } catch (...) {  // counted as done; parallel_for rethrows it once every chunk has finished
      error = std::current_exception();
    }
    lock.lock();
    if (error && !job_error_) job_error_ = error;
    if (++chunks_done_ == chunks) done_cv_.notify_all();
  }
  lock.release();
}

void ThreadPool::worker_loop(int) {
  uint64_t seen = 0;
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    start_cv_.wait(lock, [&] { return stop_ || generation_ != seen; });
    if (stop_) return;
    seen = generation_;
    lock.release();  // run_chunks adopts the held mutex and hands it back held
    run_chunks();
    lock = std::unique_lock<std::mutex>(mu_, std::adopt_lock);
  }
}

void ThreadPool::parallel_for(size_t n, size_t grain, const std::function<void(size_t, size_t)>& fn) {
  if (n == 0) return;
  grain = std::max<size_t>(grain, 1);
  size_t chunks = std::min<size_t>(size_t(size()), (n + grain - 1) / grain);
  if (chunks <= 1 || workers_.empty()) {
    fn(0, n);
    return;
  }
  std::lock_guard<std::mutex> caller(caller_mu_);
  std::unique_lock<std::mutex> lock(mu_);
  job_ = &fn;
  job_n_ = n;
  job_chunks_ = chunks;
  next_chunk_ = 0;
  chunks_done_ = 0;
  ++generation_;
  start_cv_.notify_all();
  lock.release();
  run_chunks();
  lock = std::unique_lock<std::mutex>(mu_, std::adopt_lock);
  done_cv_.wait(lock, [&] { return chunks_done_ == job_chunks_; });
  job_ = nullptr;
  if (job_error_) {
    std::exception_ptr error = std::exchange(job_error_, nullptr);
    lock.unlock();
    std::rethrow_exception(error);
  }
}

}  // namespace qwen35
