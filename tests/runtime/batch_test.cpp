// Continuous batching: generations of several sessions stepped together (their model passes in
// one batched forward each round) give exactly what each gives alone: tokens, text, logprob
// bits, for greedy, prompt lookup, seeded sampling, an image, a prefix-cache hit and reasoning
// budgets, with one of them cancelled midway and prompts whose prefill chunks overlap the
// others' decoding.
#include <gtest/gtest.h>

#include <cstring>
#include <random>

#include "core/error.h"
#include "qwen35/engine.h"
#include "runtime/engine_internal.h"
#include "runtime/session_impl.h"
#include "runtime_harness.h"
#include "support/test_data.h"

namespace qwen35::test {
namespace {

std::vector<int32_t> random_prompt(uint32_t seed, int n) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int32_t> d(10, 900);
  std::vector<int32_t> ids(static_cast<size_t>(n));
  for (int32_t& x : ids) x = d(rng);
  return ids;
}

// The tiny model (or another bundled folder) on 2 threads and a 2048-token context, with `tune`
// applied to the options.
std::unique_ptr<Engine> load_tiny(void (*tune)(EngineOptions&), const std::string& dir = tiny_model_dir()) {
  EngineOptions o;
  o.model_dir = dir;
  o.threads = 2;
  o.context_size = 2048;
  tune(o);
  Status st;
  auto engine = Engine::load(o, &st);
  EXPECT_TRUE(engine) << st.message;
  return engine;
}

const Engine& small_block_engine() {
  static std::unique_ptr<Engine> e = load_tiny([](EngineOptions& o) {
    o.prefill_block = 16;  // prompts take several steps, overlapping the others' decoding
  });
  return *e;
}

// Prompts advance 128 tokens a step alone and 64 while others decode.
const Engine& chunk_block_engine() {
  static std::unique_ptr<Engine> e = load_tiny([](EngineOptions& o) {
    o.prefill_block = 128;
    o.decoding_prefill.block = 50;  // rounded up to the delta rule's chunk, 64
    o.decoding_prefill.layers = 4;  // half the tiny model's 8 layers a round
  });
  return *e;
}

// What a generation produced, logprobs as raw bits.
struct Outcome {
  std::vector<int32_t> tokens;
  std::string content, reasoning;
  std::vector<uint32_t> logprob_bits;
  StopReason stop = StopReason::kNone;
  bool operator==(const Outcome&) const = default;
};

struct Request {
  enum class Kind { kCompletion, kChat } kind = Kind::kCompletion;
  std::vector<int32_t> prompt;
  ChatRequest chat;
  SamplingParams params;
  std::vector<int32_t> warm_prompt;  // run first on the same session (prefix-cache hit), if any
  // Cancelled after the first step that leaves it with at least this many tokens (prefill takes
  // more steps batched, while others decode, than alone, so steps are no common clock).
  size_t cancel_at_tokens = 0;
  bool cancel_due(const Generation& g) const {
    return cancel_at_tokens > 0 && g.result().tokens.size() >= cancel_at_tokens;
  }
};

EventCallback recorder(Outcome& o) {
  return [&o](const GenerationEvent& ev) {
    (ev.channel == Channel::kContent ? o.content : o.reasoning) += ev.text;
    for (const TokenLogprob& lp : ev.logprobs) {
      uint32_t b;
      std::memcpy(&b, &lp.logprob, sizeof b);
      o.logprob_bits.push_back(b);
    }
    return true;
  };
}

std::unique_ptr<Generation> start(Session& s, const Request& r, Outcome& o) {
  Status st;
  if (!r.warm_prompt.empty()) {
    s.complete(r.warm_prompt, greedy(4), nullptr, &st);
    EXPECT_TRUE(st.ok()) << st.message;
  }
  auto g = r.kind == Request::Kind::kChat ? s.start_chat(r.chat, r.params, recorder(o), &st)
                                          : s.start_completion(r.prompt, r.params, recorder(o), &st);
  EXPECT_TRUE(g) << st.message;
  return g;
}

void finish(const Generation& g, Outcome& o) {
  o.tokens = g.result().tokens;
  o.stop = g.result().stop_reason;
}

// Prompt lengths scale by `scale` (the text ones).
std::vector<Request> requests(int scale = 1) {
  std::vector<Request> rs(5);
  rs[0].prompt = random_prompt(1, 40 * scale);
  rs[0].params = greedy(20, SpecMode::kOff);
  // Repetitive prompt: prompt lookup drafts and verifies blocks of several tokens.
  for (int i = 0; i < 8 * scale; ++i) {
    auto phrase = random_prompt(2, 4);
    rs[1].prompt.insert(rs[1].prompt.end(), phrase.begin(), phrase.end());
  }
  rs[1].params = greedy(24, SpecMode::kPld);
  rs[2].prompt = random_prompt(3, 9 * scale);
  rs[2].params.temperature = 0.8f;
  rs[2].params.top_p = 0.95f;
  rs[2].params.seed = 1234;
  rs[2].params.max_tokens = 18;
  rs[2].params.logprobs = true;
  rs[2].params.ignore_eos = true;
  rs[3].kind = Request::Kind::kChat;
  ChatMessage u;
  u.role = "user";
  u.content.push_back(ContentPart::Image(read_file_bytes(tiny_model_dir() + "/chelsea.png")));
  u.content.push_back(ContentPart::Text("What is in the picture?"));
  rs[3].chat.messages.push_back(u);
  rs[3].params = greedy(10, SpecMode::kOff);
  rs[4].warm_prompt = random_prompt(5, 50 * scale);
  rs[4].prompt = rs[4].warm_prompt;
  auto more = random_prompt(6, 7 * scale);
  rs[4].prompt.insert(rs[4].prompt.end(), more.begin(), more.end());
  rs[4].params = greedy(16, SpecMode::kMtp);
  rs[4].params.logprobs = true;
  rs[4].cancel_at_tokens = 8;
  // Reasoning budgets: the forced closing of a thought is fed at its round like any block.
  Request think;
  think.kind = Request::Kind::kChat;
  think.chat.messages.push_back(ChatMessage::Text("user", "Think, then answer."));
  think.params = greedy(40, SpecMode::kPld);
  think.params.reasoning_budget = 5;
  rs.push_back(think);
  think.params = rs[2].params;
  think.params.max_tokens = 30;
  think.params.reasoning_budget = 0;
  rs.push_back(think);
  return rs;
}

void expect_batched_equal_solo(const Engine& engine, const std::vector<Request>& rs) {
  std::vector<Outcome> solo(rs.size());
  for (size_t i = 0; i < rs.size(); ++i) {
    auto s = engine.new_session();
    auto g = start(*s, rs[i], solo[i]);
    ASSERT_TRUE(g);
    while (g->step())
      if (rs[i].cancel_due(*g)) g->cancel();
    finish(*g, solo[i]);
  }

  std::vector<Outcome> batched(rs.size());
  std::vector<std::unique_ptr<Session>> sessions;
  std::vector<std::unique_ptr<Generation>> gens;
  for (size_t i = 0; i < rs.size(); ++i) {
    sessions.push_back(engine.new_session());
    gens.push_back(start(*sessions.back(), rs[i], batched[i]));
    ASSERT_TRUE(gens.back());
  }
  GenerationBatch batch(engine);
  std::vector<bool> running(rs.size(), true);
  for (;;) {
    std::vector<Generation*> round;
    std::vector<size_t> index;
    for (size_t i = 0; i < rs.size(); ++i)
      if (running[i]) round.push_back(gens[i].get()), index.push_back(i);
    if (round.empty()) break;
    std::vector<GenerationBatch::Outcome> out;
    batch.step(round, out);
    for (size_t j = 0; j < round.size(); ++j) {
      const size_t i = index[j];
      ASSERT_FALSE(out[j].error) << "request " << i << " threw";
      running[i] = out[j].more;
      if (running[i] && rs[i].cancel_due(*gens[i])) gens[i]->cancel(), running[i] = false;
    }
  }
  for (size_t i = 0; i < rs.size(); ++i) {
    finish(*gens[i], batched[i]);
    EXPECT_FALSE(batched[i].tokens.empty()) << "request " << i;
    EXPECT_TRUE(batched[i] == solo[i]) << "request " << i << ": batched output differs from the solo run";
  }
  EXPECT_EQ(batched[4].stop, StopReason::kCancelled);
  // Passes really were shared: fewer batched passes than the rows they carried, and more than one
  // sequence per pass on average.
  EXPECT_GT(batch.batches(), 0u);
  EXPECT_GT(batch.batched_rows(), 2 * batch.batches());
}

TEST(Batching, GenerationsSteppedTogetherGiveTheirSoloOutputs) {
  expect_batched_equal_solo(small_block_engine(), requests());
}

// The same for the mixture of experts: rows of several sequences share the expert passes.
TEST(Batching, MixtureOfExpertsGenerationsSteppedTogetherGiveTheirSoloOutputs) {
  static std::unique_ptr<Engine> moe = load_tiny([](EngineOptions& o) { o.prefill_block = 16; }, tiny_moe_model_dir());
  expect_batched_equal_solo(*moe, requests());
}

// Prompts of up to 385 tokens, prefilled 64 tokens a round while others decode and 128 alone.
TEST(Batching, SmallerPrefillBlocksWhileOthersDecodeKeepTheSoloOutputs) {
  expect_batched_equal_solo(chunk_block_engine(), requests(5));
}

// While another generation decodes, one prompt at a time advances decoding_prefill.block tokens
// (rounded up to the delta rule's chunk) through decoding_prefill.layers layers per round (a
// shorter block through proportionally more), the one part-way through the layers or else the
// first in line; alone, prefill_block at once. (Outputs stay those of solo runs: the test above.)
TEST(Batching, PromptsAdvanceInSmallBlocksWhileOthersDecode) {
  const Engine& engine = chunk_block_engine();
  EXPECT_EQ(decoding_prefill_limit(impl_of(engine).options), 64);
  EngineOptions o;
  o.prefill_block = 100;  // no multiple of the chunk: blocks stay whole
  o.decoding_prefill.block = 64;
  EXPECT_EQ(decoding_prefill_limit(o), 100);
  o.prefill_block = 16;  // smaller than a chunk already
  EXPECT_EQ(decoding_prefill_limit(o), 16);
  Outcome a, b;
  auto sa = engine.new_session(), sb = engine.new_session();
  Request ra, rb;
  ra.prompt = random_prompt(7, 6);
  ra.params = greedy(60, SpecMode::kOff);
  ra.params.ignore_eos = true;
  rb.prompt = random_prompt(8, 300);
  rb.params = greedy(8, SpecMode::kOff);
  Outcome c;
  auto sc = engine.new_session();
  Request rc = rb;
  rc.prompt = random_prompt(9, 70);
  auto ga = start(*sa, ra, a), gb = start(*sb, rb, b), gc = start(*sc, rc, c);
  GenerationBatch batch(engine);
  std::vector<GenerationBatch::Outcome> out;
  batch.step({gb.get()}, out);  // alone: a full block
  EXPECT_EQ(gb->pending_prompt_tokens(), 300 - 128);
  while (ga->pending_prompt_tokens() > 0) ASSERT_TRUE(ga->step());
  std::vector<int64_t> pending_b, pending_c;
  while (gc->pending_prompt_tokens() > 0) {
    batch.step({ga.get(), gb.get(), gc.get()}, out);
    ASSERT_TRUE(out[0].more && out[1].more && out[2].more);
    pending_b.push_back(gb->pending_prompt_tokens());
    pending_c.push_back(gc->pending_prompt_tokens());
  }
  // The tiny model's 8 layers, 4 a round for a 64-token block (64 * 4 token-layers), 5 for
  // b's last 44 tokens, all 8 for c's last 6.
  ASSERT_EQ(impl_of(engine).options.decoding_prefill.layers, 4);
  EXPECT_EQ(EngineOptions{}.decoding_prefill.layers, 2);  // the default
  EXPECT_EQ(pending_b, (std::vector<int64_t>{172, 108, 108, 44, 44, 0, 0, 0, 0}));
  EXPECT_EQ(pending_c, (std::vector<int64_t>{70, 70, 70, 70, 70, 70, 70, 6, 0}));
}

const Engine& one_layer_engine() {
  static std::unique_ptr<Engine> e = load_tiny([](EngineOptions& o) {
    o.prefill_block = 128;
    o.decoding_prefill.block = 64;
    o.decoding_prefill.layers = 1;  // a 64-token block through one layer a round
  });
  return *e;
}

TEST(Batching, PromptBlocksSpreadOverManyRoundsKeepTheSoloOutputs) {
  expect_batched_equal_solo(one_layer_engine(), requests(3));
}

// Paced prefill (PrefillPacer): the layers a round carries follow the measured round times, so
// they differ from run to run; the outputs do not.
const Engine& paced_engine() {
  static std::unique_ptr<Engine> e = load_tiny([](EngineOptions& o) {
    o.prefill_block = 128;
    o.decoding_prefill.block = 64;
    o.decoding_prefill.layers = 0;
    o.decoding_prefill.share = 0.05;  // a small share: the budget moves over its range
  });
  return *e;
}

TEST(Batching, PacedPrefillKeepsTheSoloOutputs) {
  expect_batched_equal_solo(paced_engine(), requests(5));
}

// A generation cancelled while its prompt block is part-way through the layers leaves its session
// as a cold one: the next request on it gives exactly what a fresh session gives.
TEST(Batching, CancelledPartWayThroughTheLayersLeavesTheSessionUsable) {
  const Engine& engine = one_layer_engine();
  Request ra, rb, rnext;
  ra.prompt = random_prompt(21, 5);
  ra.params = greedy(30, SpecMode::kOff);
  ra.params.ignore_eos = true;
  rb.prompt = random_prompt(22, 100);
  rb.params = greedy(4, SpecMode::kOff);
  rnext.prompt = rb.prompt;  // would extend what b had fed, were it kept
  rnext.prompt.insert(rnext.prompt.end(), {11, 12, 13});
  rnext.params = greedy(6, SpecMode::kOff);
  Outcome cold;
  {
    auto s = engine.new_session();
    auto g = start(*s, rnext, cold);
    while (g->step()) {
    }
    finish(*g, cold);
  }
  auto sa = engine.new_session(), sb = engine.new_session();
  Outcome a, b;
  auto ga = start(*sa, ra, a), gb = start(*sb, rb, b);
  while (ga->pending_prompt_tokens() > 0) ASSERT_TRUE(ga->step());
  GenerationBatch batch(engine);
  std::vector<GenerationBatch::Outcome> out;
  // A 64-token block in 8 rounds (one layer each), then 3 layers of the next block (36 tokens).
  for (int round = 0; round < 8 + 3; ++round) batch.step({ga.get(), gb.get()}, out);
  ASSERT_EQ(gb->pending_prompt_tokens(), 100 - 64);
  ASSERT_GT(impl_of(*gb).block_in_flight, 0);
  gb->cancel();
  EXPECT_EQ(gb->result().stop_reason, StopReason::kCancelled);
  EXPECT_TRUE(sb->tokens().empty());
  gb.reset();
  Outcome again;
  auto gn = start(*sb, rnext, again);
  while (gn->step()) {
  }
  finish(*gn, again);
  EXPECT_TRUE(again == cold);
}

// A step that throws fails its own generation only; the others finish as they would alone.
TEST(Batching, AFailingStepLeavesTheOthersIntact) {
  const Engine& engine = small_block_engine();
  std::vector<Request> rs = requests();
  Outcome solo0;
  {
    auto s = engine.new_session();
    auto g = start(*s, rs[0], solo0);
    while (g->step()) {
    }
    finish(*g, solo0);
  }
  Outcome a, b;
  auto sa = engine.new_session(), sb = engine.new_session();
  auto ga = start(*sa, rs[0], a);
  // The drafter of b throws on its third call, inside a step.
  Request bad = rs[1];
  Status st;
  auto gb = sb->start_completion(bad.prompt, bad.params, recorder(b), &st);
  ASSERT_TRUE(gb) << st.message;
  int calls = 0;
  impl_of(*gb).draft_source = [&](const std::vector<int32_t>&, int, std::vector<int32_t>&) {
    if (++calls == 3) throw Error("drafter failed");
  };
  GenerationBatch batch(engine);
  bool a_more = true, b_more = true, b_threw = false;
  while (a_more || b_more) {
    std::vector<Generation*> round;
    if (a_more) round.push_back(ga.get());
    if (b_more) round.push_back(gb.get());
    std::vector<GenerationBatch::Outcome> out;
    batch.step(round, out);
    size_t j = 0;
    if (a_more) {
      ASSERT_FALSE(out[j].error);
      a_more = out[j++].more;
    }
    if (b_more) {
      b_threw |= bool(out[j].error);
      b_more = out[j].more && !out[j].error;
    }
  }
  finish(*ga, a);
  EXPECT_TRUE(a == solo0);
  EXPECT_TRUE(b_threw);
}

}  // namespace
}  // namespace qwen35::test
