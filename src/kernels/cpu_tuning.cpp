#include "kernels/cpu_tuning.h"

#include <cpuid.h>

#include <cstdlib>
#include <cstring>
#include <string>

#include "core/error.h"

namespace qwen35::kernels {
namespace {

struct Signature {
  bool amd = false;
  unsigned family = 0;
};

Signature signature() {
  Signature s;
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (!__get_cpuid(0, &a, &b, &c, &d)) return s;
  char vendor[13] = {};
  std::memcpy(vendor, &b, 4);
  std::memcpy(vendor + 4, &d, 4);
  std::memcpy(vendor + 8, &c, 4);
  s.amd = std::strcmp(vendor, "AuthenticAMD") == 0;
  if (!__get_cpuid(1, &a, &b, &c, &d)) return s;
  const unsigned base_family = (a >> 8) & 0xf;
  s.family = base_family == 0xf ? base_family + ((a >> 20) & 0xff) : base_family;
  return s;
}

CpuTuning measured() {
  const Signature s = signature();
  // Zen 4 (family 25 with AVX-512; Zen 3 has none): the K-quants' requests into L1 lost to the
  // hardware prefetchers alone at every distance, into L2 8 KiB ahead won (bench/README.md, Zen 4).
  if (s.amd && s.family == 0x19 && __builtin_cpu_supports("avx512f"))
    return CpuTuning{"Zen 4", 8192, true, "bench/README.md, Zen 4 (2026-12-07)"};
  // Zen 5 (family 26, whose only cores yet are Zen 5): into L1, 8 KiB ahead.
  if (s.amd && s.family == 0x1a)
    return CpuTuning{"Zen 5", 8192, false, "Zen 5, 2026-12-02 (git show edaf001:bench/README.md)"};
  // Intel (measured on Sapphire Rapids) and the rest: into L1, 1 KiB ahead.
  const char* uarch = !s.amd ? "Intel" : s.family == 0x19 ? "Zen 3" : "AMD, not measured";
  return CpuTuning{uarch, 1024, false, "the Sapphire Rapids VM (avx512_quant.cpp)"};
}

// The CPU's own tuning, read from CPUID once.
const CpuTuning& measured_tuning() {
  static const CpuTuning t = measured();
  return t;
}

}  // namespace

CpuTuning prefetch_override(const char* v, CpuTuning base) {
  const std::string s(v);
  const size_t colon = s.find(':');
  const std::string level = s.substr(0, colon);
  char* end = nullptr;
  const bool digits = colon != std::string::npos && colon + 1 < s.size() && s[colon + 1] >= '0' && s[colon + 1] <= '9';
  const long bytes = digits ? std::strtol(s.c_str() + colon + 1, &end, 10) : -1;
  if ((level != "l1" && level != "l2") || bytes < 0 || bytes > (1 << 20) || (end && *end))
    fail("QWEN35_PREFETCH=", v, ": expected l1:BYTES or l2:BYTES (0 to 1048576 bytes)");
  base.prefetch_distance = size_t(bytes);
  base.kquants_to_l2 = level == "l2";
  base.source = "QWEN35_PREFETCH";
  return base;
}

const char* cpu_uarch() { return measured_tuning().uarch; }

const CpuTuning& cpu_tuning() {
  static const CpuTuning t = [] {
    const char* v = std::getenv("QWEN35_PREFETCH");
    return v && *v ? prefetch_override(v, measured_tuning()) : measured_tuning();
  }();
  return t;
}

const char* cpu_brand() {
  static const std::string brand = [] {
    unsigned a = 0, b = 0, c = 0, d = 0;
    if (!__get_cpuid(0x80000000, &a, &b, &c, &d) || a < 0x80000004) return std::string();
    char s[49] = {};
    for (unsigned i = 0; i < 3; ++i) {
      __get_cpuid(0x80000002 + i, &a, &b, &c, &d);
      std::memcpy(s + 16 * i, &a, 4);
      std::memcpy(s + 16 * i + 4, &b, 4);
      std::memcpy(s + 16 * i + 8, &c, 4);
      std::memcpy(s + 16 * i + 12, &d, 4);
    }
    std::string out(s);
    while (!out.empty() && out.back() == ' ') out.pop_back();
    return out.substr(out.find_first_not_of(' ') == std::string::npos ? 0 : out.find_first_not_of(' '));
  }();
  return brand.c_str();
}

}  // namespace qwen35::kernels
