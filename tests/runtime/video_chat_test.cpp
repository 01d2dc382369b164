// Videos through the public API against the official pipeline (golden_video): a ContentPart of
// decoded frames -> template -> the text expansion with time stamps -> tokens -> vision per pair
// -> decoder -> 8 greedy tokens, with speculation off and on; the stamp merging with the text
// before it; prefill blocks that cut through pairs; the request's errors.
#include <gtest/gtest.h>

#include <algorithm>

#include "runtime_harness.h"
#include "support/test_data.h"
#include "support/video_goldens.h"

namespace qwen35::test {
namespace {

constexpr std::string_view kVideoTag = "<|vision_start|><|video_pad|><|vision_end|>";

VideoFrames golden_frames() {
  GoldenClip c = golden_video_clip();
  VideoFrames v;
  v.width = c.width;
  v.height = c.height;
  v.frames = c.frames;
  v.fps = c.fps;
  v.rgb = std::move(c.rgb);
  return v;
}

// The golden case's request: [video, text] or [image, video, text], thinking off.
ChatRequest golden_request(const std::string& name) {
  const auto c = golden_video_case(name);
  ChatMessage u;
  u.role = "user";
  for (const auto& part : c.at("messages")[0].at("content")) {
    const std::string type = part.at("type");
    if (type == "image") u.content.push_back(ContentPart::Image(read_file_bytes(tiny_model_dir() + "/chelsea.png")));
    else if (type == "video") u.content.push_back(ContentPart::Video(golden_frames()));
    else u.content.push_back(ContentPart::Text(part.at("text").get<std::string>()));
  }
  ChatRequest r;
  r.messages.push_back(u);
  r.enable_thinking = c.at("chat_template_kwargs").at("enable_thinking").get<bool>();
  return r;
}

// What video_pan's placeholder became in the official expanded text.
std::string golden_video_expansion() {
  const auto c = golden_video_case("video_pan");
  const std::string rendered = c.at("rendered"), expanded = c.at("expanded");
  const size_t at = rendered.find(kVideoTag);
  const size_t after = rendered.size() - at - kVideoTag.size();
  return expanded.substr(at, expanded.size() - at - after);
}

class VideoChatGolden : public ::testing::TestWithParam<std::tuple<std::string, SpecMode>> {};

TEST_P(VideoChatGolden, MatchesOfficialPipeline) {
  const auto& [name, spec] = GetParam();
  const auto c = golden_video_case(name);
  const Golden g(name == "video_pan" ? kVideoPanGolden : kImageVideoGolden);
  const Engine& engine = tiny_engine();
  const ChatRequest req = golden_request(name);

  std::string rendered;
  ASSERT_TRUE(engine.render_chat(req, &rendered).ok());
  EXPECT_EQ(rendered, c.at("rendered").get<std::string>());
  EXPECT_EQ(engine.tokenize(rendered), c.at("rendered_ids").get<std::vector<int32_t>>());

  Status st;
  auto prepared = engine.prepare_chat(req, &st);
  ASSERT_TRUE(prepared) << st.message;
  const auto golden_ids = g.i64("prompt_ids");
  EXPECT_EQ(prepared->tokens(), std::vector<int32_t>(golden_ids.begin(), golden_ids.end()));

  auto session = engine.new_session();
  GenerationResult r = session->chat(req, greedy(8, spec), nullptr, &st);
  ASSERT_TRUE(st.ok()) << st.message;
  EXPECT_EQ(r.prompt_tokens, int64_t(golden_ids.size()));
  // Usage counts the pads of the official prompt: the video's in both cases, the image's in one.
  const int64_t video_pad = engine.tokenize("<|video_pad|>").at(0), image_pad = engine.tokenize("<|image_pad|>").at(0);
  EXPECT_EQ(r.video_tokens, std::count(golden_ids.begin(), golden_ids.end(), video_pad));
  EXPECT_EQ(r.image_tokens, std::count(golden_ids.begin(), golden_ids.end(), image_pad));
  EXPECT_GT(r.video_tokens, 0);
  EXPECT_EQ(r.image_tokens > 0, name == "image_video");
  EXPECT_TRUE(std::equal(golden_ids.begin(), golden_ids.end(), session->tokens().begin())) << "prompt ids differ";
  EXPECT_GT(r.timings.vision_ms, 0.0);
  // No near ties in these goldens (a near tie would allow either of the two best tokens).
  ASSERT_TRUE(c.at("near_tie_steps").empty());
  const auto want = g.i64("generated_ids");
  EXPECT_EQ(r.tokens, std::vector<int32_t>(want.begin(), want.end()));
  EXPECT_EQ(engine.detokenize(r.tokens), c.at("continuation_text").get<std::string>());
}

INSTANTIATE_TEST_SUITE_P(Cases, VideoChatGolden,
                         ::testing::Combine(::testing::Values("video_pan", "image_video"),
                                            ::testing::Values(SpecMode::kOff, SpecMode::kAuto)),
                         [](const auto& info) {
                           return std::get<0>(info.param) + (std::get<1>(info.param) == SpecMode::kOff ? "_spec_off" : "_spec_auto");
                         });

TEST(VideoChat, StampMergesWithTheTextBeforeIt) {
  // "Watch this:" then the video: the expanded text has ":<0.3 seconds>", and ":<" is one token
  // (quirk 4), which an expansion of token ids would miss.
  const Engine& engine = tiny_engine();
  ChatRequest req;
  ChatMessage u;
  u.role = "user";
  u.content.push_back(ContentPart::Text("Watch this:"));
  u.content.push_back(ContentPart::Video(golden_frames()));
  req.messages.push_back(u);
  req.enable_thinking = false;
  std::string text;
  ASSERT_TRUE(engine.render_chat(req, &text).ok());
  const size_t at = text.find(kVideoTag);
  ASSERT_NE(at, std::string::npos);
  text.replace(at, kVideoTag.size(), golden_video_expansion());

  Status st;
  auto prepared = engine.prepare_chat(req, &st);
  ASSERT_TRUE(prepared) << st.message;
  EXPECT_EQ(prepared->tokens(), engine.tokenize(text));
  const std::vector<int32_t> colon_lt = engine.tokenize(":<");
  ASSERT_EQ(colon_lt.size(), 1u);
  EXPECT_NE(std::find(prepared->tokens().begin(), prepared->tokens().end(), colon_lt[0]), prepared->tokens().end());
}

TEST(VideoChat, RequestTextThatSpellsThePlaceholderStaysText) {
  // Only the template's placeholder is a video; the same characters typed by a user are text.
  const Engine& engine = tiny_engine();
  ChatRequest req = golden_request("video_pan");
  req.messages[0].content.back().text = std::string("Is ") + std::string(kVideoTag) + " a video?";
  Status st;
  auto prepared = engine.prepare_chat(req, &st);
  ASSERT_TRUE(prepared) << st.message;
  const auto c = golden_video_case("video_pan");
  const auto video_pad = engine.tokenize("<|video_pad|>");
  ASSERT_EQ(video_pad.size(), 1u);
  const auto pads = std::count(prepared->tokens().begin(), prepared->tokens().end(), video_pad[0]);
  EXPECT_EQ(pads, c.at("num_video_tokens").get<int64_t>());
}

TEST(VideoChat, PrefillBlocksThroughPairsGiveTheSameAnswer) {
  GenerationResult results[2];
  const int64_t blocks[2] = {4096, 37};
  for (int i = 0; i < 2; ++i) {
    EngineOptions o;
    o.model_dir = tiny_model_dir();
    o.threads = 2;
    o.context_size = 4096;
    o.prefill_block = blocks[i];
    Status st;
    auto engine = Engine::load(o, &st);
    ASSERT_TRUE(engine) << st.message;
    results[i] = engine->new_session()->chat(golden_request("image_video"), greedy(8, SpecMode::kOff), nullptr, &st);
    ASSERT_TRUE(st.ok()) << st.message;
  }
  EXPECT_EQ(results[0].tokens, results[1].tokens);
  const auto want = Golden(kImageVideoGolden).i64("generated_ids");
  EXPECT_EQ(results[1].tokens, std::vector<int32_t>(want.begin(), want.end()));
}

TEST(VideoChat, FollowUpTurnReusesTheVideoWithoutRerunningVision) {
  const Engine& engine = tiny_engine();
  auto session = engine.new_session();
  Status st;
  const ChatRequest t1 = golden_request("video_pan");
  GenerationResult r1 = session->chat(t1, greedy(6, SpecMode::kOff), nullptr, &st);
  ASSERT_TRUE(st.ok()) << st.message;
  ChatRequest t2 = t1;
  ChatMessage a = ChatMessage::Text("assistant", r1.content);
  a.reasoning_content = r1.reasoning;
  t2.messages.push_back(a);
  t2.messages.push_back(ChatMessage::Text("user", "And then?"));
  GenerationResult r2 = session->chat(t2, greedy(6, SpecMode::kOff), nullptr, &st);
  ASSERT_TRUE(st.ok()) << st.message;
  EXPECT_GE(r2.cached_tokens, int64_t(Golden(kVideoPanGolden).i64("prompt_ids").size()) - 8);
  EXPECT_EQ(r2.timings.vision_ms, 0.0);  // every pair's tokens came from the cache
  GenerationResult cold = engine.new_session()->chat(t2, greedy(6, SpecMode::kOff), nullptr, &st);
  EXPECT_EQ(r2.tokens, cold.tokens);
  // Another clip (one frame changed) must not reuse the first clip's pairs.
  ChatRequest other = t2;
  other.messages[0].content[0].video.frames.rgb[0] ^= 0xff;
  GenerationResult r3 = session->chat(other, greedy(6, SpecMode::kOff), nullptr, &st);
  ASSERT_TRUE(st.ok()) << st.message;
  EXPECT_GT(r3.timings.vision_ms, 0.0);
}

TEST(VideoChat, BadVideosAreInvalidArguments) {
  const Engine& engine = tiny_engine();
  auto status_of = [&](VideoFrames v) {
    ChatRequest req;
    ChatMessage u;
    u.role = "user";
    u.content.push_back(ContentPart::Video(std::move(v)));
    req.messages.push_back(u);
    Status st;
    engine.prepare_chat(req, &st);
    return st;
  };
  VideoFrames ok{64, 64, 4, 30.0, std::vector<uint8_t>(4 * 64 * 64 * 3)};
  EXPECT_TRUE(status_of(ok).ok());
  VideoFrames short_bytes = ok;
  short_bytes.rgb.pop_back();
  VideoFrames no_frames{64, 64, 0, 30.0, {}};
  VideoFrames bad_fps = ok;
  bad_fps.fps = -1;
  VideoFrames tiny{16, 16, 4, 30.0, std::vector<uint8_t>(4 * 16 * 16 * 3)};  // sides under 32
  for (const VideoFrames* v : {&short_bytes, &no_frames, &bad_fps, &tiny}) {
    const Status st = status_of(*v);
    EXPECT_EQ(st.code, StatusCode::kInvalidArgument) << st.message;
  }
}

TEST(VideoChat, TooLongVideoIsAContextOverflowBeforeItsPixels) {
  // 1000 frames of 128x128 at 1 fps: 768 sampled, 384 pairs of 16 tokens, more than 4096.
  const Engine& engine = tiny_engine();
  ChatRequest req;
  ChatMessage u;
  u.role = "user";
  u.content.push_back(ContentPart::Video(VideoFrames{128, 128, 1000, 1.0, std::vector<uint8_t>(size_t(1000) * 128 * 128 * 3)}));
  req.messages.push_back(u);
  Status st;
  EXPECT_FALSE(engine.prepare_chat(req, &st));
  EXPECT_EQ(st.code, StatusCode::kContextOverflow) << st.message;
}

}  // namespace
}  // namespace qwen35::test
