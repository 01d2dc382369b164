#include "kernels/cpu_tuning.h"

#include <gtest/gtest.h>

#include <string>

#include "core/error.h"

namespace qwen35::kernels {
namespace {

TEST(CpuTuning, OverrideNamesTheLevelAndTheDistance) {
  const CpuTuning base{"Zen 9", 4096, false, "a table"};
  const CpuTuning l2 = prefetch_override("l2:8192", base);
  EXPECT_TRUE(l2.kquants_to_l2);
  EXPECT_EQ(l2.prefetch_distance, 8192u);
  const CpuTuning l1 = prefetch_override("l1:0", base);
  EXPECT_FALSE(l1.kquants_to_l2);
  EXPECT_EQ(l1.prefetch_distance, 0u);
  EXPECT_EQ(std::string(l1.uarch), "Zen 9");
  EXPECT_EQ(std::string(l1.source), "QWEN35_PREFETCH");
}

TEST(CpuTuning, OverrideRejectsWhatItCannotRead) {
  for (const char* bad :
       {"", "l2", "l2:", "l3:1024", "L1:64", "l1:-64", "l1:64k", "l1: 64", "l2:1048577", "l2:99999999999999999999"})
    EXPECT_THROW(prefetch_override(bad, CpuTuning{"Zen 9", 4096, false, "a table"}), Error) << bad;
}

TEST(CpuTuning, ThisCpuHasOne) {
  const CpuTuning& t = cpu_tuning();
  EXPECT_NE(t.uarch, nullptr);
  EXPECT_NE(t.source, nullptr);
  EXPECT_LE(t.prefetch_distance, size_t(1) << 20);
}

}  // namespace
}  // namespace qwen35::kernels
