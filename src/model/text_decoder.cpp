#include "model/text_decoder.h"

#include <algorithm>
#include <cstring>

#include "core/error.h"

namespace qwen35 {

void DecoderWorkspace::reserve(const TextConfig& cfg, int64_t tokens) {
  if (tokens > capacity) {
    capacity = tokens;
    const size_t n = size_t(tokens * cfg.hidden_size);
    x.resize(n);
    normed.resize(n);
    mixed.resize(n);
  }
  deltanet.reserve(cfg, tokens);
  attention.reserve(cfg, tokens);
  if (cfg.is_moe()) moe.reserve(cfg, tokens);
  else mlp.reserve(cfg.intermediate_size, tokens);
}

TextDecoder::TextDecoder(const TextConfig& cfg, const TextWeights& weights) : cfg_(cfg), w_(weights), rope_(cfg) {}

void TextDecoder::embed(const int32_t* ids, int64_t T, float* out) const {
  for (int64_t t = 0; t < T; ++t) {
    if (ids[t] < 0 || ids[t] >= cfg_.vocab_size) fail("token id ", ids[t], " is outside the vocabulary [0, ", cfg_.vocab_size, ")");
    kernels::weight_row_to_f32(w_.embed, ids[t], out + t * cfg_.hidden_size);
  }
}

void TextDecoder::forward(const kernels::Compute& c, const float* embeddings, const int32_t* positions, int64_t T,
                          DecoderState& state, DecoderWorkspace& ws, float* hidden, DeltaRuleMode mode,
                          DecoderObserver* observer) const {
  const DecoderSegment seg{&state, T, mode, ws.trace ? &ws.traces : nullptr, 0, -1};
  forward_batch(c, embeddings, positions, std::span<const DecoderSegment>(&seg, 1), ws, hidden, observer);
}

namespace {

// The rows a layer runs on. A batch's segments may cover different layer ranges; while every
// segment with rows is in a layer's range the layer works on the call's rows in place, otherwise
// on a compact copy of the rows that are (written back when the set changes, and at the end).
class LayerRows {
 public:
  LayerRows(std::span<const DecoderSegment> segments, int layers, const int32_t* positions, int64_t T,
            const MRope& rope, int64_t H, DecoderWorkspace& ws)
      : segments_(segments), layers_(layers), positions_(positions), T_all_(T), rope_(rope), H_(H), ws_(ws) {
    ws.segment_active.assign(segments.size(), 0);
    ws.segment_was_active.assign(segments.size(), 0);
  }

  // Lays out the rows of layer i; false when no segment with rows is in its range.
  bool enter(int i) {
    std::vector<uint8_t>& active = ws_.segment_active;
    bool any = false;
    for (size_t s = 0; s < segments_.size(); ++s) {
      const DecoderSegment& sg = segments_[s];
      active[s] = sg.first_layer <= i && i < end_of(sg) && sg.T > 0;
      any |= active[s];
    }
    if (!any) return false;
    if (!have_layout_ || active != ws_.segment_was_active) lay_out();
    return true;
  }

  float* x() const { return x_; }
  int64_t T() const { return T_; }

  // Calls fn(s) for the segments of the current layout, in row order.
  template <typename F>
  void for_each_active(F&& fn) const {
    for (size_t s = 0; s < segments_.size(); ++s)
      if (ws_.segment_active[s] && segments_[s].T > 0) fn(s);
  }

  // The current layout's segments as the mixers take them: their states of mixer `index`.
  std::span<const DeltaNetSpan> deltanet_spans(int index) {
    ws_.deltanet_spans.clear();
    for_each_active([&](size_t s) {
      const DecoderSegment& sg = segments_[s];
      ws_.deltanet_spans.push_back({&sg.state->deltanet[size_t(index)], sg.T, sg.mode,
                                    sg.traces ? &(*sg.traces)[size_t(index)] : nullptr});
    });
    return ws_.deltanet_spans;
  }
  std::span<const AttentionSpan> attention_spans(int index) {
    ws_.attention_spans.clear();
    for_each_active([&](size_t s) {
      ws_.attention_spans.push_back({&segments_[s].state->kv[size_t(index)], segments_[s].T});
    });
    return ws_.attention_spans;
  }

