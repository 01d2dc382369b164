// PageArray: work buffers in huge-page-advised anonymous memory start zero-filled like a
// std::vector's values, keep what is written, and hand their memory over on a move.
#include <gtest/gtest.h>

#include <cstdint>
#include <utility>

#include "core/page_buffer.h"

namespace qwen35 {
namespace {

TEST(PageArray, StartsZeroFilledAndKeepsWrites) {
  const size_t n = (size_t(5) << 20) / sizeof(float) + 3;  // past two huge pages, not a whole one
  PageArray<float> a(n);
  ASSERT_EQ(a.size(), n);
  ASSERT_NE(a.data(), nullptr);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(a.data()) % kHugePageBytes, 0u);
  for (size_t i = 0; i < n; i += 997) EXPECT_EQ(a[i], 0.0f) << i;
  EXPECT_EQ(a[n - 1], 0.0f);
  for (size_t i = 0; i < n; ++i) a[i] = float(i % 1024);
  for (size_t i = 0; i < n; i += 4099) EXPECT_EQ(a[i], float(i % 1024)) << i;
  EXPECT_EQ(a[n - 1], float((n - 1) % 1024));
}

TEST(PageArray, MoveHandsTheMemoryOver) {
  PageArray<int32_t> a(1000);
  a[999] = 7;
  int32_t* p = a.data();
  PageArray<int32_t> b;
  EXPECT_EQ(b.size(), 0u);
  EXPECT_EQ(b.data(), nullptr);
  b = std::move(a);
  EXPECT_EQ(b.data(), p);
  EXPECT_EQ(b.size(), 1000u);
  EXPECT_EQ(b[999], 7);
  EXPECT_EQ(a.size(), 0u);
  EXPECT_EQ(a.data(), nullptr);
  b = PageArray<int32_t>(10);  // the old mapping is released, the new one zero-filled
  EXPECT_EQ(b.size(), 10u);
  EXPECT_EQ(b[9], 0);
}

TEST(PageArray, EmptyHasNoMemory) {
  PageArray<float> a(0);
  EXPECT_EQ(a.size(), 0u);
  EXPECT_EQ(a.data(), nullptr);
}

}  // namespace
}  // namespace qwen35
