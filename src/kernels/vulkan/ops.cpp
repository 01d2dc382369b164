#include "kernels/vulkan/ops.h"

#include <string>

#include "core/error.h"
#include "kernels/kernels.h"
#include "kernels/vulkan/device.h"

namespace qwen35::vk {
namespace {

// The push-constant blocks, member for member as the shaders declare them (std430: addresses
// first, then 32-bit values).
struct QMatmulParams {
  Addr w, aq, ad, y;
  uint32_t rows, cols, row_bytes, T, y_stride;
};
struct MatmulParams {
  Addr w, x, y;
  uint32_t rows, cols, row_bytes, T, x_stride, y_stride;
};
struct DequantParams {
  Addr w, row_index, y;
  uint32_t n, row_bytes, n_rows;
};
struct QuantizeParams {
  Addr x, q, d;
  uint32_t n, T, x_stride;
};
struct NormParams {
  Addr x, w, z, y;
  uint32_t n, rows, x_stride, z_stride, y_stride, mode;
  float eps, scale;
};
struct ElementwiseParams {
  Addr a, b, y;
  uint32_t n, op;
  float scale;
};
struct ToF16Params {
  Addr x, y;
  uint32_t pairs;
};
struct RopeParams {
  Addr x, cos, sin;
  uint32_t T, heads, head_stride, token_stride, half_dim, cs_stride;
};
struct ConvParams {
  Addr x, taps, state, y;
  uint32_t T, C, K;
};
struct DeltaParams {
  Addr q, k, v, beta, g, S, o;
  uint32_t T, Hv, Hk, dk, dv, qk_stride, v_stride, gate_stride, o_stride, tiled;
};
struct DeltaChunkParams {
  Addr q, k, v, beta, g, S, o, work;
  uint32_t T, Hv, Hk, dk, dv, qk_stride, v_stride, gate_stride, o_stride, tiled, work_stride;
};
struct AttnParams {
  Addr q, o, k, v;
  uint32_t q_stride, o_stride, kv_stride, n_q, group, head_dim, n_kv0, causal, kv_f16;
  float scale;
};

constexpr int64_t kShortRow = 256;  // float matmul rows up to this many columns: one thread each

uint32_t u32(int64_t v, const char* what) {
  if (v < 0 || v > int64_t(UINT32_MAX)) fail("vulkan: ", what, " = ", v, " is out of range");
  return uint32_t(v);
}

void aligned(Addr a, const char* what) {
  if (a % 4) fail("vulkan: ", what, " is not 4-byte aligned");
}

const char* block_suffix(DType d) {
  switch (d) {
    case DType::Q8_0: return "q8_0";
    case DType::Q4_0: return "q4_0";
    case DType::Q4_K: return "q4_k";
    case DType::Q5_K: return "q5_k";
    case DType::Q6_K: return "q6_k";
    case DType::IQ4_XS: return "iq4_xs";
    default: return nullptr;
  }
}

const char* float_suffix(DType d) {
  switch (d) {
    case DType::F32: return "f32";
    case DType::F16: return "f16";
    case DType::BF16: return "bf16";
    default: return nullptr;
  }
}

void elementwise(Pass& p, uint32_t op, Addr a, Addr b, Addr y, int64_t n, float scale = 0) {
  const ElementwiseParams e{a, b, y, u32(n, "n"), op, scale};
  const Grid g = grid_for(uint64_t(n), 256);
  p.dispatch("elementwise", e, g.x, g.y);
}

void norm(Pass& p, uint32_t mode, Addr x, int64_t x_stride, Addr w, Addr z, int64_t z_stride, float eps, float scale,
          Addr y, int64_t y_stride, int64_t n, int64_t rows) {
  const NormParams np{x, w, z, y, u32(n, "n"), u32(rows, "rows"), u32(x_stride, "x_stride"), u32(z_stride, "z_stride"),
                      u32(y_stride, "y_stride"), mode, eps, scale};
  const Grid g = grid_for(uint64_t(rows), 1);
  p.dispatch("norm", np, g.x, g.y);
}

}  // namespace

bool has_matmul(DType dtype) { return block_suffix(dtype) || float_suffix(dtype); }

void quantize_act(Pass& p, ActFormat fmt, Addr x, int64_t T, int64_t x_stride, int64_t n, Addr q, Addr d) {
  if (fmt == ActFormat::kF32) fail("vulkan: quantize_act needs an int8 format");
  if (n % act_block(fmt)) fail("vulkan: quantize_act: ", n, " values are not whole blocks of ", act_block(fmt));
  const QuantizeParams qp{x, q, d, u32(n, "n"), u32(T, "T"), u32(x_stride, "x_stride")};
  const Grid g = grid_for(uint64_t(n / act_block(fmt)), 1);
  p.dispatch(fmt == ActFormat::kQ8x256 ? "quantize_act_256" : "quantize_act_32", qp, g.x, g.y, u32(T, "T"));
}

void qmatmul(Pass& p, const DeviceMatrix& w, Addr q, Addr d, int64_t T, Addr y, int64_t y_stride) {
  const char* sfx = block_suffix(w.dtype);
  if (!sfx) fail("vulkan: qmatmul has no kernel for ", dtype_name(w.dtype));
  aligned(w.data, "a weight matrix");
  if (u32(int64_t(w.row_bytes) * w.rows, "weight bytes") == 0) return;
  const QMatmulParams mp{w.data, q, d, y, u32(w.rows, "rows"), u32(w.cols, "cols"), u32(int64_t(w.row_bytes), "row_bytes"),
                         u32(T, "T"), u32(y_stride, "y_stride")};
  const Grid g = grid_for(uint64_t(w.rows), 1);
  const std::string shader = std::string("qmatmul_") + sfx + (p.device().info().float64 ? "_f64" : "");
  p.dispatch(shader.c_str(), mp, g.x, g.y, u32(T, "T"));
}

void matmul(Pass& p, const DeviceMatrix& w, Addr x, int64_t T, int64_t x_stride, Addr y, int64_t y_stride) {
  const char* sfx = float_suffix(w.dtype);
  if (!sfx) fail("vulkan: matmul has no kernel for ", dtype_name(w.dtype));
  aligned(w.data, "a weight matrix");
  if (w.dtype == DType::F32 && w.row_bytes % 4) fail("vulkan: f32 weight rows must be whole words");
  (void)u32(int64_t(w.row_bytes) * w.rows, "weight bytes");
  const MatmulParams mp{w.data, x, y, u32(w.rows, "rows"), u32(w.cols, "cols"), u32(int64_t(w.row_bytes), "row_bytes"),
                        u32(T, "T"), u32(x_stride, "x_stride"), u32(y_stride, "y_stride")};
  // Short rows: a thread per row (a workgroup's tree would cost more in barriers than it sums).
  const bool short_rows = w.cols <= kShortRow;
  const Grid g = grid_for(uint64_t(w.rows), short_rows ? 64 : 1);
  const std::string shader = std::string("matmul_") + sfx + (short_rows ? "_rows" : "");
  p.dispatch(shader.c_str(), mp, g.x, g.y, u32(T, "T"));
}

void dequant_rows(Pass& p, const DeviceMatrix& w, Addr row_ids, int64_t n_rows, Addr y) {
  const char* sfx = block_suffix(w.dtype) ? block_suffix(w.dtype) : float_suffix(w.dtype);
  if (!sfx) fail("vulkan: dequant_rows has no kernel for ", dtype_name(w.dtype));
  if (w.dtype == DType::F32 && w.row_bytes % 4) fail("vulkan: f32 rows must be whole words");
  aligned(w.data, "a weight matrix");
  const DequantParams dp{w.data, row_ids, y, u32(w.cols, "cols"), u32(int64_t(w.row_bytes), "row_bytes"),
                         u32(n_rows, "rows")};
  const Grid g = grid_for(uint64_t(w.cols) * uint64_t(n_rows), 256);
  p.dispatch((std::string("dequant_") + sfx).c_str(), dp, g.x, g.y);
}

void to_f16(Pass& p, Addr x, Addr y, int64_t n) {
  if (n % 2) fail("vulkan: to_f16 converts whole words: ", n, " values");
  aligned(y, "an f16 destination");
  const ToF16Params tp{x, y, u32(n / 2, "n")};
  const Grid g = grid_for(uint64_t(n / 2), 256);
  p.dispatch("to_f16", tp, g.x, g.y);
}

void rms_norm(Pass& p, Addr x, int64_t x_stride, Addr w, float eps, Addr y, int64_t y_stride, int64_t n, int64_t rows) {
  norm(p, 0, x, x_stride, w, x, 0, eps, 1.0f, y, y_stride, n, rows);
}

void gated_rms_norm(Pass& p, Addr x, int64_t x_stride, Addr w, Addr z, int64_t z_stride, float eps, Addr y,
                    int64_t y_stride, int64_t n, int64_t rows) {
  norm(p, 1, x, x_stride, w, z, z_stride, eps, 1.0f, y, y_stride, n, rows);
}

void l2_norm(Pass& p, Addr x, int64_t x_stride, float scale, float eps, Addr y, int64_t y_stride, int64_t n,
             int64_t rows) {
  norm(p, 2, x, x_stride, x, x, 0, eps, scale, y, y_stride, n, rows);
}

void add(Pass& p, Addr x, Addr y, int64_t n) { elementwise(p, 0, x, x, y, n); }
void swiglu(Pass& p, Addr g, Addr u, Addr y, int64_t n) { elementwise(p, 1, g, u, y, n); }
void silu(Pass& p, Addr x, Addr y, int64_t n) { elementwise(p, 2, x, x, y, n); }
void sigmoid(Pass& p, Addr x, Addr y, int64_t n) { elementwise(p, 3, x, x, y, n); }
void sigmoid_gate(Pass& p, Addr g, Addr y, int64_t n) { elementwise(p, 4, g, g, y, n); }
void decay_gate(Pass& p, Addr neg_a, Addr dt_bias, Addr g, int64_t n) { elementwise(p, 5, neg_a, dt_bias, g, n); }
void axpy(Pass& p, float a, Addr x, Addr y, int64_t n) { elementwise(p, 6, x, x, y, n, a); }

void rope(Pass& p, const RopeArgs& a) {
  const RopeParams rp{a.x, a.cos, a.sin, u32(a.T, "T"), u32(a.heads, "heads"), u32(a.head_stride, "head_stride"),
                      u32(a.token_stride, "token_stride"), u32(a.half, "half"), u32(a.cs_stride, "cs_stride")};
  const Grid g = grid_for(uint64_t(a.T) * uint64_t(a.heads) * uint64_t(a.half), 64);
  p.dispatch("rope", rp, g.x, g.y);
}

void causal_conv(Pass& p, const ConvDeviceArgs& a) {
  if (a.K < 1 || a.K > 16) fail("vulkan: causal_conv takes 1 to 16 taps, not ", a.K);
  const ConvParams cp{a.x, a.taps, a.state, a.y, u32(a.T, "T"), u32(a.C, "C"), uint32_t(a.K)};
  p.dispatch("causal_conv", cp, u32((a.C + 63) / 64, "C"));
}

void delta_recurrent(Pass& p, const DeltaDeviceArgs& a) {
  if (a.Hk <= 0 || a.Hv % a.Hk) fail("vulkan: delta_recurrent: ", a.Hv, " value heads over ", a.Hk, " key heads");
  const DeltaParams dp{a.q,  a.k,  a.v,  a.beta, a.g,  a.S,  a.o,  u32(a.T, "T"), u32(a.Hv, "Hv"), u32(a.Hk, "Hk"),
                       u32(a.dk, "dk"), u32(a.dv, "dv"), u32(a.qk_stride, "qk_stride"), u32(a.v_stride, "v_stride"),
                       u32(a.gate_stride, "gate_stride"), u32(a.o_stride, "o_stride"), a.tiled ? 1u : 0u};
  p.dispatch("delta_recurrent", dp, u32(a.Hv, "Hv"));
}

size_t delta_chunk_work_floats(int dk, int dv) {
  const size_t C = size_t(kernels::kDeltaChunk);
  return 3 * C * C + C * size_t(dk) + C * size_t(dv);  // A, Tinv, tmp; W; U
}

void delta_chunk(Pass& p, const DeltaDeviceArgs& a, Addr work) {
  if (a.Hk <= 0 || a.Hv % a.Hk) fail("vulkan: delta_chunk: ", a.Hv, " value heads over ", a.Hk, " key heads");
  const DeltaChunkParams dp{a.q,
                            a.k,
                            a.v,
                            a.beta,
                            a.g,
                            a.S,
                            a.o,
                            work,
                            u32(a.T, "T"),
                            u32(a.Hv, "Hv"),
                            u32(a.Hk, "Hk"),
                            u32(a.dk, "dk"),
                            u32(a.dv, "dv"),
                            u32(a.qk_stride, "qk_stride"),
                            u32(a.v_stride, "v_stride"),
                            u32(a.gate_stride, "gate_stride"),
                            u32(a.o_stride, "o_stride"),
                            a.tiled ? 1u : 0u,
                            u32(int64_t(delta_chunk_work_floats(a.dk, a.dv)), "work_stride")};
  p.dispatch(p.device().info().float64 ? "delta_chunk_f64" : "delta_chunk", dp, u32(a.Hv, "Hv"));
}

void attention(Pass& p, const AttnDeviceArgs& a) {
  if (a.kv_dtype != DType::F16 && a.kv_dtype != DType::F32)
    fail("vulkan: attention: KV rows must be f16 or f32, not ", dtype_name(a.kv_dtype));
  if (a.head_dim > 512) fail("vulkan: attention: head_dim ", a.head_dim, " > 512");
  if (a.kv_dtype == DType::F16 && (a.kv_stride % 2 || a.head_dim % 2))
    fail("vulkan: attention: f16 KV rows and heads must be whole words");
  const AttnParams ap{a.q, a.o, a.k, a.v, u32(a.q_stride, "q_stride"), u32(a.o_stride, "o_stride"),
                      u32(a.kv_stride, "kv_stride"), u32(a.n_q, "n_q"), u32(a.group, "group"),
                      u32(a.head_dim, "head_dim"), u32(a.n_kv0, "n_kv0"), a.causal ? 1u : 0u,
                      a.kv_dtype == DType::F16 ? 1u : 0u, a.scale};
  p.dispatch("attention", ap, u32(a.n_q, "n_q"), u32(int64_t(a.kv_heads) * a.group, "heads"));
}

}  // namespace qwen35::vk
