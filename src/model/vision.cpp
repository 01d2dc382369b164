#include "model/vision.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/error.h"

namespace qwen35 {
namespace {

constexpr double kRopeTheta = 10000.0;  // hard-coded in the reference vision rotary (spec 1.4)

// ---- Small row-wise operations ------------------------------------------------------------------

// y = (x - mean) / sqrt(var + eps) * w + b over rows of n, biased variance; rows split over the pool.
// The statistics are summed in double: cheap here, and closer to exact than the reference's fp32.
void layer_norm_rows(const kernels::Compute& c, const float* x, const LayerNormWeights& w, int64_t rows, int64_t n,
                     double eps, float* y) {
  const float* g = w.weight.data();
  const float* b = w.bias.data();
  c.pool->parallel_for(size_t(rows), 16, [&](size_t r0, size_t r1) {
    for (size_t r = r0; r < r1; ++r) {
      const float* xr = x + int64_t(r) * n;
      float* yr = y + int64_t(r) * n;
      double sum = 0;
      for (int64_t i = 0; i < n; ++i) sum += xr[i];
      const float mean = float(sum / double(n));
      double ss = 0;
      for (int64_t i = 0; i < n; ++i) ss += double(xr[i] - mean) * double(xr[i] - mean);
      const float inv = float(1.0 / std::sqrt(ss / double(n) + eps));
      for (int64_t i = 0; i < n; ++i) yr[i] = (xr[i] - mean) * inv * g[i] + b[i];
    }
  });
}

// y[T, out] = x[T, in] W^T + b
void linear_bias(const kernels::Compute& c, const float* x, int64_t T, const LinearWeights& l, float* y) {
  kernels::linear(c, x, T, l.w, y);
  const int64_t n = l.w.rows;
  c.pool->parallel_for(size_t(T), 16, [&](size_t t0, size_t t1) {
    for (int64_t t = int64_t(t0); t < int64_t(t1); ++t)
      for (int64_t o = 0; o < n; ++o) y[t * n + o] += l.b[size_t(o)];
  });
}

// torch's "gelu_pytorch_tanh": 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
inline float gelu_tanh(float x) {
  const float k = 0.7978845608028654f;  // sqrt(2 / pi)
  return 0.5f * x * (1.0f + std::tanh(k * (x + 0.044715f * x * x * x)));
}
// exact GELU: 0.5 x (1 + erf(x / sqrt(2)))
inline float gelu_erf(float x) { return 0.5f * x * (1.0f + std::erf(x * 0.7071067811865476f)); }

template <typename F>
void map_inplace(const kernels::Compute& c, float* x, int64_t n, F f) {
  c.pool->parallel_for(size_t(n), 4096, [&](size_t b, size_t e) {
    for (size_t i = b; i < e; ++i) x[i] = f(x[i]);
  });
}

void add_inplace(float* x, const float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) x[i] += y[i];
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

// Bidirectional attention of the queries [q0, q1) among the patches [s0, s1) of one frame, all
// heads. q, k, v are head-major [heads, Np, hd] (rotary already applied); out is [Np, heads*hd].
void attend_frame(const kernels::Compute& c, const float* q, const float* k, const float* v, int64_t Np, int heads,
                  int hd, int64_t s0, int64_t s1, int64_t q0, int64_t q1, float* out) {
  const int64_t L = s1 - s0, Q = q1 - q0, D = int64_t(heads) * hd;
  const float scale = 1.0f / std::sqrt(float(hd));
  c.pool->parallel_for(size_t(heads * Q), 4, [&](size_t b, size_t e) {
    thread_local std::vector<float> scores;
    if (scores.size() < size_t(L)) scores.resize(size_t(L));
    for (size_t task = b; task < e; ++task) {
      const int h = int(int64_t(task) / Q);
      const int64_t i = q0 + int64_t(task) % Q;
      const float* qi = q + (h * Np + i) * hd;
      const float* kh = k + (h * Np + s0) * hd;
      const float* vh = v + (h * Np + s0) * hd;
      float mx = -std::numeric_limits<float>::infinity();
      for (int64_t j = 0; j < L; ++j) {
        scores[size_t(j)] = c.k->dot(qi, kh + j * hd, hd) * scale;
        mx = std::max(mx, scores[size_t(j)]);
      }
      float sum = 0;
      for (int64_t j = 0; j < L; ++j) sum += (scores[size_t(j)] = std::exp(scores[size_t(j)] - mx));
      const float inv = 1.0f / sum;
      float* o = out + i * D + int64_t(h) * hd;
      std::fill(o, o + hd, 0.0f);
      for (int64_t j = 0; j < L; ++j) c.k->axpy(scores[size_t(j)] * inv, vh + j * hd, o, hd);
    }
  });
}

// Rotate-half RoPE of one head vector with cos/sin [hd/2]: pairs (d, d + hd/2) share angle d.
inline void rotate(const float* x, const float* cs, const float* sn, int half, float* y) {
  for (int d = 0; d < half; ++d) {
    const float x0 = x[d], x1 = x[d + half];
    y[d] = x0 * cs[d] - x1 * sn[d];
    y[d + half] = x1 * cs[d] + x0 * sn[d];
  }
}

// Buffers of one forward call. Matmuls whose outputs are wider than the residual stream (qkv: 3D,
// MLP: I) run over row chunks, so those buffers stay [chunk, width] however many patches an image
// has.
struct VisionBuffers {
  int64_t Np = 0;
  std::vector<float> x;         // [Np, D] residual stream
  std::vector<float> normed;    // [Np, D]
  std::vector<float> mixed;     // [Np, D] attention / MLP output before the residual add; merger hidden
  std::vector<float> q, k, v;   // [heads, Np, hd] each, rotary applied to q and k
  std::vector<float> attn;      // [Np, D] heads concatenated
  std::vector<float> wide;      // [chunk, max(3D, I)] qkv or MLP hidden of one row chunk
  std::vector<float> cos, sin;  // [Np, hd/2]
  std::vector<int64_t> frame_starts;  // attention segments: [start of frame f, ..., Np]
};

// Block stages over the rows [r0, r0 + n). x += proj(attention(rope(q), rope(k), v)) with q, k, v
// from qkv(LN1(x)), each frame on its own; then x += fc2(gelu_tanh(fc1(LN2(x)))). Attention needs
// the q, k, v of every row, so each stage runs over all rows before the next one starts.
void qkv_rows(const kernels::Compute& c, const VisionConfig& cfg, const VisionBlockWeights& b, VisionBuffers& s,
              int64_t r0, int64_t n) {
  const int64_t Np = s.Np, D = cfg.hidden_size;
  const int heads = cfg.num_heads, hd = int(D / heads), half = hd / 2;
  layer_norm_rows(c, s.x.data() + r0 * D, b.norm1, n, D, cfg.layer_norm_eps, s.normed.data() + r0 * D);
  linear_bias(c, s.normed.data() + r0 * D, n, b.qkv, s.wide.data());  // [n, q | k | v], each heads x hd
  c.pool->parallel_for(size_t(n), 16, [&](size_t i0, size_t i1) {
    for (int64_t i = int64_t(i0); i < int64_t(i1); ++i) {
      const int64_t p = r0 + i;
      const float* row = s.wide.data() + i * 3 * D;
      const float* cs = s.cos.data() + p * half;
      const float* sn = s.sin.data() + p * half;
      for (int h = 0; h < heads; ++h) {
        const int64_t dst = (h * Np + p) * hd;
        rotate(row + int64_t(h) * hd, cs, sn, half, s.q.data() + dst);
        rotate(row + D + int64_t(h) * hd, cs, sn, half, s.k.data() + dst);
        std::copy_n(row + 2 * D + int64_t(h) * hd, hd, s.v.data() + dst);
      }
    }
  });
}

void proj_rows(const kernels::Compute& c, const VisionConfig& cfg, const VisionBlockWeights& b, VisionBuffers& s,
               int64_t r0, int64_t n) {
  const int64_t D = cfg.hidden_size;
  linear_bias(c, s.attn.data() + r0 * D, n, b.proj, s.mixed.data() + r0 * D);
  add_inplace(s.x.data() + r0 * D, s.mixed.data() + r0 * D, n * D);
}

void mlp_rows(const kernels::Compute& c, const VisionConfig& cfg, const VisionBlockWeights& b, VisionBuffers& s,
              int64_t r0, int64_t n) {
  const int64_t D = cfg.hidden_size;
  layer_norm_rows(c, s.x.data() + r0 * D, b.norm2, n, D, cfg.layer_norm_eps, s.normed.data() + r0 * D);
  linear_bias(c, s.normed.data() + r0 * D, n, b.fc1, s.wide.data());  // [n, I]
  map_inplace(c, s.wide.data(), n * cfg.intermediate_size, gelu_tanh);
  linear_bias(c, s.wide.data(), n, b.fc2, s.mixed.data() + r0 * D);
  add_inplace(s.x.data() + r0 * D, s.mixed.data() + r0 * D, n * D);
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
  const int64_t D = cfg.hidden_size, I = cfg.intermediate_size;
  st.out.resize(size_t(tower.num_tokens(st.grids) * tower.out_dim()));
  if (Np == 0) {
    st.stage = VisionStage::kDone;
    return;
  }
  VisionBuffers& s = st.b;
  s.Np = Np;
  for (auto* buf : {&s.x, &s.normed, &s.mixed, &s.q, &s.k, &s.v, &s.attn}) buf->resize(size_t(Np * D));
  s.wide.resize(size_t(std::min(Np, st.slice_rows) * std::max(3 * D, I)));
  s.cos.resize(size_t(Np * tower.head_dim() / 2));
  s.sin.resize(size_t(Np * tower.head_dim() / 2));
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
      linear_bias(c, st.pixel_values + r0 * t.patch_dim(), n, w.patch_embed, s.x.data() + r0 * D);
      break;
    case VisionStage::kPositions:  // + interpolated position embedding; rotary angles shared by every block
      st.emit("vision.patch_embed", s.x.data(), D);
      t.position_embeddings(st.grids, s.mixed.data());
      st.emit("vision.pos_embed_interp", s.mixed.data(), D);
      add_inplace(s.x.data(), s.mixed.data(), Np * D);
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
      attend_frame(c, s.q.data(), s.k.data(), s.v.data(), Np, cfg.num_heads, t.head_dim(), f0, f1, q0, q1,
                   s.attn.data());
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
      linear_bias(c, s.normed.data() + r0 * m2 * D, n, w.merger_fc1, hidden);
      map_inplace(c, hidden, n * D * m2, gelu_erf);
      linear_bias(c, hidden, n, w.merger_fc2, st.out.data() + r0 * t.out_dim());
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
