#include "model/vulkan/decoder_vulkan.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"
#include "kernels/moe_route.h"
#include "kernels/quant/act_format.h"
#include "model/moe.h"

namespace qwen35 {

using vk::Addr;
using vk::Buffer;

// One sequence's caches on the device: per DeltaNet layer its conv [C, K] and recurrent [Hv, dk, dv]
// states, per attention layer its K and V rows [capacity, n_kv * hd] in the host caches' dtype.
class VulkanDecoderBackend::State final : public BackendState {
 public:
  struct Kv {
    BufferPtr k, v;
    int64_t length = 0;
  };

  // Starts from the host state as it is (a sequence may begin on the CPU).
  State(vk::Device& dev, const DecoderState& host) : kv_layers(host.kv.size()), dev_(dev) {
    for (const DeltaNetState& d : host.deltanet) {
      conv.push_back(from_host(d.conv.data(), d.conv.size() * sizeof(float)));
      recurrent.push_back(from_host(d.recurrent.data(), d.recurrent.size() * sizeof(float)));
    }
    if (host.kv.empty()) return;
    kv_dtype = host.kv[0].dtype();
    row_bytes = host.kv[0].row_bytes();
    int64_t longest = 0;
    for (const KvCache& c : host.kv) longest = std::max(longest, c.length());
    reserve(std::max<int64_t>(longest, 64));
    for (size_t i = 0; i < host.kv.size(); ++i) {
      const size_t bytes = size_t(host.kv[i].length()) * row_bytes;
      if (bytes) {
        dev_.upload(*kv[i].k, 0, host.kv[i].key_row(0), bytes);
        dev_.upload(*kv[i].v, 0, host.kv[i].value_row(0), bytes);
      }
      kv[i].length = host.kv[i].length();
    }
  }

  // An empty state to copy into (copy()).
  explicit State(vk::Device& dev) : dev_(dev) {}

  std::unique_ptr<BackendState> copy(bool with_kv) const override {
    auto s = std::make_unique<State>(dev_);
    s->kv_layers = kv_layers;
    s->kv_dtype = kv_dtype;
    s->row_bytes = row_bytes;
    for (size_t i = 0; i < conv.size(); ++i) {
      s->conv.push_back(std::make_unique<Buffer>(dev_, conv[i]->size()));
      s->recurrent.push_back(std::make_unique<Buffer>(dev_, recurrent[i]->size()));
    }
    s->assign(*this, with_kv);
    return s;
  }

  void assign(const BackendState& from_state, bool with_kv) override {
    const auto* from = dynamic_cast<const State*>(&from_state);
    bool same = from && from->conv.size() == conv.size() && (!with_kv || from->kv_layers == kv_layers);
    for (size_t i = 0; same && i < conv.size(); ++i)
      same = from->conv[i]->size() == conv[i]->size() && from->recurrent[i]->size() == recurrent[i]->size();
    same = same && (!with_kv || kv_layers == 0 || (from->kv_dtype == kv_dtype && from->row_bytes == row_bytes));
    if (!same) fail("vulkan: a saved decoder state of another model or device");
    if (with_kv && !from->kv.empty()) reserve(std::max<int64_t>(from->kv_length(), 1));
    vk::Pass p(dev_);
    for (size_t i = 0; i < conv.size(); ++i) {
      p.copy(*from->conv[i], 0, *conv[i], 0, conv[i]->size());
      p.copy(*from->recurrent[i], 0, *recurrent[i], 0, recurrent[i]->size());
    }
    if (with_kv) {
      for (size_t i = 0; i < kv.size(); ++i) {
        const int64_t n = i < from->kv.size() ? from->kv[i].length : 0;
        const size_t bytes = size_t(n) * row_bytes;
        if (bytes) {
          p.copy(*from->kv[i].k, 0, *kv[i].k, 0, bytes);
          p.copy(*from->kv[i].v, 0, *kv[i].v, 0, bytes);
        }
        kv[i].length = n;
      }
    }
    p.run();
  }

  void truncate_kv(int64_t length) override {
    for (Kv& c : kv) {
      if (length < 0 || length > c.length) fail("vulkan: KV truncate to ", length, " outside [0, ", c.length, "]");
      c.length = length;
    }
  }

  int64_t kv_length() const override {
    int64_t n = 0;
    for (const Kv& c : kv) n = std::max(n, c.length);
    return n;
  }

  size_t bytes() const override {
    size_t n = 0;
    for (size_t i = 0; i < conv.size(); ++i) n += conv[i]->size() + recurrent[i]->size();
    for (const Kv& c : kv) n += 2 * size_t(c.length) * row_bytes;
    for (size_t i = 0; i < trace_qkv.size(); ++i)
      n += trace_qkv[i]->size() + trace_beta[i]->size() + trace_g[i]->size();
    return n;
  }

