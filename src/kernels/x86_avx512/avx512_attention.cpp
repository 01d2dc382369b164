// Attention over a KV cache on 16 fp32 lanes: instantiations of kernels/simd/attention_simd.h.
#include "kernels/x86_avx512/vec_avx512.h"
#include "kernels/simd/attention_simd.h"

namespace qwen35::kernels {
namespace ref {
void attention(const AttnArgs& a);  // ref/attention.cpp: reports KV dtypes no kernel reads
}

namespace {

void attention_avx512(const AttnArgs& a) {
  if (a.kv_dtype == DType::F32) return attention_rows<VecAvx512, false>(a);
  if (a.kv_dtype == DType::F16) return attention_rows<VecAvx512, true>(a);
  ref::attention(a);
}

}  // namespace

void install_avx512_attention(KernelTable& k) { k.attention = attention_avx512; }

}  // namespace qwen35::kernels
