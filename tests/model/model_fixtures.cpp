#include "model_fixtures.h"

#include <cstring>
#include <map>
#include <tuple>
#include <utility>

#include "io/gguf_writer.h"
#include "model/gguf_export.h"
#include "model/image_processor.h"
#include "support/test_data.h"

namespace qwen35::test {

const ConvertedGguf& converted_gguf(const std::string& folder, DType type, bool with_mmproj) {
  static std::map<std::tuple<std::string, DType, bool>, ConvertedGguf> cache;
  const auto key = std::make_tuple(folder, type, with_mmproj);
  auto it = cache.find(key);
  if (it != cache.end()) return it->second;
  ConvertedGguf c;
  c.dir = temp_dir("gguf_" + folder + "_" + std::string(dtype_name(type)) + (with_mmproj ? "_mmproj" : ""));
  c.text = c.dir + "/" + folder + ".gguf";
  const Model& m = bundled_model(folder);
  const GgufExportOptions o = uniform_gguf_options(type);
  GgufWriter w;
  export_text_gguf(m, o, w);
  w.write(c.text);
  if (with_mmproj) {
    c.mmproj = c.dir + "/mmproj-" + folder + ".gguf";
    GgufWriter mw;
    const ImageProcessorConfig pc = ImageProcessorConfig::load(data_path(folder));
    export_mmproj_gguf(m, o, pc.image_mean, pc.image_std, mw);
    mw.write(c.mmproj);
  }
  c.model = Model::load(c.text);  // finds the mmproj beside it
  return cache.emplace(key, std::move(c)).first->second;
}

const std::vector<int64_t>& QuantizedFixture::ids() {
  static const std::vector<int64_t> ids = {9707, 11,  1879, 0,     248045, 872,    198, 9419, 1052, 30, 77, 4321,
                                           17,   5,   248046, 198, 3,      1000,   20000, 248068, 45, 46, 47};
  return ids;
}

std::unique_ptr<Model> QuantizedFixture::load(const std::string& weights, const kernels::KernelTable& table,
                                              ThreadPool& pool) const {
  ModelLoadOptions o;
  o.weights = weights;
  o.table = &table;
  o.pool = &pool;
  return Model::load(data_path(folder), o);
}

RunResult QuantizedFixture::run(const Model& m, const kernels::KernelTable& table, ThreadPool& pool, int64_t block,
                                DeltaRuleMode mode) const {
  const kernels::Compute c{&table, &pool};
  DecoderState state = DecoderState::create(m.config().text);
  return run_tokens(m, ids(), state, block, mode, &c);
}

std::unique_ptr<DequantizedModel> QuantizedFixture::dequantized(const std::string& preset, ThreadPool& pool) const {
  auto d = std::make_unique<DequantizedModel>();
  d->model = load(preset, kernels::ref_table(), pool);
  TextWeights& w = const_cast<TextWeights&>(d->model->text_weights());  // the decoder reads these views
  std::vector<NamedMatrix> mats = named_matrices(w, nullptr);
  mats.push_back(NamedMatrix{"output.weight", &w.lm_head, false});
  mats.push_back(NamedMatrix{"token_embd.weight", &w.embed, true});
  WeightPrepOptions o;
  o.pool = &pool;
  o.table = &kernels::ref_table();
  prepare_weights(mats, std::vector<DType>(mats.size(), DType::F32), d->store, o);
  return d;
}

double QuantizedFixture::weight_rounding_divergence(const std::string& preset, ThreadPool& pool) const {
  std::unique_ptr<Model> own = load("", kernels::ref_table(), pool);
  std::unique_ptr<DequantizedModel> rounded = dequantized(preset, pool);
  return max_rel_error(run(*rounded->model, kernels::ref_table(), pool, 7).logits,
                       run(*own, kernels::ref_table(), pool, 7).logits);
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

}  // namespace qwen35::test
