// The vision tower (spec 6): against the official implementation's image goldens (every
// intermediate and the merged image embeddings), several images and several frames in one call
// (no attention across them), other vision sizes against a plain double-precision reference, and
// the loader's errors for wrong-shaped tensors.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <deque>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <string>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "decoder_harness.h"
#include "io/safetensors.h"
#include "support/test_data.h"

namespace qwen35::test {
namespace {

// max |a - b| / max |b| against float32 goldens of a float32 reference (README: rel 1e-4 .. 1e-3
// for image embeddings; observed here around 1e-6).
constexpr double kVisionRelTol = 1e-4;

std::vector<ImageGrid> grids_of(const Golden& g) {
  const auto thw = g.i64("image_grid_thw");
  std::vector<ImageGrid> grids;
  for (size_t i = 0; i + 2 < thw.size(); i += 3) grids.push_back({thw[i], thw[i + 1], thw[i + 2]});
  return grids;
}

class Recorder : public VisionObserver {
 public:
  void on_tensor(const std::string& name, const float* data, int64_t rows, int64_t cols) override {
    tensors[name].assign(data, data + rows * cols);
    shapes[name] = {rows, cols};
  }
  std::map<std::string, std::vector<float>> tensors;
  std::map<std::string, std::pair<int64_t, int64_t>> shapes;
};

const VisionTower& tiny_vision() {
  const VisionTower* v = tiny_model().vision();
  if (!v) fail("the tiny model loaded without its vision tower");
  return *v;
}

// ---- Goldens --------------------------------------------------------------------------------------

class VisionGolden : public ::testing::TestWithParam<std::string> {};

TEST_P(VisionGolden, EveryIntermediateMatchesOfficialImplementation) {
  const Golden g("tiny-qwen35/golden/" + GetParam() + ".safetensors");
  const VisionTower& vt = tiny_vision();
  const auto grids = grids_of(g);
  const auto pixels = g.f32("pixel_values");
  ASSERT_EQ(g.shape("pixel_values")[1], vt.patch_dim());

  Recorder rec;
  const auto embeds = vt.encode(test_compute(), pixels, grids, &rec);

  std::vector<std::string> names = {"vision.patch_embed", "vision.pos_embed_interp", "vision.rot_pos_emb"};
  for (int j = 0; j < vt.config().depth; ++j) names.push_back("vision.block." + std::to_string(j));
  names.push_back("vision.last_hidden_state");
  for (const std::string& name : names) {
    ASSERT_TRUE(rec.tensors.count(name)) << name << " was not reported";
    const Shape gs = g.shape(name);
    EXPECT_EQ(rec.shapes[name].first, gs[0]) << name;
    EXPECT_EQ(rec.shapes[name].second, gs[1]) << name;
    const auto want = g.f32(name);
    const double rel = max_rel_error(rec.tensors[name], want), abs = max_abs_error(rec.tensors[name], want);
    std::printf("  %-16s %-26s rel %.2e  abs %.2e\n", GetParam().c_str(), name.c_str(), rel, abs);
    EXPECT_LE(rel, kVisionRelTol) << name;
  }
  const auto want = g.f32("image_embeds");
  ASSERT_EQ(embeds.size(), want.size());
  const double rel = max_rel_error(embeds, want), abs = max_abs_error(embeds, want);
  std::printf("  %-16s %-26s rel %.2e  abs %.2e\n", GetParam().c_str(), "image_embeds", rel, abs);
  EXPECT_LE(rel, kVisionRelTol) << "image_embeds";
}

INSTANTIATE_TEST_SUITE_P(VisionGoldens, VisionGolden, ::testing::Values("image_fixed512", "image_native"));

// ---- Several images, several frames ------------------------------------------------------------------

TEST(VisionTower, SeveralImagesInOneCallEqualSeparateCalls) {
  const VisionTower& vt = tiny_vision();
  const Golden a("tiny-qwen35/golden/image_native.safetensors"), b("tiny-qwen35/golden/image_fixed512.safetensors");
  const auto pa = a.f32("pixel_values"), pb = b.f32("pixel_values");
  const auto ga = grids_of(a), gb = grids_of(b);
  const auto ea = vt.encode(test_compute(), pa, ga), eb = vt.encode(test_compute(), pb, gb);

  std::vector<float> both_pixels = pa;
  both_pixels.insert(both_pixels.end(), pb.begin(), pb.end());
  std::vector<ImageGrid> both_grids = ga;
  both_grids.insert(both_grids.end(), gb.begin(), gb.end());
  const auto both = vt.encode(test_compute(), both_pixels, both_grids);

  ASSERT_EQ(both.size(), ea.size() + eb.size());
  const std::vector<float> first(both.begin(), both.begin() + ptrdiff_t(ea.size()));
  const std::vector<float> second(both.begin() + ptrdiff_t(ea.size()), both.end());
  EXPECT_LE(max_rel_error(first, ea), 1e-6);
  EXPECT_LE(max_rel_error(second, eb), 1e-6);
  // Against the goldens too: batching must not cost accuracy.
  EXPECT_LE(max_rel_error(first, a.f32("image_embeds")), kVisionRelTol);
  EXPECT_LE(max_rel_error(second, b.f32("image_embeds")), kVisionRelTol);
}

// A t = 2 grid attends within each frame (spec 6.4): it equals two one-frame calls.
TEST(VisionTower, FramesAttendSeparately) {
  const VisionTower& vt = tiny_vision();
  const Golden g("tiny-qwen35/golden/image_native.safetensors");
  const auto frame0 = g.f32("pixel_values");
  const int64_t pd = vt.patch_dim(), n = int64_t(frame0.size()) / pd;
  std::vector<float> frame1(frame0.size());
  for (int64_t r = 0; r < n; ++r)  // another frame: the patches in reverse order
    std::copy_n(frame0.begin() + (n - 1 - r) * pd, pd, frame1.begin() + r * pd);
  const ImageGrid one = grids_of(g)[0];
  const ImageGrid two{2, one.h, one.w};

  const auto e0 = vt.encode(test_compute(), frame0, std::span(&one, 1));
  const auto e1 = vt.encode(test_compute(), frame1, std::span(&one, 1));
  std::vector<float> video = frame0;
  video.insert(video.end(), frame1.begin(), frame1.end());
  const auto ev = vt.encode(test_compute(), video, std::span(&two, 1));
  ASSERT_EQ(ev.size(), e0.size() + e1.size());
  EXPECT_LE(max_rel_error(std::vector<float>(ev.begin(), ev.begin() + ptrdiff_t(e0.size())), e0), 1e-6);
  EXPECT_LE(max_rel_error(std::vector<float>(ev.begin() + ptrdiff_t(e0.size()), ev.end()), e1), 1e-6);
}

// A VisionRun in slices of any size gives forward()'s output bit for bit, every intermediate
// included: rows never depend on how a stage groups them (what lets a server interleave vision
// with other requests' work without changing a single value).
TEST(VisionTower, SlicedRunsEqualOneForwardExactly) {
  const VisionTower& vt = tiny_vision();
  const Golden g("tiny-qwen35/golden/image_native.safetensors");
  std::vector<float> pixels = g.f32("pixel_values");
  const ImageGrid one = grids_of(g)[0];
  const std::vector<float> reversed_frame = [&] {  // a second frame and a second image
    const int64_t pd = vt.patch_dim(), n = int64_t(pixels.size()) / pd;
    std::vector<float> r(pixels.size());
    for (int64_t i = 0; i < n; ++i) std::copy_n(pixels.begin() + (n - 1 - i) * pd, pd, r.begin() + i * pd);
    return r;
  }();
  std::vector<float> all = pixels;
  all.insert(all.end(), reversed_frame.begin(), reversed_frame.end());
  all.insert(all.end(), pixels.begin(), pixels.end());
  const std::vector<ImageGrid> grids = {{2, one.h, one.w}, one};
  Recorder whole;
  const auto expected = vt.encode(test_compute(), all, grids, &whole);
  const int64_t rows = int64_t(all.size()) / vt.patch_dim();
  for (int64_t slice : {int64_t(1), int64_t(7), int64_t(64), rows - 1, rows, int64_t(1) << 20}) {
    Recorder rec;
    VisionRun run(vt, all.data(), rows, grids, &rec, slice);
    int64_t steps = 0;
    while (run.step(test_compute())) ++steps;
    EXPECT_TRUE(run.done());
    EXPECT_EQ(run.slices(), steps + 1);
    EXPECT_FALSE(run.step(test_compute()));
    EXPECT_EQ(run.output(), expected) << "slice " << slice;
    EXPECT_EQ(rec.tensors, whole.tensors) << "slice " << slice;
    if (slice == 1) {  // every stage really is cut into rows
      EXPECT_GT(steps, 4 * rows);
    }
  }
}

// At the table's own size the interpolation lands exactly on the table's entries.
TEST(VisionTower, PositionTableAtItsOwnSizeIsCopied) {
  const VisionTower& vt = tiny_vision();
  const int64_t side = int64_t(std::llround(std::sqrt(double(vt.config().num_position_embeddings))));
  const int64_t D = vt.config().hidden_size, m = vt.config().spatial_merge_size;
  const ImageGrid grid{1, side, side};
  std::vector<float> pe(size_t(side * side * D));
  vt.position_embeddings(std::span(&grid, 1), pe.data());
  const auto& table = vt.weights().pos_table;
  for (int64_t q = 0; q < side * side; ++q) {
    const int64_t b = q / (m * m), in = q % (m * m);
    const int64_t row = (b / (side / m)) * m + in / m, col = (b % (side / m)) * m + in % m;
    for (int64_t d = 0; d < D; ++d) ASSERT_EQ(pe[size_t(q * D + d)], table[size_t((row * side + col) * D + d)]);
  }
}

TEST(VisionTower, RejectsBadGrids) {
  const VisionTower& vt = tiny_vision();
  const ImageGrid odd{1, 5, 4}, zero{1, 0, 4}, good{1, 4, 4};
  EXPECT_THROW(vt.num_patches(std::span(&odd, 1)), Error);
  EXPECT_THROW(vt.num_patches(std::span(&zero, 1)), Error);
  std::vector<float> pixels(size_t(15 * vt.patch_dim()));
  std::vector<float> out(size_t(4 * vt.out_dim()));
  EXPECT_THROW(vt.forward(test_compute(), pixels.data(), 15, std::span(&good, 1), out.data()), Error);
}

// ---- Other sizes against a double-precision reference ------------------------------------------------

// A random vision tower of non-tiny sizes: D 48, 4 heads of 12, MLP 40, patch 2 x 2 x 3 channels,
// 5 x 5 position table, merge 2, out 20. Weights are f32 here.
struct SyntheticTower {
  VisionConfig cfg;
  std::deque<std::vector<float>> storage;  // owns every matrix (deque: stable addresses)
  VisionWeights w;
  std::mt19937 rng{1234};

