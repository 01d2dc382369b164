// `qwen35 forward` and `qwen35 generate` as a user (and the held-out checks) run them: the
// written tensors and printed ids against the goldens.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <sstream>

#include <nlohmann/json.hpp>

#include "support/logit_checks.h"
#include "support/test_data.h"

namespace qwen35::test {
namespace {

struct RunOutput {
  int status;
  std::string out;
};

RunOutput run(const std::string& args) {
  const std::string cmd = cli_binary() + " " + args + " 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  std::string out;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof(buf), p)) > 0) out.append(buf, n);
  const int st = pclose(p);
  return {WEXITSTATUS(st), out};
}

std::string join(const std::vector<int64_t>& ids) {
  std::ostringstream os;
  for (size_t i = 0; i < ids.size(); ++i) os << (i ? "," : "") << ids[i];
  return os.str();
}

TEST(CliForward, TextLogitsHiddenAndCachesMatchGolden) {
  const Golden g("tiny-qwen35/golden/text_L64.safetensors");
  const std::string out = temp_dir("fwd") + "/out.safetensors";
  RunOutput r = run("forward -m " + tiny_model_dir() + " --ids " + join(g.i64("input_ids")) + " --out " + out +
                    " --dump hidden,cache --block 29");
  ASSERT_EQ(r.status, 0) << r.out;
  SafetensorsFile f(out);
  const TensorView& logits = f.get("logits");
  ASSERT_EQ(logits.shape, (Shape{64, 248320}));
  std::vector<float> l(logits.as<float>(), logits.as<float>() + logits.numel());
  expect_logits_match(g, "logits", l, 64, 248320);
  for (const std::string name : {"hidden.0", "hidden.7", "final_norm", "cache.0.recurrent_state", "cache.0.conv_state",
                                 "cache.3.key", "cache.7.value"}) {
    const TensorView& t = f.get(name);
    std::vector<float> got(t.as<float>(), t.as<float>() + t.numel());
    EXPECT_LE(max_rel_error(got, g.f32(name)), 1e-4) << name;
  }
}

class CliImage : public ::testing::TestWithParam<const char*> {};

TEST_P(CliImage, ImageForwardMatchesGolden) {
  const std::string variant = GetParam();
  const Golden g("tiny-qwen35/golden/image_" + variant + ".safetensors");
  std::vector<int64_t> ids;  // one <|image_pad|> per image, as a user writes them
  for (int64_t t : g.i64("input_ids"))
    if (!(t == 248056 && !ids.empty() && ids.back() == 248056)) ids.push_back(t);
  const std::string out = temp_dir("img") + "/out.safetensors";
  RunOutput r = run("forward -m " + tiny_model_dir() + " --ids " + join(ids) + " --image " + tiny_model_dir() +
                    "/chelsea.png --out " + out + (variant == "fixed512" ? " --image-size 512" : ""));
  ASSERT_EQ(r.status, 0) << r.out;
  SafetensorsFile f(out);
  auto i64 = [&](const std::string& n) {
    const TensorView& t = f.get(n);
    return std::vector<int64_t>(t.as<int64_t>(), t.as<int64_t>() + t.numel());
  };
  auto f32 = [&](const std::string& n) {
    const TensorView& t = f.get(n);
    return std::vector<float>(t.as<float>(), t.as<float>() + t.numel());
  };
  EXPECT_EQ(i64("input_ids"), g.i64("input_ids"));
  EXPECT_EQ(i64("position_ids"), g.i64("position_ids"));
  EXPECT_EQ(i64("image_grid_thw"), g.i64("image_grid_thw"));
  EXPECT_LE(max_abs_error(f32("pixel_values"), g.f32("pixel_values")), 2.0 / 255);
  EXPECT_LE(max_rel_error(f32("image_embeds"), g.f32("image_embeds")), 1e-4);
  const int64_t T = int64_t(g.i64("input_ids").size());
  expect_logits_match(g, "logits", f32("logits"), T, 248320);
}

INSTANTIATE_TEST_SUITE_P(Variants, CliImage, ::testing::Values("native", "fixed512"));

TEST(CliGenerate, GreedyIdsMatchGolden) {
  const Golden g("tiny-qwen35/golden/greedy.safetensors");
  for (const char* p : {"p0.", "p1."}) {
    RunOutput r = run("generate -m " + tiny_model_dir() + " --ids " + join(g.i64(std::string(p) + "prompt_ids")) +
                      " -n 32 --ignore-eos --json");
    ASSERT_EQ(r.status, 0) << r.out;
    auto j = nlohmann::json::parse(r.out.substr(r.out.find('{')));
    EXPECT_EQ(j["ids"].get<std::vector<int64_t>>(), g.i64(std::string(p) + "generated_ids")) << p;
    EXPECT_EQ(j["stop_reason"], "length");
    EXPECT_TRUE(j.contains("pld"));
  }
}

// --reasoning-budget: the thought is cut after N tokens (reasoning_tokens = N + the closing
// sentence's tokens, the same for any N) and the reasoning ends with that sentence.
TEST(CliGenerate, ReasoningBudget) {
  const std::string messages = temp_dir("budget") + "/chat.json";
  {
    std::FILE* f = std::fopen(messages.c_str(), "w");
    ASSERT_NE(f, nullptr);
    std::fputs(R"([{"role": "user", "content": "How many legs does a spider have?"}])", f);
    std::fclose(f);
  }
  auto reasoning_tokens = [&](int budget, std::string* reasoning) {
    RunOutput r = run("generate -m " + tiny_model_dir() + " --messages " + messages + " -n 60 --ignore-eos --json" +
                      (budget >= -1 ? " --reasoning-budget " + std::to_string(budget) : std::string()));
    EXPECT_EQ(r.status, 0) << r.out;
    auto j = nlohmann::json::parse(r.out.substr(r.out.find('{')));
    if (reasoning) *reasoning = j["reasoning"].get<std::string>();
    return j["usage"]["reasoning_tokens"].get<int64_t>();
  };
  std::string reasoning;
  const int64_t sentence = reasoning_tokens(0, &reasoning);
  EXPECT_EQ(reasoning, "Considering the limited time by the user, I have to give the solution based on the thinking directly now.");
  EXPECT_EQ(reasoning_tokens(5, &reasoning), 5 + sentence);
  EXPECT_TRUE(reasoning.ends_with("directly now.")) << reasoning;
  EXPECT_EQ(reasoning_tokens(-1, nullptr), 60);
  EXPECT_EQ(reasoning_tokens(-2, nullptr), 60);  // no option: unlimited
}

TEST(CliErrors, ClearMessagesAndNonZeroExit) {
  RunOutput r = run("forward -m /nonexistent --ids 1 --out /tmp/x.safetensors");
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.out.find("/nonexistent"), std::string::npos) << r.out;
  r = run("forward -m " + tiny_model_dir() + " --ids 1,x --out /tmp/x.safetensors");
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.out.find("bad token id"), std::string::npos) << r.out;
  r = run("forward -m " + tiny_model_dir() + " --ids 999999999 --out /tmp/x.safetensors");
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.out.find("outside the vocabulary"), std::string::npos) << r.out;
  r = run("generate -m " + tiny_model_dir() + " --ids 1 --bogus");
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.out.find("unknown option"), std::string::npos) << r.out;
  r = run("forward --help");
  EXPECT_EQ(r.status, 0);
  EXPECT_NE(r.out.find("cache.<i>.recurrent_state"), std::string::npos);
}

TEST(CliRun, TextAndImageAnswersWithPerfLine) {
  RunOutput r = run("run -m " + tiny_model_dir() + " - \"Hello\" -n 5");
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("prefill"), std::string::npos);
  EXPECT_NE(r.out.find("tok/s"), std::string::npos);
  r = run("run -m " + tiny_model_dir() + " " + tiny_model_dir() + "/chelsea.png \"What is it?\" -n 5 --think");
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("vision"), std::string::npos);
  r = run("run -m " + tiny_model_dir() + " /nonexistent.png \"x\"");
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.out.find("cannot read image"), std::string::npos) << r.out;
  r = run("run -m " + tiny_model_dir() + " " + tiny_model_dir() + "/config.json \"x\"");
  EXPECT_NE(r.status, 0);  // not an image
}

}  // namespace
}  // namespace qwen35::test
