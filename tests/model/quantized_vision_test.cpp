// The vision tower with quantized weights (--weights q8_0: Q8_0 matrices, int8 activations) and
// its thread contract: the tiny model's tower against a run of its own weights dequantized to f32,
// judged by how far rounding the weights alone moves it (as quantized_model_test does for the
// text side); every kernel table against the reference table; bit-identical results on 1, 2 and 3
// threads, float and quantized; and the widened MLP that lets fc2 take a block format when the
// hidden width (4304 in the real models) does not split into blocks.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <deque>
#include <memory>
#include <random>
#include <vector>

#include "core/half.h"
#include "decoder_harness.h"
#include "kernels/compute.h"
#include "model/model.h"
#include "model/vision_prep.h"
#include "support/test_data.h"

namespace qwen35 {
namespace {

struct Image {
  std::vector<float> pixels;
  std::vector<ImageGrid> grids;
};

// The golden image plus a second, two-frame one: several frames and images in one call.
const Image& test_image() {
  static const Image img = [] {
    const test::Golden g("tiny-qwen35/golden/image_native.safetensors");
    Image im;
    im.pixels = g.f32("pixel_values");
    const auto thw = g.i64("image_grid_thw");
    const ImageGrid one{thw[0], thw[1], thw[2]};
    const std::vector<float> first = im.pixels;
    for (int k = 0; k < 2; ++k) im.pixels.insert(im.pixels.end(), first.rbegin(), first.rend());
    im.grids = {one, {2, one.h, one.w}};
    return im;
  }();
  return img;
}

std::vector<float> encode(const VisionTower& vt, const kernels::KernelTable& table, ThreadPool& pool) {
  const kernels::Compute c{&table, &pool};
  return vt.encode(c, test_image().pixels, test_image().grids);
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

std::unique_ptr<Model> load(const std::string& weights, const kernels::KernelTable& table, ThreadPool& pool) {
  ModelLoadOptions o;
  o.weights = weights;
  o.table = &table;
  o.pool = &pool;
  return Model::load(test::tiny_model_dir(), o);
}

// `vt`'s weights (plain rows) dequantized to f32: the same weights, read with float activations.
struct DequantizedTower {
  WeightStore store;
  std::unique_ptr<VisionTower> tower;
};
std::unique_ptr<DequantizedTower> dequantized(const VisionTower& vt, ThreadPool& pool) {
  auto d = std::make_unique<DequantizedTower>();
  VisionWeights w = vt.weights();
  const std::vector<NamedMatrix> mats = vision_matrices(w);
  WeightPrepOptions o;
  o.pool = &pool;
  o.table = &kernels::ref_table();
  prepare_weights(mats, std::vector<DType>(mats.size(), DType::F32), d->store, o);
  d->tower = std::make_unique<VisionTower>(vt.config(), std::move(w));
  return d;
}

// How far rounding the weights to Q8_0 alone moves the tiny tower's output (f32 activations):
// the yardstick for differences that come from rounding elsewhere.
double weight_rounding_divergence(ThreadPool& pool) {
  const std::unique_ptr<Model> q8 = load("q8_0", kernels::ref_table(), pool);
  const auto f = dequantized(*q8->vision(), pool);
  return test::max_rel_error(encode(*f->tower, kernels::ref_table(), pool),
                             encode(*test::tiny_model().vision(), kernels::ref_table(), pool));
}

TEST(QuantizedVision, WeightsAreQ8AndTrackTheirDequantizedRun) {
  ThreadPool pool(2);
  const kernels::KernelTable& table = kernels::active_table();
  const double yardstick = weight_rounding_divergence(pool);
  ASSERT_GT(yardstick, 0.0);
  const std::unique_ptr<Model> q = load("q8_0", table, pool);
  const VisionWeights& w = q->vision()->weights();
  EXPECT_EQ(w.blocks[0].qkv.w.dtype, DType::Q8_0);
  EXPECT_EQ(w.blocks[0].fc2.w.dtype, DType::Q8_0);
  EXPECT_EQ(w.merger_fc2.w.dtype, DType::Q8_0);
  const std::unique_ptr<Model> plain = load("q8_0", kernels::ref_table(), pool);
  const auto f = dequantized(*plain->vision(), pool);
  const std::vector<float> a = encode(*q->vision(), table, pool), b = encode(*f->tower, table, pool);
  const double rel = test::max_rel_error(a, b);
  std::printf("  q8_0 tower vs its dequantized weights: rel %.3g (Q8_0 weight rounding: %.3g)\n", rel, yardstick);
  EXPECT_LT(rel, 2 * yardstick);
  EXPECT_GT(rel, 0.0) << "identical results would mean the activations were not quantized";
}

TEST(QuantizedVision, EveryTableAgreesWithTheReference) {
  ThreadPool pool(2);
  const double yardstick = weight_rounding_divergence(pool);
  const std::unique_ptr<Model> ref_model = load("q8_0", kernels::ref_table(), pool);
  const std::vector<float> want = encode(*ref_model->vision(), kernels::ref_table(), pool);
  const std::vector<float> want_float = encode(*test::tiny_model().vision(), kernels::ref_table(), pool);
  for (const kernels::KernelTable* table : kernels::supported_tables()) {
    const std::unique_ptr<Model> m = load("q8_0", *table, pool);
    // The quantized matmuls give the same bits on every table, but the float steps (the bf16
    // patch embedding, attention, LayerNorm, GELU) round in each table's own way (1e-6, the float
    // check below), and a last-bit difference can flip an int8 activation, which this 32-wide
    // tower amplifies: measured 0.9-1.1x the weight-rounding yardstick. Any other choice of the
    // int8 roundings is as far from the reference as the dequantized run is (the test above).
    EXPECT_LT(test::max_rel_error(encode(*m->vision(), *table, pool), want), 2 * yardstick) << table->name;
    EXPECT_LT(test::max_rel_error(encode(*test::tiny_model().vision(), *table, pool), want_float), 1e-5) << table->name;
  }
}

TEST(QuantizedVision, ThreadCountDoesNotChangeABit) {
  ThreadPool one(1), two(2), three(3);
  const kernels::KernelTable& table = kernels::active_table();
  const std::unique_ptr<Model> q = load("q8_0", table, two);
  for (const VisionTower* vt : {test::tiny_model().vision(), q->vision()}) {
    const std::vector<float> want = encode(*vt, table, one);
    EXPECT_TRUE(same_bits(encode(*vt, table, two), want)) << dtype_name(vt->weights().blocks[0].qkv.w.dtype);
    EXPECT_TRUE(same_bits(encode(*vt, table, three), want)) << dtype_name(vt->weights().blocks[0].qkv.w.dtype);
  }
}

// A random tower whose MLP hidden width (40) does not split into Q8_0 blocks: D 64, 4 heads of 16,
// patch 2 x 2 x 3 channels, 4 x 4 position table, merge 2, out 32; bf16 weights like a checkpoint.
struct OddMlpTower {
  VisionConfig cfg;
  std::deque<std::vector<uint16_t>> storage;
  VisionWeights w;
  std::mt19937 rng{4321};

  std::vector<float> random(size_t n, float scale, float offset = 0) {
    std::normal_distribution<float> nd(0.0f, scale);
    std::vector<float> v(n);
    for (float& x : v) x = offset + nd(rng);
    return v;
  }
  LinearWeights linear(int64_t out, int64_t in) {
    std::vector<uint16_t>& m = storage.emplace_back();
    for (float x : random(size_t(out * in), 1.0f / std::sqrt(float(in)))) m.push_back(f32_to_bf16(x));
    return {WeightMatrix{DType::BF16, m.data(), out, in, size_t(in) * 2}, random(size_t(out), 0.05f)};
  }
  LayerNormWeights norm(int64_t n) { return {random(size_t(n), 0.1f, 1.0f), random(size_t(n), 0.05f)}; }

  OddMlpTower() {
    cfg.present = true;
    cfg.depth = 2;
    cfg.hidden_size = 64;
    cfg.num_heads = 4;
    cfg.intermediate_size = 40;
    cfg.in_channels = 3;
    cfg.patch_size = 2;
    cfg.temporal_patch_size = 2;
    cfg.spatial_merge_size = 2;
    cfg.num_position_embeddings = 16;
    cfg.out_hidden_size = 32;
    const int64_t D = cfg.hidden_size, I = cfg.intermediate_size;
    w.patch_embed = linear(D, 3 * 2 * 2 * 2);
    w.pos_table = random(size_t(16 * D), 0.2f);
    for (int j = 0; j < cfg.depth; ++j)
      w.blocks.push_back({norm(D), linear(3 * D, D), linear(D, D), norm(D), linear(I, D), linear(D, I)});
    w.merger_norm = norm(D);
    w.merger_fc1 = linear(4 * D, 4 * D);
    w.merger_fc2 = linear(cfg.out_hidden_size, 4 * D);
  }
};

TEST(QuantizedVision, AnMlpWidthOffTheBlocksIsWidenedExactly) {
  ThreadPool pool(2);
  const kernels::KernelTable& table = kernels::active_table();
  OddMlpTower s;
  const std::vector<ImageGrid> grids = {{1, 6, 4}, {2, 2, 2}};
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> pixels(size_t((24 + 8) * 24));
  for (float& p : pixels) p = u(rng);
  const kernels::Compute c{&table, &pool};

  // Plain rows (ref table), then dequantized: the widened MLP in f32 with zero rows and columns.
  VisionWeights plain = s.w;
  WeightStore plain_store, f32_store, store;
  WeightPrepOptions ref_prep;
  ref_prep.pool = &pool;
  ref_prep.table = &kernels::ref_table();
  prepare_vision_weights(plain, "q8_0", plain_store, ref_prep);
  ASSERT_EQ(plain.blocks[0].fc1.w.rows, 64);
  ASSERT_EQ(plain.blocks[0].fc2.w.cols, 64);
  ASSERT_EQ(plain.blocks[0].fc2.w.dtype, DType::Q8_0);
  ASSERT_EQ(plain.blocks[0].fc1.b.size(), 64u);
  VisionWeights widened_f32 = plain;
  const std::vector<NamedMatrix> mats = vision_matrices(widened_f32);
  prepare_weights(mats, std::vector<DType>(mats.size(), DType::F32), f32_store, ref_prep);
  // The same dequantized values without the widening.
  VisionWeights narrow = widened_f32;
  std::deque<std::vector<float>> narrow_storage;
  for (VisionBlockWeights& b : narrow.blocks) {
    const int64_t I = s.cfg.intermediate_size, D = s.cfg.hidden_size;
    const float* fc2 = static_cast<const float*>(b.fc2.w.data);
    std::vector<float>& m = narrow_storage.emplace_back();
    for (int64_t r = 0; r < D; ++r) m.insert(m.end(), fc2 + r * 64, fc2 + r * 64 + I);
    b.fc2.w = WeightMatrix{DType::F32, m.data(), D, I, size_t(I) * 4};
    b.fc1.w.rows = I;
    b.fc1.b.resize(size_t(I));
    for (int64_t r = 0; r < D; ++r)
      for (int64_t i = I; i < 64; ++i) ASSERT_EQ(fc2[r * 64 + i], 0.0f);
  }
  const std::vector<float> wide_out = VisionTower(s.cfg, widened_f32).encode(c, pixels, grids);
  const std::vector<float> narrow_out = VisionTower(s.cfg, narrow).encode(c, pixels, grids);
  // The padding adds exact zeros; only the matmuls' summation grouping may differ.
  EXPECT_LT(test::max_rel_error(wide_out, narrow_out), 1e-6);

  // Quantized for this table's kernels, against its dequantized run and the original weights.
  VisionWeights q = s.w;
  WeightPrepOptions prep;
  prep.pool = &pool;
  prep.table = &table;
  prepare_vision_weights(q, "q8_0", store, prep);
  EXPECT_EQ(q.blocks[1].fc2.w.dtype, DType::Q8_0);
  const std::vector<float> q_out = VisionTower(s.cfg, q).encode(c, pixels, grids);
  const std::vector<float> bf16_out = VisionTower(s.cfg, s.w).encode(c, pixels, grids);
  const double yardstick = test::max_rel_error(narrow_out, bf16_out), rel = test::max_rel_error(q_out, narrow_out);
  std::printf("  widened q8_0 tower vs its dequantized weights: rel %.3g (Q8_0 weight rounding: %.3g)\n", rel, yardstick);
  EXPECT_GT(yardstick, 0.0);
  EXPECT_LT(rel, 2 * yardstick);
  EXPECT_GT(rel, 0.0);
}

// An mmproj stores fc1 in Q8_0 and fc2, whose rows (the hidden width) do not split into blocks, in
// F16, as llama.cpp's converter and `qwen35 convert --mmproj-type q8_0` write them. Loaded as
// stored, the MLP is widened with fc1 already in its block format (it crashed before: the widening
// copied fc1 as if it were floats): fc1 keeps its rows byte for byte and gets zero rows, fc2
// becomes Q8_0 with zero columns, and the tower computes what the stored weights compute, up to
// fc2's rounding.
TEST(QuantizedVision, AStoredQ8UpProjectionIsWidenedToo) {
  ThreadPool pool(2);
  OddMlpTower s;
  const std::vector<ImageGrid> grids = {{1, 6, 4}, {2, 2, 2}};
  std::mt19937 rng(6);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> pixels(size_t((24 + 8) * 24));
  for (float& p : pixels) p = u(rng);
  WeightPrepOptions ref_prep;
  ref_prep.pool = &pool;
  ref_prep.table = &kernels::ref_table();
  const kernels::Compute ref{&kernels::ref_table(), &pool};

  // As stored in the file: Q8_0 where the rows split into blocks, else F16.
  VisionWeights stored = s.w;
  WeightStore stored_store;
  const std::vector<NamedMatrix> mats = vision_matrices(stored);
  std::vector<DType> types;
  for (const NamedMatrix& m : mats) types.push_back(m.w->cols % 32 == 0 ? DType::Q8_0 : DType::F16);
  prepare_weights(mats, types, stored_store, ref_prep);
  ASSERT_EQ(stored.blocks[0].fc1.w.dtype, DType::Q8_0);
  ASSERT_EQ(stored.blocks[0].fc2.w.dtype, DType::F16);
  const std::vector<float> stored_out = VisionTower(s.cfg, stored).encode(ref, pixels, grids);

  // How far storing the weights in Q8_0 moved the tower: rounding fc2 as well must stay below it.
  VisionWeights as_f32 = s.w;
  WeightStore f32_store;
  prepare_weights(vision_matrices(as_f32), std::vector<DType>(mats.size(), DType::F32), f32_store, ref_prep);
  const double stored_rounding = test::max_rel_error(stored_out, VisionTower(s.cfg, as_f32).encode(ref, pixels, grids));

  for (const kernels::KernelTable* table : {&kernels::ref_table(), &kernels::active_table()}) {
    VisionWeights loaded = stored;
    WeightStore store;
    WeightPrepOptions prep;
    prep.pool = &pool;
    prep.table = table;
    prepare_vision_weights(loaded, "", store, prep);
    const int64_t I = s.cfg.intermediate_size;
    for (size_t j = 0; j < loaded.blocks.size(); ++j) {
      const VisionBlockWeights& b = loaded.blocks[j];
      EXPECT_EQ(b.fc1.w.rows, 64);
      EXPECT_EQ(b.fc1.w.dtype, DType::Q8_0);
      EXPECT_TRUE(store.owns(b.fc1.w.data));
      EXPECT_EQ(b.fc2.w.cols, 64);
      EXPECT_EQ(b.fc2.w.dtype, DType::Q8_0);
      if (table != &kernels::ref_table()) continue;  // plain rows: the stored rows as they were, then zeros
      const WeightMatrix& before = stored.blocks[j].fc1.w;
      for (int64_t r = 0; r < 64; ++r) {
        const auto* row = static_cast<const uint8_t*>(b.fc1.w.row(r));
        if (r < I) {
          EXPECT_EQ(std::memcmp(row, before.row(r), before.row_bytes), 0) << "fc1 row " << r;
        } else {
          for (size_t k = 0; k < b.fc1.w.row_bytes; ++k) ASSERT_EQ(row[k], 0) << "fc1 row " << r;
        }
      }
      std::vector<float> fc2_row(64);
      for (int64_t r = 0; r < b.fc2.w.rows; ++r) {
        kernels::weight_row_to_f32(b.fc2.w, r, fc2_row.data());
        for (int64_t i = I; i < 64; ++i) ASSERT_EQ(fc2_row[size_t(i)], 0.0f) << "fc2 row " << r << " column " << i;
      }
    }
    // fc2 in Q8_0 now quantizes the hidden activations too, about as much again as the rest.
    const kernels::Compute c{table, &pool};
    const double rel = test::max_rel_error(VisionTower(s.cfg, loaded).encode(c, pixels, grids), stored_out);
    std::printf("  %s: widened stored-q8_0 tower vs as stored: rel %.3g (storing in q8_0: %.3g)\n",
                std::string(table->name).c_str(), rel, stored_rounding);
    EXPECT_GT(stored_rounding, 0.0);
    EXPECT_GT(rel, 0.0);
    EXPECT_LT(rel, 2 * stored_rounding);
  }
}

}  // namespace
}  // namespace qwen35
