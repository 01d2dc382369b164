#include "model/vision.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/error.h"
#include "core/page_buffer.h"

namespace qwen35 {
namespace {

constexpr double kRopeTheta = 10000.0;  // hard-coded in the reference vision rotary (spec 1.4)

// ---- Small row-wise operations ------------------------------------------------------------------

// y = LayerNorm(x) over rows of n (the table's kernel, double sums); rows split over the pool.
void layer_norm_rows(const kernels::Compute& c, const float* x, const LayerNormWeights& w, int64_t rows, int64_t n,
                     double eps, float* y) {
  c.pool->parallel_for(size_t(rows), 16, [&](size_t r0, size_t r1) {
    for (size_t r = r0; r < r1; ++r) c.k->layer_norm(x + int64_t(r) * n, w.weight.data(), w.bias.data(), eps, y + int64_t(r) * n, n);
  });
}

// Calls fn(row) for the rows [0, T) across the pool.
template <typename F>
void for_rows(const kernels::Compute& c, int64_t T, F fn) {
  c.pool->parallel_for(size_t(T), 4, [&](size_t t0, size_t t1) {
    for (int64_t t = int64_t(t0); t < int64_t(t1); ++t) fn(t);
  });
}

// y[T, w.rows] = x[T, w.cols] W^T through `a`, whose quantized rows stay allocated between calls.
void linear(const kernels::Compute& c, kernels::Activations& a, const float* x, int64_t T,
            const kernels::WeightMatrix& w, float* y) {
  a.bind(x, T, w.cols);
  kernels::linear(c, a, w, y, w.rows);
}

// y[T, out] = x[T, in] W^T + b
void linear_bias(const kernels::Compute& c, kernels::Activations& a, const float* x, int64_t T, const LinearWeights& l,
                 float* y) {
  linear(c, a, x, T, l.w, y);
  const int64_t n = l.w.rows;
  for_rows(c, T, [&](int64_t t) { c.k->axpy(1.0f, l.b.data(), y + t * n, n); });
}

// x[T, n] += y[T, n] + b (y gets the bias first, as a biased linear layer's output).
void add_biased(const kernels::Compute& c, float* x, float* y, const std::vector<float>& b, int64_t T, int64_t n) {
  for_rows(c, T, [&](int64_t t) {
    c.k->axpy(1.0f, b.data(), y + t * n, n);
    c.k->axpy(1.0f, y + t * n, x + t * n, n);
  });
}

// ---- Patch order ---------------------------------------------------------------------------------

// Calls fn(row, col) for the patches of one h x w frame in the processor's order: m x m merge
// blocks in raster order, the patches of a block in raster order (spec 7.3).
template <typename F>
void for_each_patch_of_frame(int64_t h, int64_t w, int64_t m, F fn) {
  for (int64_t bh = 0; bh < h / m; ++bh)
    for (int64_t bw = 0; bw < w / m; ++bw)
      for (int64_t mh = 0; mh < m; ++mh)
        for (int64_t mw = 0; mw < m; ++mw) fn(bh * m + mh, bw * m + mw);
}

// ---- Bilinear position-table interpolation ---------------------------------------------------------

// torch.linspace(0, end, steps)[i] in float32 as PyTorch's CPU kernel computes it: from the start
// for the first half, from the end for the second (so the last value is exactly `end`).
float linspace_at(float end, int64_t steps, int64_t i) {
  if (steps == 1) return 0.0f;
  const float step = end / float(steps - 1);
  return i < steps / 2 ? step * float(i) : end - step * float(steps - 1 - i);
}

// One axis of the align-corners interpolation: for output index i, the two table indices and the
// weight of the second. The floor is a truncation (as `.int()`), the ceil is clipped to side - 1.
struct InterpAxis {
  std::vector<int64_t> lo, hi;
  std::vector<float> frac;
};

InterpAxis interp_axis(int64_t n, int64_t side) {
  InterpAxis a;
  a.lo.resize(size_t(n));
  a.hi.resize(size_t(n));
  a.frac.resize(size_t(n));
  for (int64_t i = 0; i < n; ++i) {
    const float y = linspace_at(float(side - 1), n, i);
    const int64_t y0 = int64_t(y);
    a.lo[size_t(i)] = y0;
    a.hi[size_t(i)] = std::min(y0 + 1, side - 1);
    a.frac[size_t(i)] = y - float(y0);
  }
  return a;
}

// ---- Attention -----------------------------------------------------------------------------------

// Query rows per attention task: the kernel's batch, whose rows share every key and value load.
constexpr int64_t kAttnRowsPerTask = 64;

// Bidirectional attention of the queries [q0, q1) among the patches [s0, s1) of one frame, all
// heads, through the kernel table's attention (one head at a time, no causal mask). qkv is
// [Np, 3D] with rotary applied to q and k; out is [Np, D], heads concatenated. Each row's result is
// fixed by its own query and the frame's keys (kernels.h), so neither the slicing nor the thread
// count changes it.
void attend_frame(const kernels::Compute& c, const float* qkv, int heads, int hd, int64_t s0, int64_t s1, int64_t q0,
                  int64_t q1, float* out) {
  const int64_t D = int64_t(heads) * hd, row = 3 * D;
  const int64_t blocks = (q1 - q0 + kAttnRowsPerTask - 1) / kAttnRowsPerTask;
  const float scale = 1.0f / std::sqrt(float(hd));
  // Head-major tasks: consecutive ones read the same head's keys and values (in L2).
  c.pool->parallel_for(size_t(heads * blocks), 1, [&](size_t b, size_t e) {
    for (size_t task = b; task < e; ++task) {
      const int64_t h = int64_t(task) / blocks, t0 = q0 + int64_t(task) % blocks * kAttnRowsPerTask;
      kernels::AttnArgs a;
      a.q = qkv + t0 * row + h * hd;
      a.q_stride = row;
      a.o = out + t0 * D + h * hd;
      a.o_stride = D;
      a.k = qkv + s0 * row + D + h * hd;
      a.v = qkv + s0 * row + 2 * D + h * hd;
      a.kv_stride = row;
      a.kv_dtype = DType::F32;
      a.n_q = std::min(kAttnRowsPerTask, q1 - t0);
      a.group = 1;
      a.head_dim = hd;
      a.n_kv0 = s1 - s0;
      a.causal = false;
      a.scale = scale;
      c.k->attention(a);
    }
  }, size_t(heads * blocks));
}

// Buffers of one forward call. The MLP's hidden layer, the only one wider than the qkv rows, runs
// over row chunks, so that buffer stays [chunk, I] however many patches an image has.
struct VisionBuffers {
  int64_t Np = 0;
  PageArray<float> x;         // [Np, D] residual stream
  PageArray<float> normed;    // [Np, D]
  PageArray<float> mixed;     // [Np, D] attention / MLP output before the residual add; merger hidden
  PageArray<float> qkv;       // [Np, 3D] rows [q | k | v], heads of hd; bias added, rotary applied to q, k
  PageArray<float> attn;      // [Np, D] heads concatenated
  PageArray<float> wide;      // [chunk, I] MLP hidden of one row chunk
  PageArray<float> cos, sin;  // [Np, hd/2]
  std::vector<int64_t> frame_starts;  // attention segments: [start of frame f, ..., Np]
  kernels::Activations in;  // the input rows of the current linear layer
};

// Block stages over the rows [r0, r0 + n). x += proj(attention(rope(q), rope(k), v)) with q, k, v
// from qkv(LN1(x)), each frame on its own; then x += fc2(gelu_tanh(fc1(LN2(x)))). Attention needs
// the q, k, v of every row, so each stage runs over all rows before the next one starts.
void qkv_rows(const kernels::Compute& c, const VisionConfig& cfg, const VisionBlockWeights& b, VisionBuffers& s,
              int64_t r0, int64_t n) {
  const int64_t D = cfg.hidden_size;
  const int heads = cfg.num_heads, hd = int(D / heads), half = hd / 2;
  layer_norm_rows(c, s.x.data() + r0 * D, b.norm1, n, D, cfg.layer_norm_eps, s.normed.data() + r0 * D);
  linear(c, s.in, s.normed.data() + r0 * D, n, b.qkv.w, s.qkv.data() + r0 * 3 * D);
  for_rows(c, n, [&](int64_t i) {
    const int64_t p = r0 + i;
    float* row = s.qkv.data() + p * 3 * D;
    c.k->axpy(1.0f, b.qkv.b.data(), row, 3 * D);
    const float* cs = s.cos.data() + p * half;
    const float* sn = s.sin.data() + p * half;
    c.k->rope(row, 2 * heads, hd, half, cs, sn);  // q heads, then k heads (rotate-half, pairs (d, d + hd/2))
  });
}

void proj_rows(const kernels::Compute& c, const VisionConfig& cfg, const VisionBlockWeights& b, VisionBuffers& s,
               int64_t r0, int64_t n) {
  const int64_t D = cfg.hidden_size;
  linear(c, s.in, s.attn.data() + r0 * D, n, b.proj.w, s.mixed.data() + r0 * D);
  add_biased(c, s.x.data() + r0 * D, s.mixed.data() + r0 * D, b.proj.b, n, D);
}

void mlp_rows(const kernels::Compute& c, const VisionConfig& cfg, const VisionBlockWeights& b, VisionBuffers& s,
              int64_t r0, int64_t n) {
  const int64_t D = cfg.hidden_size, I = b.fc1.w.rows;  // I: the prepared width (weight_prep may pad it)
  layer_norm_rows(c, s.x.data() + r0 * D, b.norm2, n, D, cfg.layer_norm_eps, s.normed.data() + r0 * D);
  linear(c, s.in, s.normed.data() + r0 * D, n, b.fc1.w, s.wide.data());  // [n, I]
  for_rows(c, n, [&](int64_t i) {
    float* h = s.wide.data() + i * I;
    c.k->axpy(1.0f, b.fc1.b.data(), h, I);
    c.k->gelu_tanh(h, h, I);
  });
  linear(c, s.in, s.wide.data(), n, b.fc2.w, s.mixed.data() + r0 * D);
  add_biased(c, s.x.data() + r0 * D, s.mixed.data() + r0 * D, b.fc2.b, n, D);
}

}  // namespace

// ---- VisionTower ---------------------------------------------------------------------------------

VisionTower::VisionTower(const VisionConfig& cfg, VisionWeights weights) : cfg_(cfg), w_(std::move(weights)) {
  if (cfg_.num_heads <= 0 || cfg_.hidden_size % cfg_.num_heads != 0)
    fail("vision_config: hidden_size (", cfg_.hidden_size, ") must be a multiple of num_heads (", cfg_.num_heads, ")");
  head_dim_ = int(cfg_.hidden_size / cfg_.num_heads);
  // The rotary halves split into row and column angles: head_dim/2 angles, head_dim/4 frequencies.
  if (head_dim_ % 4 != 0) fail("vision_config: head_dim (", head_dim_, ") must be a multiple of 4 for the 2-D rotary");
  table_side_ = int64_t(std::llround(std::sqrt(double(cfg_.num_position_embeddings))));
  if (table_side_ * table_side_ != cfg_.num_position_embeddings)
    fail("vision_config: num_position_embeddings (", cfg_.num_position_embeddings, ") must be a square");
  for (const VisionBlockWeights& b : w_.blocks)  // the MLP's hidden width as prepared (maybe widened)
    if (b.fc2.w.cols != b.fc1.w.rows || b.fc1.b.size() != size_t(b.fc1.w.rows))
      fail("vision weights: fc1 has ", b.fc1.w.rows, " rows and ", b.fc1.b.size(), " biases, fc2 ", b.fc2.w.cols,
           " columns");
  // inv_freq[k] = theta^(-2k / (head_dim/2)), as the reference's rotary of dim head_dim/2.
  const int dim = head_dim_ / 2;
  for (int k = 0; k < dim / 2; ++k) inv_freq_.push_back(float(1.0 / std::pow(kRopeTheta, double(2 * k) / double(dim))));
}

int64_t VisionTower::num_patches(std::span<const ImageGrid> grids) const {
  const int64_t m = cfg_.spatial_merge_size;
  int64_t n = 0;
  for (const ImageGrid& g : grids) {
    if (g.t <= 0 || g.h <= 0 || g.w <= 0) fail("image grid (", g.t, ", ", g.h, ", ", g.w, ") must be positive");
    if (g.h % m != 0 || g.w % m != 0)
      fail("image grid (", g.t, ", ", g.h, ", ", g.w, "): h and w must be multiples of the merge size ", m);
    n += g.t * g.h * g.w;
  }
  return n;
}

int64_t VisionTower::num_tokens(std::span<const ImageGrid> grids) const {
  const int64_t m = cfg_.spatial_merge_size;
  return num_patches(grids) / (m * m);
}

void VisionTower::position_embeddings(std::span<const ImageGrid> grids, float* out) const {
  const int64_t D = cfg_.hidden_size, side = table_side_, m = cfg_.spatial_merge_size;
  const float* P = w_.pos_table.data();
  float* o = out;
  for (const ImageGrid& g : grids) {
    const InterpAxis ry = interp_axis(g.h, side), cx = interp_axis(g.w, side);
    // The same table for every frame: the learned embedding is purely spatial.
    for (int64_t f = 0; f < g.t; ++f)
      for_each_patch_of_frame(g.h, g.w, m, [&](int64_t r, int64_t col) {
        const float dy = ry.frac[size_t(r)], dx = cx.frac[size_t(col)];
        // Corner weights and summation order as the reference: (y0,x0), (y0,x1), (y1,x0), (y1,x1).
        const float w00 = (1.0f - dy) * (1.0f - dx), w01 = (1.0f - dy) * dx, w10 = dy * (1.0f - dx), w11 = dy * dx;
        const float* p00 = P + (ry.lo[size_t(r)] * side + cx.lo[size_t(col)]) * D;
        const float* p01 = P + (ry.lo[size_t(r)] * side + cx.hi[size_t(col)]) * D;
        const float* p10 = P + (ry.hi[size_t(r)] * side + cx.lo[size_t(col)]) * D;
        const float* p11 = P + (ry.hi[size_t(r)] * side + cx.hi[size_t(col)]) * D;
        for (int64_t d = 0; d < D; ++d) o[d] = p00[d] * w00 + p01[d] * w01 + p10[d] * w10 + p11[d] * w11;
        o += D;
      });
  }
}

void VisionTower::rotary_angles(std::span<const ImageGrid> grids, float* out) const {
  const int64_t m = cfg_.spatial_merge_size;
  const int nf = int(inv_freq_.size());  // head_dim / 4
  float* o = out;
  for (const ImageGrid& g : grids)
    for (int64_t f = 0; f < g.t; ++f)
      for_each_patch_of_frame(g.h, g.w, m, [&](int64_t r, int64_t col) {
        for (int k = 0; k < nf; ++k) {
          o[k] = float(r) * inv_freq_[size_t(k)];
          o[nf + k] = float(col) * inv_freq_[size_t(k)];
        }
        o += 2 * nf;
      });
}

void VisionTower::forward(const kernels::Compute& c, const float* pixel_values, int64_t rows,
                          std::span<const ImageGrid> grids, float* out, VisionObserver* observer) const {
  VisionRun run(*this, pixel_values, rows, std::vector<ImageGrid>(grids.begin(), grids.end()), observer);
  while (run.step(c)) {
  }
  std::copy(run.output().begin(), run.output().end(), out);
}

// ---- VisionRun -----------------------------------------------------------------------------------

// The stages in order; the block stages repeat for every block.
enum class VisionStage { kPatchEmbed, kPositions, kQkv, kAttention, kProj, kMlp, kMerger, kDone };

struct VisionRun::State {
  const VisionTower* tower;
  const float* pixel_values;
  std::vector<ImageGrid> grids;
  VisionObserver* observer;
  int64_t slice_rows;
  VisionBuffers b;
  std::vector<float> out;
  VisionStage stage = VisionStage::kPatchEmbed;
  size_t block = 0;
  int64_t row = 0;    // next row of the stage (kAttention: next query row)
  size_t frame = 0;   // kAttention: the frame of `row`
  int64_t slices = 0;

