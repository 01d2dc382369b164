// IQ4_NL and IQ4_XS: indices into the fixed non-linear code book kIQ4Values, as ggml's
// quantize_iq4_nl / quantize_iq4_xs make them without an importance matrix (7 scale tries each
// side; llama-quantize calls these, not the "_ref" row functions, which try none).
#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/half.h"
#include "kernels/quant/blocks.h"
#include "kernels/quant/quantize_formats.h"
#include "kernels/quant/scale_search.h"

namespace qwen35::kernels::quant {
namespace {

constexpr int kScaleTries = 7;

// Element j in the low nibble of byte j, element j + 16 in the high nibble.
void pack_indices32(const float* x, float inv_scale, uint8_t* qs) {
  for (int j = 0; j < 16; ++j)
    qs[j] = uint8_t(iq4_nearest_index(inv_scale * x[j]) | (iq4_nearest_index(inv_scale * x[j + 16]) << 4));
}

}  // namespace

void quantize_iq4_nl(const float* x, void* out, int64_t nblocks) {
  auto* y = static_cast<BlockIQ4_NL*>(out);
  // Each block has its own scale; fit them a batch of blocks at a time.
  constexpr int64_t kBatch = 64;
  float scale[kBatch];
  for (int64_t b0 = 0; b0 < nblocks; b0 += kBatch) {
    const int64_t count = std::min(kBatch, nblocks - b0);
    fit_iq4_scales(int(count), kQK, x + b0 * kQK, kScaleTries, scale);
    for (int64_t b = 0; b < count; ++b) {
      // The indices come from the f32 scale; only the stored scale is rounded to f16.
      const float d = scale[b];
      y[b0 + b].d = f32_to_f16(d);
      pack_indices32(x + (b0 + b) * kQK, d != 0 ? 1 / d : 0.0f, y[b0 + b].qs);
    }
  }
}

void quantize_iq4_xs(const float* x, void* out, int64_t nblocks) {
  auto* y = static_cast<BlockIQ4_XS*>(out);
  float scale[8];
  for (int64_t b = 0; b < nblocks; ++b, x += kQK_K) {
    fit_iq4_scales(8, 32, x, kScaleTries, scale);
    float max_scale = 0, max_abs = 0;
    for (int s = 0; s < 8; ++s) {
      if (std::fabs(scale[s]) > max_abs) {
        max_abs = std::fabs(scale[s]);
        max_scale = scale[s];
      }
    }
    // 6-bit signed sub-block scales (offset 32) against d = max_scale / -32. An all-zero block
    // stores d = -0 (0x8000), as ggml does.
    const float d = -max_scale / 32;
    const float id = d != 0 ? 1 / d : 0.0f;
    y[b].d = f32_to_f16(d);
    y[b].scales_h = 0;
    for (int s = 0; s < 8; ++s) {
      const int l = std::max(-32, std::min(31, round_nearest(id * scale[s])));
      const float dl = d * float(l);
      pack_indices32(x + 32 * s, dl != 0 ? 1 / dl : 0.0f, y[b].qs + 16 * s);
      const int biased = l + 32;
      if (s % 2 == 0)
        y[b].scales_l[s / 2] = uint8_t(biased & 15);
      else
        y[b].scales_l[s / 2] |= uint8_t((biased & 15) << 4);
      y[b].scales_h = uint16_t(y[b].scales_h | ((biased >> 4) << (2 * s)));
    }
  }
}

}  // namespace qwen35::kernels::quant
