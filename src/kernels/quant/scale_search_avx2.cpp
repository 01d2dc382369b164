// The scale searches with 8 candidates per vector (scale_search_lanes.h), built with the
// avx2 flags and -ffp-contract=off (src/kernels/CMakeLists.txt).
#include "kernels/quant/scale_search_lanes.h"

namespace qwen35::kernels::quant {

const ScaleSearchTable& avx2_scale_search_unchecked() {
  static const ScaleSearchTable table{"avx2", lanes::fit_signed_scales<8>, lanes::fit_scales_and_mins<8>,
                                      lanes::fit_iq4_scales<8>};
  return table;
}

}  // namespace qwen35::kernels::quant
