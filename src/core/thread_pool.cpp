#include "core/thread_pool.h"

#include <algorithm>
#include <chrono>
#include <utility>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define QWEN35_CPU_RELAX() _mm_pause()
#else
#define QWEN35_CPU_RELAX() std::this_thread::yield()
#endif

namespace qwen35 {
namespace {

// How long an idle worker spins before it sleeps.
constexpr auto kSpin = std::chrono::microseconds(200);

}  // namespace

ThreadPool::ThreadPool(int n_threads) {
  if (n_threads <= 0) n_threads = int(std::max(1u, std::thread::hardware_concurrency()));
  limit_.store(n_threads);
  for (int i = 1; i < n_threads; ++i) workers_.emplace_back([this, i] { worker_loop(i); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(sleep_mu_);
    stop_.store(true);
  }
  sleep_cv_.notify_all();
  for (std::thread& t : workers_) t.join();
}

void ThreadPool::run_chunks(uint64_t generation) {
  for (;;) {
    // Claim the next chunk of this generation's job, or stop: a claim only ever succeeds for a
    // chunk that exists, so a late worker never consumes a chunk of a newer job.
    uint64_t cur = next_chunk_.load(std::memory_order_acquire);
    size_t c;
    for (;;) {
      if ((cur >> 32) != (generation & 0xffffffffu)) return;  // that job is over
      c = size_t(cur & 0xffffu);
      if (c >= size_t((cur >> 16) & 0xffffu)) return;  // every chunk taken
      if (next_chunk_.compare_exchange_weak(cur, cur + 1, std::memory_order_acq_rel)) break;
    }
    // The job cannot finish before this chunk does, so its fields are stable now.
    const auto* fn = job_;
    const size_t n = job_n_, chunks = job_chunks_;
    const size_t begin = n * c / chunks, end = n * (c + 1) / chunks;
    try {
      (*fn)(begin, end);
    } catch (...) {  // counted as done; parallel_for rethrows it once every chunk has finished
      std::lock_guard<std::mutex> lock(error_mu_);
      if (!job_error_) job_error_ = std::current_exception();
    }
    chunks_done_.fetch_add(1, std::memory_order_acq_rel);
  }
}

void ThreadPool::worker_loop(int index) {
  uint64_t seen = 0;
  for (;;) {
    // Spin, then sleep, until a new generation (job) or stop.
    auto spin_until = std::chrono::steady_clock::now() + kSpin;
    uint64_t g;
    int polls = 0;
    while ((g = generation_.load(std::memory_order_acquire)) == seen && !stop_.load(std::memory_order_relaxed)) {
      QWEN35_CPU_RELAX();
      if (++polls % 64 == 0 && std::chrono::steady_clock::now() > spin_until) {
        std::unique_lock<std::mutex> lock(sleep_mu_);
        sleepers_.fetch_add(1);
        sleep_cv_.wait(lock, [&] { return generation_.load() != seen || stop_.load(); });
        sleepers_.fetch_sub(1);
        spin_until = std::chrono::steady_clock::now() + kSpin;
      }
    }
    if (stop_.load()) return;
    seen = g;
    if (index < limit_.load(std::memory_order_relaxed)) run_chunks(g);
  }
}

void ThreadPool::parallel_for(size_t n, size_t grain, const std::function<void(size_t, size_t)>& fn,
                              size_t max_chunks) {
  if (n == 0) return;
  grain = std::max<size_t>(grain, 1);
  const size_t threads = size_t(limit_.load(std::memory_order_relaxed));
  if (max_chunks == 0) max_chunks = threads;
  const size_t chunks = std::min<size_t>({max_chunks, (n + grain - 1) / grain, size_t(0xffff)});
  if (chunks <= 1 || threads <= 1) {
    fn(0, n);
    return;
  }
  std::lock_guard<std::mutex> caller(caller_mu_);
  syncs_.fetch_add(1, std::memory_order_relaxed);
  job_ = &fn;
  job_n_ = n;
  job_chunks_ = chunks;
  chunks_done_.store(0, std::memory_order_relaxed);
  const uint64_t generation = generation_.load(std::memory_order_relaxed) + 1;
  next_chunk_.store(((generation & 0xffffffffu) << 32) | (uint64_t(chunks) << 16), std::memory_order_release);
  generation_.store(generation);  // seq_cst: ordered against the sleepers_ check below
  if (sleepers_.load() > 0) {
    std::lock_guard<std::mutex> lock(sleep_mu_);  // pairs with the sleepers' predicate check
    sleep_cv_.notify_all();
  }
  run_chunks(generation);
  while (chunks_done_.load(std::memory_order_acquire) != chunks) QWEN35_CPU_RELAX();
  job_ = nullptr;
  std::exception_ptr error;
  {
    std::lock_guard<std::mutex> lock(error_mu_);
    error = std::exchange(job_error_, nullptr);
  }
  if (error) std::rethrow_exception(error);
}

}  // namespace qwen35
