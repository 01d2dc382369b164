#include "model/decoder_cpu.h"

#include <algorithm>
#include <cstring>

#include "core/error.h"

namespace qwen35 {

// The rows a layer runs on. A batch's segments may cover different layer ranges; while every
// segment with rows is in a layer's range the layer works on the call's rows in place, otherwise
// on a compact copy of the rows that are (written back when the set changes, and at the end).
class CpuDecoderBackend::LayerRows {
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

namespace {

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

CpuDecoderBackend::CpuDecoderBackend(const kernels::Compute& c, const TextConfig& cfg, const MRope& rope,
                                     DecoderWorkspace& ws)
    : c_(c), cfg_(cfg), rope_(rope), ws_(ws), ops_(c, &cfg, ws.normed_in, nullptr) {
  ops_.deltanet = &ws.deltanet;
  ops_.attention = &ws.attention;
  ops_.rope_half = rope.half();
  ops_.mlp = &ws.mlp;
}

CpuDecoderBackend::~CpuDecoderBackend() = default;

void CpuDecoderBackend::begin(const float* inputs, const int32_t* positions, std::span<const DecoderSegment> segments,
                              int64_t T) {
  segments_ = segments;
  T_all_ = T;
  ws_.segment_rows.clear();
  int64_t row = 0;
  for (const DecoderSegment& sg : segments) {
    ws_.segment_rows.push_back(row);
    row += sg.T;
  }
  for (const DecoderSegment& sg : segments)
    if (sg.traces) sg.traces->resize(size_t(cfg_.num_deltanet_layers()));
  ws_.reserve(cfg_, T);
  std::memcpy(ws_.x.data(), inputs, size_t(T * cfg_.hidden_size) * sizeof(float));
  ops_.bind(ws_.normed_in, ws_.mixed.data());
  rows_ = std::make_unique<LayerRows>(segments, cfg_.num_layers, positions, T, rope_, cfg_.hidden_size, ws_);
}

bool CpuDecoderBackend::enter_layer(int i) { return rows_->enter(i); }

void CpuDecoderBackend::norm(const std::vector<float>& w) {
  float* x = rows_->x();
  over_rows(c_, rows_->T(), [&](int64_t t0, int64_t t1) {
    norm_rows(c_, x, w, cfg_.rms_norm_eps, t0, t1, cfg_.hidden_size, ws_.normed.data());
  });
  ws_.normed_in.bind(ws_.normed.data(), rows_->T(), cfg_.hidden_size);
}

// Each DeltaNet primitive takes the layer's sequences on their states of mixer `index`.
bool CpuDecoderBackend::delta_rule_fused(const DeltaNetWeights& w, int index) {
  ops_.deltanet_spans = rows_->deltanet_spans(index);
  return ops_.delta_rule_fused(w, index);
}

void CpuDecoderBackend::conv(const DeltaNetWeights& w, int index) {
  ops_.deltanet_spans = rows_->deltanet_spans(index);
  ops_.conv(w, index);
}

void CpuDecoderBackend::delta(const DeltaNetWeights& w, int index) {
  ops_.deltanet_spans = rows_->deltanet_spans(index);
  ops_.delta(w, index);
}

void CpuDecoderBackend::attend(int index) {
  ops_.attention_spans = rows_->attention_spans(index);
  ops_.attend(index);
}

void CpuDecoderBackend::add_norm(const std::vector<float>& w) {
  const int64_t H = cfg_.hidden_size;
  float* x = rows_->x();
  float* mixed = ws_.mixed.data();
  over_rows(c_, rows_->T(), [&](int64_t t0, int64_t t1) {
    c_.k->add(mixed + t0 * H, x + t0 * H, (t1 - t0) * H);
    norm_rows(c_, x, w, cfg_.rms_norm_eps, t0, t1, H, ws_.normed.data());
  });
  ws_.normed_in.bind(ws_.normed.data(), rows_->T(), H);
}

void CpuDecoderBackend::moe(const MoeWeights& w, int layer, DecoderObserver* observer) {
  moe_forward(c_, w, ws_.normed_in, ws_.moe, ws_.mixed.data());
  if (observer) observer->on_moe_routing(layer, ws_.moe.routing(rows_->T(), w.num_experts(), w.top_k));
}

void CpuDecoderBackend::add() {
  const int64_t H = cfg_.hidden_size;
  float* x = rows_->x();
  float* mixed = ws_.mixed.data();
  over_rows(c_, rows_->T(), [&](int64_t t0, int64_t t1) { c_.k->add(mixed + t0 * H, x + t0 * H, (t1 - t0) * H); });
}

void CpuDecoderBackend::observe(int layer, DecoderObserver& observer) {
  observer.on_layer_output(layer, rows_->x(), rows_->T());
}

void CpuDecoderBackend::finish(const std::vector<float>& final_norm, float* out) {
  const int64_t H = cfg_.hidden_size;
  const int L = cfg_.num_layers;
  if (!out) out = ws_.normed.data();  // only logits are wanted: the normed rows are free by now
  rows_->write_back();
  for (size_t s = 0; s < segments_.size(); ++s) {
    const DecoderSegment& sg = segments_[s];
    const float* rows_in = ws_.x.data() + ws_.segment_rows[s] * H;
    float* rows_out = out + ws_.segment_rows[s] * H;
    if (rows_->end_of(sg) == L) {
      norm_rows(c_, rows_in, final_norm, cfg_.rms_norm_eps, 0, sg.T, H, rows_out);
      sg.state->n_past += sg.T;
    } else {
      std::memcpy(rows_out, rows_in, size_t(sg.T * H) * sizeof(float));
    }
  }
  out_ = out;
}

void CpuDecoderBackend::logits(const kernels::WeightMatrix& lm_head, std::span<const int64_t> rows, float* out) {
  if (!out_) fail("CpuDecoderBackend::logits before a forward");
  const int64_t H = cfg_.hidden_size, n = int64_t(rows.size());
  logit_rows_.resize(size_t(n * H));
  for (int64_t i = 0; i < n; ++i) {
    if (rows[size_t(i)] < 0 || rows[size_t(i)] >= T_all_) fail("logits of row ", rows[size_t(i)], " of ", T_all_);
    std::memcpy(logit_rows_.data() + i * H, out_ + rows[size_t(i)] * H, size_t(H) * sizeof(float));
  }
  kernels::linear(c_, logit_rows_.data(), n, lm_head, out);
}

}  // namespace qwen35
