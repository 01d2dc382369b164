// The engine with --device vulkan on whatever Vulkan device the machine has (lavapipe here), with
// the validation layer on: greedy completions of the tiny model's golden prompts give the golden
// tokens (either of the two best at a near tie), prompt lookup and the prefix cache give the
// tokens of plain and cold runs there, and --device auto leaves lavapipe to the CPU.
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <memory>
#include <string>

#include "kernels/vulkan/device.h"
#include "model/vulkan/decoder_vulkan.h"
#include "qwen35/engine.h"
#include "runtime/engine_impl.h"
#include "runtime/engine_internal.h"
#include "runtime/prefix_cache.h"
#include "runtime/session_impl.h"
#include "support/logit_checks.h"
#include "support/test_data.h"

namespace qwen35 {
namespace {

bool have_vulkan() {
  if (!vk::list_devices().empty()) return true;
  const char* req = std::getenv("QWEN35_REQUIRE_VULKAN");
  if (req && std::strcmp(req, "1") == 0) ADD_FAILURE() << "no Vulkan driver (QWEN35_REQUIRE_VULKAN=1)";
  return false;
}

std::unique_ptr<Engine> load(const std::string& device, const std::string& model_dir = test::tiny_model_dir()) {
  EngineOptions o;
  o.model_dir = model_dir;
  o.threads = 2;
  o.context_size = 256;
  o.device = device;
  Status st;
  std::unique_ptr<Engine> e = Engine::load(o, &st);
  EXPECT_TRUE(e) << st.message;
  return e;
}

// The tiny model on the device with the validation layer on (its errors counted by the device).
std::unique_ptr<Engine> load_validated(const std::string& model_dir = test::tiny_model_dir()) {
  setenv("QWEN35_VULKAN_VALIDATION", "1", 1);
  std::unique_ptr<Engine> e = load("vulkan", model_dir);
  unsetenv("QWEN35_VULKAN_VALIDATION");
  return e;
}

VulkanDecoderBackend* vulkan_backend(Engine& engine) {
  return dynamic_cast<VulkanDecoderBackend*>(impl_of(engine).device.get());
}

SamplingParams greedy(int64_t n) {
  SamplingParams p;
  p.temperature = 0;
  p.max_tokens = n;
  p.ignore_eos = true;
  return p;
}

// Greedy completions of the golden prompts of `golden` (a near tie: either of the two best, then
// no more comparing) on a validated device.
void expect_golden_completions(const std::string& model_dir, const std::string& golden,
                               std::initializer_list<const char*> prompts, int64_t steps) {
  const std::unique_ptr<Engine> engine = load_validated(model_dir);
  ASSERT_TRUE(engine);
  EXPECT_EQ(engine->info().device.rfind("Vulkan on ", 0), 0u) << engine->info().device;
  VulkanDecoderBackend* backend = vulkan_backend(*engine);
  ASSERT_NE(backend, nullptr);
  ASSERT_TRUE(backend->device().validation());

  const test::Golden g(golden);
  for (const std::string p : prompts) {
    SCOPED_TRACE(p);
    const auto prompt64 = g.i64(p + "prompt_ids");
    const auto want = g.i64(p + "generated_ids");
    const auto gaps = g.f32(p + "step_top1_top2_gap");
    const auto top = g.i64(p + "step_top_ids");
    const int64_t K = g.shape(p + "step_top_ids")[1];
    Status st;
    const GenerationResult r =
        engine->new_session()->complete(std::vector<int32_t>(prompt64.begin(), prompt64.end()), greedy(steps), nullptr,
                                        &st);
    ASSERT_TRUE(st.ok()) << st.message;
    ASSERT_EQ(int64_t(r.tokens.size()), steps);
    for (int64_t s = 0; s < steps; ++s) {
      if (gaps[size_t(s)] < test::kLogitTol) {  // a near tie: either of the two best, then stop comparing
        EXPECT_TRUE(r.tokens[size_t(s)] == top[size_t(s * K)] || r.tokens[size_t(s)] == top[size_t(s * K + 1)]);
        if (r.tokens[size_t(s)] != want[size_t(s)]) break;
      } else {
        EXPECT_EQ(r.tokens[size_t(s)], want[size_t(s)]) << "step " << s;
      }
    }
  }
  EXPECT_EQ(backend->device().validation_errors(), 0);
}

// lavapipe runs the 248320-row LM head once per token: a few steps each.
TEST(VulkanEngine, GreedyCompletionsGiveTheGoldenTokens) {
  if (!have_vulkan()) GTEST_SKIP() << "no Vulkan driver on this machine";
  expect_golden_completions(test::tiny_model_dir(), "tiny-qwen35/golden/greedy.safetensors", {"p0.", "p2."}, 6);
}

TEST(VulkanEngine, MoeGreedyCompletionsGiveTheGoldenTokens) {
  if (!have_vulkan()) GTEST_SKIP() << "no Vulkan driver on this machine";
  expect_golden_completions(test::tiny_moe_model_dir(), "tiny-qwen35-moe/golden/greedy.safetensors", {"p0.", "p1."},
                            5);
}

// Two generations stepped together (their passes batched into one device pass per round) give
// the tokens each gives alone on the device.
void expect_batched_gives_solo(const std::string& model_dir) {
  const std::unique_ptr<Engine> engine = load("vulkan", model_dir);
  ASSERT_TRUE(engine);
  const std::vector<std::vector<int32_t>> prompts = {{9707, 11, 1879, 0, 3555, 374, 279}, {3838, 374, 220, 17}};
  constexpr int64_t kTokens = 4;
  std::vector<std::vector<int32_t>> solo;
  for (const auto& p : prompts) {
    Status st;
    solo.push_back(engine->new_session()->complete(p, greedy(kTokens), nullptr, &st).tokens);
    ASSERT_TRUE(st.ok()) << st.message;
  }
  std::vector<std::unique_ptr<Session>> sessions;
  std::vector<std::unique_ptr<Generation>> gens;
  for (const auto& p : prompts) {
    Status st;
    sessions.push_back(engine->new_session());
    gens.push_back(sessions.back()->start_completion(p, greedy(kTokens), nullptr, &st));
    ASSERT_TRUE(gens.back()) << st.message;
  }
  GenerationBatch batch(*engine);
  std::vector<bool> running(gens.size(), true);
  for (int round = 0; round < 64; ++round) {
    std::vector<Generation*> step;
    std::vector<size_t> index;
    for (size_t i = 0; i < gens.size(); ++i)
      if (running[i]) step.push_back(gens[i].get()), index.push_back(i);
    if (step.empty()) break;
    std::vector<GenerationBatch::Outcome> out;
    batch.step(step, out);
    for (size_t j = 0; j < step.size(); ++j) {
      ASSERT_FALSE(out[j].error) << "generation " << index[j] << " threw";
      running[index[j]] = out[j].more;
    }
  }
  for (size_t i = 0; i < gens.size(); ++i) EXPECT_EQ(gens[i]->result().tokens, solo[i]) << "generation " << i;
  EXPECT_GT(batch.batched_rows(), batch.batches());  // the passes really were shared
}

TEST(VulkanEngine, BatchedGenerationsGiveTheirSoloTokens) {
  if (!have_vulkan()) GTEST_SKIP() << "no Vulkan driver on this machine";
  expect_batched_gives_solo(test::tiny_model_dir());
}

TEST(VulkanEngine, BatchedMoeGenerationsGiveTheirSoloTokens) {
  if (!have_vulkan()) GTEST_SKIP() << "no Vulkan driver on this machine";
  expect_batched_gives_solo(test::tiny_moe_model_dir());
}

SamplingParams greedy_spec(int64_t n, SpecMode mode) {
  SamplingParams p = greedy(n);
  p.speculative.mode = mode;
  p.speculative.draft_max = 4;
  return p;
}

// Prompt lookup on the device: saves and rewinds are device copies, a partly accepted draft feeds
// its kept tokens again there. A drafter that knows the plain greedy answer proposes it with
// mistakes (whole drafts right, partial matches, misses): the output is plain greedy decoding's.
void expect_prompt_lookup_gives_greedy(const std::string& model_dir) {
  const std::unique_ptr<Engine> engine = load_validated(model_dir);
  ASSERT_TRUE(engine);
  VulkanDecoderBackend* backend = vulkan_backend(*engine);
  ASSERT_NE(backend, nullptr);
  const std::vector<int32_t> prompt = {9707, 11, 1879, 0, 3555, 374, 279};
  constexpr int64_t kTokens = 10;
  Status st;
  const GenerationResult plain =
      engine->new_session()->complete(prompt, greedy_spec(kTokens, SpecMode::kOff), nullptr, &st);
  ASSERT_TRUE(st.ok()) << st.message;
  ASSERT_EQ(int64_t(plain.tokens.size()), kTokens);
  auto session = engine->new_session();
  auto gen = session->start_completion(prompt, greedy_spec(kTokens, SpecMode::kPld), nullptr, &st);
  ASSERT_TRUE(gen) << st.message;
  int calls = 0;
  impl_of(*gen).draft_source = [&](const std::vector<int32_t>& history, int max_tokens, std::vector<int32_t>& out) {
    const size_t done = history.size() - prompt.size();  // generated so far (incl. the pending one)
    const int len = std::min(max_tokens, 2 + calls % 3);
    const int wrong_at = calls % 3 == 0 ? len : 1 + calls % 2;  // every third draft is all right
    for (int i = 0; i < len && done + size_t(i) < plain.tokens.size(); ++i)
      out.push_back(i == wrong_at ? (plain.tokens[done + size_t(i)] + 1) % 1000 : plain.tokens[done + size_t(i)]);
    ++calls;
  };
  while (gen->step()) {
  }
  const GenerationResult& r = gen->result();
  EXPECT_EQ(r.tokens, plain.tokens);
  EXPECT_GT(r.pld_accepted, 0);
  EXPECT_LT(r.pld_accepted, r.pld_drafted);  // some drafts were partly wrong: rewinds that keep a part
  EXPECT_EQ(backend->device().validation_errors(), 0);
}

TEST(VulkanEngine, PromptLookupGivesGreedyTokens) {
  if (!have_vulkan()) GTEST_SKIP() << "no Vulkan driver on this machine";
  expect_prompt_lookup_gives_greedy(test::tiny_model_dir());
}

// The mixture of experts in verify blocks: each row's experts as when decoded alone.
TEST(VulkanEngine, MoePromptLookupGivesGreedyTokens) {
  if (!have_vulkan()) GTEST_SKIP() << "no Vulkan driver on this machine";
  expect_prompt_lookup_gives_greedy(test::tiny_moe_model_dir());
}

// The same with two generations stepped together: their verify blocks share one device pass per
// round (BatchGate), and each still gives its plain greedy tokens.
TEST(VulkanEngine, BatchedPromptLookupGivesGreedyTokens) {
  if (!have_vulkan()) GTEST_SKIP() << "no Vulkan driver on this machine";
  const std::unique_ptr<Engine> engine = load("vulkan");
  ASSERT_TRUE(engine);
  const std::vector<std::vector<int32_t>> prompts = {{9707, 11, 1879, 0, 3555}, {3838, 374, 220, 17}};
  constexpr int64_t kTokens = 8;
  std::vector<GenerationResult> plain;
  for (const auto& p : prompts) {
    Status st;
    plain.push_back(engine->new_session()->complete(p, greedy_spec(kTokens, SpecMode::kOff), nullptr, &st));
    ASSERT_TRUE(st.ok()) << st.message;
  }
  std::vector<std::unique_ptr<Session>> sessions;
  std::vector<std::unique_ptr<Generation>> gens;
  std::vector<int> calls(prompts.size(), 0);
  for (size_t g = 0; g < prompts.size(); ++g) {
    Status st;
    sessions.push_back(engine->new_session());
    gens.push_back(sessions.back()->start_completion(prompts[g], greedy_spec(kTokens, SpecMode::kPld), nullptr, &st));
    ASSERT_TRUE(gens.back()) << st.message;
    impl_of(*gens.back()).draft_source = [&, g](const std::vector<int32_t>& history, int max_tokens,
                                                std::vector<int32_t>& out) {
      const std::vector<int32_t>& want = plain[g].tokens;
      const size_t done = history.size() - prompts[g].size();
      const int c = calls[g]++, len = std::min(max_tokens, 3);
      const int wrong_at = (c + int(g)) % 2 == 0 ? len : 1;  // every other draft partly wrong
      for (int i = 0; i < len && done + size_t(i) < want.size(); ++i)
        out.push_back(i == wrong_at ? (want[done + size_t(i)] + 1) % 1000 : want[done + size_t(i)]);
    };
  }
  GenerationBatch batch(*engine);
  std::vector<bool> running(gens.size(), true);
  for (int round = 0; round < 64; ++round) {
    std::vector<Generation*> step;
    std::vector<size_t> index;
    for (size_t i = 0; i < gens.size(); ++i)
      if (running[i]) step.push_back(gens[i].get()), index.push_back(i);
    if (step.empty()) break;
    std::vector<GenerationBatch::Outcome> out;
    batch.step(step, out);
    for (size_t j = 0; j < step.size(); ++j) {
      ASSERT_FALSE(out[j].error) << "generation " << index[j] << " threw";
      running[index[j]] = out[j].more;
    }
  }
  for (size_t i = 0; i < gens.size(); ++i) {
    EXPECT_EQ(gens[i]->result().tokens, plain[i].tokens) << "generation " << i;
    EXPECT_GT(gens[i]->result().pld_accepted, 0) << "generation " << i;
  }
  EXPECT_GT(batch.batched_rows(), batch.batches());  // the passes really were shared
}

ChatRequest chat_of(const std::string& system, const std::string& user) {
  ChatRequest r;
  r.messages = {ChatMessage::Text("system", system), ChatMessage::Text("user", user)};
  r.enable_thinking = false;
  return r;
}

// MTP speculation with the decoder on the device (the head on the host over the final-normed rows
// that come back): the head's drafts, rewritten to plain greedy's tokens with mistakes (whole
// drafts right, partly right, wrong) so that rewinds keep parts of verify blocks, give plain
// greedy decoding's tokens on the device, for the dense and the MoE model.
void expect_mtp_gives_greedy(const std::string& model_dir) {
  const std::unique_ptr<Engine> engine = load_validated(model_dir);
  ASSERT_TRUE(engine);
  ASSERT_TRUE(engine->info().has_mtp);
  VulkanDecoderBackend* backend = vulkan_backend(*engine);
  ASSERT_NE(backend, nullptr);
  const std::vector<int32_t> prompt = {9707, 11, 1879, 0, 3555, 374, 279};
  constexpr int64_t kTokens = 9;
  Status st;
  const GenerationResult plain =
      engine->new_session()->complete(prompt, greedy_spec(kTokens, SpecMode::kOff), nullptr, &st);
  ASSERT_TRUE(st.ok()) << st.message;
  auto session = engine->new_session();
  auto gen = session->start_completion(prompt, greedy_spec(kTokens, SpecMode::kMtp), nullptr, &st);
  ASSERT_TRUE(gen) << st.message;
  int calls = 0;
  impl_of(*gen).rewrite_mtp_draft = [&](const std::vector<int32_t>& history, std::vector<int32_t>& d) {
    const size_t done = history.size() - prompt.size();
    const int wrong_at = calls % 3 == 0 ? int(d.size()) : calls % 2;  // every third draft all right
    for (size_t i = 0; i < d.size() && done + i < plain.tokens.size(); ++i)
      d[i] = int(i) == wrong_at ? (plain.tokens[done + i] + 1) % 1000 : plain.tokens[done + i];
    ++calls;
  };
  while (gen->step()) {
  }
  const GenerationResult& r = gen->result();
  EXPECT_EQ(r.tokens, plain.tokens);
  EXPECT_GT(r.mtp_accepted, 0);
  EXPECT_LT(r.mtp_accepted, r.mtp_drafted);
  EXPECT_EQ(backend->device().validation_errors(), 0);
}

TEST(VulkanEngine, MtpSpeculationGivesGreedyTokens) {
  if (!have_vulkan()) GTEST_SKIP() << "no Vulkan driver on this machine";
  expect_mtp_gives_greedy(test::tiny_model_dir());
}

TEST(VulkanEngine, MoeMtpSpeculationGivesGreedyTokens) {
  if (!have_vulkan()) GTEST_SKIP() << "no Vulkan driver on this machine";
  expect_mtp_gives_greedy(test::tiny_moe_model_dir());
}

// The head's drafts as they come (no rewriting), through a follow-up turn that reuses the first
// turn's prefix from the prefix cache (a device snapshot with the head's rows on the host): the
// tokens of a cold plain run.
TEST(VulkanEngine, MtpWithAReusedPrefixGivesTheColdRunsTokens) {
  if (!have_vulkan()) GTEST_SKIP() << "no Vulkan driver on this machine";
  const std::unique_ptr<Engine> engine = load("vulkan");
  ASSERT_TRUE(engine);
  PrefixCache cache(size_t(64) << 20);
  auto a = engine->new_session(&cache), b = engine->new_session(&cache);
  const std::string system = "A long shared system prompt about many things.";
  Status st;
  a->chat(chat_of(system, "first question"), greedy_spec(3, SpecMode::kMtp), nullptr, &st);
  ASSERT_TRUE(st.ok()) << st.message;
  const ChatRequest next = chat_of(system, "a different question");
  const GenerationResult y = b->chat(next, greedy_spec(4, SpecMode::kMtp), nullptr, &st);
  ASSERT_TRUE(st.ok()) << st.message;
  EXPECT_GT(y.cached_tokens, 0);
  EXPECT_GT(y.mtp_drafted, 0);
  const GenerationResult cold = engine->new_session()->chat(next, greedy_spec(4, SpecMode::kOff), nullptr, &st);
  ASSERT_TRUE(st.ok()) << st.message;
  EXPECT_EQ(y.tokens, cold.tokens);
}


// The prefix cache on the device: its snapshots are device copies, restored into a fresh
// session's state (which then lives on the device from the copy) and into one already there; the
// reused prefix gives the tokens of a cold run.
TEST(VulkanEngine, ReusedPrefixGivesTheColdRunsTokens) {
  if (!have_vulkan()) GTEST_SKIP() << "no Vulkan driver on this machine";
  const std::unique_ptr<Engine> engine = load_validated();
  ASSERT_TRUE(engine);
  VulkanDecoderBackend* backend = vulkan_backend(*engine);
  ASSERT_NE(backend, nullptr);
  PrefixCache cache(size_t(64) << 20);
  auto a = engine->new_session(&cache), b = engine->new_session(&cache);
  const std::string system = "A long shared system prompt about many things.";
  Status st;
  const GenerationResult x = a->chat(chat_of(system, "first question"), greedy(3), nullptr, &st);
  ASSERT_TRUE(st.ok()) << st.message;
  EXPECT_EQ(x.cached_tokens, 0);
  for (Session* s : {b.get(), a.get()}) {  // a fresh session, then one whose states are on the device
    SCOPED_TRACE(s == a.get() ? "same session" : "fresh session");
    const ChatRequest next = chat_of(system, s == a.get() ? "a third question" : "a different question");
    const GenerationResult y = s->chat(next, greedy(3), nullptr, &st);
    ASSERT_TRUE(st.ok()) << st.message;
    EXPECT_GT(y.cached_tokens, 0);
    EXPECT_EQ(y.timings.prefill_tokens, y.prompt_tokens - y.cached_tokens);
    const GenerationResult cold = engine->new_session()->chat(next, greedy(3), nullptr, &st);
    ASSERT_TRUE(st.ok()) << st.message;
    EXPECT_EQ(cold.cached_tokens, 0);
    EXPECT_EQ(y.tokens, cold.tokens);
  }
  EXPECT_GT(cache.hits(), 0);
  EXPECT_EQ(backend->device().validation_errors(), 0);
}

TEST(VulkanEngine, AutoLeavesASoftwareRasterizerToTheCpu) {
  if (!have_vulkan()) GTEST_SKIP() << "no Vulkan driver on this machine";
  const std::vector<vk::DeviceInfo> devices = vk::list_devices();
  const int best = vk::best_device(devices);
  const std::unique_ptr<Engine> engine = load("auto");
  ASSERT_TRUE(engine);
  const bool gpu = best >= 0 && devices[size_t(best)].type != "cpu";
  EXPECT_EQ(engine->info().device == "cpu", !gpu) << engine->info().device;
  EXPECT_EQ(impl_of(*engine).device != nullptr, gpu);
}

// A model that does not fit the device's usable memory (forced small by QWEN35_VULKAN_MEMORY_MIB):
// the start-up notice says what it needs against what the device has, and the engine runs on the
// CPU (the golden tokens there); under a cap it fits it stays on the device; a malformed cap is a
// clear error.
TEST(VulkanEngine, AModelThatDoesNotFitRunsOnTheCpu) {
  if (!have_vulkan()) GTEST_SKIP() << "no Vulkan driver on this machine";
  auto load_capped = [](const char* mib, std::string& notices, Status& st) {
    setenv("QWEN35_VULKAN_MEMORY_MIB", mib, 1);
    EngineOptions o;
    o.model_dir = test::tiny_model_dir();
    o.threads = 2;
    o.context_size = 256;
    o.device = "vulkan";
    o.on_notice = [&](const std::string& line) { notices += line + "\n"; };
    std::unique_ptr<Engine> e = Engine::load(o, &st);
    unsetenv("QWEN35_VULKAN_MEMORY_MIB");
    return e;
  };
  std::string notices;
  Status st;
  const std::unique_ptr<Engine> small = load_capped("16", notices, st);
  ASSERT_TRUE(small) << st.message;
  EXPECT_EQ(impl_of(*small).device, nullptr);
  EXPECT_EQ(small->info().device, "cpu");
  EXPECT_NE(notices.find("text decoder on the CPU: the text decoder needs "), std::string::npos) << notices;
  EXPECT_NE(notices.find("has 16 MiB usable (QWEN35_VULKAN_MEMORY_MIB)"), std::string::npos) << notices;
  const test::Golden g("tiny-qwen35/golden/greedy.safetensors");
  const auto prompt = g.i64("p0.prompt_ids"), want = g.i64("p0.generated_ids");
  const GenerationResult r =
      small->new_session()->complete(std::vector<int32_t>(prompt.begin(), prompt.end()), greedy(3), nullptr, &st);
  ASSERT_TRUE(st.ok()) << st.message;
  EXPECT_EQ(std::vector<int64_t>(r.tokens.begin(), r.tokens.end()), std::vector<int64_t>(want.begin(), want.begin() + 3));

  notices.clear();
  const std::unique_ptr<Engine> roomy = load_capped("4096", notices, st);
  ASSERT_TRUE(roomy) << st.message;
  EXPECT_NE(impl_of(*roomy).device, nullptr) << notices;

  EXPECT_FALSE(load_capped("lots", notices, st));
  EXPECT_NE(st.message.find("QWEN35_VULKAN_MEMORY_MIB=lots"), std::string::npos) << st.message;
}

TEST(VulkanEngine, MalformedDeviceIsAClearError) {
  for (const char* bad : {"gpu", "vulkan:x", "vulkan:99"}) {
    EngineOptions o;
    o.model_dir = test::tiny_model_dir();
    o.device = bad;
    Status st;
    EXPECT_FALSE(Engine::load(o, &st)) << bad;
    EXPECT_NE(st.message.find("--device"), std::string::npos) << st.message;
  }
}

}  // namespace
}  // namespace qwen35
