// How the x86 kernels stream weights on this CPU: the software prefetch and the step of the
// one-token kernels measured best per microarchitecture and per weight format (the hardware
// prefetchers and memory latency differ, so no one setting is best on all). Plain data, so the
// ISA-flagged files may read it.
#pragma once

#include <array>
#include <cstddef>
#include <string>

#include "core/dtype.h"

namespace qwen35::kernels {

// Where a block kernel's software prefetches put the lines it will read: nowhere (the hardware
// prefetchers alone), L1 (prefetcht0) or L2 (prefetcht1).
enum class Prefetch : unsigned char { kNone, kL1, kL2 };

struct CpuTuning {
  const char* uarch = "";          // "Zen 3", "Zen 4", "Zen 5", "Intel" or "AMD, not measured"
  size_t prefetch_distance = 1024;  // bytes ahead of the block being read
  std::array<Prefetch, size_t(DType::kCount)> prefetch{};  // per weight format, one token
  // Per weight format, blocks of two or more tokens (batched decode, verify blocks, prefill,
  // a MoE expert's rows): more work per line read, so the hardware prefetchers alone can fall
  // behind where they keep up with one token.
  std::array<Prefetch, size_t(DType::kCount)> prefetch_tokens{};
  // Blocks a step of the one-token kernels of the 32-element formats (8 or 2): Zen 5 streams
  // eight a step fastest, Zen 4 a pair (why is not known: a plain loop reading the same lines in
  // the same order streams either way).
  int legacy_step = 8;
  const char* source = "";  // where the figures behind the choice are (or the override)
  // Why the widest table this CPU runs is the one to run, where it was measured against the
  // narrower ones for decode and for prefill ("" where it was not).
  const char* table_choice = "";
};

// The tuning of the CPU's kind: the legacy formats (32-element blocks) prefetch to `legacy`, the
// K-quants and IQ4_XS to `kquants`, for one token and for blocks of tokens alike.
CpuTuning make_tuning(const char* uarch, size_t distance, Prefetch legacy, Prefetch kquants, int legacy_step,
                      const char* source);

// Chosen once from CPUID; QWEN35_PREFETCH overrides it (a diagnostic, for measuring a new CPU
// with qmatmul_bench).
const CpuTuning& cpu_tuning();
// `base` with QWEN35_PREFETCH's value applied, or a failure naming what it cannot read. The value
// is LEVEL:BYTES (the distance and the K-quants' level: "l2:8192"), then optional comma-separated
// LEVEL for a class or format ("legacy=none", "kquants=l1", "q6_k=l2"), "tokens=LEVEL" (every
// format's level for blocks of two or more tokens) and "step=2|8"; a level is l1, l2 or none.
CpuTuning prefetch_override(const char* value, CpuTuning base);
// "8192 bytes ahead; Q8_0 none, ..., Q6_K l2, ...; one token of the 32-element formats 2 blocks a
// step": what the block kernels do.
std::string describe(const CpuTuning& t);
// The microarchitecture cpu_tuning() is for, without reading QWEN35_PREFETCH.
const char* cpu_uarch();
// The CPU's brand string ("AMD EPYC 9R14 96-Core Processor"), or "" where CPUID has none.
const char* cpu_brand();

}  // namespace qwen35::kernels
