// The tiny model written as GGUF (text + mmproj) and loaded back: the official goldens must hold
// for the GGUF model as they do for the Hugging Face folder (logits, hidden states, the caches in
// HF head order, image embeddings), the layout must be llama.cpp's (names, +1 norms, -exp(A_log),
// tiled value heads, the two patch kernels), and broken or foreign files must fail naming the
// tensor or key.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>

#include "core/error.h"
#include "core/half.h"
#include "decoder_harness.h"
#include "model_fixtures.h"
#include "io/gguf.h"
#include "io/gguf_writer.h"
#include "model/gguf_export.h"
#include "model/image_processor.h"
#include "model/mtp.h"
#include "model/tensor_names.h"
#include "support/logit_checks.h"
#include "support/test_data.h"

namespace qwen35::test {
namespace {

using ::testing::HasSubstr;

constexpr double kStateRelTol = 1e-4;   // as the HF-folder decoder goldens
constexpr double kVisionRelTol = 1e-4;  // as the HF-folder vision goldens

// The tiny model converted with the given matrix type (text and mmproj), then loaded from GGUF.
const ConvertedGguf& converted(DType type) { return converted_gguf("tiny-qwen35", type, true); }

class GgufTextGolden : public ::testing::TestWithParam<std::string> {};

// Whole prompts in one block, and token by token: decoding runs a DeltaNet layer's conv, gates and
// norms per key head with its tiled value heads (deltanet_fused), a path the blocks do not take.
void expect_gguf_f32_matches_golden(const std::string& name, int64_t block) {
  const Golden g("tiny-qwen35/golden/" + name + ".safetensors");
  const Model& m = *converted(DType::F32).model;
  const TextConfig& cfg = m.config().text;
  const auto ids = g.i64("input_ids");
  DecoderState state = DecoderState::create(cfg);
  RunResult r = run_tokens(m, ids, state, block);
  for (int i = 0; i < cfg.num_layers; ++i)
    EXPECT_LE(max_rel_error(r.hidden[size_t(i)], g.f32("hidden." + std::to_string(i))), kStateRelTol) << "hidden." << i;
  expect_logits_match(g, "logits", r.logits, int64_t(ids.size()), cfg.vocab_size);
  int di = 0;
  for (int i = 0; i < cfg.num_layers; ++i) {
    if (cfg.layer_kinds[size_t(i)] != LayerKind::kDeltaNet) continue;
    std::vector<float> conv, recurrent;
    deltanet_state_hf_order(cfg, m.text_weights().layers[size_t(i)].deltanet, state.deltanet[size_t(di++)], conv,
                            recurrent);
    const std::string p = "cache." + std::to_string(i) + ".";
    EXPECT_LE(max_rel_error(conv, g.f32(p + "conv_state")), kStateRelTol) << p;
    EXPECT_LE(max_rel_error(recurrent, g.f32(p + "recurrent_state")), kStateRelTol) << p;
  }
}

TEST_P(GgufTextGolden, F32FileMatchesOfficialImplementation) { expect_gguf_f32_matches_golden(GetParam(), 512); }

TEST_P(GgufTextGolden, F32FileDecodedTokenByTokenMatchesOfficialImplementation) {
  expect_gguf_f32_matches_golden(GetParam(), 1);
}

INSTANTIATE_TEST_SUITE_P(Cases, GgufTextGolden, ::testing::Values("text_L7", "text_L300"));

TEST(GgufModel, Bf16FileGivesTheFoldersLogits) {
  // BF16 weights stay exact through the conversion, so only summation order may differ.
  const Golden g("tiny-qwen35/golden/text_L64.safetensors");
  const auto ids = g.i64("input_ids");
  DecoderState a = DecoderState::create(tiny_model().config().text), b = a;
  const RunResult from_hf = run_tokens(tiny_model(), ids, a, 64);
  const RunResult from_gguf = run_tokens(*converted(DType::BF16).model, ids, b, 64);
  EXPECT_LE(max_abs_error(from_gguf.logits, from_hf.logits), 1e-4);
}

// Root-mean-square of a - b relative to the root-mean-square of b.
double rel_rms(const std::vector<float>& a, const std::vector<float>& b) {
  double num = 0, den = 0;
  for (size_t i = 0; i < a.size(); ++i) num += double(a[i] - b[i]) * double(a[i] - b[i]), den += double(b[i]) * double(b[i]);
  return std::sqrt(num / den);
}

TEST(GgufModel, Q8FileStaysCloseToTheGoldens) {
  // Q8_0 weights with int8 activations. The tiny random model is very sensitive to 8-bit weights:
  // dequantized Q8_0 weights alone move its logits by 8-35% (RMS), and llama.cpp on the same file
  // shows the same size of error, so the bound is loose; the cross-engine goldens pin the details.
  const Golden g("tiny-qwen35/golden/text_L64.safetensors");
  const auto ids = g.i64("input_ids");
  const Model& m = *converted(DType::Q8_0).model;
  EXPECT_EQ(m.text_weights().layers[0].deltanet.in_qkv.dtype, DType::Q8_0);
  EXPECT_EQ(m.file_type(), "Q8_0");
  DecoderState s = DecoderState::create(m.config().text), s_hf = s;
  const RunResult r = run_tokens(m, ids, s, 64);
  const RunResult hf = run_tokens(tiny_model(), ids, s_hf, 64);
  const double err = rel_rms(r.logits, hf.logits);
  std::printf("  Q8_0 tiny model: logits RMS error %.3f of the RMS logit\n", err);
  EXPECT_LE(err, 0.5);
  EXPECT_GT(err, 1e-4);  // really quantized
}

TEST(GgufModel, LayoutIsLlamaCpps) {
  const ConvertedGguf& c = converted(DType::F32);
  const GgufFile& f = *c.model->gguf();
  const TextConfig& cfg = tiny_model().config().text;
  EXPECT_EQ(f.get_string("general.architecture"), "qwen35");
  EXPECT_EQ(f.get_int("qwen35.block_count"), 9);  // 8 layers + the MTP block
  EXPECT_EQ(f.get_int("qwen35.nextn_predict_layers"), 1);
  EXPECT_EQ(f.get_int("qwen35.full_attention_interval"), 4);
  EXPECT_EQ(f.get_int("qwen35.rope.dimension_count"), 16);
  EXPECT_EQ(f.find("qwen35.rope.dimension_sections")->elem_type, GgufType::kI32);
  EXPECT_EQ(f.get_tensor("blk.0.ssm_conv1d.weight").ne[0], 4);  // {K, conv_dim}
  EXPECT_EQ(f.find_tensor("output.weight"), nullptr);            // tied
  const Checkpoint& ck = tiny_model().checkpoint();
  const std::string p = "model.language_model.layers.0.";
  // Norms stored as 1 + w, ssm_a as -exp(A_log), ssm_norm as is.
  const TensorView hf_norm = ck.get(p + "input_layernorm.weight");
  EXPECT_FLOAT_EQ(f.get_tensor("blk.0.attn_norm.weight").view().as<float>()[3], 1.0f + read_float(hf_norm, 3));
  const TensorView a_log = ck.get(p + "linear_attn.A_log");
  EXPECT_FLOAT_EQ(f.get_tensor("blk.0.ssm_a").view().as<float>()[0], -std::exp(read_float(a_log, 0)));
  // Value heads tiled: position p holds HF head (p % Hk) * r + p / Hk. Position 1 = HF head 2 here.
  const int64_t dv = cfg.linear_value_dim, H = cfg.hidden_size;
  const TensorView z = ck.get(p + "linear_attn.in_proj_z.weight");
  const float* gz = f.get_tensor("blk.0.attn_gate.weight").view().as<float>();
  EXPECT_EQ(gz[1 * dv * H + 5], read_float(z, 2 * dv * H + 5));
  EXPECT_EQ(gz[2 * dv * H + 5], read_float(z, 1 * dv * H + 5));
  EXPECT_TRUE(c.model->text_weights().layers[0].deltanet.v_heads_tiled);
  EXPECT_FALSE(tiny_model().text_weights().layers[0].deltanet.v_heads_tiled);
  // The MTP block: values and shapes of mtp.*, norms + 1.
  const NextnTensors& mtp = c.model->nextn();
  ASSERT_FALSE(mtp.empty());
  EXPECT_EQ(mtp.layer, 8);
  EXPECT_EQ(mtp.find("nextn.eh_proj.weight")->shape, (Shape{H, 2 * H}));
  EXPECT_FLOAT_EQ(mtp.find("nextn.enorm.weight")->as<float>()[1],
                  1.0f + read_float(ck.get("mtp.pre_fc_norm_embedding.weight"), 1));
  EXPECT_EQ(mtp.find("attn_q.weight")->as<float>()[7], read_float(ck.get("mtp.layers.0.self_attn.q_proj.weight"), 7));
}

TEST(GgufModel, WithoutMtpAndTheCountsOfLlamaCpp) {
  GgufExportOptions o;
  o.matrix_type = uniform_matrix_type(DType::F32);
  o.mtp = false;
  GgufWriter w;
  export_text_gguf(tiny_model(), o, w);
  const std::vector<uint8_t> bytes = w.to_bytes();
  auto f = GgufFile::from_bytes(bytes);
  EXPECT_EQ(f->get_int("qwen35.block_count"), 8);
  EXPECT_FALSE(f->has("qwen35.nextn_predict_layers"));
  // gguf.md section 2: 14 tensors per DeltaNet layer, 11 per attention layer, token_embd, output_norm (tied).
  EXPECT_EQ(f->tensors().size(), size_t(6 * 14 + 2 * 11 + 2));
  for (const GgufTensor& t : f->tensors()) {
    if (t.n_dims == 1 || t.name.find("norm") != std::string::npos || t.name.find("ssm_conv1d") != std::string::npos) {
      EXPECT_EQ(t.ggml_type, 0) << t.name << " must be F32";
    }
  }
}

TEST(GgufModel, VisionNamesRoundTripThroughTheTable) {
  // Every mmproj tensor but the two patch kernels has one HF name, which maps back to it, and the
  // HF tensor has the same values.
  const GgufFile& m = *converted(DType::F32).model->mmproj();
  const Checkpoint& ck = tiny_model().checkpoint();
  for (const GgufTensor& t : m.tensors()) {
    if (t.name.rfind("v.patch_embd.weight", 0) == 0) continue;
    const std::optional<std::string> hf = hf_vision_tensor_name(t.name);
    ASSERT_TRUE(hf) << t.name;
    EXPECT_EQ(gguf_vision_tensor_name(*hf), t.name);
    const TensorView& v = ck.get(*hf);
    EXPECT_EQ(v.shape, t.shape()) << t.name;
    EXPECT_EQ(read_float(v, v.numel() - 1), t.view().as<float>()[t.numel() - 1]) << t.name;
  }
  EXPECT_EQ(gguf_vision_tensor_name("visual.blocks.3.mlp.linear_fc2.bias"), "v.blk.3.ffn_down.bias");
  EXPECT_FALSE(gguf_vision_tensor_name("model.visual.blocks.x.norm1.weight"));
  EXPECT_FALSE(hf_vision_tensor_name("v.blk.0.nothing"));
}

std::string load_error(const std::string& path, const ModelLoadOptions& files = {}) {
  try {
    Model::load(path, files);
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

// Hostile model files: random edits of a valid quantized model's header (metadata and tensor
// infos, where the model's sizes, names and types live) must load or fail with qwen35::Error.
TEST(GgufModel, RandomHeaderMutationsLoadOrFailCleanly) {
  const std::string src = data_path("gguf/llama-quantize/small-h64-Q4_K_M.gguf");
  const std::string good = read_text_file(src);
  size_t data_start = good.size();  // everything before is header
  for (const GgufTensor& t : GgufFile::open(src)->tensors()) data_start = std::min(data_start, size_t(t.file_offset));
  std::mt19937_64 rng(7);
  const uint64_t hostile[] = {0, 1, 2, 3, 4, 31, 255, 256, 65535, 1ull << 31, 1ull << 40, ~0ull};
  const std::string path = temp_dir("gguf_hostile") + "/m.gguf";
  int loaded = 0, refused = 0;
  for (int it = 0; it < 300; ++it) {
    std::string b = good;
    for (int e = 0, n = 1 + int(rng() % 3); e < n; ++e) {
      const size_t pos = size_t(rng() % data_start);
      if (rng() % 2) {
        b[pos] = char(rng());
      } else if (pos + 8 <= data_start) {
        const uint64_t v = hostile[rng() % std::size(hostile)];
        std::memcpy(&b[pos], &v, rng() % 2 ? 8 : 4);
      }
    }
    std::ofstream(path, std::ios::binary | std::ios::trunc).write(b.data(), std::streamsize(b.size()));
    try {
      auto m = Model::load(path, ModelLoadOptions{.no_mmproj = true});
      ++loaded;
    } catch (const Error&) {
      ++refused;
    }
  }
  std::printf("  300 mutated headers: %d loaded, %d refused with a clear error\n", loaded, refused);
  EXPECT_GT(refused, 100);
}

TEST(GgufModel, LayerScheduleAndPerLayerKeysAsLlamaModelSaverWritesThem) {
  // llama-model-saver writes attention.recurrent_layers (per block, MTP included) instead of
  // full_attention_interval, and per-layer arrays for head counts and feed-forward sizes.
  const ConvertedGguf& c = converted(DType::F32);
  const GgufFile& src = *c.model->gguf();
  GgufWriter w;
  w.set_array_bool("qwen35.attention.recurrent_layers", {true, true, true, false, true, true, true, false, false});
  w.set_array_i32("qwen35.feed_forward_length", std::vector<int32_t>(9, 128));
  w.set_array_i32("qwen35.attention.head_count_kv", std::vector<int32_t>(9, 2));
  for (const auto& [k, v] : src.metadata())
    if (!w.has(k) && k != "qwen35.full_attention_interval") w.set_value(k, v);
  for (const GgufTensor& t : src.tensors()) w.add_tensor_bytes(t.name, *t.dtype, t.shape(), t.data, size_t(t.nbytes));
  const std::string path = temp_dir("gguf_saver") + "/saver.gguf";
  w.write(path);
  auto m = Model::load(path, ModelLoadOptions{.no_mmproj = true});
  EXPECT_EQ(m->config().text.layer_kinds, c.model->config().text.layer_kinds);
  const std::vector<int64_t> ids = {248045, 846, 198, 3710, 369};
  DecoderState a = DecoderState::create(m->config().text), b = a;
  EXPECT_EQ(run_tokens(*m, ids, a, 8).logits, run_tokens(*c.model, ids, b, 8).logits);
  // A flag array of the wrong length is refused.
  GgufWriter bad;
  bad.set_array_bool("qwen35.attention.recurrent_layers", {true, false});
  for (const auto& [k, v] : src.metadata())
    if (!bad.has(k)) bad.set_value(k, v);
  for (const GgufTensor& t : src.tensors()) bad.add_tensor_bytes(t.name, *t.dtype, t.shape(), t.data, size_t(t.nbytes));
  bad.write(path);
  EXPECT_THAT(load_error(path, ModelLoadOptions{.no_mmproj = true}), HasSubstr("recurrent_layers' has 2 entries but block_count is 9"));
}

TEST(GgufModel, SplitModelLoadsFromItsFirstPart) {
  // llama-gguf-split's layout: part 1 has the metadata and the first tensors, part 2 only the
  // split keys and the rest.
  const ConvertedGguf& c = converted(DType::F32);
  const GgufFile& full = *c.model->gguf();
  GgufWriter p1, p2;
  for (const auto& [k, v] : full.metadata()) p1.set_value(k, v);
  for (GgufWriter* w : {&p1, &p2}) {
    w->set_u16("split.no", w == &p1 ? 0 : 1);
    w->set_u16("split.count", 2);
    w->set_i32("split.tensors.count", int32_t(full.tensors().size()));
  }
  for (size_t i = 0; i < full.tensors().size(); ++i) {
    const GgufTensor& t = full.tensors()[i];
    (i < full.tensors().size() / 2 ? p1 : p2).add_tensor_bytes(t.name, *t.dtype, t.shape(), t.data, size_t(t.nbytes));
  }
  const std::string dir = temp_dir("gguf_split_model");
  p1.write(dir + "/tiny-00001-of-00002.gguf");
  p2.write(dir + "/tiny-00002-of-00002.gguf");
  auto m = Model::load(dir + "/tiny-00001-of-00002.gguf");
  EXPECT_EQ(m->gguf()->part_paths().size(), 2u);
  const std::vector<int64_t> ids = {248045, 846, 198, 3710};
  DecoderState a = DecoderState::create(m->config().text), b = a;
  EXPECT_EQ(run_tokens(*m, ids, a, 8).logits, run_tokens(*c.model, ids, b, 8).logits);
  EXPECT_FALSE(m->nextn().empty());  // the MTP block sits in the second part
}

// Splits a converted tiny model with its MTP block (blk.8) into dir/main.gguf, without the block,
// and the sidecar dir/mtp-main.gguf: block_count 9, token_embd, output_norm, output and blk.8.*, as
// llama.cpp's converter writes it with --mtp.
void write_without_mtp_and_sidecar(const GgufFile& full, const std::string& dir) {
  GgufWriter main_w, side_w;
  for (const auto& [k, v] : full.metadata()) {
    side_w.set_value(k, v);
    if (k == "qwen35.block_count") main_w.set_u32(k, 8);
    else if (k != "qwen35.nextn_predict_layers") main_w.set_value(k, v);
  }
  for (const GgufTensor& t : full.tensors()) {
    const bool mtp = t.name.rfind("blk.8.", 0) == 0;
    if (!mtp) main_w.add_tensor_bytes(t.name, *t.dtype, t.shape(), t.data, size_t(t.nbytes));
    if (mtp || t.name.find("blk.") == std::string::npos)
      side_w.add_tensor_bytes(t.name, *t.dtype, t.shape(), t.data, size_t(t.nbytes));
  }
  main_w.write(dir + "/main.gguf");
  side_w.write(dir + "/mtp-main.gguf");
}

TEST(GgufModel, MtpSidecarIsLoadedWithMtp) {
  // A main file without MTP plus an MTP-only sidecar (block_count 9, only token_embd, output_norm
  // and blk.8.*, as llama.cpp's converter writes it with --mtp), and the main file with MTP bundled.
  const ConvertedGguf& c = converted(DType::F32);
  const std::string dir = temp_dir("gguf_mtp");
  write_without_mtp_and_sidecar(*c.model->gguf(), dir);
  auto plain = Model::load(dir + "/main.gguf");
  EXPECT_TRUE(plain->nextn().empty());
  auto with = Model::load(dir + "/main.gguf", ModelLoadOptions{.mtp = dir + "/mtp-main.gguf"});
  ASSERT_FALSE(with->nextn().empty());
  EXPECT_EQ(with->nextn().layer, 8);
  EXPECT_EQ(with->nextn().source, dir + "/mtp-main.gguf");
  EXPECT_EQ(with->nextn().tensors.size(), c.model->nextn().tensors.size());
  EXPECT_THROW(Model::load(dir + "/mtp-main.gguf"), Error);  // a sidecar alone is no model
  EXPECT_THROW(Model::load(c.text, ModelLoadOptions{.mtp = dir + "/mtp-main.gguf"}), Error);  // MTP twice
}

// The MTP head bound from a GGUF MTP block, bundled or from a sidecar, is the folder's head: fed
// the same hidden states, embeddings and positions it gives the same bits (output, cache, logits)
// for F32 and BF16 files, whose matrices hold the checkpoint's BF16 values exactly. (The trunk of a
// GGUF model sums its tiled value heads in another order, so whole forward passes differ in the
// last bits; the goldens bound those.)
TEST(GgufModel, MtpHeadIsTheFoldersHead) {
  const MtpHead* want = tiny_model().mtp();
  ASSERT_NE(want, nullptr);
  const TextConfig& cfg = tiny_model().config().text;
  const int64_t H = cfg.hidden_size, V = cfg.vocab_size, T = 9;
  std::mt19937 rng(5);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::vector<float> hidden(size_t(T * H));
  for (float& x : hidden) x = nd(rng);
  const std::vector<int32_t> ids = {248045, 846, 198, 9707, 11, 1246, 525, 498, 30};
  std::vector<int32_t> pos(size_t(3 * T));
  for (int64_t t = 0; t < 3 * T; ++t) pos[size_t(t)] = int32_t(t % T);
  const kernels::Compute c = test_compute();
  struct Out {
    std::vector<float> emb, out, logits, k, v;
  };
  auto run = [&](const MtpHead& head) {
    Out o;
    o.emb.resize(size_t(T * H));
    head.embed(ids.data(), T, o.emb.data());
    KvCache kv = head.make_cache(DType::F32);
    MtpWorkspace ws;
    o.out.resize(size_t(T * H));
    head.forward(c, o.emb.data(), hidden.data(), pos.data(), T, kv, ws, o.out.data());
    o.logits.resize(size_t(T * V));
    head.logits(c, o.out.data(), T, o.logits.data());
    o.k = kv_as_heads_major(kv, cfg.num_kv_heads, cfg.head_dim, true);
    o.v = kv_as_heads_major(kv, cfg.num_kv_heads, cfg.head_dim, false);
    return o;
  };
  const Out ref = run(*want);
  auto expect_same = [&](const Model& m, const std::string& what) {
    ASSERT_NE(m.mtp(), nullptr) << what;
    const Out got = run(*m.mtp());
    EXPECT_EQ(got.emb, ref.emb) << what;
    EXPECT_EQ(got.out, ref.out) << what;
    EXPECT_EQ(got.k, ref.k) << what;
    EXPECT_EQ(got.v, ref.v) << what;
    EXPECT_EQ(got.logits, ref.logits) << what;
  };
  for (DType type : {DType::F32, DType::BF16}) expect_same(*converted(type).model, std::string(dtype_name(type)));

  // The sidecar form: a main file without the block, and blk.8.* with token_embd, output_norm and
  // output in the sidecar.
  const ConvertedGguf& conv = converted(DType::F32);
  const std::string dir = temp_dir("gguf_mtp_head");
  write_without_mtp_and_sidecar(*conv.model->gguf(), dir);
  auto with = Model::load(dir + "/main.gguf", ModelLoadOptions{.mtp = dir + "/mtp-main.gguf"});
  expect_same(*with, "sidecar");
  // Without the block or the sidecar there is no head.
  EXPECT_EQ(Model::load(dir + "/main.gguf")->mtp(), nullptr);
  std::filesystem::remove_all(dir);
}

class GgufVisionGolden : public ::testing::TestWithParam<std::string> {};

TEST_P(GgufVisionGolden, MmprojGivesTheOfficialImageEmbeddings) {
  const Golden g("tiny-qwen35/golden/" + GetParam() + ".safetensors");
  for (DType type : {DType::F32, DType::BF16, DType::F16, DType::Q8_0}) {
    const VisionTower* vt = converted(type).model->vision();
    ASSERT_NE(vt, nullptr);
    std::vector<ImageGrid> grids;
    const auto thw = g.i64("image_grid_thw");
    for (size_t i = 0; i < thw.size(); i += 3) grids.push_back({thw[i], thw[i + 1], thw[i + 2]});
    const auto embeds = vt->encode(test_compute(), g.f32("pixel_values"), grids);
    const double rel = max_rel_error(embeds, g.f32("image_embeds"));
    std::printf("  %-6s mmproj: image_embeds max rel error %.2e\n", std::string(dtype_name(type)).c_str(), rel);
    // F32, BF16 and F16 hold the checkpoint's BF16 values exactly (these weights are never
    // subnormal in f16); Q8_0 is a quantized tower (observed 1.8e-2).
    const double tol = type == DType::Q8_0 ? 0.05 : kVisionRelTol;
    EXPECT_LE(rel, tol) << dtype_name(type);
  }
}

INSTANTIATE_TEST_SUITE_P(Images, GgufVisionGolden, ::testing::Values("image_fixed512", "image_native"));

TEST(GgufModel, MmprojMetadataAndPatchKernels) {
  const ConvertedGguf& c = converted(DType::F16);
  const GgufFile& m = *c.model->mmproj();
  EXPECT_EQ(m.get_string("general.architecture"), "clip");
  EXPECT_EQ(m.get_string("clip.projector_type"), "qwen3vl_merger");
  EXPECT_EQ(m.get_int("clip.vision.image_size"), 128);  // sqrt(64) * 16
  EXPECT_EQ(m.get_tensor("v.patch_embd.weight").ggml_type, 1);     // F16 file: F16 kernels
  EXPECT_EQ(m.get_tensor("v.position_embd.weight").ggml_type, 0);  // always F32
  EXPECT_EQ(converted(DType::F32).model->mmproj()->get_tensor("v.patch_embd.weight").ggml_type, 0);
  // Kernel t of the Conv3d [D, C, T, P, P] is tensor v.patch_embd.weight(.1) [D, C, P, P].
  const TensorView conv = tiny_model().checkpoint().get("model.visual.patch_embed.proj.weight");
  const float* k1 = converted(DType::F32).model->mmproj()->get_tensor("v.patch_embd.weight.1").view().as<float>();
  const int64_t PP = 256;
  EXPECT_EQ(k1[(5 * 3 + 2) * PP + 17], read_float(conv, ((5 * 3 + 2) * 2 + 1) * PP + 17));
}

// A copy of the F32 file with one tensor's type or one key changed.
std::string rewritten(const std::string& name, const std::function<void(GgufWriter&, const GgufFile&)>& edit,
                      const std::function<bool(const GgufTensor&)>& keep = {}) {
  const GgufFile& src = *converted(DType::F32).model->gguf();
  GgufWriter w;
  edit(w, src);
  for (const auto& [k, v] : src.metadata())
    if (!w.has(k)) w.set_value(k, v);
  for (const GgufTensor& t : src.tensors())
    if (!keep || keep(t)) w.add_tensor_bytes(t.name, *t.dtype, t.shape(), t.data, size_t(t.nbytes));
  const std::string path = temp_dir("gguf_bad") + "/" + name;
  w.write(path);
  return path;
}

TEST(GgufModel, BrokenFilesNameTheProblem) {
  EXPECT_THAT(load_error(rewritten("arch.gguf", [](GgufWriter& w, const GgufFile&) {
                w.set_string("general.architecture", "llama");
              })),
              HasSubstr("architecture 'llama' is not supported"));
  EXPECT_THAT(load_error(rewritten("nokey.gguf", [](GgufWriter& w, const GgufFile&) {}, [](const GgufTensor& t) {
                return t.name != "blk.3.attn_k.weight";
              })),
              HasSubstr("missing tensor 'blk.3.attn_k.weight'"));
  EXPECT_THAT(load_error(rewritten("sections.gguf", [](GgufWriter& w, const GgufFile&) {
                w.set_array_i32("qwen35.rope.dimension_sections", {3, 3, 3, 0});
              })),
              HasSubstr("rope.dimension_sections sums to 9"));
  EXPECT_THAT(load_error(rewritten("mtponly.gguf", [](GgufWriter&, const GgufFile&) {}, [](const GgufTensor& t) {
                return t.name.rfind("blk.8.", 0) == 0 || t.name.find("blk.") == std::string::npos;
              })),
              HasSubstr("MTP-only file"));
  // A type the engine lacks: blk.1.ffn_up written as Q4_0 (18 bytes per 32 values), then its type
  // id patched to NVFP4 (36 bytes per 64: the same size), which qwen35 has no kernels for.
  const GgufFile& src = *converted(DType::F32).model->gguf();
  GgufWriter w;
  for (const auto& [k, v] : src.metadata()) w.set_value(k, v);
  for (const GgufTensor& t : src.tensors()) {
    if (t.name != "blk.1.ffn_up.weight") {
      w.add_tensor_bytes(t.name, *t.dtype, t.shape(), t.data, size_t(t.nbytes));
      continue;
    }
    std::vector<uint8_t> zeros(dtype_bytes(DType::Q4_0, size_t(t.numel())), 0);
    w.add_tensor_bytes(t.name, DType::Q4_0, t.shape(), zeros.data(), zeros.size());
  }
  std::vector<uint8_t> bytes = w.to_bytes();
  const std::string name = "blk.1.ffn_up.weight";
  const auto at = std::search(bytes.begin(), bytes.end(), name.begin(), name.end()) - bytes.begin();
  const size_t type_at = size_t(at) + name.size() + 4 + 2 * 8;  // after n_dims and ne[2]
  ASSERT_EQ(bytes[type_at], 2);  // Q4_0
  bytes[type_at] = 40;           // NVFP4
  const std::string path = temp_dir("gguf_bad") + "/nvfp4.gguf";
  std::ofstream(path, std::ios::binary).write(reinterpret_cast<const char*>(bytes.data()), std::streamsize(bytes.size()));
  EXPECT_THAT(load_error(path, ModelLoadOptions{.no_mmproj = true}),
              HasSubstr("tensor 'blk.1.ffn_up.weight' has ggml type NVFP4, which qwen35 does not support"));
  // An mmproj of another model's width is not picked up beside a model, and is refused when named.
  EXPECT_THAT(load_error(converted(DType::F32).text, ModelLoadOptions{.mmproj = converted(DType::F32).text}),
              HasSubstr("not a vision projector"));
}

}  // namespace
}  // namespace qwen35::test
