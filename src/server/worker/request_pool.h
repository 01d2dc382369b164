// A few threads for the part of a generating request that may take a while before the worker
// sees it: parsing a large JSON body, decoding base64 and images, fetching remote images,
// rendering and tokenizing the prompt. Keeps that work off the io threads (which must never
// block) and off the worker (which must keep every stream moving).
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace qwen35::server {

class RequestPool {
 public:
  // `max_waiting`: tasks that may wait for a thread; more are refused.
  RequestPool(int threads, size_t max_waiting);
  ~RequestPool();  // stop()
  RequestPool(const RequestPool&) = delete;
  RequestPool& operator=(const RequestPool&) = delete;

  // Queues `task`; false when the pool is stopping or too many tasks wait.
  bool submit(std::function<void()> task);
  // Runs what is queued, then joins the threads. Idempotent.
  void stop();

 private:
  void run();

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> tasks_;
  size_t max_waiting_;
  bool stopping_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace qwen35::server
