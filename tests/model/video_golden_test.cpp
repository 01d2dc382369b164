// Video prompts through the model against the official pipeline (golden_video): pixels -> vision
// tower (video_embeds) -> the decoder on the whole prompt with MRoPE per pair (logits at every
// position) -> 8 greedy tokens through the cache. Same checks and tolerances as the image goldens
// (vision rel 1e-4, logits |a - b| <= 1e-3) from the official pixels; from our processor's pixels
// see the notes at the tolerances.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <ostream>

#include "core/error.h"
#include "decoder_harness.h"
#include "model/image_processor.h"
#include "model/video_processor.h"
#include "support/logit_checks.h"
#include "support/test_data.h"
#include "support/video_goldens.h"

namespace qwen35::test {
namespace {

constexpr double kVisionRelTol = 1e-4;    // the tower on the official pixels, as tests/model/vision_test.cpp
constexpr double kPipelineRelTol = 1e-3;  // from our pixels: the README's upper bound for embeddings

ProcessedVideo our_video() {
  const GoldenClip clip = golden_video_clip();
  return preprocess_video({clip.rgb, clip.frames, clip.height, clip.width, clip.fps},
                          VideoProcessorConfig::load(tiny_model_dir()));
}

const VisionTower& tower() {
  const VisionTower* v = tiny_model().vision();
  if (!v) fail("the tiny model loaded without its vision tower");
  return *v;
}

TEST(VideoGolden, VisionTowerOnTheVideoGrid) {
  // The official pixels through our tower: the vision tower's own accuracy, as for the images.
  const Golden g(kVideoPanGolden);
  const std::vector<float> golden_pixels = g.f32("pixel_values_videos");
  const auto thw = g.i64("video_grid_thw");
  const ImageGrid grid{thw[0], thw[1], thw[2]};
  const std::vector<float> want = g.f32("video_embeds");
  const std::vector<float> embeds = tower().encode(test_compute(), golden_pixels, std::span(&grid, 1));
  ASSERT_EQ(embeds.size(), want.size());
  const double rel = max_rel_error(embeds, want);
  std::printf("  video_embeds from the golden pixels (grid %lld x %lld x %lld): rel %.2e  abs %.2e\n",
              (long long)grid.t, (long long)grid.h, (long long)grid.w, rel, max_abs_error(embeds, want));
  EXPECT_LE(rel, kVisionRelTol);

  // Our processor's pixels (4 samples one level off after the resize, tests/io
  // TorchResize.VideoGoldenFrames): the embeddings move by that, within the README's range for
  // embeddings (rel 1e-4 .. 1e-3), not within the tower's own 1e-4.
  const ProcessedVideo v = our_video();
  const std::vector<float> pixels = v.pixel_values();
  const std::vector<float> ours = tower().encode(test_compute(), pixels, std::span(&v.grid, 1));
  const double rel_ours = max_rel_error(ours, want);
  std::printf("  video_embeds from our pixels: rel %.2e  abs %.2e\n", rel_ours, max_abs_error(ours, want));
  EXPECT_LE(rel_ours, kPipelineRelTol);

  // Pairs attend only within themselves: each pair alone (how the runtime runs them) gives the
  // same rows, bit for bit.
  std::vector<float> by_pair;
  for (const ProcessedImage& p : v.pairs) {
    const std::vector<float> e = tower().encode(test_compute(), p.pixel_values, std::span(&p.grid, 1));
    by_pair.insert(by_pair.end(), e.begin(), e.end());
  }
  EXPECT_EQ(by_pair, ours);
}

// Where the video's pixels come from: the golden's pixel_values_videos (the model path alone, at
// the goldens' tolerances) or our processor on the decoded frames (the whole path).
enum class Pixels { kGolden, kOurs };

// The vision rows of a golden case, in prompt order: the image (if any) and then the video's pairs.
struct VisionItems {
  std::vector<ImageGrid> grids;  // one per image and per pair
  std::vector<float> rows;       // [tokens, H]
};

VisionItems vision_items(const Golden& g, bool with_image, Pixels source) {
  VisionItems items;
  if (with_image) {  // the image golden's processor path is tested bit-exact in image_processor_test
    const ImageProcessorConfig ic = ImageProcessorConfig::load(tiny_model_dir());
    const ProcessedImage img = preprocess_image(load_image_file(tiny_model_dir() + "/chelsea.png"), ic);
    const std::vector<float> e = tower().encode(test_compute(), img.pixel_values, std::span(&img.grid, 1));
    const double rel = max_rel_error(e, g.f32("image_embeds"));
    std::printf("  image_embeds: rel %.2e\n", rel);
    EXPECT_LE(rel, kVisionRelTol);
    items.grids.push_back(img.grid);
    items.rows = e;
  }
  const ProcessedVideo v = our_video();
  const std::vector<float> pixels =
      source == Pixels::kGolden ? Golden(kVideoPanGolden).f32("pixel_values_videos") : v.pixel_values();
  const std::vector<float> e = tower().encode(test_compute(), pixels, std::span(&v.grid, 1));
  const double rel = max_rel_error(e, g.f32("video_embeds"));
  std::printf("  video_embeds: rel %.2e\n", rel);
  EXPECT_LE(rel, source == Pixels::kGolden ? kVisionRelTol : kPipelineRelTol);
  for (const ProcessedImage& p : v.pairs) items.grids.push_back(p.grid);
  items.rows.insert(items.rows.end(), e.begin(), e.end());
  return items;
}

struct PromptCase {
  std::string name;  // golden case
  Pixels pixels;
};

void PrintTo(const PromptCase& c, std::ostream* os) { *os << c.name << (c.pixels == Pixels::kGolden ? "" : "_our_pixels"); }

class VideoGoldenPrompt : public ::testing::TestWithParam<PromptCase> {};

// From the golden pixels every record is checked as for the image and text goldens: logits at
// every prompt position (|a - b| <= 1e-3) and each greedy step's logits and token. From our own
// pixels the resize's 4 off-by-one samples move the logits by more than that tolerance (measured
// 2.3e-3 on this random model), so there only the greedy tokens are compared, which the golden's
// top1 - top2 gaps (>= 0.007) keep well apart.
TEST_P(VideoGoldenPrompt, LogitsAndGreedyTokensMatchOfficialImplementation) {
  const PromptCase& pc = GetParam();
  const bool with_image = pc.name == "image_video";
  const bool full_checks = pc.pixels == Pixels::kGolden;
  const Golden g(with_image ? kImageVideoGolden : kVideoPanGolden);
  const Model& m = tiny_model();
  const TextConfig& cfg = m.config().text;
  const int64_t H = cfg.hidden_size, V = cfg.vocab_size;
  const std::vector<int64_t> ids64 = g.i64("prompt_ids");
  const std::vector<int32_t> ids(ids64.begin(), ids64.end());
  const int64_t P = int64_t(ids.size());

  const VisionItems items = vision_items(g, with_image, pc.pixels);
  const VisionPads pads{m.config().image_token_id, m.config().video_token_id};
  const MropePositions mp = get_rope_index(ids, pads, items.grids, m.config().vision.spatial_merge_size);
  EXPECT_EQ(std::vector<int64_t>(mp.positions.begin(), mp.positions.end()), g.i64("position_ids"));
  EXPECT_EQ(mp.rope_delta, g.i64("rope_deltas").at(0));

  // The prompt in blocks of 64 (pads take the vision rows in order).
  DecoderState state = DecoderState::create(cfg);
  DecoderWorkspace ws;
  std::vector<float> logits(size_t(P * V)), hidden;
  int64_t vision_row = 0;
  for (int64_t t0 = 0; t0 < P; t0 += 64) {
    const int64_t n = std::min<int64_t>(64, P - t0);
    std::vector<float> emb(size_t(n * H));
    m.decoder().embed(ids.data() + t0, n, emb.data());
    for (int64_t t = 0; t < n; ++t)
      if (ids[size_t(t0 + t)] == pads.image || ids[size_t(t0 + t)] == pads.video)
        std::memcpy(emb.data() + t * H, items.rows.data() + vision_row++ * H, size_t(H) * sizeof(float));
    std::vector<int32_t> pos(size_t(3 * n));
    for (int a = 0; a < 3; ++a) std::copy_n(mp.positions.data() + a * P + t0, n, pos.data() + a * n);
    hidden.resize(size_t(n * H));
    m.decoder().forward(test_compute(), emb.data(), pos.data(), n, state, ws, hidden.data());
    m.decoder().logits(test_compute(), hidden.data(), n, logits.data() + t0 * V);
  }
  ASSERT_EQ(vision_row * H, int64_t(items.rows.size()));
  if (full_checks) {
    const double worst = expect_logits_match(g, "logits", logits, P, V);
    std::printf("  %s prompt logits: max abs error %.2e over %lld positions\n", pc.name.c_str(), worst, (long long)P);
  } else {
    const std::vector<float> last = g.f32("logits.last_full");
    std::printf("  %s from our pixels: last position's logits max abs error %.2e\n", pc.name.c_str(),
                max_abs_error(std::vector<float>(logits.end() - V, logits.end()), last));
  }

  // Greedy through the cache: each fed-back token at cache length + rope_delta on every axis.
  const auto want = g.i64("generated_ids");
  const auto gaps = g.f32("step_top1_top2_gap");
  const auto top_ids = g.i64("step_top_ids");
  const int64_t K = g.shape("step_top_ids")[1];
  const auto decode_positions = g.i64("decode_position_ids");
  std::vector<float> row(logits.end() - V, logits.end());
  for (size_t step = 0; step < want.size(); ++step) {
    if (full_checks) expect_step_logits_match(g, "", int64_t(step), row.data(), V);
    const int64_t got = argmax(row.data(), V);
    if (gaps[step] < kLogitTol) {  // near tie: either of the two best, and a different pick ends the comparison
      ASSERT_TRUE(got == top_ids[step * size_t(K)] || got == top_ids[step * size_t(K) + 1]) << "step " << step;
      if (got != want[step]) return;
    } else {
      ASSERT_EQ(got, want[step]) << "step " << step;
    }
    if (step + 1 == want.size()) break;
    const int32_t id = int32_t(got);
    const int64_t p = decode_position(P + int64_t(step), mp.rope_delta);
    EXPECT_EQ(p, decode_positions[step]);
    const int32_t pos[3] = {int32_t(p), int32_t(p), int32_t(p)};
    std::vector<float> emb(static_cast<size_t>(H));
    m.decoder().embed(&id, 1, emb.data());
    hidden.resize(size_t(H));
    m.decoder().forward(test_compute(), emb.data(), pos, 1, state, ws, hidden.data());
    m.decoder().logits(test_compute(), hidden.data(), 1, row.data());
  }
}

INSTANTIATE_TEST_SUITE_P(Cases, VideoGoldenPrompt,
                         ::testing::Values(PromptCase{"video_pan", Pixels::kGolden},
                                           PromptCase{"image_video", Pixels::kGolden},
                                           PromptCase{"video_pan", Pixels::kOurs},
                                           PromptCase{"image_video", Pixels::kOurs}),
                         [](const auto& info) {
                           return info.param.name + (info.param.pixels == Pixels::kGolden ? "" : "_our_pixels");
                         });

}  // namespace
}  // namespace qwen35::test
