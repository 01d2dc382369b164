// The delta rule on 8 fp32 lanes: AVX2 + FMA instantiations of kernels/simd/delta_rule_simd.h.
#include "kernels/x86_avx2/vec_avx2.h"
#include "kernels/simd/delta_rule_simd.h"

namespace qwen35::kernels {

void install_avx2_delta(KernelTable& k) {
  k.delta_recurrent = delta_recurrent_simd<VecAvx2>;
  k.delta_chunk = delta_chunk_simd<VecAvx2>;
}

}  // namespace qwen35::kernels
