// PageArray: work buffers in huge-page-advised anonymous memory start zero-filled like a
// std::vector's values, keep what is written, and hand their memory over on a move.
#include <gtest/gtest.h>

#include <cstdint>
#include <fstream>
#include <sstream>
#include <string>
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

// kB of huge pages backing the mapping that holds p (/proc/self/smaps AnonHugePages), -1 if not found.
long anon_huge_kb(const void* p) {
  const auto at = reinterpret_cast<uintptr_t>(p);
  std::ifstream smaps("/proc/self/smaps");
  std::string line;
  bool inside = false;
  while (std::getline(smaps, line)) {
    uintptr_t lo = 0, hi = 0;
    char dash = 0;
    std::istringstream head(line);
    if (head >> std::hex >> lo >> dash >> hi && dash == '-') {  // a mapping's first line: "lo-hi perms ..."
      inside = at >= lo && at < hi;
      continue;
    }
    if (inside && line.rfind("AnonHugePages:", 0) == 0) return std::stol(line.substr(14));
  }
  return -1;
}

// A buffer under 2 MiB is not advised as huge pages: one would make a whole 2 MiB resident.
TEST(PageArray, SmallBufferStaysInSmallPages) {
  PageArray<uint8_t> a(size_t(1) << 20);
  for (size_t i = 0; i < a.size(); i += 4096) a[i] = 1;
  const long kb = anon_huge_kb(a.data());
  if (kb < 0) GTEST_SKIP() << "no /proc/self/smaps entry for the buffer";
  EXPECT_EQ(kb, 0);
}

TEST(PageArray, EmptyHasNoMemory) {
  PageArray<float> a(0);
  EXPECT_EQ(a.size(), 0u);
  EXPECT_EQ(a.data(), nullptr);
}

}  // namespace
}  // namespace qwen35
