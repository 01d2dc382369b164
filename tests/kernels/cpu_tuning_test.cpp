#include "kernels/cpu_tuning.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "core/error.h"
#include "kernels/kernels.h"

namespace qwen35::kernels {
namespace {

const CpuTuning kBase = make_tuning("Zen 9", 4096, Prefetch::kL1, Prefetch::kL1, 8, "a table");

TEST(CpuTuning, OverrideNamesTheLevelAndTheDistance) {
  const CpuTuning l2 = prefetch_override("l2:8192", kBase);
  EXPECT_EQ(l2.prefetch[size_t(DType::Q4_K)], Prefetch::kL2);
  EXPECT_EQ(l2.prefetch[size_t(DType::IQ4_XS)], Prefetch::kL2);
  EXPECT_EQ(l2.prefetch[size_t(DType::Q8_0)], Prefetch::kL1);  // the legacy formats keep theirs
  EXPECT_EQ(l2.prefetch_distance, 8192u);
  EXPECT_EQ(l2.legacy_step, 8);
  const CpuTuning l1 = prefetch_override("l1:0", kBase);
  EXPECT_EQ(l1.prefetch[size_t(DType::Q6_K)], Prefetch::kL1);
  EXPECT_EQ(l1.prefetch_distance, 0u);
  EXPECT_EQ(std::string(l1.uarch), "Zen 9");
  EXPECT_EQ(std::string(l1.source), "QWEN35_PREFETCH");
}

TEST(CpuTuning, OverrideSetsClassesFormatsAndTheStep) {
  const CpuTuning t = prefetch_override("none:8192,legacy=none,q6_k=l2,Q4_0=l1,step=2", kBase);
  EXPECT_EQ(t.prefetch[size_t(DType::Q4_K)], Prefetch::kNone);
  EXPECT_EQ(t.prefetch[size_t(DType::Q6_K)], Prefetch::kL2);
  EXPECT_EQ(t.prefetch[size_t(DType::Q8_0)], Prefetch::kNone);
  EXPECT_EQ(t.prefetch[size_t(DType::Q4_0)], Prefetch::kL1);  // later items win
  EXPECT_EQ(t.legacy_step, 2);
  const std::string d = describe(t);
  EXPECT_NE(d.find("8192 bytes ahead"), std::string::npos) << d;
  EXPECT_NE(d.find("Q6_K l2"), std::string::npos) << d;
  EXPECT_NE(d.find("2 blocks a step"), std::string::npos) << d;
  EXPECT_NE(d.find("blocks of tokens l1 for every format;"), std::string::npos) << d;  // the base's
}

// Blocks of two or more tokens have their own level, which the one-token items leave alone.
TEST(CpuTuning, OverrideSetsTheLevelForBlocksOfTokens) {
  EXPECT_EQ(kBase.prefetch_tokens, kBase.prefetch);
  const CpuTuning t = prefetch_override("none:8192,legacy=none,tokens=l2", kBase);
  EXPECT_EQ(t.prefetch[size_t(DType::Q4_K)], Prefetch::kNone);
  EXPECT_EQ(t.prefetch[size_t(DType::Q8_0)], Prefetch::kNone);
  EXPECT_EQ(t.prefetch_tokens[size_t(DType::Q4_K)], Prefetch::kL2);
  EXPECT_EQ(t.prefetch_tokens[size_t(DType::Q8_0)], Prefetch::kL2);
  EXPECT_NE(describe(t).find("blocks of tokens l2 for every format;"), std::string::npos) << describe(t);
  const CpuTuning kept = prefetch_override("l2:1024", kBase);
  EXPECT_EQ(kept.prefetch_tokens[size_t(DType::Q4_K)], Prefetch::kL1);
  EXPECT_THROW(prefetch_override("l2:64,tokens=l3", kBase), Error);
  CpuTuning mixed = kBase;
  mixed.prefetch_tokens[size_t(DType::Q6_K)] = Prefetch::kL2;
  EXPECT_NE(describe(mixed).find("blocks of tokens Q8_0 l1,"), std::string::npos) << describe(mixed);
  EXPECT_NE(describe(mixed).find("Q6_K l2, IQ4_XS l1; one token"), std::string::npos) << describe(mixed);
}

TEST(CpuTuning, OverrideRejectsWhatItCannotRead) {
  for (const char* bad :
       {"", "l2", "l2:", "l3:1024", "L1:64", "l1:-64", "l1:64k", "l1: 64", "l2:1048577", "l2:99999999999999999999",
        "l2:64,", "l2:64,q4_k", "l2:64,q4_k=l3", "l2:64,bf16=l1", "l2:64,q8_k=l1", "l2:64,nope=l1", "l2:64,step=4",
        "l2:64,step="})
    EXPECT_THROW(prefetch_override(bad, kBase), Error) << bad;
}

TEST(CpuTuning, ThisCpuHasOne) {
  const CpuTuning& t = cpu_tuning();
  EXPECT_NE(t.uarch, nullptr);
  EXPECT_NE(t.source, nullptr);
  EXPECT_LE(t.prefetch_distance, size_t(1) << 20);
}

// info and serve say why the table runs: measured here against the narrower tables, or not.
TEST(CpuTuning, TheTableChoiceSaysWhetherItWasMeasured) {
  const char* isa = std::getenv("QWEN35_ISA");
  if (isa && *isa) GTEST_SKIP() << "QWEN35_ISA chooses the table";
  const std::string reason = active_table_reason(), table(active_table().name);
  EXPECT_NE(reason.find("the widest table this CPU runs"), std::string::npos) << reason;
  const std::string uarch = cpu_uarch();
  const bool measured = (table == "avx512" || table == "amx") && (uarch == "Zen 4" || uarch == "Zen 5");
  EXPECT_EQ(reason.find("not measured against") == std::string::npos, measured) << reason;
  if (measured) {
    EXPECT_NE(reason.find(cpu_tuning().table_choice), std::string::npos) << reason;
  }
}

}  // namespace
}  // namespace qwen35::kernels
