// The delta rule on 16 fp32 lanes: AVX-512 instantiations of kernels/simd/delta_rule_simd.h.
#include "kernels/x86_avx512/vec_avx512.h"
#include "kernels/simd/delta_rule_simd.h"

namespace qwen35::kernels {

void install_avx512_delta(KernelTable& k) {
  k.delta_recurrent = delta_recurrent_simd<VecAvx512>;
  k.delta_chunk = delta_chunk_simd<VecAvx512>;
}

}  // namespace qwen35::kernels
