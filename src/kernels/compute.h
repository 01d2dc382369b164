// What a forward pass computes with: the kernel table and the thread pool, plus the
// data-parallel wrappers the model calls (each splits its work over the pool).
#pragma once

#include <initializer_list>
#include <span>
#include <vector>

#include "core/thread_pool.h"
#include "kernels/kernels.h"

namespace qwen35::kernels {

struct Compute {
  const KernelTable* k = nullptr;
  ThreadPool* pool = nullptr;
};

// The input rows of one or more matmuls: T rows of n floats, and, made on first use, their
// quantized forms for block-format weights. Each form is computed once and shared by every matrix
// that reads these rows (q/k/v/z/b/a all read the same normed hidden state).
struct LinearOut;
struct RowRange;

class Activations {
 public:
  // Views x [T, n] (rows `stride` floats apart); forgets earlier quantized forms.
  void bind(const float* x, int64_t T, int64_t n, int64_t stride);
  void bind(const float* x, int64_t T, int64_t n) { bind(x, T, n, n); }

  const float* x() const { return x_; }
  int64_t T() const { return T_; }
  int64_t n() const { return n_; }
  int64_t stride() const { return stride_; }
  // The rows quantized to `fmt` (fmt != kF32), computed on the first call after bind().
  const ActRows& quantized(const Compute& c, ActFormat fmt);

 private:
  const float* x_ = nullptr;
  int64_t T_ = 0, n_ = 0, stride_ = 0;
  struct Form {
    std::vector<uint8_t> bytes, tile_bytes;
    ActRows rows;
    bool valid = false;
    size_t first_unit = 0;  // while a pass fills it: its first unit among the pass's
    bool pending = false;
  };
  Form forms_[2];  // kQ8x32, kQ8x256
  Form& form(ActFormat fmt) { return forms_[fmt == ActFormat::kQ8x32 ? 0 : 1]; }
  // Quantizing in two steps, so that one pool pass can fill the forms of several inputs (the
  // experts' rows of a block): sizes the form and returns its units of work (kActTile rows
  // each; 0 when it is valid already), then fills units [b, e).
  size_t begin_quantize(const Compute& c, ActFormat fmt);
  void quantize_units(const Compute& c, ActFormat fmt, size_t b, size_t e);
  friend void quantize_inputs(const Compute& c, Activations& list, Activations* const* xs, const ActFormat* fmts, int n);
  struct QuantJob {
    Activations* x;
    ActFormat fmt;
  };
  std::vector<QuantJob> pass_jobs_;
  std::vector<Activations*> pass_ins_;
  std::vector<ActFormat> pass_fmts_;

  // The work list of the last linear pass over these rows: the rows' owner keeps its memory
  // (a decoded token makes over a hundred passes), and the pass's tasks read it from here.
  friend void linear_pass(const Compute& c, Activations& list, Activations* const* xs, const RowRange* rows,
                          const LinearOut* o, int n_out);
  struct PassItem {
    int out;  // index into the outputs
    int64_t r0, r1;
    double cost;
  };
  std::vector<const ActRows*> pass_acts_;
  std::vector<ActRows> pass_views_;  // outputs' row ranges of their inputs' quantized rows
  std::vector<PassItem> pass_items_;
  std::vector<size_t> pass_starts_;
  std::vector<double> pass_fractions_;
};

// One output of a (fused) linear call: y[T, w.rows] with rows y_stride floats apart.
struct LinearOut {
  const WeightMatrix* w;
  float* y;
  int64_t y_stride;
};

// Rows [r0, r0 + n) of an input.
struct RowRange {
  int64_t r0, n;
};

// y[T, W.rows] = x[T, W.cols] * W^T, rows of y and x contiguous unless strides say otherwise.
// These two bind the rows to an Activations of their own for the call (its quantized rows and
// work list are allocated each time); hot paths keep an Activations in their workspace.
void linear(const Compute& c, const float* x, int64_t T, const WeightMatrix& w, float* y);
void linear_strided(const Compute& c, const float* x, int64_t T, int64_t x_stride, const WeightMatrix& w, float* y,
                    int64_t y_stride);
void linear(const Compute& c, Activations& x, const WeightMatrix& w, float* y, int64_t y_stride);
// Several matrices over the same input in one parallel pass (one synchronisation point).
void linear_fused(const Compute& c, Activations& x, std::span<const LinearOut> outs);
inline void linear_fused(const Compute& c, Activations& x, std::initializer_list<LinearOut> outs) {
  linear_fused(c, x, std::span<const LinearOut>(outs.begin(), outs.size()));
}
// Several matrices, each over inputs of its own (xs[i] for outs[i]), in one parallel pass: a
// decoded token's expert down projections. Each output is what linear(xs[i], outs[i]) gives; the
// pass's work list lives in xs[0].
void linear_each(const Compute& c, std::span<Activations* const> xs, std::span<const LinearOut> outs);
// The same, output i reading only rows[i] of xs[i] (its y row 0 for the range's first): a block's
// experts, each over the rows that chose it, gathered into one input and quantized together. Each
// output is what linear() gives over those rows bound alone, as long as every r0 is a multiple of
// kActTile (so the rows' token tiles are the input's).
void linear_each(const Compute& c, std::span<Activations* const> xs, std::span<const RowRange> rows,
                 std::span<const LinearOut> outs);

// All of the above: the pass over outputs o[0, n_out), output i reading xs[i] (xs null: all read
// `list`), rows[i] of it (rows null: all), its work list kept in `list`.
void linear_pass(const Compute& c, Activations& list, Activations* const* xs, const RowRange* rows, const LinearOut* o,
                 int n_out);

// Makes the quantized forms xs[i] needs in fmts[i] (kF32: none; repeats are fine) in at most one
// pool pass: none when every input is a single unit of work (a decoded token's rows), where a
// pass would cost more than it splits. Its job list is kept in `list`.
void quantize_inputs(const Compute& c, Activations& list, Activations* const* xs, const ActFormat* fmts, int n);

// Dequantizes row r of any weight matrix (plain or packed by any table) to f32.
void weight_row_to_f32(const WeightMatrix& w, int64_t r, float* out);

}  // namespace qwen35::kernels
