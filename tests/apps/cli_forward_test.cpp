// `qwen35 forward` and `qwen35 generate` as a user (and the held-out checks) run them: the
// written tensors and printed ids against the goldens.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cmath>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "support/logit_checks.h"
#include "support/cli_run.h"
#include "support/test_data.h"

namespace qwen35::test {
namespace {

RunOutput run(const std::string& args) { return run_cli(args); }

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

// --dump mtp: the head's teacher-forced logits (the last row is draft step 1), its cache and a
// 3-step draft, against golden/mtp.safetensors (prompt 2 has near-tie rows: either of the two best
// is a right argmax there).
TEST(CliForward, MtpDumpMatchesGolden) {
  const Golden g("tiny-qwen35/golden/mtp.safetensors");
  for (const std::string p : {"p0.", "p2."}) {
    const std::string out = temp_dir("mtp") + "/out.safetensors";
    RunOutput r = run("forward -m " + tiny_model_dir() + " --ids " + join(g.i64(p + "prompt_ids")) + " --out " + out +
                      " --dump mtp --draft 3 --block 9");
    ASSERT_EQ(r.status, 0) << r.out;
    SafetensorsFile f(out);
    const int64_t T = int64_t(g.i64(p + "prompt_ids").size()), V = 248320;
    const TensorView& lt = f.get("mtp_logits");
    ASSERT_EQ(lt.shape, (Shape{T, V}));
    const float* logits = lt.as<float>();
    const auto lse = g.f32(p + "mtp_logits_lse");
    const auto top_ids = g.i64(p + "mtp_top_ids");
    const auto top_vals = g.f32(p + "mtp_top_vals");
    double worst = 0;
    for (int64_t t = 0; t + 1 < T; ++t) {
      const float* row = logits + t * V;
      worst = std::max(worst, std::fabs(logsumexp(row, V) - lse[size_t(t)]));
      for (int64_t j = 0; j < 32; ++j)
        worst = std::max(worst, std::fabs(double(row[top_ids[size_t(t * 32 + j)]]) - top_vals[size_t(t * 32 + j)]));
      const int64_t got = argmax(row, V);
      if (top_vals[size_t(t * 32)] - top_vals[size_t(t * 32 + 1)] >= kLogitTol)
        EXPECT_EQ(got, top_ids[size_t(t * 32)]) << p << " row " << t;
      else
        EXPECT_TRUE(got == top_ids[size_t(t * 32)] || got == top_ids[size_t(t * 32 + 1)]) << p << " near tie " << t;
    }
    EXPECT_LE(worst, kLogitTol) << p;
    // The last row is the pair (h_{T-1}, x_T): draft step 1.
    const float* step1 = f.get("mtp_draft_logits").as<float>();
    EXPECT_EQ(0, std::memcmp(step1, logits + (T - 1) * V, size_t(V) * sizeof(float)));
    EXPECT_LE(std::fabs(logsumexp(step1, V) - g.f32(p + "draft_lse")[0]), kLogitTol);
    const TensorView& d = f.get("mtp_draft_ids");
    EXPECT_EQ(std::vector<int64_t>(d.as<int64_t>(), d.as<int64_t>() + d.numel()), g.i64(p + "draft_ids")) << p;
    EXPECT_EQ(f.get("main_greedy_id").as<int64_t>()[0], g.i64(p + "main_greedy_ids")[0]);
    for (const char* name : {"mtp_k", "mtp_v"}) {
      const TensorView& t = f.get(name);
      std::vector<float> got(t.as<float>(), t.as<float>() + t.numel());
      EXPECT_LE(max_rel_error(got, g.f32(p + name)), 1e-4) << p << name;
    }
  }
  RunOutput r = run("forward --help");
  for (const char* name : {"mtp_logits", "mtp_draft_ids", "mtp_k", "mtp_v", "--draft"})
    EXPECT_NE(r.out.find(name), std::string::npos) << name;
  r = run("forward -m " + tiny_model_dir() + " --ids 1,2 --out /tmp/x.safetensors --dump mpt");
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.out.find("unknown item"), std::string::npos) << r.out;
}

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

// --spec: every mode gives the golden greedy ids; --json reports the drafts.
TEST(CliGenerate, SpeculationModesKeepTheGreedyIds) {
  const Golden g("tiny-qwen35/golden/greedy.safetensors");
  const std::string ids = join(g.i64("p0.prompt_ids"));
  for (const char* mode : {"off", "pld", "mtp", "auto"}) {
    RunOutput r = run("generate -m " + tiny_model_dir() + " --ids " + ids + " -n 32 --ignore-eos --json --spec " + mode +
                      " --draft-max 3");
    ASSERT_EQ(r.status, 0) << r.out;
    auto j = nlohmann::json::parse(r.out.substr(r.out.find('{')));
    EXPECT_EQ(j["ids"].get<std::vector<int64_t>>(), g.i64("p0.generated_ids")) << mode;
    EXPECT_EQ(j["speculative"]["mode"], mode);
    EXPECT_EQ(j["speculative"]["draft_max"], 3);
    EXPECT_EQ(j["speculative"]["drafted"].get<int64_t>(),
              j["mtp"]["drafted"].get<int64_t>() + j["pld"]["drafted"].get<int64_t>());
    if (std::string(mode) == "mtp") {
      EXPECT_GT(j["mtp"]["drafted"].get<int64_t>(), 0);
    }
    if (std::string(mode) == "off") {
      EXPECT_EQ(j["speculative"]["drafted"], 0);
    }
    EXPECT_TRUE(j["timings"].contains("draft_ms"));
  }
  RunOutput r = run("generate -m " + tiny_model_dir() + " --ids 1,2 --spec eagle");
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.out.find("--spec must be auto, mtp, pld or off"), std::string::npos) << r.out;
  r = run("generate -m " + tiny_model_dir() + " --ids 1,2 --draft-max 0");
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.out.find("--draft-max"), std::string::npos) << r.out;
  r = run("serve --help");
  EXPECT_NE(r.out.find("--spec MODE"), std::string::npos);
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

