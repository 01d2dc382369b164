#include "model/attention.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"
#include "model/layer_ops_cpu.h"

namespace qwen35 {

void AttentionScratch::reserve(const TextConfig& cfg, int64_t tokens) {
  if (tokens <= capacity) return;
  capacity = tokens;
  const size_t T = size_t(tokens), hd = size_t(cfg.head_dim);
  qg.resize(T * size_t(cfg.num_heads) * hd * (cfg.attn_output_gate ? 2 : 1));
  q.resize(T * size_t(cfg.num_heads) * hd);
  k.resize(T * size_t(cfg.num_kv_heads) * hd);
  v.resize(T * size_t(cfg.num_kv_heads) * hd);
  attn.resize(T * size_t(cfg.num_heads) * hd);
  cos.resize(T * size_t(cfg.rotary_dim / 2));
  sin.resize(T * size_t(cfg.rotary_dim / 2));
}

void AttentionScratch::set_positions(const MRope& rope, const int32_t* positions, int64_t T) {
  const int half = rope.half();
  for (int64_t t = 0; t < T; ++t)
    rope.angles(positions[t], positions[T + t], positions[2 * T + t], cos.data() + t * half, sin.data() + t * half);
}

void attention_layer(LayerOps& b, const TextConfig& cfg, const AttentionWeights& w, int index) {
  b.linear(Rows::kIn, {{&w.q, Rows::kQg}, {&w.k, Rows::kK}, {&w.v, Rows::kV}});  // one pass over the input
  b.head_norms(w);
  b.rope();
  b.attend(index);
  if (cfg.attn_output_gate) b.output_gate();
  b.linear(Rows::kAttn, {{&w.o, Rows::kOut}});
}

void attention_forward(const kernels::Compute& c, const TextConfig& cfg, const AttentionWeights& w, const MRope& rope,
                       kernels::Activations& a, KvCache& kv, AttentionScratch& s, float* out) {
  s.reserve(cfg, a.T());
  const AttentionSpan span{&kv, a.T()};
  CpuLayerOps ops(c, &cfg, a, out);
  ops.attention = &s;
  ops.attention_spans = std::span<const AttentionSpan>(&span, 1);
  ops.rope_half = rope.half();
  attention_layer(ops, cfg, w, 0);
}

void attention_head_norms(const kernels::Compute& c, const TextConfig& cfg, const AttentionWeights& w,
                          AttentionScratch& s, int64_t T) {
  const int nq = cfg.num_heads, nkv = cfg.num_kv_heads, hd = cfg.head_dim;
  const int64_t QD = int64_t(nq) * hd, KD = int64_t(nkv) * hd, qg_stride = w.q.rows;
  // q_proj rows are per head [query(hd) ; gate(hd)] when gated.
  const int64_t head_stride = cfg.attn_output_gate ? 2 * hd : hd;
  for (int64_t t = 0; t < T; ++t) {
    for (int h = 0; h < nq; ++h)
      c.k->rms_norm(s.qg.data() + t * qg_stride + h * head_stride, w.q_norm.data(), cfg.rms_norm_eps,
                    s.q.data() + t * QD + int64_t(h) * hd, hd);
    for (int h = 0; h < nkv; ++h) {
      float* k = s.k.data() + t * KD + int64_t(h) * hd;
      c.k->rms_norm(k, w.k_norm.data(), cfg.rms_norm_eps, k, hd);
    }
  }
}

void attention_rope(const kernels::Compute& c, const TextConfig& cfg, int half, AttentionScratch& s, int64_t T) {
  const int nq = cfg.num_heads, nkv = cfg.num_kv_heads, hd = cfg.head_dim;
  const int64_t QD = int64_t(nq) * hd, KD = int64_t(nkv) * hd;
  for (int64_t t = 0; t < T; ++t) {
    const float* cs = s.cos.data() + t * half;
    const float* sn = s.sin.data() + t * half;
    c.k->rope(s.q.data() + t * QD, nq, hd, half, cs, sn);
    c.k->rope(s.k.data() + t * KD, nkv, hd, half, cs, sn);
  }
}

void attention_attend(const kernels::Compute& c, const TextConfig& cfg, std::span<const AttentionSpan> spans,
                      AttentionScratch& s, int64_t T) {
  {
    int64_t rows = 0;
    for (const AttentionSpan& sp : spans) rows += sp.T;
    if (rows != T) fail("attention: spans cover ", rows, " rows of ", T);
  }
  const int nq = cfg.num_heads, nkv = cfg.num_kv_heads, hd = cfg.head_dim;
  const int64_t QD = int64_t(nq) * hd, KD = int64_t(nkv) * hd;
  // Per span: its rows join its cache, then tasks of kAttnBlock tokens x one KV head, so the group
  // of query heads that share the KV head reads each key and value row once. Later blocks see more
  // keys, so they are handed out first. The kernel computes every row the same way in any block,
  // so neither the block size, the other spans nor the thread count changes a bit of the result.
  constexpr int64_t kAttnBlock = 16;
  const int group = nq / nkv;
  std::vector<AttentionBlock>& blocks = s.blocks;
  blocks.clear();
  int64_t row = 0;
  for (const AttentionSpan& sp : spans) {
    const int64_t past = sp.kv->length();
    sp.kv->append(s.k.data() + row * KD, s.v.data() + row * KD, sp.T);
    for (int64_t b = 0; b < sp.T; b += kAttnBlock)
      blocks.push_back({sp.kv, row + b, std::min(kAttnBlock, sp.T - b), past + b + 1});  // causal
    row += sp.T;
  }
  std::stable_sort(blocks.begin(), blocks.end(),
                   [](const AttentionBlock& x, const AttentionBlock& y) { return x.n_kv0 > y.n_kv0; });
  const size_t tasks = blocks.size() * size_t(nkv);
  c.pool->parallel_for(
      tasks, 1,
      [&](size_t b, size_t e) {
        for (size_t task = b; task < e; ++task) {
          const AttentionBlock& bt = blocks[task / size_t(nkv)];
          const int kvh = int(task % size_t(nkv));
          const KvCache& kv = *bt.kv;
          kernels::AttnArgs args;
          args.q = s.q.data() + bt.t0 * QD + int64_t(kvh) * group * hd;
          args.q_stride = QD;
          args.o = s.attn.data() + bt.t0 * QD + int64_t(kvh) * group * hd;
          args.o_stride = QD;
          const size_t head_off = size_t(kvh) * size_t(hd) * (kv.dtype() == DType::F16 ? 2 : 4);
          args.k = static_cast<const uint8_t*>(kv.key_row(0)) + head_off;
          args.v = static_cast<const uint8_t*>(kv.value_row(0)) + head_off;
          args.kv_stride = kv.row_floats();
          args.kv_dtype = kv.dtype();
          args.n_q = bt.n;
          args.group = group;
          args.head_dim = hd;
          args.n_kv0 = bt.n_kv0;
          args.scale = 1.0f / std::sqrt(float(hd));
          c.k->attention(args);
        }
      },
      tasks);
}

void attention_output_gate(const kernels::Compute& c, const TextConfig& cfg, AttentionScratch& s, int64_t T) {
  const int nq = cfg.num_heads, hd = cfg.head_dim;
  const int64_t QD = int64_t(nq) * hd, qg_stride = 2 * QD;  // per head [query(hd) ; gate(hd)]
  for (int64_t t = 0; t < T; ++t)
    for (int h = 0; h < nq; ++h)
      c.k->sigmoid_gate(s.qg.data() + t * qg_stride + int64_t(h) * 2 * hd + hd, s.attn.data() + t * QD + int64_t(h) * hd,
                        hd);
}

}  // namespace qwen35
