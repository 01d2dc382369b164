// Chooses the kernel table once from the CPU's features.
#include <cstdlib>
#include <cstring>

#include <sys/syscall.h>
#include <unistd.h>

#include "core/error.h"
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
  if (has_avx512) out.push_back(&avx512_table_unchecked());
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

}  // namespace qwen35::kernels
