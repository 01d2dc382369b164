// The scale searches with 16 candidates per vector (scale_search_lanes.h), built with the
// avx512 flags and -ffp-contract=off (src/kernels/CMakeLists.txt).
#include "kernels/quant/scale_search_lanes.h"

namespace qwen35::kernels::quant {

const ScaleSearchTable& avx512_scale_search_unchecked() {
  static const ScaleSearchTable table{"avx512", lanes::fit_signed_scale<16>, lanes::fit_scale_and_min<16>,
                                      lanes::fit_iq4_scale<16>};
  return table;
}

}  // namespace qwen35::kernels::quant