  // Puts the rows of a compact layout back into the call's rows.
  void write_back() {
    if (!compact_) return;
    int64_t r = 0;
    for (size_t s = 0; s < segments_.size(); ++s) {
      if (!ws_.segment_was_active[s] || segments_[s].T == 0) continue;
      std::memcpy(ws_.x.data() + ws_.segment_rows[s] * H_, ws_.x_sub.data() + r * H_,
                  size_t(segments_[s].T * H_) * sizeof(float));
      r += segments_[s].T;
    }
  }

  int end_of(const DecoderSegment& sg) const { return sg.end_layer < 0 ? layers_ : sg.end_layer; }

 private:
  void lay_out() {
    write_back();
    const std::vector<uint8_t>& active = ws_.segment_active;
    T_ = 0;
    bool all = true;
    for (size_t s = 0; s < segments_.size(); ++s) {
      if (active[s]) T_ += segments_[s].T;
      else all &= segments_[s].T == 0;
    }
    compact_ = !all;
    if (!compact_) {
      x_ = ws_.x.data();
      ws_.attention.set_positions(rope_, positions_, T_all_);
    } else {
      ws_.x_sub.resize(size_t(T_ * H_));
      ws_.positions_sub.resize(size_t(3 * T_));
      int64_t r = 0;
      for_each_active([&](size_t s) {
        const int64_t first = ws_.segment_rows[s], n = segments_[s].T;
        std::memcpy(ws_.x_sub.data() + r * H_, ws_.x.data() + first * H_, size_t(n * H_) * sizeof(float));
        for (int a = 0; a < 3; ++a)
          std::copy_n(positions_ + a * T_all_ + first, n, ws_.positions_sub.data() + a * T_ + r);
        r += n;
      });
      x_ = ws_.x_sub.data();
      ws_.attention.set_positions(rope_, ws_.positions_sub.data(), T_);
    }
    ws_.segment_was_active = active;
    have_layout_ = true;
  }

