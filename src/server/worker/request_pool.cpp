#include "server/worker/request_pool.h"

#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>

namespace qwen35::server {
namespace {
constexpr int kNiceness = 10;
}  // namespace

RequestPool::RequestPool(int threads, size_t max_waiting) : max_waiting_(max_waiting) {
  for (int i = 0; i < std::max(1, threads); ++i) threads_.emplace_back([this] { run(); });
}

RequestPool::~RequestPool() { stop(); }

bool RequestPool::submit(std::function<void()> task) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_ || tasks_.size() >= max_waiting_) return false;
    tasks_.push_back(std::move(task));
  }
  cv_.notify_one();
  return true;
}

void RequestPool::stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_ && threads_.empty()) return;
    stopping_ = true;
  }
  cv_.notify_all();
  for (std::thread& t : threads_) t.join();
  threads_.clear();
}

void RequestPool::run() {
  // Preparing a request (decoding a large image, say) must not slow the streams the worker is
  // generating: these threads yield the CPU to it.
  setpriority(PRIO_PROCESS, pid_t(syscall(SYS_gettid)), kNiceness);
  for (;;) {
    std::function<void()> task;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [&] { return stopping_ || !tasks_.empty(); });
      if (tasks_.empty()) return;
      task = std::move(tasks_.front());
      tasks_.pop_front();
    }
    task();  // tasks catch their own errors (they answer through their responder)
  }
}

}  // namespace qwen35::server