  void reset() override {
    vk::Pass p(dev_);
    for (size_t i = 0; i < conv.size(); ++i) {
      p.fill_zero(*conv[i], 0, conv[i]->size());
      p.fill_zero(*recurrent[i], 0, recurrent[i]->size());
    }
    p.run();
    for (Kv& c : kv) c.length = 0;
    traced = 0;
  }

  // Room for `tokens` rows in every KV cache, keeping the rows it has (amortised growth).
  void reserve(int64_t tokens) {
    if (tokens <= capacity) return;
    const int64_t grown = std::max(tokens, 2 * capacity);
    std::vector<Kv> next(kv_count());
    vk::Pass p(dev_);
    for (size_t i = 0; i < next.size(); ++i) {
      next[i].k = std::make_unique<Buffer>(dev_, size_t(grown) * row_bytes);
      next[i].v = std::make_unique<Buffer>(dev_, size_t(grown) * row_bytes);
      if (i < kv.size()) {
        next[i].length = kv[i].length;
        const size_t bytes = size_t(kv[i].length) * row_bytes;
        if (bytes) {
          p.copy(*kv[i].k, 0, *next[i].k, 0, bytes);
          p.copy(*kv[i].v, 0, *next[i].v, 0, bytes);
        }
      }
    }
    p.run();
    kv = std::move(next);
    capacity = grown;
  }

  size_t kv_count() const { return kv_layers; }

  // Room for a traced block of `tokens` rows: per DeltaNet layer its pre-conv rows [T, C] and its
  // beta and decay logits [T, Hv] (trace_qkv, trace_beta, trace_g).
  void reserve_trace(int64_t tokens, int64_t C, int64_t Hv) {
    if (tokens <= trace_capacity) return;
    trace_qkv.clear();
    trace_beta.clear();
    trace_g.clear();
    for (size_t i = 0; i < conv.size(); ++i) {
      trace_qkv.push_back(std::make_unique<Buffer>(dev_, size_t(tokens * C) * 4));
      trace_beta.push_back(std::make_unique<Buffer>(dev_, size_t(tokens * Hv) * 4));
      trace_g.push_back(std::make_unique<Buffer>(dev_, size_t(tokens * Hv) * 4));
    }
    trace_capacity = tokens;
  }

  std::vector<BufferPtr> conv, recurrent;
  std::vector<BufferPtr> trace_qkv, trace_beta, trace_g;
  int64_t trace_capacity = 0;
  int64_t traced = 0;  // tokens of the last block, when it was traced
  std::vector<Kv> kv;
  size_t kv_layers = 0;
  int64_t capacity = 0;
  DType kv_dtype = DType::F16;
  size_t row_bytes = 0;

