// The operations of the Vulkan backend: the kernel table's row operations, matrices and mixers
// (kernels/kernels.h) on device-resident tensors, each recorded into a Pass. A tensor is a device
// address (Buffer::address(offset), a multiple of 4) and the shape the call gives; strides are in
// elements. Every output row is computed the same way whatever the number of rows or tokens in the
// call and wherever it sits, as on the CPU.
//
// Exactness against the CPU reference (tests/kernels/vulkan_*):
//  * quantize_act gives the reference's int8 quants and scales, and qmatmul its bits: the integer
//    sums are exact and the two float steps per block run in block order (on devices whose fma is
//    fused and whose division is correctly rounded, lavapipe among them);
//  * dequant_rows gives ggml's values exactly;
//  * the float operations match within the CPU tables' tolerances (sums meet in a fixed tree, and
//    e^x is the device's).
#pragma once

#include <vulkan/vulkan.h>

#include <cstddef>
#include <cstdint>

#include "core/dtype.h"
#include "kernels/quant/act_format.h"
#include "kernels/vulkan/pass.h"

namespace qwen35::vk {

using Addr = VkDeviceAddress;
using kernels::act_block;
using kernels::ActFormat;

// A weight matrix on the device in HF orientation [rows = out, cols = in]: plain rows of row_bytes,
// block formats as GGUF stores them.
struct DeviceMatrix {
  DType dtype = DType::F32;
  Addr data = 0;
  int64_t rows = 0, cols = 0;
  size_t row_bytes = 0;
};

// Whether the backend has a matmul for a weight dtype (qmatmul for block formats, matmul for floats).
bool has_matmul(DType dtype);

// ---- matrices ---------------------------------------------------------------------------------
// Quantized activations on the device: q [T, n] int8 (4 per word), d [T, n / act_block(fmt)] f32.
inline size_t act_q_bytes(int64_t T, int64_t n) { return size_t(T) * size_t(n); }
inline size_t act_d_bytes(ActFormat fmt, int64_t T, int64_t n) { return size_t(T) * size_t(n / act_block(fmt)) * 4; }
void quantize_act(Pass& p, ActFormat fmt, Addr x, int64_t T, int64_t x_stride, int64_t n, Addr q, Addr d);
// y[t, o] = the canonical dot of row o of a block-format w with activation row t (fmt act_format_for(w.dtype)).
void qmatmul(Pass& p, const DeviceMatrix& w, Addr q, Addr d, int64_t T, Addr y, int64_t y_stride);
// y[t, o] = x[t] . W[o] for f32, f16 and bf16 weights (rows of up to 256 columns are summed in
// order by one thread, longer ones in a fixed tree: the form depends on the matrix alone).
void matmul(Pass& p, const DeviceMatrix& w, Addr x, int64_t T, int64_t x_stride, Addr y, int64_t y_stride);
// Rows row_ids[r] (uint32) of w (a block format, or f32/f16/bf16 rows) as f32 into y + r * w.cols:
// the embedding lookup.
void dequant_rows(Pass& p, const DeviceMatrix& w, Addr row_ids, int64_t n_rows, Addr y);

// y (f16, 2 per word) = x (f32) rounded to nearest even, as core/half.h's f32_to_f16; n even (the
// f16 KV cache's append).
void to_f16(Pass& p, Addr x, Addr y, int64_t n);

// ---- norms, one row of n each -----------------------------------------------------------------
void rms_norm(Pass& p, Addr x, int64_t x_stride, Addr w, float eps, Addr y, int64_t y_stride, int64_t n, int64_t rows);
void gated_rms_norm(Pass& p, Addr x, int64_t x_stride, Addr w, Addr z, int64_t z_stride, float eps, Addr y,
                    int64_t y_stride, int64_t n, int64_t rows);
void l2_norm(Pass& p, Addr x, int64_t x_stride, float scale, float eps, Addr y, int64_t y_stride, int64_t n,
             int64_t rows);

// ---- elementwise over n values ----------------------------------------------------------------
void add(Pass& p, Addr x, Addr y, int64_t n);              // y += x
void axpy(Pass& p, float a, Addr x, Addr y, int64_t n);    // y += a x
void swiglu(Pass& p, Addr g, Addr u, Addr y, int64_t n);   // y = silu(g) u
void silu(Pass& p, Addr x, Addr y, int64_t n);
void sigmoid(Pass& p, Addr x, Addr y, int64_t n);
void sigmoid_gate(Pass& p, Addr g, Addr y, int64_t n);     // y *= sigmoid(g)
void decay_gate(Pass& p, Addr neg_a, Addr dt_bias, Addr g, int64_t n);  // g = neg_a softplus(g + dt_bias)

// ---- positions and mixers ---------------------------------------------------------------------
// Rotate-half RoPE of T tokens: head h of token t at x + t * token_stride + h * head_stride; token
// t's angles at cos/sin + t * cs_stride (half values each).
struct RopeArgs {
  Addr x = 0, cos = 0, sin = 0;
  int64_t T = 1, heads = 0, head_stride = 0, token_stride = 0, cs_stride = 0;
  int half = 0;
};
void rope(Pass& p, const RopeArgs& a);

// The DeltaNet conv + SiLU of T rows over all C channels (kernels::ConvArgs with c0 = 0, c1 = C).
struct ConvDeviceArgs {
  Addr x = 0, taps = 0, state = 0, y = 0;
  int64_t T = 0, C = 0;
  int K = 0;
};
void causal_conv(Pass& p, const ConvDeviceArgs& a);

// The recurrent delta rule over T tokens for every value head (kernels::DeltaRecurrentFn per head).
struct DeltaDeviceArgs {
  Addr q = 0, k = 0, v = 0, beta = 0, g = 0, S = 0, o = 0;
  int64_t T = 0, Hv = 0, Hk = 0;
  int dk = 0, dv = 0;
  int64_t qk_stride = 0, v_stride = 0, gate_stride = 0, o_stride = 0;
  bool tiled = false;  // value head h reads key head h % Hk (GGUF), else h / (Hv / Hk)
};
void delta_recurrent(Pass& p, const DeltaDeviceArgs& a);
// The same in the chunkwise-parallel form (chunks of kernels::kDeltaChunk tokens, the reference's
// delta_chunk over each): `work` holds a.Hv * delta_chunk_work_floats(dk, dv) floats.
void delta_chunk(Pass& p, const DeltaDeviceArgs& a, Addr work);
size_t delta_chunk_work_floats(int dk, int dv);

// Softmax attention of n_q query tokens over every KV head of a cache (kernels::AttnArgs for all
// heads): query head kh * group + g reads KV head kh.
struct AttnDeviceArgs {
  Addr q = 0, o = 0, k = 0, v = 0;
  int64_t q_stride = 0, o_stride = 0, kv_stride = 0;  // elements
  DType kv_dtype = DType::F16;
  int64_t n_q = 0, n_kv0 = 0;
  int kv_heads = 1, group = 1, head_dim = 0;
  bool causal = true;
  float scale = 1.0f;
};
void attention(Pass& p, const AttnDeviceArgs& a);

}  // namespace qwen35::vk
