// The attention KV cache: rows read back as appended, and a reservation that stays out of
// resident memory until rows are written.
#include <gtest/gtest.h>

#include <cstdint>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "model/decoder_state.h"

namespace qwen35 {
namespace {

// kB resident in the mapping that holds p (/proc/self/smaps Rss), -1 if not found.
long resident_kb(const void* p) {
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
    if (inside && line.rfind("Rss:", 0) == 0) return std::stol(line.substr(4));
  }
  return -1;
}

TEST(KvCache, RowsReadBackAsAppended) {
  KvCache kv(2, 8, DType::F32);
  std::vector<float> k(3 * 16), v(3 * 16);
  for (size_t i = 0; i < k.size(); ++i) k[i] = float(i), v[i] = -float(i);
  kv.append(k.data(), v.data(), 3);
  kv.reserve(1000);  // growth keeps the rows
  std::vector<float> row(16);
  for (int64_t t = 0; t < 3; ++t) {
    kv.key_f32(t, row.data());
    for (int i = 0; i < 16; ++i) EXPECT_EQ(row[size_t(i)], k[size_t(t * 16 + i)]);
    kv.value_f32(t, row.data());
    for (int i = 0; i < 16; ++i) EXPECT_EQ(row[size_t(i)], v[size_t(t * 16 + i)]);
  }
  EXPECT_EQ(kv.length(), 3);
}

// A server reserves 4096 rows for every session at start; zeroing them made all of it resident
// (512 MiB for four 9B sessions) and was a third of the start's time.
TEST(KvCache, ReservationIsNotMadeResident) {
  KvCache kv(4, 256, DType::F16);  // 2 KiB a row
  kv.reserve(32768);               // 64 MiB for keys, 64 for values: past malloc's mmap threshold
  const long kb = resident_kb(kv.key_row(0));
  if (kb < 0) GTEST_SKIP() << "no /proc/self/smaps entry for the reservation";
  EXPECT_LT(kb, 8 * 1024);
  std::vector<float> row(1024, 1.0f);
  kv.append(row.data(), row.data(), 1);
  std::vector<float> back(1024);
  kv.key_f32(0, back.data());
  EXPECT_EQ(back[1023], 1.0f);
}

}  // namespace
}  // namespace qwen35
