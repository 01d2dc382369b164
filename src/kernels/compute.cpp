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
  Activations* self = this;
  quantize_inputs(c, *this, &self, &fmt, 1);
  return form(fmt).rows;
}

size_t Activations::begin_quantize(const Compute& c, ActFormat fmt) {
  Form& f = form(fmt);
  if (f.valid || f.pending) return 0;
  if (n_ % act_block(fmt) != 0) fail("activation rows of ", n_, " values do not split into blocks of ", act_block(fmt));
  const ActLayout l = act_layout(fmt, n_);
  if (f.bytes.size() < size_t(T_) * l.row_bytes) f.bytes.resize(size_t(T_) * l.row_bytes);
  f.rows = ActRows{fmt, T_, n_, f.bytes.data(), l};
  if (T_ == 0) {
    f.valid = true;
    return 0;
  }
  if (c.k->act_tiles && T_ >= kActTile) {
    const size_t tb = act_tile_bytes(fmt, T_, n_);
    if (f.tile_bytes.size() < tb) f.tile_bytes.resize(tb);
    f.rows.tiles = f.tile_bytes.data();
  }
  f.pending = true;
  return size_t((T_ + kActTile - 1) / kActTile);
}

// Rows are independent; a unit's rows are quantized and then, when they make a whole tile,
// interleaved by the same thread.
void Activations::quantize_units(const Compute& c, ActFormat fmt, size_t b, size_t e) {
  Form& f = form(fmt);
  const QuantizeActFn q = c.k->quantize_act ? c.k->quantize_act : ref_table().quantize_act;
  const int64_t r0 = int64_t(b) * kActTile, r1 = std::min<int64_t>(T_, int64_t(e) * kActTile);
  q(fmt, x_ + r0 * stride_, r1 - r0, stride_, n_, f.bytes.data() + size_t(r0) * f.rows.layout.row_bytes);
  const int64_t tiles = f.rows.tiles ? T_ / kActTile : 0;
  if (tiles > int64_t(b)) tile_act_rows(f.rows, int64_t(b), std::min<int64_t>(tiles, int64_t(e)), f.tile_bytes.data());
}

