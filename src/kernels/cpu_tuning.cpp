#include "kernels/cpu_tuning.h"

#include <cpuid.h>

#include <cstdlib>
#include <cstring>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

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
  // Zen 4 (family 25 with AVX-512; Zen 3 has none), qmatmul_bench from memory, one token, one
  // thread (bench/README.md, Zen 4): software prefetches lost to the hardware prefetchers alone on
  // Q4_0 (18 -> 27 GB/s), Q4_K (19 -> 21), Q5_K (14 -> 20) and IQ4_XS (24 -> 26), and on Q6_K
  // since its blocks became six bits a byte (requests into L2 8 KiB ahead: 15.1 GB/s, none: 21.9;
  // they had helped the previous layout, 14.5 -> 17.8). Q8_0 lost to none (19 -> 11.5) until its
  // step shrank from eight blocks to a pair (27-29).
  if (s.amd && s.family == 0x19 && __builtin_cpu_supports("avx512f")) {
    CpuTuning t = make_tuning("Zen 4", 8192, Prefetch::kNone, Prefetch::kNone, 2, "bench/README.md, Zen 4 (2026-12-07)");
    for (DType f : {DType::Q2_K, DType::Q3_K}) t.prefetch[size_t(f)] = Prefetch::kL2;  // as before, not measured
    // Blocks of tokens are another matter: with four tokens a line holds four times the work, and
    // requests into L2 8 KiB ahead took qmatmul_bench at T = 4, two threads, from memory, from
    // 17-22 GB/s to 28-40 on every format measured (Q4_0, Q8_0, Q4_K, Q5_K, Q6_K, IQ4_XS), and
    // T = 16 by 15-40%.
    t.prefetch_tokens.fill(Prefetch::kL2);
    t.table_choice =
        "measured against the AVX2 table here: decode level on the K-quants and faster on Q4_0 / Q8_0, prefill faster";
    return t;
  }
  // Zen 5 (family 26, whose only cores yet are Zen 5): into L1, 8 KiB ahead.
  if (s.amd && s.family == 0x1a) {
    CpuTuning t = make_tuning("Zen 5", 8192, Prefetch::kL1, Prefetch::kL1, 8, "Zen 5, 2026-12-02 (git show edaf001:bench/README.md)");
    t.table_choice = "measured against the AVX-VNNI table here: faster for prefill and for decode but for the "
                     "one-token routes below";
    return t;
  }
  // Intel (measured on Sapphire Rapids) and the rest: into L1, 1 KiB ahead.
  const char* uarch = !s.amd ? "Intel" : s.family == 0x19 ? "Zen 3" : "AMD, not measured";
  return make_tuning(uarch, 1024, Prefetch::kL1, Prefetch::kL1, 8, "the Sapphire Rapids VM (avx512_quant.cpp)");
}

// The CPU's own tuning, read from CPUID once.
const CpuTuning& measured_tuning() {
  static const CpuTuning t = measured();
  return t;
}

}  // namespace

constexpr DType kLegacy[] = {DType::Q8_0, DType::Q4_0, DType::IQ4_NL, DType::Q4_1, DType::Q5_0, DType::Q5_1};
constexpr DType kSuperBlocks[] = {DType::Q2_K, DType::Q3_K, DType::Q4_K, DType::Q5_K, DType::Q6_K, DType::IQ4_XS};

CpuTuning make_tuning(const char* uarch, size_t distance, Prefetch legacy, Prefetch kquants, int legacy_step,
                      const char* source) {
  CpuTuning t;
  t.uarch = uarch;
  t.prefetch_distance = distance;
  for (DType f : kLegacy) t.prefetch[size_t(f)] = legacy;
  for (DType f : kSuperBlocks) t.prefetch[size_t(f)] = kquants;
  t.prefetch_tokens = t.prefetch;
  t.legacy_step = legacy_step;
  t.source = source;
  return t;
}

