// This CPU's arithmetic peaks, the ceilings against which the vision tower's figures are read
// (bench/README.md, video): int8 multiply-adds by vpdpbusd (zmm and ymm), f32 FMAs (zmm) and
// bf16 pair dot products by vdpbf16ps (zmm), each as many independent chains as hide the
// instruction's latency, and the Q8_0 matmul's instruction mix (its ceiling), on 1..N threads at
// once; and the core clock, from a chain of dependent integer adds (one a cycle). Prints one JSON
// object:
//
//   build/bin/vnni_peak [--threads N] [--seconds S]
//
// "gops" counts 2 operations per multiply-add (int8 or float), as the tower's GOPS do.
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <iterator>
#include <string>
#include <thread>
#include <time.h>
#include <vector>

namespace {

// Twelve independent accumulators, each taking one instruction per iteration: more chains than
// the instruction's latency (4-5 cycles) times its throughput (at most 2 a cycle).
#define QWEN35_TWELVE(OP, R)                                                                              \
  OP " %%" R "1, %%" R "0, %%" R "4\n" OP " %%" R "1, %%" R "0, %%" R "5\n" OP " %%" R "1, %%" R "0, %%" R \
     "6\n" OP " %%" R "1, %%" R "0, %%" R "7\n" OP " %%" R "1, %%" R "0, %%" R "8\n" OP " %%" R "1, %%" R  \
     "0, %%" R "9\n" OP " %%" R "1, %%" R "0, %%" R "10\n" OP " %%" R "1, %%" R "0, %%" R "11\n" OP " %%" R \
     "1, %%" R "0, %%" R "12\n" OP " %%" R "1, %%" R "0, %%" R "13\n" OP " %%" R "1, %%" R "0, %%" R       \
     "14\n" OP " %%" R "1, %%" R "0, %%" R "15\n"

struct Kernel {
  const char* name;
  double macs_per_instr;       // multiply-adds one instruction does, averaged over the 12
  void (*run)(uint64_t iters);  // iters x 12 instructions
};

void vpdpbusd_zmm(uint64_t n) {
  asm volatile(
      "vpxord %%zmm0, %%zmm0, %%zmm0\n vpxord %%zmm1, %%zmm1, %%zmm1\n"
      "1:\n" QWEN35_TWELVE("vpdpbusd", "zmm") "dec %0\n jnz 1b\n"
      : "+r"(n)
      :
      : "xmm0", "xmm1", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9", "xmm10", "xmm11", "xmm12", "xmm13", "xmm14",
        "xmm15", "cc");
}
void vpdpbusd_ymm(uint64_t n) {
  asm volatile(
      "vpxord %%ymm0, %%ymm0, %%ymm0\n vpxord %%ymm1, %%ymm1, %%ymm1\n"
      "1:\n" QWEN35_TWELVE("vpdpbusd", "ymm")  /* EVEX: gas needs {vex} for AVX-VNNI */ "dec %0\n jnz 1b\n"
      : "+r"(n)
      :
      : "xmm0", "xmm1", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9", "xmm10", "xmm11", "xmm12", "xmm13", "xmm14",
        "xmm15", "cc");
}
void vfmadd_zmm(uint64_t n) {
  asm volatile(
      "vpxord %%zmm0, %%zmm0, %%zmm0\n vpxord %%zmm1, %%zmm1, %%zmm1\n"
      "1:\n" QWEN35_TWELVE("vfmadd231ps", "zmm") "dec %0\n jnz 1b\n"
      : "+r"(n)
      :
      : "xmm0", "xmm1", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9", "xmm10", "xmm11", "xmm12", "xmm13", "xmm14",
        "xmm15", "cc");
}
void vdpbf16ps_zmm(uint64_t n) {
  asm volatile(
      "vpxord %%zmm0, %%zmm0, %%zmm0\n vpxord %%zmm1, %%zmm1, %%zmm1\n"
      "1:\n" QWEN35_TWELVE("vdpbf16ps", "zmm") "dec %0\n jnz 1b\n"
      : "+r"(n)
      :
      : "xmm0", "xmm1", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9", "xmm10", "xmm11", "xmm12", "xmm13", "xmm14",
        "xmm15", "cc");
}
// The Q8_0 token-tile kernel's instruction mix for one token and block (x86_avx512/avx512_quant.cpp):
// 8 vpdpbusd with broadcast activation bytes, then the canonical float step (quant_ref.h: convert
// the integer sum, multiply the two scales, FMA into the row's sum) and the offset's shift; 12
// instructions an iteration as the others, counted as 8 multiply-add instructions (see main).
void q8_0_mix(uint64_t n) {
  alignas(64) static int32_t acts[16] = {};
  asm volatile(
      "vpxord %%zmm1, %%zmm1, %%zmm1\n vpxord %%zmm2, %%zmm2, %%zmm2\n vpxord %%zmm3, %%zmm3, %%zmm3\n"
      "1:\n"
      "vpdpbusd 0(%1)%{1to16%}, %%zmm1, %%zmm4\n vpdpbusd 4(%1)%{1to16%}, %%zmm1, %%zmm5\n"
      "vpdpbusd 8(%1)%{1to16%}, %%zmm1, %%zmm6\n vpdpbusd 12(%1)%{1to16%}, %%zmm1, %%zmm7\n"
      "vpdpbusd 16(%1)%{1to16%}, %%zmm1, %%zmm8\n vpdpbusd 20(%1)%{1to16%}, %%zmm1, %%zmm9\n"
      "vpdpbusd 24(%1)%{1to16%}, %%zmm1, %%zmm10\n vpdpbusd 28(%1)%{1to16%}, %%zmm1, %%zmm11\n"
      "vcvtdq2ps %%zmm2, %%zmm12\n vmulps 32(%1)%{1to16%}, %%zmm3, %%zmm13\n"
      "vfmadd231ps %%zmm12, %%zmm13, %%zmm14\n vpslld $7, %%zmm2, %%zmm15\n"
      "dec %0\n jnz 1b\n"
      : "+r"(n)
      : "r"(acts)
      : "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9", "xmm10", "xmm11", "xmm12", "xmm13",
        "xmm14", "xmm15", "cc", "memory");
}

// A chain of dependent adds: one a cycle, so adds per second is the clock.
void add_chain(uint64_t n) {
  uint64_t x = 0;
  asm volatile(
      "1:\n"
      "add $1, %1\n add $1, %1\n add $1, %1\n add $1, %1\n add $1, %1\n add $1, %1\n"
      "add $1, %1\n add $1, %1\n add $1, %1\n add $1, %1\n add $1, %1\n add $1, %1\n"
      "dec %0\n jnz 1b\n"
      : "+r"(n), "+r"(x)
      :
      : "cc");
}

// CPU seconds of the calling thread: rates per second of the thread's own time, so that other
// programs on a shared machine do not lower them (they share the caches, not the core's units).
double thread_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return double(ts.tv_sec) + 1e-9 * double(ts.tv_nsec);
}