 private:
  BufferPtr from_host(const void* data, size_t bytes) {
    auto b = std::make_unique<Buffer>(dev_, std::max<size_t>(bytes, 4));
    if (bytes) dev_.upload(*b, 0, data, bytes);
    return b;
  }
  vk::Device& dev_;
};

VulkanDecoderBackend::VulkanDecoderBackend(vk::Device& dev, const TextConfig& cfg, const TextWeights& w)
    : dev_(dev), cfg_(cfg), w_(w), rope_(cfg) {
  upload_all(w);
}

VulkanDecoderBackend::VulkanDecoderBackend(std::unique_ptr<vk::Device> dev, const TextConfig& cfg, const TextWeights& w)
    : owned_(std::move(dev)), dev_(*owned_), cfg_(cfg), w_(w), rope_(cfg) {
  upload_all(w);
}

std::unique_ptr<VulkanDecoderBackend> VulkanDecoderBackend::open(int index, const TextConfig& cfg, const TextWeights& w) {
  vk::DeviceOptions o;
  o.index = index;
  return std::unique_ptr<VulkanDecoderBackend>(new VulkanDecoderBackend(vk::Device::open(o), cfg, w));
}

namespace {

// Every weight the device holds, once each: all of the decoder's but the embedding (looked up on
// the host), every expert included (any row may route to any).
template <typename M, typename V>
void for_each_device_weight(const TextWeights& w, M&& matrix, V&& vector) {
  matrix(w.lm_head);
  vector(w.final_norm);
  for (const LayerWeights& L : w.layers) {
    vector(L.input_norm);
    vector(L.post_norm);
    if (L.kind == LayerKind::kDeltaNet) {
      const DeltaNetWeights& n = L.deltanet;
      for (const kernels::WeightMatrix* m : {&n.in_qkv, &n.in_z, &n.in_b, &n.in_a, &n.out}) matrix(*m);
      for (const std::vector<float>* v : {&n.conv_t, &n.neg_a, &n.dt_bias, &n.norm}) vector(*v);
    } else {
      const AttentionWeights& a = L.attention;
      for (const kernels::WeightMatrix* m : {&a.q, &a.k, &a.v, &a.o}) matrix(*m);
      vector(a.q_norm);
      vector(a.k_norm);
    }
    if (!L.is_moe()) {
      for (const kernels::WeightMatrix* m : {&L.mlp.gate, &L.mlp.up, &L.mlp.down}) matrix(*m);
      continue;
    }
    const MoeWeights& e = L.moe;
    for (const kernels::WeightMatrix* m : {&e.router, &e.shared_gate, &e.shared.gate, &e.shared.up, &e.shared.down})
      matrix(*m);
    for (int j = 0; j < e.num_experts(); ++j)
      for (const kernels::WeightMatrix* m : {&e.gate[size_t(j)], &e.up[size_t(j)], &e.down[size_t(j)]}) matrix(*m);
  }
}

}  // namespace

void VulkanDecoderBackend::upload_all(const TextWeights& w) {
  for_each_device_weight(w, [&](const kernels::WeightMatrix& m) { upload(m); },
                         [&](const std::vector<float>& v) { upload(v); });
}

uint64_t VulkanDecoderBackend::device_bytes(const TextConfig& cfg, const TextWeights& w, int64_t context, DType kv) {
  uint64_t n = 0;
  for_each_device_weight(w, [&](const kernels::WeightMatrix& m) { n += m.bytes(); },
                         [&](const std::vector<float>& v) { n += v.size() * sizeof(float); });
  // One sequence's states, and its KV caches grown to the whole context.
  const uint64_t conv = uint64_t(cfg.conv_dim()) * uint64_t(cfg.conv_kernel);
  const uint64_t rec = uint64_t(cfg.linear_value_heads) * uint64_t(cfg.linear_key_dim) * uint64_t(cfg.linear_value_dim);
  n += uint64_t(cfg.num_deltanet_layers()) * (conv + rec) * sizeof(float);
  n += uint64_t(cfg.num_attention_layers()) * 2 *
       dtype_bytes(kv, size_t(context) * size_t(cfg.num_kv_heads) * size_t(cfg.head_dim));
  n += uint64_t(cfg.vocab_size) * sizeof(float);  // a row of logits
  return n;
}

VulkanDecoderBackend::~VulkanDecoderBackend() = default;

void VulkanDecoderBackend::upload(const kernels::WeightMatrix& w) {
  if (w.layout != 0) fail("vulkan: the weights are repacked for the CPU's kernels (load the model with prepare = false)");
  if (!vk::has_matmul(w.dtype)) fail("vulkan: no device kernel for ", dtype_name(w.dtype), " weights");
  Matrix d;
  d.buf = std::make_unique<Buffer>(dev_, std::max<size_t>(w.bytes(), 4));
  dev_.upload(*d.buf, 0, w.data, w.bytes());
  d.m = {w.dtype, d.buf->address(), w.rows, w.cols, w.row_bytes};
  max_cols_ = std::max(max_cols_, w.cols);
  matrices_[&w] = std::move(d);
}

void VulkanDecoderBackend::upload(const std::vector<float>& v) {
  auto b = std::make_unique<Buffer>(dev_, std::max<size_t>(v.size() * sizeof(float), 4));
  if (!v.empty()) dev_.upload(*b, 0, v.data(), v.size() * sizeof(float));
  vectors_[&v] = std::move(b);
}

const vk::DeviceMatrix& VulkanDecoderBackend::matrix(const kernels::WeightMatrix& w) const {
  const auto it = matrices_.find(&w);
  if (it == matrices_.end()) fail("vulkan: a weight matrix that was not uploaded");
  return it->second.m;
}

Addr VulkanDecoderBackend::vec(const std::vector<float>& v) const {
  const auto it = vectors_.find(&v);
  if (it == vectors_.end()) fail("vulkan: a weight vector that was not uploaded");
  return it->second->address();
}

VulkanDecoderBackend::State& VulkanDecoderBackend::state_of(DecoderState& s) {
  if (!s.device) {
    s.device = std::make_unique<State>(dev_, s);
  }
  auto* st = dynamic_cast<State*>(s.device.get());
  if (!st) fail("vulkan: the sequence's state lives on another backend");
  return *st;
}

void VulkanDecoderBackend::reserve(int64_t T) {
  if (T <= capacity_) return;
  const int64_t H = cfg_.hidden_size, C = cfg_.conv_dim(), Hv = cfg_.linear_value_heads;
  const int64_t VS = cfg_.deltanet_value_size(), QK = int64_t(cfg_.linear_key_heads) * cfg_.linear_key_dim;
  const int64_t hd = cfg_.head_dim, QD = cfg_.num_heads * hd, KD = cfg_.num_kv_heads * hd;
  const int64_t QG = QD * (cfg_.attn_output_gate ? 2 : 1), I = cfg_.intermediate_size;
  auto rows = [&](int64_t n) { return std::make_unique<Buffer>(dev_, size_t(std::max<int64_t>(T * n, 1)) * 4); };
  x_ = rows(H);
  normed_ = rows(H);
  mixed_ = rows(H);
  hidden_ = rows(H);
  cos_ = rows(rope_.half());
  sin_ = rows(rope_.half());
  act_q_ = std::make_unique<Buffer>(dev_, size_t(T * max_cols_ + 4));
  act_d_ = rows(max_cols_ / 32 + 1);
  qkv_ = rows(C);
  conv_out_ = rows(C);
  z_ = rows(VS);
  beta_ = rows(Hv);
  g_ = rows(Hv);
  q_ = rows(std::max(QK, QD));  // DeltaNet's normed q, then attention's normed, rotated queries
  k_ = rows(QK);
  core_ = rows(VS);
  qg_ = rows(QG);
  kr_ = rows(KD);
  vr_ = rows(KD);
  attn_ = rows(QD);
  gate_ = rows(I);
  up_ = rows(I);
  if (cfg_.is_moe()) {
    const int64_t E = cfg_.num_experts, k = cfg_.num_experts_per_tok, Ie = cfg_.moe_intermediate_size;
    const int64_t Is = cfg_.shared_expert_intermediate_size;
    router_ = rows(E);
    shared_gate_ = rows(1);
    sg_ = rows(Is);
    su_ = rows(Is);
    shared_out_ = rows(H);
    xg_ = rows(k * H);
    eg_ = rows(k * Ie);
    eu_ = rows(k * Ie);
    ey_ = rows(k * H);
  }
  if (!delta_work_) {  // the chunked delta rule's matrices, a slice per value head (segments run in turn)
    const size_t floats = size_t(Hv) * vk::delta_chunk_work_floats(cfg_.linear_key_dim, cfg_.linear_value_dim);
    delta_work_ = std::make_unique<Buffer>(dev_, std::max<size_t>(floats, 1) * 4);
  }
  capacity_ = T;
}

void VulkanDecoderBackend::flush() {
  if (!pass_) return;
  std::unique_ptr<vk::Pass> p = std::move(pass_);
  p->run();
}

void VulkanDecoderBackend::linear(const kernels::WeightMatrix& w, Addr x, int64_t T, int64_t x_stride, Addr y,
                                  int64_t y_stride) {
  const vk::DeviceMatrix& m = matrix(w);
  if (!is_block_format(m.dtype)) return vk::matmul(*pass_, m, x, T, x_stride, y, y_stride);
  const kernels::ActFormat fmt = kernels::act_format_for(m.dtype);
  vk::quantize_act(*pass_, fmt, x, T, x_stride, m.cols, act_q_->address(), act_d_->address());
  vk::qmatmul(*pass_, m, act_q_->address(), act_d_->address(), T, y, y_stride);
}

Addr VulkanDecoderBackend::rows(Rows r) const {
  switch (r) {
    case Rows::kIn: return normed_->address();
    case Rows::kOut: return mixed_->address();
    case Rows::kQkv: return qkv_->address();
    case Rows::kZ: return z_->address();
    case Rows::kBeta: return beta_->address();
    case Rows::kG: return g_->address();
    case Rows::kCore: return core_->address();
    case Rows::kQg: return qg_->address();
    case Rows::kQ: return q_->address();
    case Rows::kK: return kr_->address();
    case Rows::kV: return vr_->address();
    case Rows::kAttn: return attn_->address();
    case Rows::kGate: return gate_->address();
    case Rows::kUp: return up_->address();
  }
  fail("vulkan: rows of no layer tensor");
}

void VulkanDecoderBackend::linear(Rows in, std::span<const LinearTo> outs) {
  for (const LinearTo& o : outs) {
    linear(*o.w, rows(in), T_, o.w->cols, rows(o.out), o.w->rows);
    if (o.out == Rows::kGate) gate_width_ = o.w->rows;
  }
}

void VulkanDecoderBackend::begin(const float* inputs, const int32_t* positions,
                                 std::span<const DecoderSegment> segments, int64_t T) {
  flush();
  have_rows_ = false;
  for (const DecoderSegment& sg : segments) {
    if (sg.first_layer != 0 || (sg.end_layer >= 0 && sg.end_layer != cfg_.num_layers))
      fail("vulkan: a segment through layers [", sg.first_layer, ", ", sg.end_layer,
           ") (only whole passes run on the device yet)");
    if (sg.T == 0) continue;
    State& st = state_of(*sg.state);
    st.reserve((st.kv.empty() ? 0 : st.kv[0].length) + sg.T);
    st.traced = sg.traces ? sg.T : 0;
    if (sg.traces) st.reserve_trace(sg.T, cfg_.conv_dim(), cfg_.linear_value_heads);
  }
  segments_ = segments;
  T_ = T;
  reserve(T);
  if (!logits_) {  // one row (decoding) fits without a second pass
    logits_ = std::make_unique<Buffer>(dev_, size_t(cfg_.vocab_size) * sizeof(float));
    logits_rows_ = 1;
  }
  const int64_t H = cfg_.hidden_size;
  const int half = rope_.half();
  dev_.upload(*x_, 0, inputs, size_t(T * H) * sizeof(float));
  // The rotary angles of every row (host bookkeeping, as the CPU's set_positions).
  std::vector<float> cs(size_t(T * half)), sn(size_t(T * half));
  for (int64_t t = 0; t < T; ++t)
    rope_.angles(positions[t], positions[T + t], positions[2 * T + t], cs.data() + t * half, sn.data() + t * half);
  dev_.upload(*cos_, 0, cs.data(), cs.size() * sizeof(float));
  dev_.upload(*sin_, 0, sn.data(), sn.size() * sizeof(float));
  pass_ = std::make_unique<vk::Pass>(dev_);
}

void VulkanDecoderBackend::norm(const std::vector<float>& w) {
  const int64_t H = cfg_.hidden_size;
  vk::rms_norm(*pass_, x_->address(), H, vec(w), cfg_.rms_norm_eps, normed_->address(), H, H, T_);
}

void VulkanDecoderBackend::add_norm(const std::vector<float>& w) {
  vk::add(*pass_, mixed_->address(), x_->address(), T_ * cfg_.hidden_size);
  norm(w);
}

void VulkanDecoderBackend::add() { vk::add(*pass_, mixed_->address(), x_->address(), T_ * cfg_.hidden_size); }

void VulkanDecoderBackend::conv(const DeltaNetWeights& w, int index) {
  const int64_t C = cfg_.conv_dim(), Hv = cfg_.linear_value_heads;
  int64_t row = 0;
  for (const DecoderSegment& sg : segments_) {  // on each sequence's state
    if (sg.T == 0) continue;
    State& st = state_of(*sg.state);
    if (sg.traces) {  // the block's inputs of this layer's conv and gates, for replay_deltanet
      const size_t i = size_t(index);
      pass_->copy(*qkv_, size_t(row * C) * 4, *st.trace_qkv[i], 0, size_t(sg.T * C) * 4);
      pass_->copy(*beta_, size_t(row * Hv) * 4, *st.trace_beta[i], 0, size_t(sg.T * Hv) * 4);
      pass_->copy(*g_, size_t(row * Hv) * 4, *st.trace_g[i], 0, size_t(sg.T * Hv) * 4);
    }
    vk::causal_conv(*pass_, {qkv_->address(size_t(row * C) * 4), vec(w.conv_t), st.conv[size_t(index)]->address(),
                             conv_out_->address(size_t(row * C) * 4), sg.T, C, cfg_.conv_kernel});
    row += sg.T;
  }
}

void VulkanDecoderBackend::gates(const DeltaNetWeights& w) {
  vk::Pass& p = *pass_;
  const int64_t T = T_, C = cfg_.conv_dim(), Hk = cfg_.linear_key_heads, Hv = cfg_.linear_value_heads;
  const int dk = cfg_.linear_key_dim;
  const int64_t QK = Hk * dk;
  vk::sigmoid(p, beta_->address(), beta_->address(), T * Hv);
  for (int64_t t = 0; t < T; ++t) {  // per token: the gates' weights are per head, the q/k heads C apart
    vk::decay_gate(p, vec(w.neg_a), vec(w.dt_bias), g_->address(size_t(t * Hv) * 4), Hv);
    const Addr in = conv_out_->address(size_t(t * C) * 4);
    vk::l2_norm(p, in, dk, 1.0f / std::sqrt(float(dk)), 1e-6f, q_->address(size_t(t * QK) * 4), dk, dk, Hk);
    vk::l2_norm(p, in + size_t(QK) * 4, dk, 1.0f, 1e-6f, k_->address(size_t(t * QK) * 4), dk, dk, Hk);
  }
}

void VulkanDecoderBackend::delta(const DeltaNetWeights& w, int index) {
  vk::Pass& p = *pass_;
  const int64_t T = T_, C = cfg_.conv_dim(), Hk = cfg_.linear_key_heads, Hv = cfg_.linear_value_heads;
  const int dk = cfg_.linear_key_dim, dv = cfg_.linear_value_dim;
  const int64_t QK = Hk * dk, VS = Hv * dv;
  int64_t row = 0;
  for (const DecoderSegment& sg : segments_) {  // on each sequence's state
    if (sg.T == 0) continue;
    vk::DeltaDeviceArgs d;
    d.q = q_->address(size_t(row * QK) * 4);
    d.k = k_->address(size_t(row * QK) * 4);
    d.v = conv_out_->address(size_t(row * C + 2 * QK) * 4);
    d.beta = beta_->address(size_t(row * Hv) * 4);
    d.g = g_->address(size_t(row * Hv) * 4);
    d.S = state_of(*sg.state).recurrent[size_t(index)]->address();
    d.o = core_->address(size_t(row * VS) * 4);
    d.T = sg.T;
    d.Hv = Hv;
    d.Hk = Hk;
    d.dk = dk;
    d.dv = dv;
    d.qk_stride = QK;
    d.v_stride = C;
    d.gate_stride = Hv;
    d.o_stride = VS;
    d.tiled = w.v_heads_tiled;
    // As the CPU: chunkwise-parallel for a block of several tokens (prefill), else recurrent.
    if (sg.mode == DeltaRuleMode::kChunked || (sg.mode == DeltaRuleMode::kAuto && sg.T > 1))
      vk::delta_chunk(p, d, delta_work_->address());
    else
      vk::delta_recurrent(p, d);
    row += sg.T;
  }
  vk::gated_rms_norm(p, core_->address(), dv, vec(w.norm), z_->address(), dv, cfg_.rms_norm_eps, core_->address(), dv,
                     dv, T * Hv);
}

void VulkanDecoderBackend::head_norms(const AttentionWeights& w) {
  const int nq = cfg_.num_heads, nkv = cfg_.num_kv_heads, hd = cfg_.head_dim;
  const int64_t head_stride = cfg_.attn_output_gate ? 2 * hd : hd;  // q_proj rows per head: [query ; gate] when gated
  vk::rms_norm(*pass_, qg_->address(), head_stride, vec(w.q_norm), cfg_.rms_norm_eps, q_->address(), hd, hd, T_ * nq);
  vk::rms_norm(*pass_, kr_->address(), hd, vec(w.k_norm), cfg_.rms_norm_eps, kr_->address(), hd, hd, T_ * nkv);
}

void VulkanDecoderBackend::rope() {
  const int nq = cfg_.num_heads, nkv = cfg_.num_kv_heads, hd = cfg_.head_dim;
  vk::RopeArgs r;
  r.cos = cos_->address();
  r.sin = sin_->address();
  r.T = T_;
  r.half = rope_.half();
  r.cs_stride = rope_.half();
  r.head_stride = hd;
  r.x = q_->address();
  r.heads = nq;
  r.token_stride = int64_t(nq) * hd;
  vk::rope(*pass_, r);
  r.x = kr_->address();
  r.heads = nkv;
  r.token_stride = int64_t(nkv) * hd;
  vk::rope(*pass_, r);
}

void VulkanDecoderBackend::attend(int index) {
  vk::Pass& p = *pass_;
  const int nq = cfg_.num_heads, nkv = cfg_.num_kv_heads, hd = cfg_.head_dim;
  const int64_t QD = int64_t(nq) * hd, KD = int64_t(nkv) * hd;
  int64_t row = 0;
  for (const DecoderSegment& sg : segments_) {  // each sequence's rows join its cache, then attend
    if (sg.T == 0) continue;
    State::Kv& kv = state_of(*sg.state).kv[size_t(index)];
    const DType dt = state_of(*sg.state).kv_dtype;
    const size_t at = size_t(kv.length * KD) * (dt == DType::F16 ? 2 : 4);
    if (dt == DType::F16) {
      vk::to_f16(p, kr_->address(size_t(row * KD) * 4), kv.k->address(at), sg.T * KD);
      vk::to_f16(p, vr_->address(size_t(row * KD) * 4), kv.v->address(at), sg.T * KD);
    } else {
      p.copy(*kr_, size_t(row * KD) * 4, *kv.k, at, size_t(sg.T * KD) * 4);
      p.copy(*vr_, size_t(row * KD) * 4, *kv.v, at, size_t(sg.T * KD) * 4);
    }
    vk::AttnDeviceArgs a;
    a.q = q_->address(size_t(row * QD) * 4);
    a.o = attn_->address(size_t(row * QD) * 4);
    a.k = kv.k->address();
    a.v = kv.v->address();
    a.q_stride = QD;
    a.o_stride = QD;
    a.kv_stride = KD;
    a.kv_dtype = dt;
    a.n_q = sg.T;
    a.n_kv0 = kv.length + 1;  // causal: row t sees the cache and rows [0, t]
    a.kv_heads = nkv;
    a.group = nq / nkv;
    a.head_dim = hd;
    a.scale = 1.0f / std::sqrt(float(hd));
    vk::attention(p, a);
    kv.length += sg.T;
    row += sg.T;
  }
}

void VulkanDecoderBackend::output_gate() {
  const int nq = cfg_.num_heads, hd = cfg_.head_dim;
  const int64_t QD = int64_t(nq) * hd, QG = 2 * QD;  // q_proj rows per head: [query(hd) ; gate(hd)]
  for (int64_t t = 0; t < T_; ++t)
    for (int h = 0; h < nq; ++h)
      vk::sigmoid_gate(*pass_, qg_->address(size_t(t * QG + h * 2 * hd + hd) * 4),
                       attn_->address(size_t(t * QD + h * hd) * 4), hd);
}

void VulkanDecoderBackend::swiglu() {
  vk::swiglu(*pass_, gate_->address(), up_->address(), gate_->address(), T_ * gate_width_);
}

// The traced block's first n rows of each DeltaNet layer go through the same conv, gates and
// recurrent delta rule steps the block ran (one sequence, recurrent mode): the same bits. The
// core rows they write are scratch.
void VulkanDecoderBackend::replay_deltanet(DecoderState& state, int64_t n) {
  State& st = state_of(state);
  if (n < 0 || n > st.traced) fail("vulkan: replay of ", n, " tokens of a traced block of ", st.traced);
  if (n == 0) return;
  flush();
  have_rows_ = false;
  reserve(n);
  const int64_t C = cfg_.conv_dim(), Hv = cfg_.linear_value_heads;
  const DecoderSegment seg{&state, n, DeltaRuleMode::kRecurrent};
  segments_ = std::span<const DecoderSegment>(&seg, 1);
  T_ = n;
  pass_ = std::make_unique<vk::Pass>(dev_);
  int index = 0;
  for (const LayerWeights& L : w_.layers) {
    if (L.kind != LayerKind::kDeltaNet) continue;
    const size_t i = size_t(index);
    pass_->copy(*st.trace_qkv[i], 0, *qkv_, 0, size_t(n * C) * 4);
    pass_->copy(*st.trace_beta[i], 0, *beta_, 0, size_t(n * Hv) * 4);
    pass_->copy(*st.trace_g[i], 0, *g_, 0, size_t(n * Hv) * 4);
    conv(L.deltanet, index);
    gates(L.deltanet);
    delta(L.deltanet, index);
    ++index;
  }
  flush();
  segments_ = {};
  st.traced = n;  // a later rewind to the same save may keep up to n of them again
}

// The router, the shared gate and the shared expert's gate/up run on the device; the pass stops
// there and the router logits come back, so kernels::moe_route, the CPU's function, picks each
// row's experts from them (a device top-k could order equal or near-equal probabilities otherwise,
// and a wrong expert is a wrong answer; E floats a row is a small download). A new pass then
// gathers each expert's rows (tokens in order), runs its gate/up, SwiGLU and down over them, and
// sums each row's experts in its own top-k order, then the gated shared expert: every row as
// alone, whatever the call's other rows.
void VulkanDecoderBackend::moe(const MoeWeights& w, int layer, DecoderObserver* observer) {
  const int64_t T = T_, H = cfg_.hidden_size, E = w.num_experts(), I = w.gate[0].rows, Is = w.shared.gate.rows;
  const int k = w.top_k;
  if (E != cfg_.num_experts || k != cfg_.num_experts_per_tok || I != cfg_.moe_intermediate_size ||
      Is != cfg_.shared_expert_intermediate_size)
    fail("vulkan: mixture-of-experts weights of another shape than the config's");
  const Addr in = normed_->address();
  linear(w.router, in, T, H, router_->address(), E);
  linear(w.shared_gate, in, T, H, shared_gate_->address(), 1);
  vk::sigmoid(*pass_, shared_gate_->address(), shared_gate_->address(), T);
  linear(w.shared.gate, in, T, H, sg_->address(), Is);
  linear(w.shared.up, in, T, H, su_->address(), Is);
  vk::swiglu(*pass_, sg_->address(), su_->address(), sg_->address(), T * Is);
  linear(w.shared.down, sg_->address(), T, Is, shared_out_->address(), H);
  flush();
  route_logits_.resize(size_t(T * E));
  route_probs_.resize(size_t(T * E));
  route_shared_.resize(size_t(T));
  route_ids_.resize(size_t(T * k));
  route_weights_.resize(size_t(T * k));
  route_row_.resize(size_t(T * k));
  dev_.download(*router_, 0, route_logits_.data(), route_logits_.size() * sizeof(float));
  dev_.download(*shared_gate_, 0, route_shared_.data(), route_shared_.size() * sizeof(float));
  for (int64_t t = 0; t < T; ++t)
    kernels::moe_route(route_logits_.data() + t * E, E, k, route_probs_.data() + t * E, route_ids_.data() + t * k,
                       route_weights_.data() + t * k);
  if (observer)
    observer->on_moe_routing(layer, MoeRouting{T, int(E), k, route_logits_.data(), route_ids_.data(),
                                               route_weights_.data(), route_shared_.data()});

  // Each expert's (token, slot) rows together, tokens in order (an expert is chosen once a token).
  std::vector<int64_t> start(size_t(E + 1), 0);
  for (int32_t id : route_ids_) ++start[size_t(id) + 1];
  for (int64_t e = 0; e < E; ++e) start[size_t(e + 1)] += start[size_t(e)];
  std::vector<int64_t> fill(start.begin(), start.end() - 1);
  for (int64_t r = 0; r < T * k; ++r) route_row_[size_t(r)] = int32_t(fill[size_t(route_ids_[size_t(r)])]++);

  pass_ = std::make_unique<vk::Pass>(dev_);
  vk::Pass& p = *pass_;
  for (int64_t r = 0; r < T * k; ++r)
    p.copy(*normed_, size_t((r / k) * H) * 4, *xg_, size_t(route_row_[size_t(r)] * H) * 4, size_t(H) * 4);
  for (int64_t e = 0; e < E; ++e) {
    const int64_t r0 = start[size_t(e)], n = start[size_t(e + 1)] - r0;
    if (n == 0) continue;
    const Addr x = xg_->address(size_t(r0 * H) * 4);
    linear(w.gate[size_t(e)], x, n, H, eg_->address(size_t(r0 * I) * 4), I);
    linear(w.up[size_t(e)], x, n, H, eu_->address(size_t(r0 * I) * 4), I);
  }
  vk::swiglu(p, eg_->address(), eu_->address(), eg_->address(), T * k * I);
  for (int64_t e = 0; e < E; ++e) {
    const int64_t r0 = start[size_t(e)], n = start[size_t(e + 1)] - r0;
    if (n == 0) continue;
    linear(w.down[size_t(e)], eg_->address(size_t(r0 * I) * 4), n, I, ey_->address(size_t(r0 * H) * 4), H);
  }
  p.fill_zero(*mixed_, 0, size_t(T * H) * 4);
  for (int64_t t = 0; t < T; ++t) {
    const Addr o = mixed_->address(size_t(t * H) * 4);
    for (int64_t j = 0; j < k; ++j) {
      const size_t r = size_t(t * k + j);
      vk::axpy(p, route_weights_[r], ey_->address(size_t(route_row_[r] * H) * 4), o, H);
    }
    vk::axpy(p, route_shared_[size_t(t)], shared_out_->address(size_t(t * H) * 4), o, H);
  }
}

// The residual stream comes back (the pass stops here and goes on in a new one).
void VulkanDecoderBackend::observe(int layer, DecoderObserver& observer) {
  flush();
  observed_.resize(size_t(T_ * cfg_.hidden_size));
  dev_.download(*x_, 0, observed_.data(), observed_.size() * sizeof(float));
  observer.on_layer_output(layer, observed_.data(), T_);
  pass_ = std::make_unique<vk::Pass>(dev_);
}

void VulkanDecoderBackend::finish(const std::vector<float>& final_norm, float* out) {
  const int64_t H = cfg_.hidden_size;
  vk::rms_norm(*pass_, x_->address(), H, vec(final_norm), cfg_.rms_norm_eps, hidden_->address(), H, H, T_);
  for (const DecoderSegment& sg : segments_) sg.state->n_past += sg.T;
  have_rows_ = true;
  if (!out) return;
  flush();
  dev_.download(*hidden_, 0, out, size_t(T_ * H) * sizeof(float));
}

void VulkanDecoderBackend::logits(const kernels::WeightMatrix& lm_head, std::span<const int64_t> rows, float* out) {
  if (!have_rows_) fail("VulkanDecoderBackend::logits before a forward");
  const int64_t n = int64_t(rows.size()), H = cfg_.hidden_size, V = lm_head.rows;
  if (n == 0) return flush();
  bool consecutive = true;
  for (int64_t i = 0; i < n; ++i) {
    if (rows[size_t(i)] < 0 || rows[size_t(i)] >= T_) fail("vulkan: logits of row ", rows[size_t(i)], " of ", T_);
    consecutive = consecutive && rows[size_t(i)] == rows[0] + i;
  }
  if (n > logits_rows_) {
    flush();  // the forward's pass; the LM head runs in one of its own after the buffer grows
    logits_ = std::make_unique<Buffer>(dev_, size_t(n * V) * sizeof(float));
    logits_rows_ = n;
  }
  if (!pass_) pass_ = std::make_unique<vk::Pass>(dev_);
  Addr in = hidden_->address(size_t(rows[0] * H) * 4);
  if (!consecutive) {  // gather the rows into normed_, free once the layers are done
    for (int64_t i = 0; i < n; ++i)
      pass_->copy(*hidden_, size_t(rows[size_t(i)] * H) * 4, *normed_, size_t(i * H) * 4, size_t(H) * 4);
    in = normed_->address();
  }
  linear(lm_head, in, n, H, logits_->address(), V);
  flush();
  dev_.download(*logits_, 0, out, size_t(n * V) * sizeof(float));
}

}  // namespace qwen35
