#include "kernels/compute.h"

#include <algorithm>

#include "core/error.h"

namespace qwen35::kernels {
namespace {

// A table's kernel for a weight's dtype, or the ref twin (identical results, only slower).
MatmulFn float_kernel(const Compute& c, DType d) {
  MatmulFn fn = c.k->matmul[size_t(d)];
  if (!fn) fn = ref_table().matmul[size_t(d)];
  if (!fn) fail("no matmul kernel for weights of dtype ", dtype_name(d));
  return fn;
}

QMatmulFn block_kernel(const Compute& c, const WeightMatrix& w) {
  if (w.layout != 0) {
    if (w.layout != c.k->packing.layout) fail("weights packed for another kernel table (layout ", int(w.layout), ")");
    return c.k->qmatmul[size_t(w.dtype)];
  }
  // Plain rows: this table's kernel only if it reads this dtype unpacked.
  const PackedFormat& p = c.k->packing;
  if (c.k->qmatmul[size_t(w.dtype)] && (p.layout == 0 || p.group_bytes(w.dtype, w.cols) == 0))
    return c.k->qmatmul[size_t(w.dtype)];
  QMatmulFn fn = ref_table().qmatmul[size_t(w.dtype)];
  if (!fn) fail("no matmul kernel for weights of dtype ", dtype_name(w.dtype));
  return fn;
}

}  // namespace

void Activations::bind(const float* x, int64_t T, int64_t n, int64_t stride) {
  x_ = x;
  T_ = T;
  n_ = n;
  stride_ = stride;
  for (Form& f : forms_) f.valid = false;
}

const ActRows& Activations::quantized(const Compute& c, ActFormat fmt) {
  if (fmt == ActFormat::kF32) fail("Activations::quantized: kF32 is not a quantized format");
  Form& f = forms_[fmt == ActFormat::kQ8x32 ? 0 : 1];
  if (f.valid) return f.rows;
  if (n_ % act_block(fmt) != 0) fail("activation rows of ", n_, " values do not split into blocks of ", act_block(fmt));
  const ActLayout l = act_layout(fmt, n_);
  if (f.bytes.size() < size_t(T_) * l.row_bytes) f.bytes.resize(size_t(T_) * l.row_bytes);
  uint8_t* out = f.bytes.data();
  QuantizeActFn q = c.k->quantize_act ? c.k->quantize_act : ref_table().quantize_act;
  f.rows = ActRows{fmt, T_, n_, out, l};
  const int64_t tiles = c.k->act_tiles ? T_ / kActTile : 0;
  if (tiles > 0) {
    const size_t tb = act_tile_bytes(fmt, T_, n_);
    if (f.tile_bytes.size() < tb) f.tile_bytes.resize(tb);
    f.rows.tiles = f.tile_bytes.data();
  }
  // Rows are independent; large blocks split over the pool, a tile's rows quantized and then
  // interleaved by the same thread.
  const size_t units = size_t((T_ + kActTile - 1) / kActTile);
  c.pool->parallel_for(units, 1, [&](size_t b, size_t e) {
    const int64_t r0 = int64_t(b) * kActTile, r1 = std::min<int64_t>(T_, int64_t(e) * kActTile);
    q(fmt, x_ + r0 * stride_, r1 - r0, stride_, n_, out + size_t(r0) * l.row_bytes);
    if (tiles > 0) tile_act_rows(f.rows, int64_t(b), std::min<int64_t>(tiles, int64_t(e)), f.tile_bytes.data());
  });
  f.valid = true;
  return f.rows;
}

namespace {
// Chunk boundaries as fractions of a pass's cost. Each chunk is a share of what is left (guided
// scheduling): the first chunks are long streams, the last ones short, so the thread that
// finishes first waits for a small chunk of the other's rather than half of one of the equal
// chunks used before (four per thread, an eighth of the pass at two threads). Sapphire Rapids VM,
// 2 threads, 3 interleaved runs each: four-stream decode +3-6%, one-token decode -1 to +8%.
// The smallest chunk is 1/512 of the pass at two threads (in practice one item: 64 rows), not
// 1/32: the threads' waits at the end of each of a token's 161 passes were 3% of its samples;
// same VM, 3 interleaved runs: one-token decode +0.5-3%, pp256 +3-4%, four streams +2-3%.
void guided_fractions(int threads, std::vector<double>& f) {
  f.assign(1, 0.0);
  if (threads <= 1) return;
  const double keep = 1.0 - 1.0 / (2.0 * threads), last = 1.0 / (256.0 * threads);
  for (double left = keep; left > last; left *= keep) f.push_back(1.0 - left);
}
}  // namespace

void linear_pass(const Compute& c, Activations& list, Activations* const* xs, const LinearOut* o, int n_out) {
  auto input = [&](int i) -> Activations& { return xs ? *xs[i] : list; };
  std::vector<const ActRows*>& acts = list.pass_acts_;
  std::vector<Activations::PassItem>& items = list.pass_items_;
  std::vector<size_t>& starts = list.pass_starts_;
  acts.assign(size_t(n_out), nullptr);
  // Quantize each input once per format before the parallel pass.
  for (int i = 0; i < n_out; ++i) {
    const WeightMatrix& w = *o[i].w;
    Activations& x = input(i);
    if (w.cols != x.n()) fail("linear: weight has ", w.cols, " columns, input rows have ", x.n());
    if (is_block_format(w.dtype)) acts[size_t(i)] = &x.quantized(c, act_format_for(w.dtype));
  }
  // Work items of whole packed groups (or 16-row grains), costed by weight bytes: 64 rows, or a
  // 1024th of the pass's rows where that is more (the LM head's 248k rows made 3880 items, whose
  // list and chunk bounds the caller built alone for every token; the smallest chunk is a 512th).
  int64_t pass_rows = 0;
  for (int i = 0; i < n_out; ++i) pass_rows += o[i].w->rows;
  const int64_t item_rows = std::max<int64_t>(64, pass_rows / 1024);
  items.clear();
  double total = 0;
  for (int i = 0; i < n_out; ++i) {
    const WeightMatrix& w = *o[i].w;
    const int64_t q = w.layout != 0 ? c.k->packing.group_rows : 16;
    const int64_t per_item = std::max<int64_t>(q, (item_rows + q - 1) / q * q);
    const double row_cost = double(dtype_bytes(w.dtype, size_t(w.cols)) + 64);
    for (int64_t r = 0; r < w.rows; r += per_item) {
      Activations::PassItem it{i, r, std::min(w.rows, r + per_item), 0};
      it.cost = row_cost * double(it.r1 - it.r0);
      total += it.cost;
      items.push_back(it);
    }
  }
  // Chunks claimed dynamically in order: whichever thread finishes first takes the next, so a
  // slow core is helped by the other. Chunk k starts at the first item whose preceding cost
  // reaches fractions[k] of the total.
  std::vector<double>& fractions = list.pass_fractions_;
  guided_fractions(c.pool->limit(), fractions);
  starts.assign(1, 0);
  {
    double acc = 0;
    size_t k = 1;
    for (size_t j = 0; j < items.size(); ++j) {
      const size_t k0 = k;
      while (k < fractions.size() && acc >= total * fractions[k]) ++k;
      if (k != k0 && starts.back() != j) starts.push_back(j);
      acc += items[j].cost;
    }
    starts.push_back(items.size());
  }
  const size_t n_chunks = starts.size() - 1;
  c.pool->parallel_for(n_chunks, 1, [&](size_t b, size_t e) {
    for (size_t j = starts[b]; j < starts[e]; ++j) {
      const Activations::PassItem& it = items[j];
      const LinearOut& out = o[it.out];
      const WeightMatrix& w = *out.w;
      if (acts[size_t(it.out)]) {
        block_kernel(c, w)(*acts[size_t(it.out)], w, it.r0, it.r1, out.y, out.y_stride);
      } else {
        const Activations& x = input(it.out);
        float_kernel(c, w.dtype)(x.x(), x.T(), x.stride(), w, it.r0, it.r1, out.y, out.y_stride);
      }
    }
  }, n_chunks);
}

void linear_fused(const Compute& c, Activations& x, std::span<const LinearOut> outs) {
  linear_pass(c, x, nullptr, outs.data(), int(outs.size()));
}

void linear_each(const Compute& c, std::span<Activations* const> xs, std::span<const LinearOut> outs) {
  if (xs.size() != outs.size()) fail("linear_each: ", xs.size(), " inputs for ", outs.size(), " outputs");
  if (outs.empty()) return;
  linear_pass(c, *xs[0], xs.data(), outs.data(), int(outs.size()));
}

void linear(const Compute& c, Activations& x, const WeightMatrix& w, float* y, int64_t y_stride) {
  linear_fused(c, x, {LinearOut{&w, y, y_stride}});
}

void linear_strided(const Compute& c, const float* x, int64_t T, int64_t x_stride, const WeightMatrix& w, float* y,
                    int64_t y_stride) {
  Activations a;
  a.bind(x, T, w.cols, x_stride);
  linear(c, a, w, y, y_stride);
}

void linear(const Compute& c, const float* x, int64_t T, const WeightMatrix& w, float* y) {
  linear_strided(c, x, T, w.cols, w, y, w.rows);
}

void weight_row_to_f32(const WeightMatrix& w, int64_t r, float* out) {
  if (w.layout == 0) return ref_table().row_to_f32(w.dtype, w.row(r), out, w.cols);
  for (const KernelTable* t : supported_tables())
    if (t->packing.layout == w.layout && t->packing.row_to_f32) return t->packing.row_to_f32(w, r, out);
  fail("weights packed in layout ", int(w.layout), ", which no kernel table on this CPU reads");
}

}  // namespace qwen35::kernels
