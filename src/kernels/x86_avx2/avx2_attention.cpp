// Attention over a KV cache on 8 fp32 lanes: instantiations of kernels/simd/attention_simd.h.
#include "kernels/x86_avx2/vec_avx2.h"
#include "kernels/simd/attention_simd.h"

namespace qwen35::kernels {
namespace ref {
void attention(const AttnArgs& a);  // ref/attention.cpp: reports KV dtypes no kernel reads
}

namespace {

void attention_avx2(const AttnArgs& a) {
  if (a.kv_dtype == DType::F32) return attention_rows<VecAvx2, false>(a);
  if (a.kv_dtype == DType::F16) return attention_rows<VecAvx2, true>(a);
  ref::attention(a);
}

}  // namespace

void install_avx2_attention(KernelTable& k) { k.attention = attention_avx2; }

}  // namespace qwen35::kernels