  std::span<const DecoderSegment> segments_;
  int layers_;
  const int32_t* positions_;
  int64_t T_all_;
  const MRope& rope_;
  int64_t H_;
  DecoderWorkspace& ws_;
  bool have_layout_ = false, compact_ = false;
  float* x_ = nullptr;
  int64_t T_ = 0;
};

// Runs fn(t0, t1) over the rows [0, T): on the pool for long blocks, inline for short ones.
template <typename F>
void over_rows(const kernels::Compute& c, int64_t T, F&& fn) {
  if (T < 8) return fn(int64_t(0), T);
  c.pool->parallel_for(size_t(T), 8, [&](size_t b, size_t e) { fn(int64_t(b), int64_t(e)); });
}

// y = RMSNorm(x) * w for the rows [t0, t1) of H values.
void norm_rows(const kernels::Compute& c, const float* x, const std::vector<float>& w, float eps, int64_t t0,
               int64_t t1, int64_t H, float* y) {
  for (int64_t t = t0; t < t1; ++t) c.k->rms_norm(x + t * H, w.data(), eps, y + t * H, H);
}

}  // namespace

void TextDecoder::forward_batch(const kernels::Compute& c, const float* inputs, const int32_t* positions,
                                std::span<const DecoderSegment> segments, DecoderWorkspace& ws, float* out,
                                DecoderObserver* observer) const {
  const int L = cfg_.num_layers;
  const int64_t H = cfg_.hidden_size;
  const float eps = cfg_.rms_norm_eps;
  const int64_t T_all = lay_out_segments(segments, ws);
  if (T_all <= 0) return;
  std::memcpy(ws.x.data(), inputs, size_t(T_all * H) * sizeof(float));
  LayerRows rows(segments, L, positions, T_all, rope_, H, ws);
  float* normed = ws.normed.data();
  float* mixed = ws.mixed.data();
  int deltanet_index = 0, attention_index = 0;
  for (int i = 0; i < L; ++i) {
    const LayerWeights& Lw = w_.layers[size_t(i)];
    const bool deltanet = Lw.kind == LayerKind::kDeltaNet;
    const int mixer = deltanet ? deltanet_index++ : attention_index++;
    if (!rows.enter(i)) continue;
    float* x = rows.x();
    const int64_t T = rows.T();
    over_rows(c, T, [&](int64_t t0, int64_t t1) { norm_rows(c, x, Lw.input_norm, eps, t0, t1, H, normed); });
    ws.normed_in.bind(normed, T, H);
    if (deltanet)
      deltanet_forward(c, cfg_, Lw.deltanet, ws.normed_in, rows.deltanet_spans(mixer), ws.deltanet, mixed);
    else
      attention_forward(c, cfg_, Lw.attention, rope_, ws.normed_in, rows.attention_spans(mixer), ws.attention, mixed);
    over_rows(c, T, [&](int64_t t0, int64_t t1) {
      c.k->add(mixed + t0 * H, x + t0 * H, (t1 - t0) * H);
      norm_rows(c, x, Lw.post_norm, eps, t0, t1, H, normed);
    });
    ws.normed_in.bind(normed, T, H);
    if (Lw.is_moe()) {
      moe_forward(c, Lw.moe, ws.normed_in, ws.moe, mixed);
      if (observer) observer->on_moe_routing(i, ws.moe.routing(T, Lw.moe.num_experts(), Lw.moe.top_k));
    } else {
      mlp_forward(c, Lw.mlp, ws.normed_in, ws.mlp, mixed);
    }
    over_rows(c, T, [&](int64_t t0, int64_t t1) { c.k->add(mixed + t0 * H, x + t0 * H, (t1 - t0) * H); });
    if (observer) observer->on_layer_output(i, x, T);
  }
  rows.write_back();
  for (size_t s = 0; s < segments.size(); ++s) {
    const DecoderSegment& sg = segments[s];
    const float* rows_in = ws.x.data() + ws.segment_rows[s] * H;
    float* rows_out = out + ws.segment_rows[s] * H;
    if (rows.end_of(sg) == L) {
      norm_rows(c, rows_in, w_.final_norm, eps, 0, sg.T, H, rows_out);
      sg.state->n_past += sg.T;
    } else {
      std::memcpy(rows_out, rows_in, size_t(sg.T * H) * sizeof(float));
    }
  }
}

int64_t TextDecoder::lay_out_segments(std::span<const DecoderSegment> segments, DecoderWorkspace& ws) const {
  const int L = cfg_.num_layers;
  int64_t T = 0;
  ws.segment_rows.clear();
  for (const DecoderSegment& sg : segments) {
    const int end = sg.end_layer < 0 ? L : sg.end_layer;
    if (sg.T < 0) fail("forward_batch: a segment of ", sg.T, " tokens");
    if (sg.first_layer < 0 || sg.first_layer >= end || end > L)
      fail("forward_batch: layers [", sg.first_layer, ", ", end, ") of a ", L, "-layer decoder");
    ws.segment_rows.push_back(T);
    T += sg.T;
  }
  if (T <= 0) return T;
  for (const DecoderSegment& sg : segments)
    if (sg.traces) sg.traces->resize(size_t(cfg_.num_deltanet_layers()));
  ws.reserve(cfg_, T);
  return T;
}

void TextDecoder::replay_deltanet(const kernels::Compute& c, DecoderWorkspace& ws, int64_t n, DecoderState& state) const {
  int di = 0;
  for (int i = 0; i < cfg_.num_layers; ++i) {
    if (w_.layers[size_t(i)].kind != LayerKind::kDeltaNet) continue;
    deltanet_replay(c, cfg_, w_.layers[size_t(i)].deltanet, ws.traces[size_t(di)], n, state.deltanet[size_t(di)],
                    ws.deltanet);
    ++di;
  }
}

void TextDecoder::logits(const kernels::Compute& c, const float* hidden, int64_t n, float* out) const {
  kernels::linear(c, hidden, n, w_.lm_head, out);
}

}  // namespace qwen35
