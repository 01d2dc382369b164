// Several images of different sizes in one conversation, across prefill block boundaries that
// cut through image-token runs, and a follow-up turn that reuses the cached image state.
#include <gtest/gtest.h>


#include "io/image.h"
#include "model/image_processor.h"
#include "runtime_harness.h"
#include "text/chat_format.h"
#include "support/test_data.h"

namespace qwen35::test {
namespace {

std::unique_ptr<Engine> engine_with_block(int64_t block) {
  EngineOptions o;
  o.model_dir = tiny_model_dir();
  o.threads = 2;
  o.context_size = 4096;
  o.prefill_block = block;
  o.image_max_pixels = 256 * 256;  // keep the second image small: two grids of different shapes
  Status st;
  auto e = Engine::load(o, &st);
  EXPECT_TRUE(e) << st.message;
  return e;
}

ChatRequest two_images() {
  ChatRequest r;
  ChatMessage u;
  u.role = "user";
  u.content.push_back(ContentPart::Text("Compare"));
  u.content.push_back(ContentPart::Image(read_file_bytes(tiny_model_dir() + "/chelsea.png")));
  u.content.push_back(ContentPart::Text("with"));
  u.content.push_back(ContentPart::Image(read_file_bytes(tiny_model_dir() + "/chelsea.png")));
  r.messages.push_back(u);
  r.enable_thinking = false;
  return r;
}

TEST(MultiImage, BlockBoundariesInsideImageRunsDoNotChangeTheAnswer) {
  auto whole = engine_with_block(4096), pieces = engine_with_block(37);
  Status st;
  GenerationResult a = whole->new_session()->chat(two_images(), greedy(8), nullptr, &st);
  ASSERT_TRUE(st.ok()) << st.message;
  GenerationResult b = pieces->new_session()->chat(two_images(), greedy(8), nullptr, &st);
  ASSERT_TRUE(st.ok()) << st.message;
  EXPECT_EQ(a.tokens, b.tokens);
  EXPECT_EQ(a.prompt_tokens, b.prompt_tokens);
  EXPECT_GT(a.timings.vision_ms, 0.0);
}

TEST(MultiImage, FollowUpTurnReusesImageStateWithoutRerunningVision) {
  auto engine = engine_with_block(512);
  auto session = engine->new_session();
  Status st;
  ChatRequest t1 = two_images();
  GenerationResult r1 = session->chat(t1, greedy(6), nullptr, &st);
  ASSERT_TRUE(st.ok()) << st.message;
  ChatRequest t2 = t1;
  ChatMessage a = ChatMessage::Text("assistant", r1.content);
  a.reasoning_content = r1.reasoning;
  t2.messages.push_back(a);
  t2.messages.push_back(ChatMessage::Text("user", "And now?"));
  GenerationResult r2 = session->chat(t2, greedy(6), nullptr, &st);
  ASSERT_TRUE(st.ok()) << st.message;
  // All of turn 1 but its generation prompt.
  const int64_t gen_prompt = int64_t(engine->tokenize(std::string(generation_prompt(false))).size());
  EXPECT_EQ(r2.cached_tokens, r1.prompt_tokens - gen_prompt);
  EXPECT_EQ(r2.timings.vision_ms, 0.0);      // so the vision tower did not run again
  GenerationResult cold = engine->new_session()->chat(t2, greedy(6), nullptr, &st);
  EXPECT_EQ(r2.tokens, cold.tokens);
}

TEST(MultiImage, DifferentImagesDoNotShareCacheEntries) {
  auto engine = engine_with_block(512);
  PrefixCache cache(size_t(64) << 20);
  Status st;
  ChatRequest a = two_images();
  GenerationResult ra = engine->new_session(&cache)->chat(a, greedy(4), nullptr, &st);
  ASSERT_TRUE(st.ok());
  // Same text, the second image replaced by a different picture (a flipped copy).
  RgbImage img = load_image_file(tiny_model_dir() + "/chelsea.png");
  RgbImage flipped = apply_orientation(img, 2);
  ChatRequest b = a;
  // The flipped picture as a 24-bit BMP, written by hand.
  std::vector<uint8_t> bmp;
  const int w = flipped.width, h = flipped.height, stride = (w * 3 + 3) & ~3;
  auto u32 = [&](uint32_t v) { for (int i = 0; i < 4; ++i) bmp.push_back(uint8_t(v >> (8 * i))); };
  auto u16 = [&](uint16_t v) { bmp.push_back(uint8_t(v)); bmp.push_back(uint8_t(v >> 8)); };
  bmp.push_back('B'); bmp.push_back('M'); u32(uint32_t(54 + stride * h)); u32(0); u32(54);
  u32(40); u32(uint32_t(w)); u32(uint32_t(h)); u16(1); u16(24); u32(0); u32(uint32_t(stride * h)); u32(2835); u32(2835); u32(0); u32(0);
  for (int y = h - 1; y >= 0; --y) {
    for (int x = 0; x < w; ++x) {
      const uint8_t* p = flipped.at(x, y);
      bmp.push_back(p[2]); bmp.push_back(p[1]); bmp.push_back(p[0]);
    }
    for (int pad = w * 3; pad < stride; ++pad) bmp.push_back(0);
  }
  b.messages[0].content[3] = ContentPart::Image(bmp);
  GenerationResult rb = engine->new_session(&cache)->chat(b, greedy(4), nullptr, &st);
  ASSERT_TRUE(st.ok()) << st.message;
  GenerationResult cold = engine->new_session()->chat(b, greedy(4), nullptr, &st);
  EXPECT_EQ(rb.tokens, cold.tokens);
  EXPECT_LT(rb.cached_tokens, ra.prompt_tokens / 2);  // the first image's pads at most, not the second's
}

}  // namespace
}  // namespace qwen35::test
