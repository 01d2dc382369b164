#include "model/text_decoder.h"

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
  const DecoderSegment seg{&state, T, mode, ws.trace ? &ws.traces : nullptr};
  forward_batch(c, embeddings, positions, std::span<const DecoderSegment>(&seg, 1), ws, hidden, observer);
}

void TextDecoder::forward_batch(const kernels::Compute& c, const float* embeddings, const int32_t* positions,
                                std::span<const DecoderSegment> segments, DecoderWorkspace& ws, float* hidden,
                                DecoderObserver* observer) const {
  int64_t T = 0;
  for (const DecoderSegment& sg : segments) {
    if (sg.T < 0) fail("forward_batch: a segment of ", sg.T, " tokens");
    T += sg.T;
  }
  if (T <= 0) return;
  for (const DecoderSegment& sg : segments)
    if (sg.traces) sg.traces->resize(size_t(cfg_.num_deltanet_layers()));
  ws.reserve(cfg_, T);
  const int64_t H = cfg_.hidden_size;
  const float eps = cfg_.rms_norm_eps;
  float* x = ws.x.data();
  std::memcpy(x, embeddings, size_t(T * H) * sizeof(float));
  ws.attention.set_positions(rope_, positions, T);

  // Row-wise steps (norms, residual adds) split over the pool for long blocks.
  auto rows = [&](auto&& fn) {
    if (T < 8) return fn(int64_t(0), T);
    c.pool->parallel_for(size_t(T), 8, [&](size_t b, size_t e) { fn(int64_t(b), int64_t(e)); });
  };
  float* normed = ws.normed.data();
  float* mixed = ws.mixed.data();
  int deltanet_index = 0, attention_index = 0;
  for (int i = 0; i < cfg_.num_layers; ++i) {
    const LayerWeights& L = w_.layers[size_t(i)];
    rows([&](int64_t t0, int64_t t1) { rms_norm_rows(x + t0 * H, L.input_norm.data(), t1 - t0, H, eps, normed + t0 * H); });
    ws.normed_in.bind(normed, T, H);
    if (L.kind == LayerKind::kDeltaNet) {
      ws.deltanet_spans.clear();
      for (const DecoderSegment& sg : segments)
        if (sg.T > 0)
          ws.deltanet_spans.push_back({&sg.state->deltanet[size_t(deltanet_index)], sg.T, sg.mode,
                                       sg.traces ? &(*sg.traces)[size_t(deltanet_index)] : nullptr});
      ++deltanet_index;
      deltanet_forward(c, cfg_, L.deltanet, ws.normed_in, ws.deltanet_spans, ws.deltanet, mixed);
    } else {
      ws.attention_spans.clear();
      for (const DecoderSegment& sg : segments)
        if (sg.T > 0) ws.attention_spans.push_back({&sg.state->kv[size_t(attention_index)], sg.T});
      ++attention_index;
      attention_forward(c, cfg_, L.attention, rope_, ws.normed_in, ws.attention_spans, ws.attention, mixed);
    }
    rows([&](int64_t t0, int64_t t1) {
      for (int64_t j = t0 * H; j < t1 * H; ++j) x[j] += mixed[j];
      rms_norm_rows(x + t0 * H, L.post_norm.data(), t1 - t0, H, eps, normed + t0 * H);
    });
    ws.normed_in.bind(normed, T, H);
    mlp_forward(c, L.mlp, ws.normed_in, ws.mlp, mixed);
    rows([&](int64_t t0, int64_t t1) {
      for (int64_t j = t0 * H; j < t1 * H; ++j) x[j] += mixed[j];
    });
    if (observer) observer->on_layer_output(i, x, T);
  }
  rms_norm_rows(x, w_.final_norm.data(), T, H, eps, hidden);
  for (const DecoderSegment& sg : segments) sg.state->n_past += sg.T;
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
