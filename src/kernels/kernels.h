// The kernel table: every hot loop of the engine behind one struct of function pointers.
// One table per ISA; `ref` is plain scalar C++ and is the oracle every other table is tested
// against. Tables are chosen once from the CPU's features (QWEN35_ISA=ref|avx2|avxvnni|avx512|amx overrides).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/dtype.h"
#include "kernels/quant/act_format.h"

namespace qwen35::kernels {

// A weight matrix in HF orientation [rows = out features, cols = in features], any storage dtype.
// layout 0: plain rows, row_bytes apart (safetensors rows, GGUF block rows). Otherwise the rows are
// repacked for the table whose PackedFormat has that layout id: groups of `group_rows` rows,
// group_bytes apart (row() is then meaningless).
struct WeightMatrix {
  DType dtype = DType::F32;
  const void* data = nullptr;
  int64_t rows = 0;
  int64_t cols = 0;
  size_t row_bytes = 0;  // bytes between consecutive rows (plain layout)
  uint8_t layout = 0;
  size_t group_bytes = 0;  // bytes between consecutive row groups (packed layouts)

  const uint8_t* row(int64_t r) const { return static_cast<const uint8_t*>(data) + size_t(r) * row_bytes; }
  // Bytes the matrix occupies: rows of row_bytes, or whole 16-row groups in a packed layout.
  size_t bytes() const { return layout != 0 ? group_bytes * size_t((rows + 15) / 16) : row_bytes * size_t(rows); }
};

// y[t, o] = sum_i x[t, i] * W[o, i] for t < T and o in [o_begin, o_end).
// x rows are x_stride floats apart; y rows y_stride floats apart (y points at column 0).
using MatmulFn = void (*)(const float* x, int64_t T, int64_t x_stride, const WeightMatrix& w, int64_t o_begin,
                          int64_t o_end, float* y, int64_t y_stride);
// Converts n elements of one row of a weight (starting at element 0 of `row`) to f32.
using RowToF32Fn = void (*)(DType dtype, const void* row, float* out, int64_t n);
using DotFn = float (*)(const float* a, const float* b, int64_t n);
// Elementwise activations, y[i] = f(x[i]) (y may alias x). Every element is computed by the same
// code whatever its index (vector tails are masked, not scalar), so a value's result never depends
// on where in a row or block it sits.
using UnaryFn = void (*)(const float* x, float* y, int64_t n);
// Reads n bytes (n a multiple of 256) as fast as the core can and returns a checksum of them: the
// machine's read bandwidth, measured the way the matmuls read weights (qwen35 bench).
using StreamReadFn = uint64_t (*)(const void* p, size_t n);
// y[i] = silu(g[i]) * u[i] (the SwiGLU product; y may alias g or u).
using SwigluFn = void (*)(const float* g, const float* u, float* y, int64_t n);
// y[i] += a * x[i]
using AxpyFn = void (*)(float a, const float* x, float* y, int64_t n);
// One row of n values (the vision tower's LayerNorm): y = (x - mean) * r * w + b with
// r = 1 / sqrt(var + eps), the biased variance of x - mean; mean and variance are summed in
// double, the rest in float as written. y may alias x. A row's result depends on its values alone.
using LayerNormFn = void (*)(const float* x, const float* w, const float* b, double eps, float* y, int64_t n);

// ---- Row operations of the decoder and the vision tower ------------------------------------------
// Elementwise steps and the norms between the matmuls. Each works on one row (or one token's heads)
// and computes every element the same way wherever it sits; the sums of squares run left to right
// in float in every table, as the reference does, so a norm's bits do not depend on the table.

// y = x / sqrt(mean(x^2) + eps) * w (w holds 1 + weight for the decoder's norms). y may alias x.
using RmsNormFn = void (*)(const float* x, const float* w, float eps, float* y, int64_t n);
// y = (x / sqrt(mean(x^2) + eps) * w) * silu(z): the DeltaNet output's gated norm. y may alias x.
using GatedRmsNormFn = void (*)(const float* x, const float* w, const float* z, float eps, float* y, int64_t n);
// y = x / sqrt(sum(x^2) + eps) * scale: the DeltaNet q and k norm. y may alias x.
using L2NormFn = void (*)(const float* x, float scale, float eps, float* y, int64_t n);
// y[i] += x[i] (the residual adds).
using AddFn = void (*)(const float* x, float* y, int64_t n);
// y[i] *= sigmoid(g[i]) (the attention output gate).
using SigmoidGateFn = void (*)(const float* g, float* y, int64_t n);
// The DeltaNet decay gates of one token, g[h] = neg_a[h] * softplus(g[h] + dt_bias[h]), softplus
// as torch's (linear above 20).
using DecayGateFn = void (*)(const float* neg_a, const float* dt_bias, float* g, int64_t n);
// Rotate-half RoPE in place on `heads` vectors, head_stride floats apart: the pairs (d, d + half)
// for d < half turn by the angle whose cosine and sine are cos[d], sin[d].
using RopeFn = void (*)(float* x, int64_t heads, int64_t head_stride, int half, const float* cos, const float* sin);

// The DeltaNet's causal depthwise conv and SiLU (spec 3.5) over channels [c0, c1) of T new rows.
// The state keeps each channel's last K inputs, oldest first, and is advanced by the T rows. Every
// output is its K taps summed in tap order from zero, whatever T, so decoding token by token gives
// the bits of the block.
struct ConvArgs {
  const float* x = nullptr;  // [T, C] new inputs
  int64_t T = 0;
  int64_t C = 0;       // channels: the row stride of x, y and taps
  int K = 0;           // taps, at most 16
  const float* taps = nullptr;  // tap j of channel ch at taps[j * C + ch]
  float* state = nullptr;  // [C, K]
  float* y = nullptr;  // [T, C] outputs, after SiLU
  int64_t c0 = 0, c1 = 0;
};
using CausalConvFn = void (*)(const ConvArgs& a);

// One value head of the gated delta rule (spec 4). q and k are l2-normalised (q also scaled by
// 1/sqrt(dk)); row t of each input sits `*_stride` floats after row t-1. S is [dk, dv], fp32.
struct DeltaRuleHead {
  const float* q;
  const float* k;
  int64_t qk_stride;
  const float* v;
  int64_t v_stride;
  const float* beta;  // [T], stride gate_stride
  const float* g;     // [T] log-decay (<= 0), stride gate_stride
  int64_t gate_stride;
  float* o;  // [T, dv] output rows
  int64_t o_stride;
};

// Token by token: S <- e^g S; u = S^T k; S += k (beta (v - u))^T; o = S^T q.
using DeltaRecurrentFn = void (*)(const DeltaRuleHead& h, int64_t T, int dk, int dv, float* S);
// One chunk of n <= kDeltaChunk tokens in the chunkwise-parallel (WY) form; `work` holds
// delta_chunk_work_floats(dk, dv) floats.
using DeltaChunkFn = void (*)(const DeltaRuleHead& h, int64_t n, int dk, int dv, float* S, float* work);
constexpr int64_t kDeltaChunk = 64;
// Enough for every table; the 16 spare floats let a table align its buffers to 64 bytes.
inline size_t delta_chunk_work_floats(int dk, int dv) {
  const size_t C = size_t(kDeltaChunk);
  return 3 * C * C + C + C * size_t(dk) + 2 * C * size_t(dv) + 16;
}

// Softmax attention of a block of query tokens against one KV head (spec 3.6, GQA): the `group`
// query heads that share the KV head read each key and value row once. Query row (t, g), token
// t < n_q of the block and head g < group, sees keys 0 .. n_kv0 + t - 1 when causal (all n_kv0
// keys otherwise) and gets o = softmax(scale * q K^T) V, in fp32. Every row is computed the same
// way whatever n_q, its place in the block and the thread count (prompt lookup decoding verifies
// a draft as one block and must equal one-token decoding).
struct AttnArgs {
  const float* q;  // row (t, g) at q + t * q_stride + g * head_dim
  int64_t q_stride;
  float* o;  // row (t, g) at o + t * o_stride + g * head_dim
  int64_t o_stride;
  const void* k;  // key of position j: head_dim elements of kv_dtype at k + j * kv_stride elements
  const void* v;  // value of position j, likewise
  int64_t kv_stride;
  DType kv_dtype = DType::F32;  // F32 or F16
  int64_t n_q = 0;
  int group = 1;
  int head_dim = 0;
  int64_t n_kv0 = 0;
  bool causal = true;
  float scale = 1.0f;
};
using AttentionFn = void (*)(const AttnArgs& a);

// Block-format weights against quantized activations (a.fmt == act_format_for(w.dtype)):
// y[t, o] = the canonical dot (kernels/quant/quant_ref.h) of weight row o with activation row t,
// for t < a.T and o in [o_begin, o_end). For packed weights o_begin is a multiple of group_rows.
using QMatmulFn = void (*)(const ActRows& a, const WeightMatrix& w, int64_t o_begin, int64_t o_end, float* y,
                           int64_t y_stride);
// Quantizes T rows of n floats (x rows x_stride apart) into act_layout(fmt, n).row_bytes rows.
using QuantizeActFn = void (*)(ActFormat fmt, const float* x, int64_t T, int64_t x_stride, int64_t n, uint8_t* out);

// How a table stores the block-format weights its kernels read. Tables with the same layout id
// read the same bytes (so one packed copy serves e.g. AVX-512 decode and AMX prefill).
struct PackedFormat {
  uint8_t layout = 0;      // 0: the table reads plain rows of every dtype
  int64_t group_rows = 1;  // rows per packed group
  // Bytes per packed group of `cols` columns of `dtype`; 0: this dtype stays in plain rows.
  size_t (*group_bytes)(DType dtype, int64_t cols) = nullptr;
  // Packs groups [g0, g1) of the plain matrix into dst (group g at dst + g * group_bytes); rows
  // past the end of the matrix are packed as zeros.
  void (*pack)(const WeightMatrix& plain, int64_t g0, int64_t g1, uint8_t* dst) = nullptr;
  // Dequantizes row r of a packed matrix to f32 (ggml's dequantized values).
  void (*row_to_f32)(const WeightMatrix& packed, int64_t r, float* out) = nullptr;
};

struct KernelTable {
  std::string_view name;
  MatmulFn matmul[size_t(DType::kCount)] = {};  // nullptr: dtype not handled by this table
  QMatmulFn qmatmul[size_t(DType::kCount)] = {};
  QuantizeActFn quantize_act = nullptr;
  // The block kernels read token tiles (ActRows::tiles) where they exist: Activations makes them
  // for blocks of kActTile tokens or more.
  bool act_tiles = false;
  PackedFormat packing;
  RowToF32Fn row_to_f32 = nullptr;
  DotFn dot = nullptr;
  AxpyFn axpy = nullptr;
  UnaryFn silu = nullptr;     // x * sigmoid(x)
  UnaryFn sigmoid = nullptr;  // 1 / (1 + e^-x)
  SwigluFn swiglu = nullptr;
  // torch's gelu_pytorch_tanh, 0.5 x (1 + tanh(u)) with u = sqrt(2/pi) (x + 0.044715 x^3), computed
  // as the equal x / (1 + e^(-2u)), which keeps its accuracy where 1 + tanh(u) cancels.
  UnaryFn gelu_tanh = nullptr;
  LayerNormFn layer_norm = nullptr;
  // The vision merger's exact GELU, 0.5 x (1 + erf(x / sqrt(2))): std::erf in every table (a
  // vector erf would change its bits; it runs once per image).
  UnaryFn gelu_erf = nullptr;
  RmsNormFn rms_norm = nullptr;
  GatedRmsNormFn gated_rms_norm = nullptr;
  L2NormFn l2_norm = nullptr;
  AddFn add = nullptr;
  SigmoidGateFn sigmoid_gate = nullptr;
  DecayGateFn decay_gate = nullptr;
  RopeFn rope = nullptr;
  CausalConvFn causal_conv = nullptr;
  StreamReadFn stream_read = nullptr;
  DeltaRecurrentFn delta_recurrent = nullptr;
  DeltaChunkFn delta_chunk = nullptr;
  AttentionFn attention = nullptr;
};

const KernelTable& ref_table();
// Tables this CPU can run, ref first.
std::vector<const KernelTable*> supported_tables();
// The table used by the engine: the best supported one, or QWEN35_ISA's choice.
const KernelTable& active_table();
// One line on that table and why it runs here: the CPU, how the choice was made, the routes and
// the prefetch tuned for this microarchitecture (kernels/cpu_tuning.h), for `qwen35 info` / `serve`.
std::string active_table_reason();

}  // namespace qwen35::kernels
