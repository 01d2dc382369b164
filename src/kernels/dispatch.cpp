// Chooses the kernel table once from the CPU's features.
#include <cstdlib>
#include <cstring>
#include <limits>
#include <string>

#include <sys/syscall.h>
#include <unistd.h>

#include "core/error.h"
#include "kernels/cpu_tuning.h"
#include "kernels/kernels.h"

namespace qwen35::kernels {

// Defined in the ISA folders, which are compiled with their ISA's flags: call them only after
// the feature check here (this file is compiled for the baseline CPU).
const KernelTable& avx2_table_unchecked();
const KernelTable& avxvnni_table_unchecked(const KernelTable& avx2);
const KernelTable& avx512_table_unchecked();
const KernelTable& amx_table_unchecked(const KernelTable& avx512);

namespace {

// Linux hands out AMX tile state only on request (arch_prctl ARCH_REQ_XCOMP_PERM, XTILEDATA).
bool request_amx() {
#if defined(__linux__) && defined(SYS_arch_prctl)
  constexpr long kReqXcompPerm = 0x1023, kXfeatureXtiledata = 18;
  return syscall(SYS_arch_prctl, kReqXcompPerm, kXfeatureXtiledata) == 0;
#else
  return false;
#endif
}

// One token (two for Q6_K) against some K-quant matrices goes to the AVX-VNNI kernel on AMD cores
// that have both ISAs, because there it streams them from memory faster than the AVX-512 kernel:
// Q4_K and Q5_K up to 2048 columns (at 4096, or at two tokens, the AVX-512 Q4_K kernel is level
// or ahead), Q6_K at any width and for a one-draft verify or two batched conversations too, though
// the AVX-512 Q6_K kernel is the faster one from L2, for a reason not found (measured on the Q6_K
// block order before 80d5d88, whose three streams a block halved Zen 4's Q6_K speed from memory;
// to be measured again on Zen 5); from three tokens the AVX-512 kernel leads. Figures: "Zen 5,
// third session" to "Zen 5, fifth session" in bench/README.md's diary (git show
// edaf001:bench/README.md). Both kernels give the reference's bits, so a row's result does not
// depend on the route.
QMatmulFn g_avx512[size_t(DType::kCount)], g_avxvnni[size_t(DType::kCount)];

template <DType D, int64_t kMaxTokens, int64_t kMaxCols>
void routed(const ActRows& a, const WeightMatrix& w, int64_t o_begin, int64_t o_end, float* y, int64_t y_stride) {
  (a.T <= kMaxTokens && w.cols <= kMaxCols ? g_avxvnni : g_avx512)[size_t(D)](a, w, o_begin, o_end, y, y_stride);
}

const KernelTable& avx512_routed(const KernelTable& avx512, const KernelTable& avxvnni) {
  static const KernelTable table = [&] {
    KernelTable t = avx512;
    auto route = [&](DType d, QMatmulFn fn) {
      g_avx512[size_t(d)] = t.qmatmul[size_t(d)];
      g_avxvnni[size_t(d)] = avxvnni.qmatmul[size_t(d)];
      if (g_avx512[size_t(d)] && g_avxvnni[size_t(d)]) t.qmatmul[size_t(d)] = fn;
    };
    route(DType::Q4_K, routed<DType::Q4_K, 1, 2048>);
    route(DType::Q5_K, routed<DType::Q5_K, 1, 2048>);
    route(DType::Q6_K, routed<DType::Q6_K, 2, std::numeric_limits<int64_t>::max()>);
    return t;
  }();
  return table;
}

}  // namespace

std::vector<const KernelTable*> supported_tables() {
  static const bool has_avx2 =
      __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && __builtin_cpu_supports("f16c");
  static const bool has_avxvnni = has_avx2 && __builtin_cpu_supports("avxvnni");
  static const bool has_avx512 = has_avx2 && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                                 __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq") &&
                                 __builtin_cpu_supports("avx512vnni");
  static const bool has_amx = has_avx512 && __builtin_cpu_supports("amx-tile") && __builtin_cpu_supports("amx-int8") &&
                              request_amx();
  std::vector<const KernelTable*> out{&ref_table()};
  if (has_avx2) out.push_back(&avx2_table_unchecked());
  if (has_avxvnni) out.push_back(&avxvnni_table_unchecked(avx2_table_unchecked()));
  if (has_avx512)
    out.push_back(has_avxvnni && __builtin_cpu_is("amd")
                      ? &avx512_routed(avx512_table_unchecked(), avxvnni_table_unchecked(avx2_table_unchecked()))
                      : &avx512_table_unchecked());
  if (has_amx) out.push_back(&amx_table_unchecked(avx512_table_unchecked()));
  return out;
}

const KernelTable& active_table() {
  static const KernelTable* chosen = [] {
    std::vector<const KernelTable*> tables = supported_tables();
    const char* want = std::getenv("QWEN35_ISA");
    if (want && *want) {
      for (const KernelTable* t : tables)
        if (t->name == want) return t;
      fail("QWEN35_ISA=", want, " is not supported on this CPU");
    }
    return tables.back();
  }();
  return *chosen;
}

std::string active_table_reason() {
  const KernelTable& k = active_table();
  const char* isa = std::getenv("QWEN35_ISA");
  std::string out = std::string(k.name) + " on " + (*cpu_brand() ? cpu_brand() : "an unnamed CPU") + " (" +
                    cpu_uarch() + ")";
  // The tuning's note holds only for the widest table, the one chosen without QWEN35_ISA.
  // (The tuning is read only where the AVX-512 table runs: see below.)
  const bool wide = k.name == "avx512" || k.name == "amx";
  const char* why = wide && &k == supported_tables().back() ? cpu_tuning().table_choice : "";
  out += isa && *isa ? ": QWEN35_ISA"
         : *why      ? std::string(": the widest table this CPU runs, ") + why
                     : ": the widest table this CPU runs (not measured against the narrower ones on this CPU)";
  if (k.name == "avx512" && &k != &avx512_table_unchecked())
    out += ", one token against Q4_K / Q5_K of up to 2048 columns and up to two against Q6_K on the AVX-VNNI "
           "kernels";
  if (k.name == "avx512" || k.name == "amx") {
    // Only here: the tuning is read when the AVX-512 table is built, which a CPU without it never does.
    const CpuTuning& t = cpu_tuning();
    out += "; the AVX-512 block kernels prefetch " + describe(t) + " (" + t.source + ")";
  }
  return out;
}

}  // namespace qwen35::kernels