  void emit(const std::string& name, const float* data, int64_t cols) const {
    if (observer) observer->on_tensor(name, data, b.Np, cols);
  }
  // The next [row, row + n) of a stage over `total` rows; true when the stage is finished after it.
  bool next_rows(int64_t total, int64_t& r0, int64_t& n) {
    r0 = row;
    n = std::min(slice_rows, total - row);
    row += n;
    if (row < total) return false;
    row = 0;
    return true;
  }
};

VisionRun::VisionRun(const VisionTower& tower, const float* pixel_values, int64_t rows, std::vector<ImageGrid> grids,
                     VisionObserver* observer, int64_t slice_rows)
    : s_(std::make_unique<State>()) {
  State& st = *s_;
  st.tower = &tower;
  st.pixel_values = pixel_values;
  st.grids = std::move(grids);
  st.observer = observer;
  st.slice_rows = std::max<int64_t>(1, slice_rows);
  const int64_t Np = tower.num_patches(st.grids);
  if (rows != Np) fail("pixel_values has ", rows, " rows but the image grids need ", Np);
  const VisionConfig& cfg = tower.config();
  const int64_t D = cfg.hidden_size;
  st.out.resize(size_t(tower.num_tokens(st.grids) * tower.out_dim()));
  if (Np == 0) {
    st.stage = VisionStage::kDone;
    return;
  }
  VisionBuffers& s = st.b;
  s.Np = Np;
  for (auto* buf : {&s.x, &s.normed, &s.mixed, &s.attn}) *buf = PageArray<float>(size_t(Np * D));
  s.qkv = PageArray<float>(size_t(Np * 3 * D));
  int64_t I = 0;  // the widest MLP hidden layer as prepared
  for (const VisionBlockWeights& b : tower.weights().blocks) I = std::max(I, b.fc1.w.rows);
  s.wide = PageArray<float>(size_t(std::min(Np, st.slice_rows) * I));
  s.cos = PageArray<float>(size_t(Np * tower.head_dim() / 2));
  s.sin = PageArray<float>(size_t(Np * tower.head_dim() / 2));
  s.frame_starts = {0};
  for (const ImageGrid& g : st.grids)
    for (int64_t f = 0; f < g.t; ++f) s.frame_starts.push_back(s.frame_starts.back() + g.h * g.w);
}

VisionRun::~VisionRun() = default;

bool VisionRun::done() const { return s_->stage == VisionStage::kDone; }
std::vector<float>& VisionRun::output() { return s_->out; }
int64_t VisionRun::slices() const { return s_->slices; }

const char* VisionRun::stage() const {
  switch (s_->stage) {
    case VisionStage::kPatchEmbed: return "patch_embed";
    case VisionStage::kPositions: return "positions";
    case VisionStage::kQkv: return "qkv";
    case VisionStage::kAttention: return "attention";
    case VisionStage::kProj: return "proj";
    case VisionStage::kMlp: return "mlp";
    case VisionStage::kMerger: return "merger";
    case VisionStage::kDone: break;
  }
  return "done";
}

bool VisionRun::step(const kernels::Compute& c) {
  State& st = *s_;
  if (st.stage == VisionStage::kDone) return false;
  ++st.slices;
  const VisionTower& t = *st.tower;
  const VisionConfig& cfg = t.config();
  const VisionWeights& w = t.weights();
  VisionBuffers& s = st.b;
  const int64_t Np = s.Np, D = cfg.hidden_size, m2 = int64_t(cfg.spatial_merge_size) * cfg.spatial_merge_size;
  const int half = t.head_dim() / 2;
  int64_t r0 = 0, n = 0;
  switch (st.stage) {
    case VisionStage::kPatchEmbed:  // 1. Patch embedding.  x [Np, D]
      if (st.next_rows(Np, r0, n)) st.stage = VisionStage::kPositions;
      linear_bias(c, s.in, st.pixel_values + r0 * t.patch_dim(), n, w.patch_embed, s.x.data() + r0 * D);
      break;
    case VisionStage::kPositions:  // + interpolated position embedding; rotary angles shared by every block
      st.emit("vision.patch_embed", s.x.data(), D);
      t.position_embeddings(st.grids, s.mixed.data());
      st.emit("vision.pos_embed_interp", s.mixed.data(), D);
      for_rows(c, Np, [&](int64_t i) { c.k->axpy(1.0f, s.mixed.data() + i * D, s.x.data() + i * D, D); });
      t.rotary_angles(st.grids, s.cos.data());
      st.emit("vision.rot_pos_emb", s.cos.data(), half);
      for (int64_t i = 0; i < Np * half; ++i) {
        const float a = s.cos[size_t(i)];
        s.cos[size_t(i)] = std::cos(a);
        s.sin[size_t(i)] = std::sin(a);
      }
      st.stage = w.blocks.empty() ? VisionStage::kMerger : VisionStage::kQkv;
      if (w.blocks.empty()) st.emit("vision.last_hidden_state", s.x.data(), D);
      break;
    case VisionStage::kQkv:  // 2. Blocks, stage by stage.
      if (st.next_rows(Np, r0, n)) st.stage = VisionStage::kAttention;
      qkv_rows(c, cfg, w.blocks[st.block], s, r0, n);
      break;
    case VisionStage::kAttention: {
      const int64_t f0 = s.frame_starts[st.frame], f1 = s.frame_starts[st.frame + 1];
      const int64_t q0 = f0 + st.row, q1 = std::min(f1, q0 + st.slice_rows);
      attend_frame(c, s.qkv.data(), cfg.num_heads, t.head_dim(), f0, f1, q0, q1, s.attn.data());
      st.row = q1 - f0;
      if (q1 == f1) {
        st.row = 0;
        if (++st.frame + 1 == s.frame_starts.size()) {
          st.frame = 0;
          st.stage = VisionStage::kProj;
        }
      }
      break;
    }
    case VisionStage::kProj:
      if (st.next_rows(Np, r0, n)) st.stage = VisionStage::kMlp;
      proj_rows(c, cfg, w.blocks[st.block], s, r0, n);
      break;
    case VisionStage::kMlp:
      if (st.next_rows(Np, r0, n)) {
        mlp_rows(c, cfg, w.blocks[st.block], s, r0, n);
        if (st.observer) st.emit("vision.block." + std::to_string(st.block), s.x.data(), D);
        st.stage = ++st.block < w.blocks.size() ? VisionStage::kQkv : VisionStage::kMerger;
        if (st.stage == VisionStage::kMerger) st.emit("vision.last_hidden_state", s.x.data(), D);
        break;
      }
      mlp_rows(c, cfg, w.blocks[st.block], s, r0, n);
      break;
    case VisionStage::kMerger: {
      // 3. Patch merger: LN per patch; the m*m consecutive patches of a block are adjacent rows,
      // so [Np, D] read as [Np/m2, D*m2] is already their concatenation.
      const int64_t T = Np / m2;
      if (st.next_rows(T, r0, n)) st.stage = VisionStage::kDone;
      layer_norm_rows(c, s.x.data() + r0 * m2 * D, w.merger_norm, n * m2, D, cfg.layer_norm_eps, s.normed.data() + r0 * m2 * D);
      float* hidden = s.mixed.data() + r0 * D * m2;  // [T, D*m2], the same size as [Np, D]
      linear(c, s.in, s.normed.data() + r0 * m2 * D, n, w.merger_fc1.w, hidden);
      for_rows(c, n, [&](int64_t i) {
        float* h = hidden + i * D * m2;
        c.k->axpy(1.0f, w.merger_fc1.b.data(), h, D * m2);
        c.k->gelu_erf(h, h, D * m2);
      });
      linear_bias(c, s.in, hidden, n, w.merger_fc2, st.out.data() + r0 * t.out_dim());
      break;
    }
    case VisionStage::kDone:
      break;
  }
  return st.stage != VisionStage::kDone;
}

std::vector<float> VisionTower::encode(const kernels::Compute& c, const std::vector<float>& pixel_values,
                                       std::span<const ImageGrid> grids, VisionObserver* observer) const {
  const int64_t pd = patch_dim();
  if (int64_t(pixel_values.size()) % pd != 0)
    fail("pixel_values has ", pixel_values.size(), " values, not a multiple of the patch size ", pd);
  VisionRun run(*this, pixel_values.data(), int64_t(pixel_values.size()) / pd,
                std::vector<ImageGrid>(grids.begin(), grids.end()), observer);
  while (run.step(c)) {
  }
  return std::move(run.output());
}

}  // namespace qwen35
