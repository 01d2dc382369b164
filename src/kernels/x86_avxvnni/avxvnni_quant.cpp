// The avxvnni table: the avx2 table with the block-format matmuls of avx2_quant.h on the 256-bit
// VEX vpdpbusd / vpdpwssd (AVX-VNNI: Alder Lake and later client cores, Zen 4 and later). Compiled
// with the AVX2 flags and -mavxvnni; only reached after a CPU check.
#include "kernels/x86_avx2/avx2_quant.h"

namespace qwen35::kernels {
namespace {

KernelTable make_avxvnni(const KernelTable& avx2) {
  KernelTable k = avx2;  // interleave16 packing, activation quantization and every other kernel
  k.name = "avxvnni";
  avx2q::install_qmatmuls<true>(k);
  return k;
}

}  // namespace

// Only called by dispatch.cpp after the CPU check; `avx2` is the table it extends.
const KernelTable& avxvnni_table_unchecked(const KernelTable& avx2) {
  static const KernelTable table = make_avxvnni(avx2);
  return table;
}

}  // namespace qwen35::kernels
