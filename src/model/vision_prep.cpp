#include "model/vision_prep.h"

namespace qwen35 {

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
  const std::vector<NamedMatrix> mats = vision_matrices(w);
  prepare_weights(mats, vision_weight_types(weights, mats), store, options);
}

}  // namespace qwen35
