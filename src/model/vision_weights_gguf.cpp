// VisionWeights from a clip mmproj GGUF (gguf.md section 4, spec 11.3).
#include <cstring>

#include "core/error.h"
#include "model/tensor_names.h"
#include "model/text_weights.h"
#include "model/vision_weights.h"

namespace qwen35 {
namespace {

// The mmproj name of an HF vision tensor ("blocks.0.norm1.weight" -> "v.blk.0.ln1.weight").
std::string mmproj_name(const std::string& hf) { return *gguf_vision_tensor_name("model.visual." + hf); }

// HF module names (their .weight / .bias), looked up under their mmproj names.
LayerNormWeights mmproj_layer_norm(const GgufFile& f, const std::string& hf, int64_t n) {
  return {gguf_vector(f, mmproj_name(hf + ".weight"), Shape{n}), gguf_vector(f, mmproj_name(hf + ".bias"), Shape{n})};
}

LinearWeights mmproj_linear(const GgufFile& f, const std::string& hf, int64_t out, int64_t in) {
  return {gguf_matrix(f, mmproj_name(hf + ".weight"), out, in), gguf_vector(f, mmproj_name(hf + ".bias"), Shape{out})};
}

// v.patch_embd.weight and .weight.1, each [D, C, P, P] (ggml ne {P, P, C, D}), interleaved into
// the Conv3d matrix [D, C*2*P*P] whose row order is (c, t, y, x), as pixel_values rows are.
WeightMatrix patch_matrix(const GgufFile& f, const VisionConfig& c, std::shared_ptr<const std::vector<uint8_t>>& owned) {
  if (c.temporal_patch_size != 2) fail(f.path(), ": an mmproj patch embedding has 2 frames, the config ", c.temporal_patch_size);
  const Shape shape{c.hidden_size, c.in_channels, c.patch_size, c.patch_size};
  const TensorView t0 = f.get_tensor("v.patch_embd.weight").view();
  const TensorView t1 = f.get_tensor("v.patch_embd.weight.1").view();
  for (const auto& [name, t] : {std::pair{"v.patch_embd.weight", &t0}, std::pair{"v.patch_embd.weight.1", &t1}}) {
    if (!dtype_info(t->dtype).is_float) fail("tensor '", name, "': expected dtype F32, F16 or BF16, got ", dtype_name(t->dtype));
    if (!(t->shape == shape)) fail("tensor '", name, "': expected shape ", shape.to_string(), ", got ", t->shape.to_string());
  }
  // Both in one dtype (f32 when the two differ).
  const DType dtype = t0.dtype == t1.dtype ? t0.dtype : DType::F32;
  const size_t es = dtype_info(dtype).block_bytes;
  const int64_t D = c.hidden_size, C = c.in_channels, PP = int64_t(c.patch_size) * c.patch_size;
  auto bytes = std::make_shared<std::vector<uint8_t>>(size_t(D * C * 2 * PP) * es);
  std::vector<float> f0, f1;
  if (dtype != t0.dtype || dtype != t1.dtype) f0 = to_f32(t0), f1 = to_f32(t1);
  for (int64_t d = 0; d < D; ++d)
    for (int64_t ch = 0; ch < C; ++ch)
      for (int64_t frame = 0; frame < 2; ++frame) {
        const int64_t src = (d * C + ch) * PP, dst = ((d * C + ch) * 2 + frame) * PP;
        const void* from = f0.empty() ? static_cast<const uint8_t*>((frame ? t1 : t0).data) + size_t(src) * es
                                      : static_cast<const void*>((frame ? f1 : f0).data() + src);
        std::memcpy(bytes->data() + size_t(dst) * es, from, size_t(PP) * es);
      }
  WeightMatrix m;
  m.dtype = dtype;
  m.data = bytes->data();
  m.rows = D;
  m.cols = C * 2 * PP;
  m.row_bytes = size_t(m.cols) * es;
  owned = std::move(bytes);
  return m;
}

}  // namespace

VisionWeights VisionWeights::bind_mmproj(const GgufFile& f, const VisionConfig& c) {
  const int64_t D = c.hidden_size, I = c.intermediate_size, m2 = int64_t(c.spatial_merge_size) * c.spatial_merge_size;
  VisionWeights w;
  w.patch_embed.w = patch_matrix(f, c, w.owned);
  w.patch_embed.b = gguf_vector(f, mmproj_name("patch_embed.proj.bias"), Shape{D});
  w.pos_table = gguf_vector(f, mmproj_name("pos_embed.weight"), Shape{c.num_position_embeddings, D});
  for (int j = 0; j < c.depth; ++j) {
    const std::string bp = "blocks." + std::to_string(j) + ".";
    VisionBlockWeights b;
    b.norm1 = mmproj_layer_norm(f, bp + "norm1", D);
    b.qkv = mmproj_linear(f, bp + "attn.qkv", 3 * D, D);
    b.proj = mmproj_linear(f, bp + "attn.proj", D, D);
    b.norm2 = mmproj_layer_norm(f, bp + "norm2", D);
    b.fc1 = mmproj_linear(f, bp + "mlp.linear_fc1", I, D);
    b.fc2 = mmproj_linear(f, bp + "mlp.linear_fc2", D, I);
    w.blocks.push_back(std::move(b));
  }
  if (f.find_tensor(mmproj_name("blocks." + std::to_string(c.depth) + ".norm1.weight")))
    fail(f.path(), ": has more vision blocks than clip.vision.block_count (", c.depth, ")");
  w.merger_norm = mmproj_layer_norm(f, "merger.norm", D);
  w.merger_fc1 = mmproj_linear(f, "merger.linear_fc1", D * m2, D * m2);
  w.merger_fc2 = mmproj_linear(f, "merger.linear_fc2", c.out_hidden_size, D * m2);
  return w;
}

}  // namespace qwen35
