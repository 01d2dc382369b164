// MRoPE positions and image-token expansion: the goldens (image prompts and every chat_e2e
// conversation) plus hand-worked sequences from the rules of spec section 5.
#include "model/mrope_positions.h"

#include <sstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "io/image.h"
#include "model/image_processor.h"
#include "support/test_data.h"

namespace qwen35 {
namespace {

int64_t image_token_id() {
  const auto config = nlohmann::json::parse(test::read_text_file(test::data_path("tiny-qwen35/config.json")));
  return config.at("image_token_id").get<int64_t>();
}

std::vector<ImageGrid> grids_of(const std::vector<int64_t>& thw) {
  std::vector<ImageGrid> g;
  for (size_t i = 0; i + 3 <= thw.size(); i += 3) g.push_back({thw[i], thw[i + 1], thw[i + 2]});
  return g;
}

std::vector<int64_t> as_i64(const MropePositions& m) { return std::vector<int64_t>(m.positions.begin(), m.positions.end()); }

void expect_golden_positions(const test::Golden& g, const std::string& prefix, const std::string& ids_name) {
  const std::vector<int64_t> ids = g.i64(prefix + ids_name);
  const std::vector<ImageGrid> grids =
      g.has(prefix + "image_grid_thw") ? grids_of(g.i64(prefix + "image_grid_thw")) : std::vector<ImageGrid>{};
  const MropePositions m = get_rope_index(ids, image_token_id(), grids, 2);
  EXPECT_EQ(m.length, int64_t(ids.size()));
  EXPECT_EQ(g.shape(prefix + "position_ids"), (Shape{3, int64_t(ids.size())}));
  EXPECT_EQ(as_i64(m), g.i64(prefix + "position_ids"));
  EXPECT_EQ(m.rope_delta, g.i64(prefix + "rope_deltas").at(0));
  // The int32 overload agrees.
  const std::vector<int32_t> ids32(ids.begin(), ids.end());
  const MropePositions m32 = get_rope_index(ids32, image_token_id(), grids, 2);
  EXPECT_EQ(m32.positions, m.positions);
  EXPECT_EQ(m32.rope_delta, m.rope_delta);
}

TEST(MropePositions, ImageGoldens) {
  for (const char* file : {"tiny-qwen35/golden/image_fixed512.safetensors", "tiny-qwen35/golden/image_native.safetensors"}) {
    SCOPED_TRACE(file);
    const test::Golden g(file);
    expect_golden_positions(g, "", "input_ids");
    // Decode steps: the i-th fed-back token sits at cache index P + i.
    const int64_t P = g.shape("input_ids")[0];
    const int64_t delta = g.i64("rope_deltas").at(0);
    const std::vector<int64_t> want = g.i64("decode_position_ids");
    for (size_t i = 0; i < want.size(); ++i) EXPECT_EQ(decode_position(P + int64_t(i), delta), want[i]) << i;
  }
}

TEST(MropePositions, ImageGoldenDeltas) {
  // Spec 5.5: a single image gives max(h', w') - h' * w'.
  EXPECT_EQ(test::Golden("tiny-qwen35/golden/image_fixed512.safetensors").i64("rope_deltas").at(0), 16 - 256);
  EXPECT_EQ(test::Golden("tiny-qwen35/golden/image_native.safetensors").i64("rope_deltas").at(0), 14 - 126);
}

// Videos: each temporal pair is one item of grid (1, h, w) with <|video_pad|> tokens; the stamps and
// markers between the pairs are text. image_video has an image first, then the video's pairs.
TEST(MropePositions, VideoGoldens) {
  const auto config = nlohmann::json::parse(test::read_text_file(test::data_path("tiny-qwen35/config.json")));
  const VisionPads pads{image_token_id(), config.at("video_token_id").get<int64_t>()};
  for (const char* name : {"video_pan", "image_video"}) {
    SCOPED_TRACE(name);
    const test::Golden g(std::string("tiny-qwen35/golden_video/") + name + ".safetensors");
    std::vector<ImageGrid> items =
        g.has("image_grid_thw") ? grids_of(g.i64("image_grid_thw")) : std::vector<ImageGrid>{};
    const std::vector<int64_t> thw = g.i64("video_grid_thw");
    for (int64_t pair = 0; pair < thw[0]; ++pair) items.push_back({1, thw[1], thw[2]});
    const std::vector<int64_t> ids = g.i64("prompt_ids");
    const MropePositions m = get_rope_index(ids, pads, items, 2);
    EXPECT_EQ(as_i64(m), g.i64("position_ids"));
    EXPECT_EQ(m.rope_delta, g.i64("rope_deltas").at(0));
    const std::vector<int32_t> ids32(ids.begin(), ids.end());
    EXPECT_EQ(get_rope_index(ids32, pads, items, 2).positions, m.positions);
    const int64_t P = int64_t(ids.size());
    const std::vector<int64_t> want = g.i64("decode_position_ids");
    for (size_t i = 0; i < want.size(); ++i) EXPECT_EQ(decode_position(P + int64_t(i), m.rope_delta), want[i]) << i;
    // The whole video as one (t, h, w) item would be wrong: its pads are not consecutive.
    std::vector<ImageGrid> whole = g.has("image_grid_thw") ? grids_of(g.i64("image_grid_thw")) : std::vector<ImageGrid>{};
    whole.push_back({thw[0], thw[1], thw[2]});
    EXPECT_THROW(get_rope_index(ids, pads, whole, 2), Error);
  }
}

struct ChatCase {
  std::string id;
  std::vector<int64_t> rendered_ids, prompt_ids;
  nlohmann::json images;
};

std::vector<ChatCase> chat_cases() {
  std::vector<ChatCase> out;
  std::istringstream lines(test::read_text_file(test::data_path("tiny-qwen35/golden/chat_e2e.jsonl")));
  std::string line;
  while (std::getline(lines, line)) {
    if (line.empty()) continue;
    const auto j = nlohmann::json::parse(line);
    out.push_back({j.at("id").get<std::string>(), j.at("rendered_ids").get<std::vector<int64_t>>(),
                   j.at("prompt_ids").get<std::vector<int64_t>>(), j.at("images")});
  }
  return out;
}

TEST(MropePositions, EveryChatGolden) {
  const test::Golden g("tiny-qwen35/golden/chat_e2e.safetensors");
  const auto cases = chat_cases();
  ASSERT_EQ(cases.size(), 7u);
  for (const ChatCase& c : cases) {
    SCOPED_TRACE(c.id);
    expect_golden_positions(g, c.id + ".", "prompt_ids");
  }
}

TEST(MropePositions, ChatGoldensFromPicturesToPositions) {
  // The whole path: photo -> processor (resized as recorded) -> grid -> expansion -> positions.
  const test::Golden g("tiny-qwen35/golden/chat_e2e.safetensors");
  const ImageProcessorConfig config = ImageProcessorConfig::load(test::tiny_model_dir());
  for (const ChatCase& c : chat_cases()) {
    SCOPED_TRACE(c.id);
    std::vector<ImageGrid> grids;
    for (const auto& image : c.images) {
      const RgbImage photo = load_image_file(test::data_path("tiny-qwen35/" + image.at("file").get<std::string>()));
      const bool fixed = image.at("resize").get<std::string>() == "fixed512";
      const ProcessedImage p = preprocess_image(photo, config, fixed ? 512 : 0);
      const auto thw = image.at("grid_thw").get<std::vector<int64_t>>();
      EXPECT_EQ((std::vector<int64_t>{p.grid.t, p.grid.h, p.grid.w}), thw);
      EXPECT_EQ(p.num_tokens, image.at("num_image_tokens").get<int64_t>());
      grids.push_back(p.grid);
    }
    const std::vector<int64_t> expanded = expand_image_tokens(c.rendered_ids, image_token_id(), grids, 2);
    EXPECT_EQ(expanded, c.prompt_ids);
    const MropePositions m = get_rope_index(expanded, image_token_id(), grids, 2);
    EXPECT_EQ(as_i64(m), g.i64(c.id + ".position_ids"));
    EXPECT_EQ(m.rope_delta, g.i64(c.id + ".rope_deltas").at(0));
  }
}

// Hand-worked sequences. Token 9 is the image pad, anything else is text.
constexpr int64_t kPad = 9;

std::vector<int32_t> row(const MropePositions& m, int axis) {
  return std::vector<int32_t>(m.axis(axis), m.axis(axis) + m.length);
}

TEST(MropePositions, TextOnly) {
  const std::vector<int32_t> ids = {5, 6, 7, 8};
  const MropePositions m = get_rope_index(ids, kPad, {}, 2);
  for (int a = 0; a < 3; ++a) EXPECT_EQ(row(m, a), (std::vector<int32_t>{0, 1, 2, 3}));
  EXPECT_EQ(m.rope_delta, 0);
  EXPECT_EQ(get_rope_index(std::vector<int32_t>{}, kPad, {}, 2).rope_delta, 0);
}

TEST(MropePositions, ImageAtTheStartAndAtTheEnd) {
  // Grid (1, 4, 6) -> 2 x 3 merged tokens. Image first, then 2 text tokens.
  const std::vector<ImageGrid> grid = {{1, 4, 6}};
  std::vector<int32_t> ids = {kPad, kPad, kPad, kPad, kPad, kPad, 1, 2};
  MropePositions m = get_rope_index(ids, kPad, grid, 2);
  EXPECT_EQ(row(m, 0), (std::vector<int32_t>{0, 0, 0, 0, 0, 0, 3, 4}));
  EXPECT_EQ(row(m, 1), (std::vector<int32_t>{0, 0, 0, 1, 1, 1, 3, 4}));
  EXPECT_EQ(row(m, 2), (std::vector<int32_t>{0, 1, 2, 0, 1, 2, 3, 4}));
  EXPECT_EQ(m.rope_delta, 5 - 8);

  // 2 text tokens, then the image last: cursor 2, positions up to 2 + 2 = 4.
  ids = {1, 2, kPad, kPad, kPad, kPad, kPad, kPad};
  m = get_rope_index(ids, kPad, grid, 2);
  EXPECT_EQ(row(m, 0), (std::vector<int32_t>{0, 1, 2, 2, 2, 2, 2, 2}));
  EXPECT_EQ(row(m, 1), (std::vector<int32_t>{0, 1, 2, 2, 2, 3, 3, 3}));
  EXPECT_EQ(row(m, 2), (std::vector<int32_t>{0, 1, 2, 3, 4, 2, 3, 4}));
  EXPECT_EQ(m.rope_delta, 5 - 8);
  // Next decode token at index 8 -> position 5, one past the largest.
  EXPECT_EQ(decode_position(8, m.rope_delta), 5);
}

TEST(MropePositions, TwoImagesWithTextBetween) {
  // A tall image (1, 6, 2) -> 3 x 1 tokens, then a wide one (1, 2, 4) -> 1 x 2.
  const std::vector<ImageGrid> grids = {{1, 6, 2}, {1, 2, 4}};
  const std::vector<int64_t> ids = {1, kPad, kPad, kPad, 2, 3, kPad, kPad, 4};
  const MropePositions m = get_rope_index(ids, kPad, grids, 2);
  // Text 0; image 1 at cursor 1 (rows 0..2, col 0); cursor 1 + 3 = 4; text 4, 5; image 2 at
  // cursor 6 (row 0, cols 0..1); cursor 6 + 2 = 8; text 8.
  EXPECT_EQ(row(m, 0), (std::vector<int32_t>{0, 1, 1, 1, 4, 5, 6, 6, 8}));
  EXPECT_EQ(row(m, 1), (std::vector<int32_t>{0, 1, 2, 3, 4, 5, 6, 6, 8}));
  EXPECT_EQ(row(m, 2), (std::vector<int32_t>{0, 1, 1, 1, 4, 5, 6, 7, 8}));
  EXPECT_EQ(m.rope_delta, 9 - 9);
}

TEST(MropePositions, AdjacentImagesAreSplitByTheirGrids) {
  const std::vector<ImageGrid> grids = {{1, 2, 2}, {1, 2, 2}};
  const std::vector<int32_t> ids = {kPad, kPad, 7};
  const MropePositions m = get_rope_index(ids, kPad, grids, 2);
  for (int a = 0; a < 3; ++a) EXPECT_EQ(row(m, a), (std::vector<int32_t>{0, 1, 2}));
  EXPECT_EQ(m.rope_delta, 0);
}

TEST(MropePositions, SeveralFramesAdvanceTheTemporalAxis) {
  // t = 2: frame index adds to the temporal axis only; the cursor still moves by max(h', w').
  const std::vector<ImageGrid> grids = {{2, 2, 4}};
  const std::vector<int32_t> ids = {1, kPad, kPad, kPad, kPad, 2};
  const MropePositions m = get_rope_index(ids, kPad, grids, 2);
  EXPECT_EQ(row(m, 0), (std::vector<int32_t>{0, 1, 1, 2, 2, 3}));
  EXPECT_EQ(row(m, 1), (std::vector<int32_t>{0, 1, 1, 1, 1, 3}));
  EXPECT_EQ(row(m, 2), (std::vector<int32_t>{0, 1, 2, 1, 2, 3}));
  EXPECT_EQ(m.rope_delta, 4 - 6);
}

TEST(MropePositions, ChunkedPrefillMatchesOneCall) {
  const std::vector<ImageGrid> grids = {{1, 6, 2}, {1, 2, 4}};
  const std::vector<int64_t> ids = {1, kPad, kPad, kPad, 2, 3, kPad, kPad, 4, 5};
  const MropePositions whole = get_rope_index(ids, kPad, grids, 2);
  // Split after the first image, then after the second (the grids go with their chunk).
  const std::span<const int64_t> all(ids);
  const MropePositions a = get_rope_index(all.subspan(0, 4), kPad, std::span(grids).subspan(0, 1), 2);
  const MropePositions b = get_rope_index(all.subspan(4, 4), kPad, std::span(grids).subspan(1, 1), 2, {4, a.rope_delta});
  const MropePositions c = get_rope_index(all.subspan(8), kPad, {}, 2, {8, b.rope_delta});
  for (int axis = 0; axis < 3; ++axis) {
    std::vector<int32_t> joined = row(a, axis);
    for (const auto* part : {&b, &c}) {
      const auto r = row(*part, axis);
      joined.insert(joined.end(), r.begin(), r.end());
    }
    EXPECT_EQ(joined, row(whole, axis)) << "axis " << axis;
  }
  EXPECT_EQ(c.rope_delta, whole.rope_delta);
  // An empty continuation keeps the delta.
  EXPECT_EQ(get_rope_index(std::vector<int32_t>{}, kPad, {}, 2, {10, whole.rope_delta}).rope_delta, whole.rope_delta);
}

TEST(MropePositions, MismatchesAreErrors) {
  const std::vector<ImageGrid> one = {{1, 4, 4}};  // 4 tokens
  EXPECT_THROW(get_rope_index(std::vector<int32_t>{1, kPad, kPad, kPad}, kPad, one, 2), Error);        // too few
  EXPECT_THROW(get_rope_index(std::vector<int32_t>{kPad, kPad, kPad, kPad, kPad}, kPad, one, 2), Error);  // extra image
  EXPECT_THROW(get_rope_index(std::vector<int32_t>{1, 2}, kPad, one, 2), Error);                         // unused grid
  EXPECT_THROW(get_rope_index(std::vector<int32_t>{kPad}, kPad, std::vector<ImageGrid>{{1, 3, 2}}, 2), Error);  // odd h
  EXPECT_THROW(get_rope_index(std::vector<int32_t>{kPad}, kPad, std::vector<ImageGrid>{{0, 2, 2}}, 2), Error);
  EXPECT_THROW(image_token_count({1, 2, 2}, 0), Error);
}

TEST(MropePositions, ExpandImageTokens) {
  const std::vector<ImageGrid> grids = {{1, 4, 6}, {1, 2, 2}};
  const std::vector<int32_t> ids = {248053, kPad, 248054, 5, 248053, kPad, 248054};
  const std::vector<int32_t> out = expand_image_tokens(ids, kPad, grids, 2);
  std::vector<int32_t> want = {248053};
  want.insert(want.end(), 6, int32_t(kPad));
  want.insert(want.end(), {248054, 5, 248053, int32_t(kPad), 248054});
  EXPECT_EQ(out, want);
  EXPECT_EQ(expand_image_tokens(std::vector<int32_t>{1, 2}, kPad, {}, 2), (std::vector<int32_t>{1, 2}));
  EXPECT_THROW(expand_image_tokens(ids, kPad, std::vector<ImageGrid>{{1, 2, 2}}, 2), Error);
  EXPECT_THROW(expand_image_tokens(std::vector<int32_t>{1}, kPad, grids, 2), Error);
  EXPECT_EQ(image_token_count({1, 18, 28}, 2), 126);
  EXPECT_EQ(image_token_count({1, 32, 32}, 2), 256);
}

TEST(MropePositions, ImageAndVideoPadsAreDifferentItems) {
  // Token 9 image pad, 8 video pad: an image of (1, 2, 4) right before a pair of (1, 2, 2) splits
  // where the pad kind changes, and a grid that would swallow the other kind's tokens is an error.
  const VisionPads pads{9, 8};
  const std::vector<ImageGrid> grids = {{1, 2, 4}, {1, 2, 2}};
  const std::vector<int32_t> ids = {1, 9, 9, 8, 2};
  const MropePositions m = get_rope_index(ids, pads, grids, 2);
  EXPECT_EQ(row(m, 0), (std::vector<int32_t>{0, 1, 1, 3, 4}));
  EXPECT_EQ(row(m, 2), (std::vector<int32_t>{0, 1, 2, 3, 4}));
  const std::vector<ImageGrid> wrong = {{1, 2, 6}};
  EXPECT_THROW(get_rope_index(ids, pads, wrong, 2), Error);
  // With the image id alone the video pad is text.
  const MropePositions image_only = get_rope_index(ids, int64_t(9), std::span(grids).subspan(0, 1), 2);
  EXPECT_EQ(row(image_only, 0), (std::vector<int32_t>{0, 1, 1, 3, 4}));
}

}  // namespace
}  // namespace qwen35
