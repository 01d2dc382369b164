#include "model/text_decoder.h"

#include <algorithm>
#include <cstring>

#include "core/error.h"
#include "model/norm.h"

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
  mlp.reserve(cfg.intermediate_size, tokens);
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

void TextDecoder::forward_batch(const kernels::Compute& c, const float* inputs, const int32_t* positions,
                                std::span<const DecoderSegment> segments, DecoderWorkspace& ws, float* out,
                                DecoderObserver* observer) const {
  const int L = cfg_.num_layers;
  auto end_of = [&](const DecoderSegment& sg) { return sg.end_layer < 0 ? L : sg.end_layer; };
  int64_t T = 0;
  ws.segment_rows.clear();
  for (const DecoderSegment& sg : segments) {
    if (sg.T < 0) fail("forward_batch: a segment of ", sg.T, " tokens");
    if (sg.first_layer < 0 || sg.first_layer >= end_of(sg) || end_of(sg) > L)
      fail("forward_batch: layers [", sg.first_layer, ", ", end_of(sg), ") of a ", L, "-layer decoder");
    ws.segment_rows.push_back(T);
    T += sg.T;
  }
  if (T <= 0) return;
  for (const DecoderSegment& sg : segments)
    if (sg.traces) sg.traces->resize(size_t(cfg_.num_deltanet_layers()));
  ws.reserve(cfg_, T);
  const int64_t H = cfg_.hidden_size;
  const float eps = cfg_.rms_norm_eps;
  float* const x_all = ws.x.data();
  std::memcpy(x_all, inputs, size_t(T * H) * sizeof(float));

  // The rows of layer i: every segment whose range holds i. While that is all of them the layer
  // works on x_all in place; otherwise on a compact copy in x_sub, written back when the set
  // changes and at the end.
  std::vector<uint8_t>& active = ws.segment_active;
  std::vector<uint8_t>& was = ws.segment_was_active;
  active.assign(segments.size(), 0);
  was.assign(segments.size(), 0);
  bool have_layout = false, sub = false;
  float* x = x_all;
  int64_t Tl = 0;
  auto for_active = [&](const std::vector<uint8_t>& set, auto&& fn) {
    int64_t r = 0;
    for (size_t s = 0; s < segments.size(); ++s)
      if (set[s] && segments[s].T > 0) fn(s, r), r += segments[s].T;
  };
  auto write_back = [&] {
    if (!sub) return;
    for_active(was, [&](size_t s, int64_t r) {
      std::memcpy(x_all + ws.segment_rows[s] * H, ws.x_sub.data() + r * H, size_t(segments[s].T * H) * sizeof(float));
    });
  };
  auto set_layout = [&] {
    write_back();
    Tl = 0;
    bool all = true;
    for (size_t s = 0; s < segments.size(); ++s) {
      if (active[s]) Tl += segments[s].T;
      else all &= segments[s].T == 0;
    }
    sub = !all;
    if (!sub) {
      x = x_all;
      ws.attention.set_positions(rope_, positions, T);
    } else {
      ws.x_sub.resize(size_t(Tl * H));
      ws.positions_sub.resize(size_t(3 * Tl));
      for_active(active, [&](size_t s, int64_t r) {
        std::memcpy(ws.x_sub.data() + r * H, x_all + ws.segment_rows[s] * H, size_t(segments[s].T * H) * sizeof(float));
        for (int a = 0; a < 3; ++a)
          std::copy_n(positions + a * T + ws.segment_rows[s], segments[s].T, ws.positions_sub.data() + a * Tl + r);
      });
      x = ws.x_sub.data();
      ws.attention.set_positions(rope_, ws.positions_sub.data(), Tl);
    }
    was = active;
    have_layout = true;
  };

  // Row-wise steps (norms, residual adds) split over the pool for long blocks.
  auto rows = [&](auto&& fn) {
    if (Tl < 8) return fn(int64_t(0), Tl);
    c.pool->parallel_for(size_t(Tl), 8, [&](size_t b, size_t e) { fn(int64_t(b), int64_t(e)); });
  };
  float* normed = ws.normed.data();
  float* mixed = ws.mixed.data();
  int deltanet_index = 0, attention_index = 0;
  for (int i = 0; i < L; ++i) {
    const LayerWeights& Lw = w_.layers[size_t(i)];
    const bool deltanet = Lw.kind == LayerKind::kDeltaNet;
    const int mixer_index = deltanet ? deltanet_index++ : attention_index++;
    bool any = false;
    for (size_t s = 0; s < segments.size(); ++s) {
      active[s] = segments[s].first_layer <= i && i < end_of(segments[s]) && segments[s].T > 0;
      any |= active[s];
    }
    if (!any) continue;
    if (!have_layout || active != was) set_layout();
    rows([&](int64_t t0, int64_t t1) { rms_norm_rows(x + t0 * H, Lw.input_norm.data(), t1 - t0, H, eps, normed + t0 * H); });
    ws.normed_in.bind(normed, Tl, H);
    if (deltanet) {
      ws.deltanet_spans.clear();
      for_active(active, [&](size_t s, int64_t) {
        const DecoderSegment& sg = segments[s];
        ws.deltanet_spans.push_back({&sg.state->deltanet[size_t(mixer_index)], sg.T, sg.mode,
                                     sg.traces ? &(*sg.traces)[size_t(mixer_index)] : nullptr});
      });
      deltanet_forward(c, cfg_, Lw.deltanet, ws.normed_in, ws.deltanet_spans, ws.deltanet, mixed);
    } else {
      ws.attention_spans.clear();
      for_active(active, [&](size_t s, int64_t) {
        ws.attention_spans.push_back({&segments[s].state->kv[size_t(mixer_index)], segments[s].T});
      });
      attention_forward(c, cfg_, Lw.attention, rope_, ws.normed_in, ws.attention_spans, ws.attention, mixed);
    }
    rows([&](int64_t t0, int64_t t1) {
      for (int64_t j = t0 * H; j < t1 * H; ++j) x[j] += mixed[j];
      rms_norm_rows(x + t0 * H, Lw.post_norm.data(), t1 - t0, H, eps, normed + t0 * H);
    });
    ws.normed_in.bind(normed, Tl, H);
    mlp_forward(c, Lw.mlp, ws.normed_in, ws.mlp, mixed);
    rows([&](int64_t t0, int64_t t1) {
      for (int64_t j = t0 * H; j < t1 * H; ++j) x[j] += mixed[j];
    });
    if (observer) observer->on_layer_output(i, x, Tl);
  }
  write_back();
  for (size_t s = 0; s < segments.size(); ++s) {
    const DecoderSegment& sg = segments[s];
    const float* rows_in = x_all + ws.segment_rows[s] * H;
    float* rows_out = out + ws.segment_rows[s] * H;
    if (end_of(sg) == L) {
      rms_norm_rows(rows_in, w_.final_norm.data(), sg.T, H, eps, rows_out);
      sg.state->n_past += sg.T;
    } else {
      std::memcpy(rows_out, rows_in, size_t(sg.T * H) * sizeof(float));
    }
  }
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
