// The scale searches behind ggml's K-quant and IQ4 reference quantizers (ggml-quants.c:
// make_qx_quants, make_q3_quants, make_qkx2_quants and the IQ4_NL scale scan), in the
// imatrix-less forms llama-quantize runs.
//
// Matching ggml byte for byte means doing the same float operations in the same order: every
// accumulation here is sequential over the elements, products are formed left to right as ggml
// writes them ((w * x) * l, not w * (x * l)), and rounding is ggml's 1.5 * 2^23 trick. The
// "_ref" functions are the literal one-candidate-at-a-time searches (the oracle); the ISA
// variants evaluate the candidate scales side by side, one vector lane per candidate, which
// reorders no float operation and so returns the same bits (tests/kernels/scale_search_test.cpp
// holds every variant the CPU supports to that on random inputs). The quantizers call the batch
// functions, which use the active variant.
#pragma once

#include <cstdint>
#include <cstring>
#include <string_view>
#include <vector>

namespace qwen35::kernels::quant {

// ggml's nearest_int: adding 1.5 * 2^23 leaves the integer part of x, rounded to nearest with
// ties to even, in the low mantissa bits. Exact for |x| < 2^22; beyond that it returns the same
// garbage ggml gets, which keeps even out-of-range inputs byte-compatible.
inline int round_nearest(float x) {
  const float biased = x + 12582912.0f;
  int32_t bits;
  std::memcpy(&bits, &biased, sizeof bits);
  return (bits & 0x007fffff) - 0x00400000;
}

// Below this magnitude a group counts as all zero (ggml's GROUP_MAX_EPS).
inline constexpr float kGroupMaxEps = 1e-15f;

// Symmetric fit with weights x^2 (make_qx_quants, rmse_type 1, no imatrix): picks the scale s
// such that x ~ s * (L - nmax) with L in [0, 2 nmax), trying the reciprocal scales
// -(nmax + k/10) / max for k = -9..9 (max = the element of largest magnitude) and keeping the
// one that maximises (sum w x l)^2 / sum w l^2. Writes L, returns s (0 for an all-zero group).
float fit_signed_scale_ref(int n, int nmax, const float* x, int8_t* L);

// Symmetric fit refined element by element (make_q3_quants with do_rmse): starts from the
// reciprocal scale -nmax / max and moves single quants while that improves the weighted fit,
// at most five sweeps. Writes L in [0, 2 nmax), returns the scale.
float fit_signed_scale_refined(int n, int nmax, const float* x, int8_t* L);

// The grid of an affine search: reciprocal scales (rmin + rdelta * k + nmax) / (max - min) for
// k = 0..nstep.
struct AffineGrid {
  int nmax;
  float rmin, rdelta;
  int nstep;
  bool abs_error;  // minimise sum w |err| (Q2_K) instead of sum w err^2
};
struct AffineFit {
  float scale;
  float neg_min;  // the subtracted minimum, >= 0: x ~ scale * L - neg_min
};
// Affine fit x ~ scale * L - neg_min with L in [0, nmax] (make_qkx2_quants): the plain min/max
// fit, then a weighted least-squares fit for every reciprocal scale on the grid, keeping the
// lowest weighted error. A better fit moves the minimum, which changes the later candidates,
// so the candidates are evaluated in grid order. Writes L.
AffineFit fit_scale_and_min_ref(int n, const float* x, const float* w, const AffineGrid& grid, uint8_t* L);

// IQ4_NL code book search: the index of the entry of kIQ4Values nearest to x, ties to the
// upper entry (ggml's best_index_int8, including its float comparison of the two distances).
int iq4_nearest_index(float x);

// The IQ4 sub-block scale scan (quantize_row_iq4_nl_impl without an imatrix, weights x^2):
// a first fit from the reciprocal of d = max / 127, then the reciprocal scales
// (k + values[0]) / max for k = -ntry..ntry, keeping the one that maximises
// (sum w q x)^2 / sum w q^2. Returns the sub-block scale (0 below kGroupMaxEps).
float fit_iq4_scale_ref(int n, const float* x, int ntry);

// Batches: `groups` consecutive groups of n <= 32 elements (group j at x + j * n, its weights at
// w + j * n, its quants at L + j * n, its result at [j]), each fitted exactly as the single-group
// function does. One call covers a super-block's sub-blocks, or a run of IQ4_NL blocks.
void fit_signed_scales(int groups, int n, int nmax, const float* x, int8_t* L, float* scales);
void fit_scales_and_mins(int groups, int n, const float* x, const float* w, const AffineGrid& grid, uint8_t* L,
                         AffineFit* fits);
void fit_iq4_scales(int groups, int n, const float* x, int ntry, float* scales);

// One implementation of the batches. "ref" loops over the one-candidate-at-a-time searches
// (the oracle); the ISA ones put one candidate in each vector lane (scale_search_lanes.h) and
// return the same bits.
struct ScaleSearchTable {
  std::string_view name;
  void (*fit_signed_scales)(int groups, int n, int nmax, const float* x, int8_t* L, float* scales);
  void (*fit_scales_and_mins)(int groups, int n, const float* x, const float* w, const AffineGrid& grid, uint8_t* L,
                              AffineFit* fits);
  void (*fit_iq4_scales)(int groups, int n, const float* x, int ntry, float* scales);
};
// The implementations this CPU can run, ref first.
std::vector<const ScaleSearchTable*> supported_scale_searches();
// The one the batch functions use: the active kernel table's ISA (QWEN35_ISA applies).
const ScaleSearchTable& active_scale_search();

}  // namespace qwen35::kernels::quant