namespace {

std::optional<Prefetch> read_level(std::string_view v) {
  if (v == "l1") return Prefetch::kL1;
  if (v == "l2") return Prefetch::kL2;
  if (v == "none") return Prefetch::kNone;
  return std::nullopt;
}

const char* level_name(Prefetch p) { return p == Prefetch::kNone ? "none" : p == Prefetch::kL1 ? "l1" : "l2"; }

}  // namespace

CpuTuning prefetch_override(const char* v, CpuTuning base) {
  const std::string all(v);
  auto bad = [&]() {
    fail("QWEN35_PREFETCH=", v,
         ": expected LEVEL:BYTES (0 to 1048576) then optional ,legacy=LEVEL ,kquants=LEVEL ,FORMAT=LEVEL ,tokens=LEVEL "
         ",step=2|8; "
         "LEVEL is l1, l2 or none");
  };
  std::vector<std::string> items;
  for (size_t at = 0;;) {
    const size_t comma = all.find(',', at);
    items.push_back(all.substr(at, comma == std::string::npos ? std::string::npos : comma - at));
    if (comma == std::string::npos) break;
    at = comma + 1;
  }
  const std::string& head = items[0];
  const size_t colon = head.find(':');
  if (colon == std::string::npos) bad();
  const std::optional<Prefetch> level = read_level(head.substr(0, colon));
  const bool digits = colon + 1 < head.size() && head[colon + 1] >= '0' && head[colon + 1] <= '9';
  char* end = nullptr;
  const long bytes = digits ? std::strtol(head.c_str() + colon + 1, &end, 10) : -1;
  if (!level || bytes < 0 || bytes > (1 << 20) || (end && *end)) bad();
  base.prefetch_distance = size_t(bytes);
  for (DType f : kSuperBlocks) base.prefetch[size_t(f)] = *level;
  for (size_t i = 1; i < items.size(); ++i) {
    const size_t eq = items[i].find('=');
    if (eq == std::string::npos) bad();
    const std::string key = items[i].substr(0, eq), value = items[i].substr(eq + 1);
    if (key == "step") {
      if (value != "2" && value != "8") bad();
      base.legacy_step = value == "2" ? 2 : 8;
      continue;
    }
    const std::optional<Prefetch> l = read_level(value);
    if (!l) bad();
    if (key == "tokens") {
      base.prefetch_tokens.fill(*l);
      continue;
    }
    if (key == "legacy" || key == "kquants") {
      for (DType f : key == "legacy" ? std::span<const DType>(kLegacy) : std::span<const DType>(kSuperBlocks))
        base.prefetch[size_t(f)] = *l;
      continue;
    }
    const std::optional<DType> f = dtype_from_name(key);
    if (!f || !is_block_format(*f) || *f == DType::Q8_K) bad();
    base.prefetch[size_t(*f)] = *l;
  }
  base.source = "QWEN35_PREFETCH";
  return base;
}

std::string describe(const CpuTuning& t) {
  std::string out = std::to_string(t.prefetch_distance) + " bytes ahead;";
  for (std::span<const DType> formats : {std::span<const DType>(kLegacy), std::span<const DType>(kSuperBlocks)})
    for (DType f : formats) {
      out.append(" ").append(dtype_name(f)).append(" ").append(level_name(t.prefetch[size_t(f)])).append(",");
    }
  out.back() = ';';
  const Prefetch first = t.prefetch_tokens[size_t(kLegacy[0])];
  bool one_level = true;
  for (std::span<const DType> formats : {std::span<const DType>(kLegacy), std::span<const DType>(kSuperBlocks)})
    for (DType f : formats) one_level = one_level && t.prefetch_tokens[size_t(f)] == first;
  out.append(" blocks of tokens");
  if (one_level) {
    out.append(" ").append(level_name(first)).append(" for every format,");
  } else {
    for (std::span<const DType> formats : {std::span<const DType>(kLegacy), std::span<const DType>(kSuperBlocks)})
      for (DType f : formats)
        out.append(" ").append(dtype_name(f)).append(" ").append(level_name(t.prefetch_tokens[size_t(f)])).append(",");
  }
  out.back() = ';';
  out.append(" one token of the 32-element formats ").append(std::to_string(t.legacy_step)).append(" blocks a step");
  return out;
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