  std::vector<float> random(size_t n, float scale, float offset = 0) {
    std::normal_distribution<float> nd(0.0f, scale);
    std::vector<float> v(n);
    for (float& x : v) x = offset + nd(rng);
    return v;
  }
  LinearWeights linear(int64_t out, int64_t in) {
    storage.push_back(random(size_t(out * in), 1.0f / std::sqrt(float(in))));
    WeightMatrix m{DType::F32, storage.back().data(), out, in, size_t(in) * sizeof(float)};
    return {m, random(size_t(out), 0.05f)};
  }
  LayerNormWeights norm(int64_t n) { return {random(size_t(n), 0.1f, 1.0f), random(size_t(n), 0.05f)}; }

  SyntheticTower() {
    cfg.present = true;
    cfg.depth = 2;
    cfg.hidden_size = 48;
    cfg.num_heads = 4;
    cfg.intermediate_size = 40;
    cfg.in_channels = 3;
    cfg.patch_size = 2;
    cfg.temporal_patch_size = 2;
    cfg.spatial_merge_size = 2;
    cfg.num_position_embeddings = 25;
    cfg.out_hidden_size = 20;
    const int64_t D = cfg.hidden_size, I = cfg.intermediate_size, M = D * 4;
    w.patch_embed = linear(D, 3 * 2 * 2 * 2);
    w.pos_table = random(size_t(25 * D), 0.2f);
    for (int j = 0; j < cfg.depth; ++j)
      w.blocks.push_back({norm(D), linear(3 * D, D), linear(D, D), norm(D), linear(I, D), linear(D, I)});
    w.merger_norm = norm(D);
    w.merger_fc1 = linear(M, M);
    w.merger_fc2 = linear(cfg.out_hidden_size, M);
  }
};

using Mat = std::vector<double>;  // row-major

Mat ref_linear(const Mat& x, int64_t T, const LinearWeights& l) {
  const int64_t in = l.w.cols, out = l.w.rows;
  const float* W = static_cast<const float*>(l.w.data);
  Mat y(size_t(T * out));
  for (int64_t t = 0; t < T; ++t)
    for (int64_t o = 0; o < out; ++o) {
      double s = l.b[size_t(o)];
      for (int64_t i = 0; i < in; ++i) s += x[size_t(t * in + i)] * double(W[o * in + i]);
      y[size_t(t * out + o)] = s;
    }
  return y;
}

Mat ref_layer_norm(const Mat& x, int64_t T, const LayerNormWeights& n) {
  const int64_t D = int64_t(n.weight.size());
  Mat y(x.size());
  for (int64_t t = 0; t < T; ++t) {
    double mean = 0, var = 0;
    for (int64_t i = 0; i < D; ++i) mean += x[size_t(t * D + i)] / double(D);
    for (int64_t i = 0; i < D; ++i) var += std::pow(x[size_t(t * D + i)] - mean, 2) / double(D);
    for (int64_t i = 0; i < D; ++i)
      y[size_t(t * D + i)] = (x[size_t(t * D + i)] - mean) / std::sqrt(var + 1e-6) * n.weight[size_t(i)] + n.bias[size_t(i)];
  }
  return y;
}

// The whole tower in double, written from the spec's formulas patch by patch.
Mat reference_tower(const SyntheticTower& s, const std::vector<float>& pixels, const std::vector<ImageGrid>& grids) {
  const VisionConfig& c = s.cfg;
  const int64_t D = c.hidden_size, m = c.spatial_merge_size, side = 5, hd = D / c.num_heads, nf = hd / 4;
  const int64_t pd = s.w.patch_embed.w.cols;
  // (frame start, row, col) of each patch from its index in the processor's order.
  std::vector<int64_t> seg, row, col;
  std::vector<ImageGrid> grid_of;
  int64_t start = 0;
  for (const ImageGrid& g : grids)
    for (int64_t f = 0; f < g.t; ++f, start += g.h * g.w)
      for (int64_t q = 0; q < g.h * g.w; ++q) {
        const int64_t b = q / (m * m), in = q % (m * m);
        seg.push_back(start);
        row.push_back((b / (g.w / m)) * m + in / m);
        col.push_back((b % (g.w / m)) * m + in % m);
        grid_of.push_back(g);
      }
  const int64_t Np = int64_t(row.size());
  Mat px(pixels.begin(), pixels.end());
  Mat x = ref_linear(px, Np, s.w.patch_embed);
  (void)pd;
  for (int64_t n = 0; n < Np; ++n) {
    auto axis = [&](int64_t i, int64_t len, int64_t& lo, int64_t& hi, double& frac) {
      const double y = len == 1 ? 0.0 : double(i) * double(side - 1) / double(len - 1);
      lo = int64_t(std::floor(y));
      hi = std::min(lo + 1, side - 1);
      frac = y - double(lo);
    };
    int64_t y0, y1, x0, x1;
    double dy, dx;
    axis(row[size_t(n)], grid_of[size_t(n)].h, y0, y1, dy);
    axis(col[size_t(n)], grid_of[size_t(n)].w, x0, x1, dx);
    for (int64_t d = 0; d < D; ++d) {
      auto P = [&](int64_t r, int64_t cc) { return double(s.w.pos_table[size_t((r * side + cc) * D + d)]); };
      x[size_t(n * D + d)] += (1 - dy) * (1 - dx) * P(y0, x0) + (1 - dy) * dx * P(y0, x1) + dy * (1 - dx) * P(y1, x0) +
                              dy * dx * P(y1, x1);
    }
  }
  auto rope = [&](double* v, int64_t n) {
    for (int64_t k = 0; k < hd / 2; ++k) {
      const double freq = std::pow(10000.0, -2.0 * double(k % nf) / double(hd / 2));
      const double a = double(k < nf ? row[size_t(n)] : col[size_t(n)]) * freq;
      const double v0 = v[k], v1 = v[k + hd / 2];
      v[k] = v0 * std::cos(a) - v1 * std::sin(a);
      v[k + hd / 2] = v1 * std::cos(a) + v0 * std::sin(a);
    }
  };
  for (const VisionBlockWeights& b : s.w.blocks) {
    Mat qkv = ref_linear(ref_layer_norm(x, Np, b.norm1), Np, b.qkv);
    for (int64_t n = 0; n < Np; ++n)
      for (int h = 0; h < c.num_heads; ++h) {
        rope(&qkv[size_t(n * 3 * D + h * hd)], n);
        rope(&qkv[size_t(n * 3 * D + D + h * hd)], n);
      }
    Mat attn(size_t(Np * D), 0.0);
    for (int64_t n = 0; n < Np; ++n)
      for (int h = 0; h < c.num_heads; ++h) {
        std::vector<double> p;
        std::vector<int64_t> keys;
        for (int64_t j = 0; j < Np; ++j) {
          if (seg[size_t(j)] != seg[size_t(n)]) continue;  // same image frame only
          double dot = 0;
          for (int64_t d = 0; d < hd; ++d) dot += qkv[size_t(n * 3 * D + h * hd + d)] * qkv[size_t(j * 3 * D + D + h * hd + d)];
          p.push_back(std::exp(dot / std::sqrt(double(hd))));
          keys.push_back(j);
        }
        double sum = 0;
        for (double e : p) sum += e;
        for (size_t k = 0; k < keys.size(); ++k)
          for (int64_t d = 0; d < hd; ++d)
            attn[size_t(n * D + h * hd + d)] += p[k] / sum * qkv[size_t(keys[k] * 3 * D + 2 * D + h * hd + d)];
      }
    Mat o = ref_linear(attn, Np, b.proj);
    for (size_t i = 0; i < x.size(); ++i) x[i] += o[i];
    Mat h1 = ref_linear(ref_layer_norm(x, Np, b.norm2), Np, b.fc1);
    for (double& v : h1) v = 0.5 * v * (1 + std::tanh(std::sqrt(2 / M_PI) * (v + 0.044715 * v * v * v)));
    Mat h2 = ref_linear(h1, Np, b.fc2);
    for (size_t i = 0; i < x.size(); ++i) x[i] += h2[i];
  }
  Mat merged = ref_layer_norm(x, Np, s.w.merger_norm);  // [Np, D] == [Np/4, 4D]
  Mat u = ref_linear(merged, Np / (m * m), s.w.merger_fc1);
  for (double& v : u) v = 0.5 * v * (1 + std::erf(v / std::sqrt(2.0)));
  return ref_linear(u, Np / (m * m), s.w.merger_fc2);
}

TEST(VisionTower, OtherSizesMatchDoubleReference) {
  SyntheticTower s;
  const VisionTower vt(s.cfg, s.w);
  EXPECT_EQ(vt.head_dim(), 12);
  // Non-square grids, a grid larger than the table, one smaller, and a two-frame grid.
  const std::vector<ImageGrid> grids = {{1, 6, 10}, {1, 2, 4}, {2, 4, 2}};
  const int64_t Np = vt.num_patches(grids);
  ASSERT_EQ(Np, 60 + 8 + 16);
  std::mt19937 rng(99);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> pixels(size_t(Np * vt.patch_dim()));
  for (float& p : pixels) p = u(rng);

  const auto got = vt.encode(test_compute(), pixels, grids);
  const Mat want = reference_tower(s, pixels, grids);
  ASSERT_EQ(got.size(), want.size());
  double err = 0, scale = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    err = std::max(err, std::fabs(double(got[i]) - want[i]));
    scale = std::max(scale, std::fabs(want[i]));
  }
  std::printf("  synthetic tower vs double reference: rel %.2e (max |ref| %.2f)\n", err / scale, scale);
  EXPECT_LE(err / scale, 1e-5);
}

// ---- Loading -------------------------------------------------------------------------------------

// A folder with the tiny model's vision tensors, `name` replaced by zeros of `shape`.
std::string vision_checkpoint_with(const std::string& name, const Shape& shape) {
  const SafetensorsFile src(tiny_model_dir() + "/model.safetensors");
  SafetensorsWriter out;
  for (const auto& [n, v] : src.tensors()) {
    if (n.rfind("model.visual.", 0) != 0) continue;
    if (n == name) {
      std::vector<uint8_t> zeros(dtype_bytes(v.dtype, size_t(shape.numel())));
      out.add(n, v.dtype, shape, zeros.data(), zeros.size());
    } else {
      out.add(n, v.dtype, v.shape, v.data, v.nbytes);
    }
  }
  const std::string dir = temp_dir("vision-shape");
  out.write(dir + "/model.safetensors");
  return dir;
}

void expect_bind_error(const std::string& dir, const std::vector<std::string>& parts) {
  const auto ck = Checkpoint::open(dir);
  try {
    VisionWeights::bind(*ck, tiny_model().config().vision);
    ADD_FAILURE() << "binding succeeded";
  } catch (const Error& e) {
    for (const std::string& p : parts) EXPECT_NE(std::string(e.what()).find(p), std::string::npos) << e.what();
  }
}

TEST(VisionWeights, WrongShapedTensorIsAClearError) {
  expect_bind_error(vision_checkpoint_with("model.visual.blocks.1.attn.qkv.weight", Shape{95, 32}),
                    {"model.visual.blocks.1.attn.qkv.weight", "expected shape [96, 32]", "got [95, 32]"});
  expect_bind_error(vision_checkpoint_with("model.visual.patch_embed.proj.weight", Shape{32, 3, 2, 14, 14}),
                    {"model.visual.patch_embed.proj.weight", "expected shape [32, 3, 2, 16, 16]", "got [32, 3, 2, 14, 14]"});
  expect_bind_error(vision_checkpoint_with("model.visual.merger.norm.bias", Shape{31}),
                    {"model.visual.merger.norm.bias", "expected shape [32]", "got [31]"});
  expect_bind_error(vision_checkpoint_with("model.visual.pos_embed.weight", Shape{49, 32}),
                    {"model.visual.pos_embed.weight", "expected shape [64, 32]"});
}

TEST(VisionWeights, TinyModelHasItsTowerAndATextOnlyConfigHasNone) {
  ASSERT_NE(tiny_model().vision(), nullptr);
  EXPECT_EQ(tiny_model().vision()->config().depth, 2);

  // Same weights, config without vision_config: no tower.
  const std::string dir = temp_dir("vision-textonly");
  nlohmann::json cfg = nlohmann::json::parse(read_text_file(tiny_model_dir() + "/config.json"));
  cfg.erase("vision_config");
  std::ofstream(dir + "/config.json") << cfg.dump(2);
  std::filesystem::create_symlink(tiny_model_dir() + "/model.safetensors", dir + "/model.safetensors");
  const auto m = Model::load(dir);
  EXPECT_EQ(m->vision(), nullptr);
}

}  // namespace
}  // namespace qwen35::test
