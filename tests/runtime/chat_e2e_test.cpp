// The whole pipeline against the official one (golden/chat_e2e.jsonl): messages -> chat format ->
// tokenizer -> images -> decoder -> 16 greedy tokens -> text, with prompt lookup on and off.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "runtime_harness.h"
#include "support/test_data.h"

namespace qwen35::test {
namespace {

std::vector<nlohmann::ordered_json> golden_lines() {
  std::ifstream in(data_path("tiny-qwen35/golden/chat_e2e.jsonl"));
  std::vector<nlohmann::ordered_json> lines;
  std::string line;
  while (std::getline(in, line))
    if (!line.empty()) lines.push_back(nlohmann::ordered_json::parse(line));
  return lines;
}

class ChatE2E : public ::testing::TestWithParam<bool> {};

TEST_P(ChatE2E, MatchesOfficialPipeline) {
  const bool pld = GetParam();
  const auto lines = golden_lines();
  ASSERT_EQ(lines.size(), 7u);
  for (const auto& g : lines) {
    const std::string id = g["id"];
    SCOPED_TRACE(id);
    const bool fixed512 = !g["images"].empty() && g["images"][0]["resize"] == "fixed512";
    const Engine& engine = tiny_engine(fixed512 ? 512 : 0);
    ChatRequest req = request_from_golden(g, data_path("tiny-qwen35/golden/" + g["image_dir"].get<std::string>()));

    std::string rendered;
    ASSERT_TRUE(engine.render_chat(req, &rendered).ok());
    EXPECT_EQ(rendered, g["rendered"].get<std::string>());

    auto session = engine.new_session();
    Status st;
    GenerationResult r = session->chat(req, greedy(16, pld ? SpecMode::kAuto : SpecMode::kOff), nullptr, &st);
    ASSERT_TRUE(st.ok()) << st.message;
    const auto prompt_ids = g["prompt_ids"].get<std::vector<int32_t>>();
    EXPECT_EQ(r.prompt_tokens, int64_t(prompt_ids.size()));
    const auto& timeline = session->tokens();
    ASSERT_GE(timeline.size(), prompt_ids.size());
    EXPECT_TRUE(std::equal(prompt_ids.begin(), prompt_ids.end(), timeline.begin())) << "prompt ids differ";

    const auto want = g["generated_ids"].get<std::vector<int32_t>>();
    const auto top2 = g["step_top2_ids"].get<std::vector<std::vector<int32_t>>>();
    const auto near = g["near_tie_steps"].get<std::vector<int>>();
    ASSERT_EQ(r.tokens.size(), want.size());
    bool diverged = false;
    for (size_t s = 0; s < want.size() && !diverged; ++s) {
      const bool is_near = std::find(near.begin(), near.end(), int(s)) != near.end();
      if (is_near) {
        EXPECT_TRUE(r.tokens[s] == top2[s][0] || r.tokens[s] == top2[s][1]) << "step " << s;
        diverged = r.tokens[s] != want[s];
      } else {
        EXPECT_EQ(r.tokens[s], want[s]) << "step " << s;
      }
    }
    if (!diverged) {
      EXPECT_EQ(engine.detokenize(r.tokens), g["continuation_text"].get<std::string>());
    }
    EXPECT_EQ(r.stop_reason, StopReason::kMaxTokens);
  }
}

INSTANTIATE_TEST_SUITE_P(Speculation, ChatE2E, ::testing::Values(false, true),
                         [](const auto& info) { return info.param ? "spec_auto" : "spec_off"; });

}  // namespace
}  // namespace qwen35::test
