#include "core/thread_pool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <vector>

namespace qwen35 {
namespace {

TEST(ThreadPool, CoversEveryIndexOnceAcrossManyCalls) {
  ThreadPool pool(3);
  for (size_t n : {1u, 2u, 7u, 100u, 1000u}) {
    for (int rep = 0; rep < 50; ++rep) {
      std::vector<std::atomic<int>> hits(n);
      pool.parallel_for(n, 1, [&](size_t b, size_t e) {
        for (size_t i = b; i < e; ++i) hits[i]++;
      });
      for (size_t i = 0; i < n; ++i) ASSERT_EQ(hits[i].load(), 1) << "n=" << n << " i=" << i;
    }
  }
}

TEST(ThreadPool, SingleThreadRunsInline) {
  ThreadPool pool(1);
  size_t total = 0;
  pool.parallel_for(10, 1, [&](size_t b, size_t e) { total += e - b; });
  EXPECT_EQ(total, 10u);
}

}  // namespace
}  // namespace qwen35

namespace qwen35 {
namespace {

TEST(ThreadPool, ExceptionInAChunkIsRethrownAfterAllChunksFinish) {
  ThreadPool pool(3);
  for (int rep = 0; rep < 20; ++rep) {
    std::atomic<int> done{0};
    EXPECT_THROW(pool.parallel_for(100, 1,
                                   [&](size_t b, size_t e) {
                                     done += int(e - b);
                                     if (b == 0) throw std::runtime_error("chunk failed");
                                   }),
                 std::runtime_error);
    EXPECT_EQ(done.load(), 100);
  }
  std::atomic<size_t> total{0};  // the pool still works afterwards
  pool.parallel_for(10, 1, [&](size_t b, size_t e) { total += e - b; });
  EXPECT_EQ(total.load(), 10u);
}

}  // namespace
}  // namespace qwen35
