#include "model/weight_prep.h"

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cstring>

#include "core/error.h"
#include "core/half.h"
#include "kernels/compute.h"
#include "kernels/quant/quantize.h"
#include "model/quant_mix.h"

namespace qwen35 {
namespace {

std::string lower(std::string s) {
  for (char& c : s) c = char(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// Whether a matrix can be stored as `t`: its rows must split into whole blocks.
bool fits(DType t, int64_t cols) { return cols % int64_t(dtype_info(t).block_elems) == 0; }

void convert_row(DType t, const float* x, uint8_t* out, int64_t n) {
  switch (t) {
    case DType::F32: std::memcpy(out, x, size_t(n) * 4); return;
    case DType::BF16:
      for (int64_t i = 0; i < n; ++i) {
        const uint16_t h = f32_to_bf16(x[i]);
        std::memcpy(out + 2 * i, &h, 2);
      }
      return;
    case DType::F16:
      for (int64_t i = 0; i < n; ++i) {
        const uint16_t h = f32_to_f16(x[i]);
        std::memcpy(out + 2 * i, &h, 2);
      }
      return;
    default: kernels::quant::quantize_row(t, x, out, n);
  }
}

}  // namespace

std::string weight_type_names() {
  std::string names = "auto";
  for (QuantPreset p : all_quant_presets()) names += ", " + lower(std::string(preset_name(p)));
  return names;
}

std::vector<DType> choose_weight_types(const std::string& weights, const std::vector<NamedMatrix>& matrices,
                                       const WeightModelShape& shape) {
  std::vector<DType> types;
  for (const NamedMatrix& m : matrices) types.push_back(m.w->dtype);
  const std::string w = lower(weights);
  if (w.empty() || w == "auto") return types;
  const std::optional<QuantPreset> preset = parse_quant_preset(w);
  if (!preset) fail("--weights ", weights, ": unknown weight type (expected one of: ", weight_type_names(), ")");
  const bool to_float = *preset == QuantPreset::F32 || *preset == QuantPreset::F16 || *preset == QuantPreset::BF16;
  // A stacked expert tensor arrives as its E per-expert views, one name E times: the mix gives
  // each the type of the 3-D tensor (an expert model's rules read the layer from the name).
  std::vector<GgufTensorShape> shapes;
  for (const NamedMatrix& m : matrices) shapes.push_back(GgufTensorShape{m.name, {m.w->cols, m.w->rows}});
  const std::vector<DType> mix = preset_tensor_types(*preset, shapes, shape.n_layers, shape.n_gqa, shape.n_experts);
  for (size_t i = 0; i < matrices.size(); ++i) {
    if (!dtype_info(types[i]).is_float) continue;  // already a block format: GGUF weights stay as they are
    // The MoE router and shared-expert gate keep their stored floats under every preset: their
    // logits choose the experts, and a rounding there changes a choice, not a digit.
    if (matrices[i].name.find("ffn_gate_inp") != std::string::npos) continue;
    // Tensors llama-quantize never quantizes come back as F32 (the converter's type): keep ours.
    if (!to_float && !tensor_allows_quantization(matrices[i].name, 2)) continue;
    types[i] = mix[i];
  }
  return types;
}

std::vector<DType> vision_weight_types(const std::string& weights, const std::vector<NamedMatrix>& matrices) {
  std::vector<DType> types;
  for (const NamedMatrix& m : matrices) types.push_back(m.w->dtype);
  const std::string w = lower(weights);
  if (w.empty() || w == "auto") return types;
  const std::optional<QuantPreset> preset = parse_quant_preset(w);
  if (!preset) fail("--weights ", weights, ": unknown weight type (expected one of: ", weight_type_names(), ")");
  const DType def = preset_default_type(*preset);
  const DType target = is_block_format(def) ? DType::Q8_0 : def;
  for (size_t i = 0; i < matrices.size(); ++i) {
    if (!dtype_info(types[i]).is_float || matrices[i].name.find("patch_embd") != std::string::npos) continue;
    if (fits(target, matrices[i].w->cols)) types[i] = target;
  }
  return types;
}

bool WeightStore::owns(const void* p) const {
  const uint8_t* q = static_cast<const uint8_t*>(p);
  for (const PageBuffer& b : buffers_)
    if (q >= b.data() && q < b.data() + b.size()) return true;
  return false;
}

uint8_t* WeightStore::allocate(size_t bytes) {
  buffers_.emplace_back(bytes);
  bytes_ += bytes;
  return buffers_.back().data();
}

void prepare_weights(const std::vector<NamedMatrix>& matrices, const std::vector<DType>& types, WeightStore& store,
                     const WeightPrepOptions& o) {
  if (types.size() != matrices.size()) fail("prepare_weights: ", types.size(), " types for ", matrices.size(), " matrices");
  const kernels::KernelTable& table = o.table ? *o.table : kernels::active_table();
  const kernels::PackedFormat& pf = table.packing;
  double total = 0, done = 0;
  for (const NamedMatrix& m : matrices) total += double(m.w->rows) * double(m.w->cols);
  // The experts of one stacked tensor (consecutive matrices of one name, source type, shape and
  // target type: ffn_gate_exps.weight x E) share one allocation, as they share one tensor in a
  // file: 256 experts x 3 x 40 layers would otherwise be 30720 mappings.
  auto same_tensor = [&](size_t a, size_t b) {
    const kernels::WeightMatrix &x = *matrices[a].w, &y = *matrices[b].w;
    return matrices[a].name == matrices[b].name && types[a] == types[b] && x.dtype == y.dtype && x.rows == y.rows &&
           x.cols == y.cols && x.layout == y.layout && matrices[a].row_lookup == matrices[b].row_lookup;
  };
  uint8_t* group_next = nullptr;  // the next expert's place in its tensor's allocation
  size_t group_left = 0;
  for (size_t i = 0; i < matrices.size(); ++i) {
    const NamedMatrix& m = matrices[i];
    kernels::WeightMatrix& w = *m.w;
    if (w.layout != 0) fail("weight '", m.name, "' is already packed");
    const DType target = types[i];
    if (!fits(target, w.cols)) fail("weight '", m.name, "': ", w.cols, " columns do not split into ", dtype_name(target), " blocks");
    const bool pack = !m.row_lookup && pf.layout != 0 && is_block_format(target) && pf.group_bytes(target, w.cols) != 0;
    if (target == w.dtype && !pack) {
      done += double(w.rows) * double(w.cols);
      continue;  // the mapped view is what the kernels read
    }
    const kernels::WeightMatrix src = w;
    const size_t plain_row = dtype_bytes(target, size_t(w.cols));
    const int64_t unit = pack ? pf.group_rows : 16;  // rows per work item
    const int64_t units = (w.rows + unit - 1) / unit;
    const size_t unit_bytes = pack ? pf.group_bytes(target, w.cols) : plain_row * size_t(unit);
    // Each expert starts on a cache line, as a matrix of its own does.
    const size_t bytes = ((pack ? unit_bytes * size_t(units) : plain_row * size_t(w.rows)) + 63) / 64 * 64;
    uint8_t* dst = group_next;
    if (group_left > 0) {
      group_next += bytes;
      --group_left;
    } else {
      size_t n = 1;
      while (i + n < matrices.size() && same_tensor(i, i + n)) ++n;
      dst = store.allocate(bytes * n);
      group_next = dst + bytes;
      group_left = n - 1;
    }
    o.pool->parallel_for(size_t(units), 1, [&](size_t u0, size_t u1) {
      std::vector<float> f32(size_t(src.cols));
      std::vector<uint8_t> plain(pack ? plain_row * size_t(unit) : 0);
      for (size_t u = u0; u < u1; ++u) {
        const int64_t r0 = int64_t(u) * unit, r1 = std::min(w.rows, r0 + unit);
        uint8_t* out = pack ? plain.data() : dst + plain_row * size_t(r0);
        for (int64_t r = r0; r < r1; ++r) {
          uint8_t* row_out = out + plain_row * size_t(r - r0);
          if (target == src.dtype) {
            std::memcpy(row_out, src.row(r), plain_row);
          } else {
            kernels::weight_row_to_f32(src, r, f32.data());
            convert_row(target, f32.data(), row_out, src.cols);
          }
        }
        if (pack) {
          // The group's rows as a plain matrix whose first row is row r0.
          kernels::WeightMatrix rows{target, plain.data(), r1 - r0, src.cols, plain_row};
          pf.pack(rows, 0, 1, dst + unit_bytes * u);
        }
      }
    });
    // Our own memory (a tied head copied from the prepared embedding) is still in use.
    if (o.release_sources && !store.owns(src.data)) drop_pages(src.data, src.row_bytes * size_t(src.rows));
    if (pack) w = kernels::WeightMatrix{target, dst, src.rows, src.cols, 0, pf.layout, unit_bytes};
    else w = kernels::WeightMatrix{target, dst, src.rows, src.cols, plain_row};
    done += double(w.rows) * double(w.cols);
    if (o.progress) o.progress(total > 0 ? done / total : 1.0);
  }
}

}  // namespace qwen35
