#include "model/text_decoder.h"

#include "core/error.h"
#include "model/decoder_cpu.h"

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

void TextDecoder::forward_batch(const kernels::Compute& c, const float* inputs, const int32_t* positions,
                                std::span<const DecoderSegment> segments, DecoderWorkspace& ws, float* out,
                                DecoderObserver* observer) const {
  CpuDecoderBackend b(c, cfg_, rope_, ws);
  forward_on(b, inputs, positions, segments, out, observer);
}

void TextDecoder::forward_on(DecoderBackend& b, const float* inputs, const int32_t* positions,
                             std::span<const DecoderSegment> segments, float* out, DecoderObserver* observer) const {
  const int64_t T = count_rows(segments);
  if (T <= 0) return;
  b.begin(inputs, positions, segments, T);
  int deltanet_index = 0, attention_index = 0;
  for (int i = 0; i < cfg_.num_layers; ++i) {
    const LayerWeights& Lw = w_.layers[size_t(i)];
    const bool deltanet = Lw.kind == LayerKind::kDeltaNet;
    const int mixer = deltanet ? deltanet_index++ : attention_index++;
    if (!b.enter_layer(i)) continue;
    b.norm(Lw.input_norm);  // normed = RMSNorm(x)
    if (deltanet) deltanet_layer(b, Lw.deltanet, mixer);  // mixed = mixer(normed)
    else attention_layer(b, cfg_, Lw.attention, mixer);
    b.add_norm(Lw.post_norm);  // x += mixed; normed = RMSNorm(x)
    if (Lw.is_moe()) b.moe(Lw.moe, i, observer);  // mixed = FFN(normed)
    else mlp_layer(b, Lw.mlp);
    b.add();  // x += mixed
    if (observer) b.observe(i, *observer);
  }
  b.finish(w_.final_norm, out);
}

int64_t TextDecoder::count_rows(std::span<const DecoderSegment> segments) const {
  const int L = cfg_.num_layers;
  int64_t T = 0;
  for (const DecoderSegment& sg : segments) {
    const int end = sg.end_layer < 0 ? L : sg.end_layer;
    if (sg.T < 0) fail("forward_batch: a segment of ", sg.T, " tokens");
    if (sg.first_layer < 0 || sg.first_layer >= end || end > L)
      fail("forward_batch: layers [", sg.first_layer, ", ", end, ") of a ", L, "-layer decoder");
    T += sg.T;
  }
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