void quantize_inputs(const Compute& c, Activations& list, Activations* const* xs, const ActFormat* fmts, int n) {
  std::vector<Activations::QuantJob>& jobs = list.pass_jobs_;
  jobs.clear();
  size_t units = 0;
  bool split = false;
  // A form already pending (two outputs reading one input: a fused gate and up) is made once.
  auto clear_pending = [&] {
    for (const Activations::QuantJob& j : jobs) j.x->form(j.fmt).pending = false;
  };
  try {
    for (int i = 0; i < n; ++i) {
      if (fmts[i] == ActFormat::kF32) continue;
      const size_t u = xs[i]->begin_quantize(c, fmts[i]);
      if (u == 0) continue;
      xs[i]->form(fmts[i]).first_unit = units;
      jobs.push_back({xs[i], fmts[i]});
      units += u;
      split |= u > 1;
    }
    auto run = [&](size_t b, size_t e) {
      // The jobs overlapping units [b, e), each given its own part of the range (jobs are in unit
      // order, so the first is found by bisection).
      auto it = std::upper_bound(jobs.begin(), jobs.end(), b, [](size_t u, const Activations::QuantJob& j) {
        return u < j.x->form(j.fmt).first_unit;
      });
      for (--it; it != jobs.end(); ++it) {
        const size_t j0 = it->x->form(it->fmt).first_unit;
        if (j0 >= e) break;
        const size_t j1 = j0 + size_t((it->x->T() + kActTile - 1) / kActTile);
        if (j1 > b) it->x->quantize_units(c, it->fmt, std::max(b, j0) - j0, std::min(e, j1) - j0);
      }
    };
    if (split) c.pool->parallel_for(units, 1, run);
    else if (units > 0) run(0, units);
  } catch (...) {
    clear_pending();
    throw;
  }
  clear_pending();
  for (const Activations::QuantJob& j : jobs) j.x->form(j.fmt).valid = true;
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

void linear_pass(const Compute& c, Activations& list, Activations* const* xs, const RowRange* rows, const LinearOut* o,
                 int n_out) {
  auto input = [&](int i) -> Activations& { return xs ? *xs[i] : list; };
  std::vector<const ActRows*>& acts = list.pass_acts_;
  std::vector<Activations::PassItem>& items = list.pass_items_;
  std::vector<size_t>& starts = list.pass_starts_;
  acts.assign(size_t(n_out), nullptr);
  // Every input quantized once per format, all in one pass before the matmuls'.
  std::vector<Activations*>& ins = list.pass_ins_;
  std::vector<ActFormat>& fmts = list.pass_fmts_;
  ins.resize(size_t(n_out));
  fmts.resize(size_t(n_out));
  for (int i = 0; i < n_out; ++i) {
    const WeightMatrix& w = *o[i].w;
    ins[size_t(i)] = &input(i);
    if (w.cols != ins[size_t(i)]->n()) fail("linear: weight has ", w.cols, " columns, input rows have ", ins[size_t(i)]->n());
    fmts[size_t(i)] = is_block_format(w.dtype) ? act_format_for(w.dtype) : ActFormat::kF32;
  }
  quantize_inputs(c, list, ins.data(), fmts.data(), n_out);
  // An output's rows: all its input's, or a range of them (quantized rows as a view of the input's).
  auto range = [&](int i) { return rows ? rows[i] : RowRange{0, ins[size_t(i)]->T()}; };
  std::vector<ActRows>& views = list.pass_views_;
  if (rows) views.resize(size_t(n_out));
  for (int i = 0; i < n_out; ++i) {
    const RowRange r = range(i);
    if (r.r0 < 0 || r.n < 0 || r.r0 + r.n > ins[size_t(i)]->T())
      fail("linear: rows [", r.r0, ", ", r.r0 + r.n, ") of an input of ", ins[size_t(i)]->T());
    if (fmts[size_t(i)] == ActFormat::kF32) continue;
    const ActRows& all = ins[size_t(i)]->form(fmts[size_t(i)]).rows;
    if (!rows) {
      acts[size_t(i)] = &all;
      continue;
    }
    if (all.tiles && r.r0 % kActTile != 0) fail("linear: rows from ", r.r0, " do not start a token tile");
    ActRows& v = views[size_t(i)];
    v = all;
    v.T = r.n;
    v.data = all.row(r.r0);
    v.tiles = all.tiles && r.n >= kActTile ? all.tile(r.r0 / kActTile) : nullptr;
    acts[size_t(i)] = &v;
  }
  // Work items of whole packed groups (or 16-row grains), costed by weight bytes times input rows
  // (one pass's inputs may differ in length: the experts' rows of a block): 64 rows, or a 1024th
  // of the pass's rows where that is more (the LM head's 248k rows made 3880 items, whose list and
  // chunk bounds the caller built alone for every token; the smallest chunk is a 512th).
  int64_t pass_rows = 0;
  for (int i = 0; i < n_out; ++i) pass_rows += o[i].w->rows;
  const int64_t item_rows = std::max<int64_t>(64, pass_rows / 1024);
  items.clear();
  double total = 0;
  for (int i = 0; i < n_out; ++i) {
    const WeightMatrix& w = *o[i].w;
    const int64_t q = w.layout != 0 ? c.k->packing.group_rows : 16;
    const int64_t per_item = std::max<int64_t>(q, (item_rows + q - 1) / q * q);
    const double row_cost =
        double(dtype_bytes(w.dtype, size_t(w.cols)) + 64) * double(std::max<int64_t>(1, range(i).n));
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
        const RowRange r = range(it.out);
        float_kernel(c, w.dtype)(x.x() + r.r0 * x.stride(), r.n, x.stride(), w, it.r0, it.r1, out.y, out.y_stride);
      }
    }
  }, n_chunks);
}

void linear_fused(const Compute& c, Activations& x, std::span<const LinearOut> outs) {
  linear_pass(c, x, nullptr, nullptr, outs.data(), int(outs.size()));
}

void linear_each(const Compute& c, std::span<Activations* const> xs, std::span<const LinearOut> outs) {
  if (xs.size() != outs.size()) fail("linear_each: ", xs.size(), " inputs for ", outs.size(), " outputs");
  if (outs.empty()) return;
  linear_pass(c, *xs[0], xs.data(), nullptr, outs.data(), int(outs.size()));
}

void linear_each(const Compute& c, std::span<Activations* const> xs, std::span<const RowRange> rows,
                 std::span<const LinearOut> outs) {
  if (xs.size() != outs.size() || rows.size() != outs.size())
    fail("linear_each: ", xs.size(), " inputs and ", rows.size(), " row ranges for ", outs.size(), " outputs");
  if (outs.empty()) return;
  linear_pass(c, *xs[0], xs.data(), rows.data(), outs.data(), int(outs.size()));
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
