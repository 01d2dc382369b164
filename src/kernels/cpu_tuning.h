// How the x86 kernels stream weights on this CPU: the software prefetch measured best per
// microarchitecture (the hardware prefetchers and memory latency differ, so no one setting is
// best on all). Plain data, so the ISA-flagged files may read it.
#pragma once

#include <cstddef>

namespace qwen35::kernels {

struct CpuTuning {
  const char* uarch;         // "Zen 3", "Zen 4", "Zen 5", "Intel" or "AMD, not measured"
  size_t prefetch_distance;  // bytes ahead of the block being read
  bool kquants_to_l2;        // the K-quant kernels' prefetcht1 rather than prefetcht0 (the legacy
                             // formats' prefetch into L1 everywhere)
  const char* source;        // where the figures behind the choice are (or the override)
};

// Chosen once from CPUID; QWEN35_PREFETCH=l1:BYTES or l2:BYTES overrides it (a diagnostic, for
// measuring a new CPU with qmatmul_bench).
const CpuTuning& cpu_tuning();
// `base` with the prefetch of QWEN35_PREFETCH's value ("l2:8192": 8 KiB ahead, the K-quants' into
// L2); fails on anything else.
CpuTuning prefetch_override(const char* value, CpuTuning base);
// The microarchitecture cpu_tuning() is for, without reading QWEN35_PREFETCH.
const char* cpu_uarch();
// The CPU's brand string ("AMD EPYC 9R14 96-Core Processor"), or "" where CPUID has none.
const char* cpu_brand();

}  // namespace qwen35::kernels