// A video is told from an image by its content: the golden clip under a name without extension.
TEST(CliRun, VideoFileIsAnsweredLikeAnImage) {
  const std::string clip = temp_dir("cli_video") + "/clip";
  {
    const std::vector<uint8_t> bytes = read_file_bytes(data_path("tiny-qwen35/golden_video/pan_200x150_12fps.mp4"));
    std::ofstream(clip, std::ios::binary).write(reinterpret_cast<const char*>(bytes.data()), std::streamsize(bytes.size()));
  }
  RunOutput r = run("run -m " + tiny_model_dir() + " " + clip + " \"What happens?\" -n 3 --no-think");
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("vision"), std::string::npos) << r.out;
  // 10 frames make 5 pairs: 4 tokens cannot hold them.
  r = run("run -m " + tiny_model_dir() + " " + clip + " x -n 1 --video-max-tokens 4");
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.out.find("over its limit of 4"), std::string::npos) << r.out;
  r = run("run -m " + tiny_model_dir() + " " + clip + " x -n 1 --video-fps 0");
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.out.find("--video-fps"), std::string::npos) << r.out;
  r = run("run -m " + tiny_model_dir() + " " + tiny_model_dir() + "/config.json x -n 1");
  EXPECT_NE(r.status, 0);  // neither an image nor a video
  EXPECT_NE(r.out.find("qwen35 run:"), std::string::npos) << r.out;
}

// One rule for the model of every command: -m, else the bundled tiny model, said on stderr.
TEST(CliDefaults, EveryModelCommandFallsBackToTheBundledModel) {
  for (const std::string cmd : {"info", "render --messages /dev/null", "forward --ids 1,2 --out /dev/null",
                                "generate --ids 1,2 -n 2", "run - x -n 2", "tokenize --decode"}) {
    RunOutput r = run(cmd);
    EXPECT_NE(r.out.find("using the bundled tiny test model"), std::string::npos) << cmd << ": " << r.out;
    EXPECT_EQ(r.out.find("missing -m"), std::string::npos) << cmd << ": " << r.out;
  }
  RunOutput r = run("info");
  EXPECT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("tiny-qwen35"), std::string::npos) << r.out;
}

// The Vulkan devices, or why there are none; never a model load.
TEST(CliDefaults, InfoListsTheVulkanDevices) {
  RunOutput r = run_cli("info --devices", 60, /*merge_stderr=*/false);
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_EQ(r.out.rfind("vulkan", 0), 0u) << r.out;
  EXPECT_EQ(r.out.find("tiny-qwen35"), std::string::npos) << r.out;
}

TEST(CliDefaults, VersionNamesTheBuild) {
  RunOutput r = run_cli("--version", 60, /*merge_stderr=*/false);
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_EQ(r.out.rfind("qwen35 ", 0), 0u) << r.out;
  EXPECT_NE(r.out.find('('), std::string::npos) << r.out;
}

// Thinking is on by default in `run` as in the API; --no-think turns it off.
TEST(CliDefaults, RunThinksUnlessToldNotTo) {
  RunOutput r = run("run -m " + tiny_model_dir() + " - \"x\" -n 2 --think --no-think");
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.out.find("contradict"), std::string::npos) << r.out;
  r = run("run -m " + tiny_model_dir() + " - \"x\" -n 2 --no-think");
  EXPECT_EQ(r.status, 0) << r.out;
}

}  // namespace
}  // namespace qwen35::test
