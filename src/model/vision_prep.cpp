#include "model/vision_prep.h"

#include <cstring>

#include "core/error.h"

namespace qwen35 {
namespace {

// A copy of matrix m (rows x cols, plain rows) widened to rows_to x cols_to with zeros, in m's
// dtype, in `store`: zero bytes are 0.0 in every float dtype and blocks of zeros (scale 0) in every
// block format. Only a float matrix widens its rows' length (a block's values share its scale).
kernels::WeightMatrix zero_padded(const kernels::WeightMatrix& m, int64_t rows_to, int64_t cols_to, WeightStore& store) {
  if (cols_to != m.cols && !dtype_info(m.dtype).is_float)
    fail("prepare_vision_weights: cannot widen the rows of a ", dtype_name(m.dtype), " matrix");
  const size_t row_bytes = dtype_bytes(m.dtype, size_t(cols_to)), used = dtype_bytes(m.dtype, size_t(m.cols));
  uint8_t* dst = store.allocate(row_bytes * size_t(rows_to));
  std::memset(dst, 0, row_bytes * size_t(rows_to));
  for (int64_t r = 0; r < m.rows; ++r) std::memcpy(dst + row_bytes * size_t(r), m.row(r), used);
  return kernels::WeightMatrix{m.dtype, dst, rows_to, cols_to, row_bytes};
}

}  // namespace

std::vector<NamedMatrix> vision_matrices(VisionWeights& w) {
  std::vector<NamedMatrix> out;
  auto add = [&](std::string name, kernels::WeightMatrix& m) { out.push_back(NamedMatrix{std::move(name), &m, false}); };
  add("v.patch_embd.weight", w.patch_embed.w);
  for (size_t j = 0; j < w.blocks.size(); ++j) {
    VisionBlockWeights& B = w.blocks[j];
    const std::string b = "v.blk." + std::to_string(j) + ".";
    add(b + "attn_qkv.weight", B.qkv.w);
    add(b + "attn_out.weight", B.proj.w);
    add(b + "ffn_up.weight", B.fc1.w);
    add(b + "ffn_down.weight", B.fc2.w);
  }
  add("mm.0.weight", w.merger_fc1.w);
  add("mm.2.weight", w.merger_fc2.w);
  return out;
}

void prepare_vision_weights(VisionWeights& w, const std::string& weights, WeightStore& store,
                            const WeightPrepOptions& options) {
  std::vector<NamedMatrix> mats = vision_matrices(w);
  std::vector<DType> types = vision_weight_types(weights, mats);
  // fc2's rows are the MLP's hidden width, which at the real sizes (4304 = 134.5 x 32) does not
  // split into blocks, so under a block format fc2 would stay in floats, a third of a block's
  // multiply-adds. The hidden layer is widened instead: zero rows and zero bias in fc1 make hidden
  // values gelu(0) = 0, which fc2's zero columns then multiply, so the MLP computes the same
  // function with fc2 in fc1's block format (fc1 itself may be stored in one: an mmproj's Q8_0). The
  // widened copies live until they are
  // converted, one block at a time.
  auto index_of = [&](const kernels::WeightMatrix& m) {
    for (size_t i = 0; i < mats.size(); ++i)
      if (mats[i].w == &m) return i;
    fail("prepare_vision_weights: matrix not in the list");
  };
  struct Widen {
    VisionBlockWeights* block;
    size_t up, down;  // indices into mats
    int64_t width;
  };
  std::vector<Widen> widen;
  for (VisionBlockWeights& b : w.blocks) {
    const size_t up = index_of(b.fc1.w), down = index_of(b.fc2.w);
    const DType t = types[up];
    if (!is_block_format(t) || !dtype_info(b.fc2.w.dtype).is_float || types[down] != b.fc2.w.dtype) continue;
    const int64_t blk = int64_t(dtype_info(t).block_elems), I = b.fc1.w.rows;
    if (b.fc2.w.cols != I || I % blk == 0) continue;
    widen.push_back({&b, up, down, (I + blk - 1) / blk * blk});
  }
  double total = 0, done = 0;
  for (const NamedMatrix& nm : mats) total += double(nm.w->rows) * double(nm.w->cols);
  auto run = [&](const std::vector<NamedMatrix>& list, const std::vector<DType>& ty) {
    double size = 0;
    for (const NamedMatrix& nm : list) size += double(nm.w->rows) * double(nm.w->cols);
    WeightPrepOptions o = options;
    o.progress = [&, size](double f) {
      if (options.progress) options.progress(total > 0 ? (done + f * size) / total : 1.0);
    };
    prepare_weights(list, ty, store, o);
    done += size;
  };
  std::vector<bool> prepared(mats.size(), false);
  for (const Widen& wd : widen) {
    VisionBlockWeights& b = *wd.block;
    WeightStore scratch;
    const kernels::WeightMatrix up_src = b.fc1.w, down_src = b.fc2.w;
    b.fc1.w = zero_padded(up_src, wd.width, up_src.cols, scratch);
    b.fc1.b.resize(size_t(wd.width), 0.0f);
    b.fc2.w = zero_padded(down_src, down_src.rows, wd.width, scratch);
    run({mats[wd.up], mats[wd.down]}, {types[wd.up], types[wd.up]});
    // fc1 stored in its block format already (an mmproj's Q8_0) is used as it is where the table
    // does not repack: its widened copy is then kept.
    if (scratch.owns(b.fc1.w.data) && b.fc1.w.dtype == types[wd.up] && b.fc1.w.layout == 0)
      b.fc1.w = zero_padded(b.fc1.w, b.fc1.w.rows, b.fc1.w.cols, store);
    if (scratch.owns(b.fc1.w.data) || scratch.owns(b.fc2.w.data))
      fail("prepare_vision_weights: the widened MLP of ", mats[wd.up].name, " was not converted");
    if (options.release_sources) {
      drop_pages(up_src.data, up_src.row_bytes * size_t(up_src.rows));
      drop_pages(down_src.data, down_src.row_bytes * size_t(down_src.rows));
    }
    prepared[wd.up] = prepared[wd.down] = true;
  }
  std::vector<NamedMatrix> rest;
  std::vector<DType> rest_types;
  for (size_t i = 0; i < mats.size(); ++i)
    if (!prepared[i]) {
      rest.push_back(mats[i]);
      rest_types.push_back(types[i]);
    }
  run(rest, rest_types);
}

}  // namespace qwen35
