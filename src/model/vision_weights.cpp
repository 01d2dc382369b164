#include "model/vision_weights.h"

#include "core/error.h"
#include "model/text_weights.h"

namespace qwen35 {
namespace {

LayerNormWeights bind_layer_norm(const Checkpoint& ck, const std::string& name, int64_t n) {
  return {bind_vector(ck, name + ".weight", Shape{n}), bind_vector(ck, name + ".bias", Shape{n})};
}

LinearWeights bind_linear(const Checkpoint& ck, const std::string& name, int64_t out, int64_t in) {
  return {bind_matrix(ck, name + ".weight", out, in), bind_vector(ck, name + ".bias", Shape{out})};
}

// The Conv3d weight [D, C, T, P, P] as a [D, C*T*P*P] matrix view (contiguous, same bytes).
WeightMatrix bind_conv3d_as_matrix(const Checkpoint& ck, const std::string& name, const VisionConfig& c) {
  const Shape expected{c.hidden_size, c.in_channels, c.temporal_patch_size, c.patch_size, c.patch_size};
  const TensorView& t = ck.get(name);
  if (!dtype_info(t.dtype).is_float)
    fail("tensor '", name, "': expected dtype F32, F16 or BF16, got ", dtype_name(t.dtype));
  if (!(t.shape == expected))
    fail("tensor '", name, "': expected shape ", expected.to_string(), ", got ", t.shape.to_string());
  WeightMatrix m;
  m.dtype = t.dtype;
  m.data = t.data;
  m.rows = c.hidden_size;
  m.cols = expected.numel() / c.hidden_size;
  m.row_bytes = dtype_bytes(t.dtype, size_t(m.cols));
  return m;
}

}  // namespace

std::string VisionWeights::prefix(const Checkpoint& ck) {
  for (const char* p : {"model.visual.", "visual."})
    if (ck.find(std::string(p) + "patch_embed.proj.weight")) return p;
  return "";
}

VisionWeights VisionWeights::bind(const Checkpoint& ck, const VisionConfig& c) {
  const std::string p = prefix(ck);
  if (p.empty())
    fail("checkpoint has no vision tower (looked for model.visual.patch_embed.proj.weight and "
         "visual.patch_embed.proj.weight)");
  const int64_t D = c.hidden_size, I = c.intermediate_size, m2 = int64_t(c.spatial_merge_size) * c.spatial_merge_size;
  VisionWeights w;
  w.patch_embed.w = bind_conv3d_as_matrix(ck, p + "patch_embed.proj.weight", c);
  w.patch_embed.b = bind_vector(ck, p + "patch_embed.proj.bias", Shape{D});
  w.pos_table = bind_vector(ck, p + "pos_embed.weight", Shape{c.num_position_embeddings, D});
  for (int j = 0; j < c.depth; ++j) {
    const std::string bp = p + "blocks." + std::to_string(j) + ".";
    VisionBlockWeights b;
    b.norm1 = bind_layer_norm(ck, bp + "norm1", D);
    b.qkv = bind_linear(ck, bp + "attn.qkv", 3 * D, D);
    b.proj = bind_linear(ck, bp + "attn.proj", D, D);
    b.norm2 = bind_layer_norm(ck, bp + "norm2", D);
    b.fc1 = bind_linear(ck, bp + "mlp.linear_fc1", I, D);
    b.fc2 = bind_linear(ck, bp + "mlp.linear_fc2", D, I);
    w.blocks.push_back(std::move(b));
  }
  // A checkpoint with more blocks than the config names is a config/weights mismatch.
  if (ck.find(p + "blocks." + std::to_string(c.depth) + ".norm1.weight"))
    fail("checkpoint has more vision blocks than vision_config.depth (", c.depth, "): found ", p, "blocks.", c.depth);
  w.merger_norm = bind_layer_norm(ck, p + "merger.norm", D);
  w.merger_fc1 = bind_linear(ck, p + "merger.linear_fc1", D * m2, D * m2);
  w.merger_fc2 = bind_linear(ck, p + "merger.linear_fc2", c.out_hidden_size, D * m2);
  return w;
}

}  // namespace qwen35