// Instructions per second summed over `threads` threads running fn together for ~seconds.
double rate(void (*fn)(uint64_t), int threads, double seconds) {
  uint64_t iters = 1 << 16;  // calibrate: one thread, until a run takes a tenth of the time
  for (;;) {
    const double t0 = thread_seconds();
    fn(iters);
    if (thread_seconds() - t0 > seconds / 10) break;
    iters *= 2;
  }
  iters *= 10;
  std::atomic<int> ready{0};
  std::atomic<bool> go{false};
  std::vector<double> secs(static_cast<size_t>(threads), 0.0);
  std::vector<std::thread> ts;
  for (int t = 0; t < threads; ++t)
    ts.emplace_back([&, t] {
      ready.fetch_add(1);
      while (!go.load()) {
      }
      const double t0 = thread_seconds();
      fn(iters);
      secs[size_t(t)] = thread_seconds() - t0;
    });
  while (ready.load() < threads) {
  }
  go.store(true);
  for (std::thread& t : ts) t.join();
  double total = 0;
  for (double s : secs) total += double(iters) * 12 / s;
  return total;
}

}  // namespace

int main(int argc, char** argv) {
  int max_threads = 2;
  double seconds = 1.0;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--threads" && i + 1 < argc) {
      max_threads = std::atoi(argv[++i]);
    } else if (a == "--seconds" && i + 1 < argc) {
      seconds = std::atof(argv[++i]);
    } else {
      std::fprintf(stderr, "usage: vnni_peak [--threads N] [--seconds S]\n");
      return 2;
    }
  }
  __builtin_cpu_init();
  if (!__builtin_cpu_supports("avx512vnni") || !__builtin_cpu_supports("avx512bf16")) {
    std::fprintf(stderr, "vnni_peak: needs AVX512-VNNI and AVX512-BF16\n");
    return 1;
  }
  if (max_threads < 1 || !(seconds > 0)) {
    std::fprintf(stderr, "vnni_peak: --threads and --seconds must be positive\n");
    return 2;
  }
  const Kernel kernels[] = {{"vpdpbusd_zmm_int8", 64, vpdpbusd_zmm},
                            {"vpdpbusd_ymm_int8", 32, vpdpbusd_ymm},
                            {"vfmadd231ps_zmm_f32", 16, vfmadd_zmm},
                            {"vdpbf16ps_zmm_bf16", 32, vdpbf16ps_zmm},
                            {"q8_0_block_mix_int8", 64.0 * 8 / 12, q8_0_mix}};
  std::printf("{\n  \"ghz_per_thread\": [");
  for (int t = 1; t <= max_threads; ++t)
    std::printf("%s%.3f", t > 1 ? ", " : "", rate(add_chain, t, seconds) / t / 1e9);
  std::printf("],\n");
  for (const Kernel& k : kernels) {
    std::printf("  \"%s\": {\"instr_per_cycle_1t\": ", k.name);
    const double clock = rate(add_chain, 1, seconds);
    std::printf("%.3f, \"gops\": [", rate(k.run, 1, seconds) / clock);
    for (int t = 1; t <= max_threads; ++t)
      std::printf("%s%.1f", t > 1 ? ", " : "", rate(k.run, t, seconds) * k.macs_per_instr * 2 / 1e9);
    std::printf("]}%s\n", &k == &kernels[std::size(kernels) - 1] ? "" : ",");
  }
  std::printf("}\n");
  return 0;
}
