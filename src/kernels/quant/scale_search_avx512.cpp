// The scale searches with 8 candidates per vector (16 for IQ4, whose code book search costs
// more per lane than a restarted chunk wastes), scale_search_lanes.h, built with the avx512 flags
// and -ffp-contract=off (src/kernels/CMakeLists.txt).
#include "kernels/quant/scale_search_lanes.h"

namespace qwen35::kernels::quant {

const ScaleSearchTable& avx512_scale_search_unchecked() {
  static const ScaleSearchTable table{"avx512", lanes::fit_signed_scales<8>, lanes::fit_scales_and_mins<8>,
                                      lanes::fit_iq4_scales<16>};
  return table;
}

}  // namespace qwen35::kernels::quant
