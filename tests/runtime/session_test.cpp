// Session behaviour: snapshots, prefix reuse, prompt lookup decoding, cache budget.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>

#include "runtime/engine_impl.h"
#include "runtime/engine_internal.h"
#include "runtime/prefix_cache.h"
#include "runtime/prompt_lookup.h"
#include "runtime/session_impl.h"
#include "runtime/sequence.h"
#include "runtime_harness.h"
#include "support/test_data.h"
#include "text/chat_format.h"

namespace qwen35::test {
namespace {

std::vector<int32_t> random_ids(std::mt19937& rng, int n) {
  std::uniform_int_distribution<int32_t> d(0, 150000);
  std::vector<int32_t> ids(static_cast<size_t>(n));
  for (auto& x : ids) x = d(rng);
  return ids;
}

// Continuing after restore() is bit-identical to continuing directly.
TEST(Snapshot, RestoreContinuesBitIdentically) {
  const Engine& engine = tiny_engine();
  const EngineImpl& e = impl_of(engine);
  std::mt19937 rng(1);
  const int64_t V = e.text_config().vocab_size;
  for (int prefix_len : {1, 5, 70}) {
    Sequence seq(e);
    auto prefix = random_ids(rng, prefix_len), more = random_ids(rng, 9);
    seq.feed_text(prefix.data(), int64_t(prefix.size()), DeltaRuleMode::kAuto, 0, nullptr);
    auto snap = seq.snapshot();
    std::vector<float> direct(size_t(9 * V)), restored(size_t(9 * V));
    seq.feed_text(more.data(), 9, DeltaRuleMode::kAuto, 9, direct.data());
    seq.feed_text(more.data(), 3, DeltaRuleMode::kAuto, 0, nullptr);  // wander off
    seq.restore(*snap);
    EXPECT_EQ(seq.length(), prefix_len);
    seq.feed_text(more.data(), 9, DeltaRuleMode::kAuto, 9, restored.data());
    EXPECT_EQ(0, std::memcmp(direct.data(), restored.data(), direct.size() * sizeof(float))) << prefix_len;
    EXPECT_GT(snap->bytes(), size_t(0));
  }
}

// A block run with the recurrent delta rule equals token-by-token decoding bit for bit: this is
// what makes prompt lookup decoding exact.
TEST(Snapshot, RecurrentBlockEqualsSingleSteps) {
  const EngineImpl& e = impl_of(tiny_engine());
  const int64_t V = e.text_config().vocab_size;
  std::mt19937 rng(2);
  auto prompt = random_ids(rng, 20), block = random_ids(rng, 12);
  Sequence a(e), b(e);
  a.feed_text(prompt.data(), 20, DeltaRuleMode::kAuto, 0, nullptr);
  b.feed_text(prompt.data(), 20, DeltaRuleMode::kAuto, 0, nullptr);
  std::vector<float> one(size_t(12 * V)), many(size_t(12 * V));
  for (int i = 0; i < 12; ++i) a.feed_text(&block[size_t(i)], 1, DeltaRuleMode::kAuto, 1, one.data() + i * V);
  b.feed_text(block.data(), 12, DeltaRuleMode::kRecurrent, 12, many.data());
  EXPECT_EQ(0, std::memcmp(one.data(), many.data(), one.size() * sizeof(float)));
}

TEST(Snapshot, RewindRestoresDeltaNetAndTruncatesKv) {
  const EngineImpl& e = impl_of(tiny_engine());
  const int64_t V = e.text_config().vocab_size;
  std::mt19937 rng(3);
  auto prompt = random_ids(rng, 10), next = random_ids(rng, 5);
  Sequence seq(e);
  seq.feed_text(prompt.data(), 10, DeltaRuleMode::kAuto, 0, nullptr);
  Sequence::DeltaNetSave save;
  seq.save_deltanet(save);
  std::vector<float> first(static_cast<size_t>(V)), again(static_cast<size_t>(V));
  seq.feed_text(next.data(), 1, DeltaRuleMode::kAuto, 1, first.data());
  seq.feed_text(next.data() + 1, 4, DeltaRuleMode::kRecurrent, 0, nullptr);
  seq.rewind(save);
  EXPECT_EQ(seq.length(), 10);
  seq.feed_text(next.data(), 1, DeltaRuleMode::kAuto, 1, again.data());
  EXPECT_EQ(0, std::memcmp(first.data(), again.data(), first.size() * sizeof(float)));
}

// Keeping part of a traced block (the accepted part of a verified draft) replays the DeltaNet
// recurrences from the trace: the state is bit-identical to rewinding and feeding that part again.
TEST(Snapshot, RewindIntoATracedBlockEqualsFeedingAgain) {
  const EngineImpl& e = impl_of(tiny_engine());
  const int64_t V = e.text_config().vocab_size;
  std::mt19937 rng(9);
  auto prompt = random_ids(rng, 15), block = random_ids(rng, 12), next = random_ids(rng, 3);
  for (int64_t keep : {1, 2, 7, 11, 12}) {
    Sequence a(e), b(e);
    a.feed_text(prompt.data(), 15, DeltaRuleMode::kAuto, 0, nullptr);
    b.feed_text(prompt.data(), 15, DeltaRuleMode::kAuto, 0, nullptr);
    Sequence::DeltaNetSave save;
    a.save_deltanet(save);
    a.feed_text(block.data(), 12, DeltaRuleMode::kRecurrent, 0, nullptr, /*traced=*/true);
    a.rewind(save, keep);
    EXPECT_EQ(a.length(), 15 + keep);
    b.feed_text(block.data(), keep, DeltaRuleMode::kRecurrent, 0, nullptr);
    EXPECT_EQ(a.tokens(), b.tokens());
    const auto sa = a.snapshot(), sb = b.snapshot();
    for (size_t i = 0; i < sa->deltanet.size(); ++i) {
      EXPECT_EQ(sa->deltanet[i].recurrent, sb->deltanet[i].recurrent) << "keep " << keep << " layer " << i;
      EXPECT_EQ(sa->deltanet[i].conv, sb->deltanet[i].conv) << "keep " << keep << " layer " << i;
    }
    std::vector<float> la(size_t(3 * V)), lb(size_t(3 * V));
    a.feed_text(next.data(), 3, DeltaRuleMode::kRecurrent, 3, la.data());
    b.feed_text(next.data(), 3, DeltaRuleMode::kRecurrent, 3, lb.data());
    EXPECT_EQ(0, std::memcmp(la.data(), lb.data(), la.size() * sizeof(float))) << "keep " << keep;
    // A second, shorter rewind into the same block (a stop inside the accepted part).
    if (keep > 1) {
      Sequence c(e);
      c.feed_text(prompt.data(), 15, DeltaRuleMode::kAuto, 0, nullptr);
      c.feed_text(block.data(), 12, DeltaRuleMode::kRecurrent, 0, nullptr, true);
      c.rewind(save, keep);
      c.rewind(save, 1);
      EXPECT_EQ(c.snapshot()->deltanet[0].recurrent, [&] {
        Sequence d(e);
        d.feed_text(prompt.data(), 15, DeltaRuleMode::kAuto, 0, nullptr);
        d.feed_text(block.data(), 1, DeltaRuleMode::kRecurrent, 0, nullptr);
        return d.snapshot()->deltanet[0].recurrent;
      }());
    }
  }
  // Only a traced block right after the save can be kept in part.
  Sequence s(e);
  s.feed_text(prompt.data(), 15, DeltaRuleMode::kAuto, 0, nullptr);
  Sequence::DeltaNetSave save;
  s.save_deltanet(save);
  s.feed_text(block.data(), 12, DeltaRuleMode::kRecurrent, 0, nullptr);
  EXPECT_THROW(s.rewind(save, 3), Error);
}

// Prompt lookup decoding returns exactly the plain greedy tokens, including on repetitive
// prompts where drafts get accepted.
TEST(PromptLookup, EqualsPlainGreedyTokenForToken) {
  for (const Engine* e : tiny_engines()) {
  const Engine& engine = *e;
  SCOPED_TRACE(engine.info().name);
  std::mt19937 rng(4);
  std::vector<std::vector<int32_t>> prompts;
  for (int i = 0; i < 3; ++i) prompts.push_back(random_ids(rng, 5 + 7 * i));
  for (int i = 0; i < 3; ++i) {  // repetitive: a phrase repeated, so n-grams recur
    auto phrase = random_ids(rng, 3 + i);
    std::vector<int32_t> p;
    for (int r = 0; r < 6; ++r) p.insert(p.end(), phrase.begin(), phrase.end());
    prompts.push_back(p);
  }
  int64_t drafted = 0, accepted = 0;
  for (const auto& prompt : prompts) {
    Status st;
    auto plain = engine.new_session()->complete(prompt, greedy(24, SpecMode::kOff), nullptr, &st);
    ASSERT_TRUE(st.ok()) << st.message;
    auto pld = engine.new_session()->complete(prompt, greedy(24, SpecMode::kPld), nullptr, &st);
    ASSERT_TRUE(st.ok()) << st.message;
    EXPECT_EQ(plain.tokens, pld.tokens);
    EXPECT_EQ(plain.content, pld.content);
    EXPECT_EQ(plain.pld_drafted, 0);
    drafted += pld.pld_drafted;
    accepted += pld.pld_accepted;
  }
  std::printf("prompt lookup on random-weight text: %lld drafted, %lld accepted\n", (long long)drafted,
              (long long)accepted);
  }
}

// The random tiny model almost never repeats itself, so its own drafts are rarely right. Here
// the drafter knows the plain greedy answer and proposes it with deliberate mistakes: whole
// drafts accepted, partial matches (rewind + re-feed) and misses must all leave the output equal
// to plain greedy decoding.
TEST(PromptLookup, VerifiedDraftsOfEveryQualityKeepGreedyOutput) {
  for (const Engine* e : tiny_engines()) {
  const Engine& engine = *e;
  SCOPED_TRACE(engine.info().name);
  std::mt19937 rng(6);
  for (int trial = 0; trial < 4; ++trial) {
    const auto prompt = random_ids(rng, 6 + trial * 9);
    Status st;
    const GenerationResult plain = engine.new_session()->complete(prompt, greedy(48, SpecMode::kOff), nullptr, &st);
    ASSERT_TRUE(st.ok());
    auto session = engine.new_session();
    auto gen = session->start_completion(prompt, greedy(48, SpecMode::kPld), nullptr, &st);
    ASSERT_TRUE(st.ok());
    int calls = 0;
    impl_of(*gen).draft_source = [&](const std::vector<int32_t>& history, int max_tokens, std::vector<int32_t>& out) {
      const size_t done = history.size() - prompt.size();  // generated so far (incl. the pending one)
      const int len = std::min(max_tokens, 1 + (calls * 5 + trial) % 16);
      const int wrong_at = (calls % 3 == 0) ? len : (calls * 7 + trial) % (len + 1);  // every 3rd draft is all right
      for (int i = 0; i < len && done + size_t(i) < plain.tokens.size(); ++i)
        out.push_back(i == wrong_at ? (plain.tokens[done + size_t(i)] + 1) % 1000 : plain.tokens[done + size_t(i)]);
      ++calls;
    };
    while (gen->step()) {
    }
    const GenerationResult& r = gen->result();
    EXPECT_EQ(r.tokens, plain.tokens) << "trial " << trial;
    EXPECT_GT(r.pld_accepted, 0);
    EXPECT_LT(r.pld_accepted, r.pld_drafted);
    // Fewer forward passes than tokens: accepted drafts really skip decode steps.
    EXPECT_EQ(session->tokens().size(), prompt.size() + plain.tokens.size() - 1);
  }
  }
}

std::unique_ptr<Engine> engine_with_context(int64_t ctx) {
  EngineOptions o;
  o.model_dir = tiny_model_dir();
  o.threads = 2;
  o.context_size = ctx;
  Status st;
  auto e = Engine::load(o, &st);
  EXPECT_TRUE(e) << st.message;
  return e;
}

// Drafts that fill the context to the last position, and a stop string inside an accepted draft:
// output and the session's timeline must both be those of plain greedy decoding.
TEST(PromptLookup, ExactAtTheEndOfTheContextAndAfterAStop) {
  std::mt19937 rng(8);
  const auto prompt = random_ids(rng, 10);
  for (int64_t ctx : {24, 30, 40}) {
    auto engine = engine_with_context(ctx);
    Status st;
    auto plain_session = engine->new_session();
    const GenerationResult plain = plain_session->complete(prompt, greedy(1000, SpecMode::kOff), nullptr, &st);
    ASSERT_TRUE(st.ok());
    EXPECT_EQ(plain.stop_reason, StopReason::kContextFull);
    auto session = engine->new_session();
    auto gen = session->start_completion(prompt, greedy(1000, SpecMode::kPld), nullptr, &st);
    impl_of(*gen).draft_source = [&](const std::vector<int32_t>& history, int max_tokens, std::vector<int32_t>& out) {
      const size_t done = history.size() - prompt.size();
      for (int i = 0; i < max_tokens && done + size_t(i) < plain.tokens.size(); ++i) out.push_back(plain.tokens[done + size_t(i)]);
    };
    while (gen->step()) {
    }
    EXPECT_EQ(gen->result().tokens, plain.tokens) << "ctx " << ctx;
    EXPECT_EQ(gen->result().stop_reason, StopReason::kContextFull);
    EXPECT_EQ(session->tokens(), plain_session->tokens()) << "ctx " << ctx;
  }
  // A stop string that ends inside an accepted draft.
  auto engine = engine_with_context(4096);
  Status st;
  const GenerationResult probe = engine->new_session()->complete(prompt, greedy(20, SpecMode::kOff), nullptr, &st);
  SamplingParams params = greedy(20, SpecMode::kOff);
  params.stop = {engine->detokenize({probe.tokens[6]})};
  auto plain_session = engine->new_session();
  const GenerationResult plain = plain_session->complete(prompt, params, nullptr, &st);
  ASSERT_EQ(plain.stop_reason, StopReason::kStopString);
  params.speculative.mode = SpecMode::kPld;
  auto session = engine->new_session();
  auto gen = session->start_completion(prompt, params, nullptr, &st);
  impl_of(*gen).draft_source = [&](const std::vector<int32_t>& history, int max_tokens, std::vector<int32_t>& out) {
    const size_t done = history.size() - prompt.size();
    for (int i = 0; i < max_tokens && done + size_t(i) < probe.tokens.size(); ++i) out.push_back(probe.tokens[done + size_t(i)]);
  };
  while (gen->step()) {
  }
  EXPECT_EQ(gen->result().content, plain.content);
  EXPECT_EQ(gen->result().stop_reason, StopReason::kStopString);
  EXPECT_GT(gen->result().pld_accepted, 0);
  EXPECT_EQ(session->tokens(), plain_session->tokens());
}

TEST(Session, ImagesOverTheContextFailBeforeTheirPixelsExist) {
  auto engine = engine_with_context(64);
  ChatRequest r;
  ChatMessage u;
  u.role = "user";
  std::ifstream in(tiny_model_dir() + "/chelsea.png", std::ios::binary);
  std::vector<uint8_t> png((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  u.content.push_back(ContentPart::Image(png));
  u.content.push_back(ContentPart::Text("?"));
  r.messages.push_back(u);
  Status st;
  auto g = engine->new_session()->start_chat(r, greedy(4), nullptr, &st);
  EXPECT_EQ(g, nullptr);
  EXPECT_EQ(st.code, StatusCode::kContextOverflow) << st.message;
}

TEST(Session, ProcessorAndVisionMergeSizesMustAgree) {
  const std::string dir = temp_dir("merge");
  for (const auto& f : std::filesystem::directory_iterator(tiny_model_dir()))
    if (f.is_regular_file()) std::filesystem::create_symlink(f.path(), dir + "/" + f.path().filename().string());
  std::filesystem::remove(dir + "/preprocessor_config.json");
  std::ofstream(dir + "/preprocessor_config.json") << "{\"merge_size\": 1, \"patch_size\": 16, \"temporal_patch_size\": 2}";
  EngineOptions o;
  o.model_dir = dir;
  Status st;
  EXPECT_EQ(Engine::load(o, &st), nullptr);
  EXPECT_NE(st.message.find("disagrees"), std::string::npos) << st.message;
  std::filesystem::remove_all(dir);
}

TEST(Session, RawCompletionsKeepThinkMarkersAsText) {
  const EngineImpl& e = impl_of(tiny_engine());
  EXPECT_FALSE(plan_completion(e, {1, 2, 3}).split_reasoning);
  ChatRequest r;
  r.messages.push_back(ChatMessage::Text("user", "hi"));
  EXPECT_TRUE(plan_chat(e, r).split_reasoning);
}

TEST(PromptLookup, DraftsWhatFollowsTheLatestEarlierOccurrence) {
  PromptLookup pl;
  std::vector<int32_t> out;
  pl.draft({1, 2, 3, 4, 5, 9, 1, 2, 3, 7, 8, 1, 2, 3}, 16, out);
  // The later of the two earlier "1 2 3", then periodic: 7 8 1 2 3 | 7 8 1 2 3 | ...
  EXPECT_EQ(out, (std::vector<int32_t>{7, 8, 1, 2, 3, 7, 8, 1, 2, 3, 7, 8, 1, 2, 3, 7}));
  pl.draft({5, 6, 5}, 3, out);
  EXPECT_EQ(out, (std::vector<int32_t>{6, 5, 6}));  // unigram fallback
  pl.draft({1, 2, 3}, 16, out);
  EXPECT_TRUE(out.empty());
  pl.draft({4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4}, 5, out);
  EXPECT_EQ(out.size(), 5u);
  // Misses back off exponentially: after a miss, the next draft is skipped, then two, ...
  pl.report(4, 0);
  pl.draft({1, 2, 1}, 16, out);
  EXPECT_TRUE(out.empty());
  pl.draft({1, 2, 1}, 16, out);
  EXPECT_FALSE(out.empty());
  pl.report(4, 0);
  pl.draft({1, 2, 1}, 16, out);
  EXPECT_TRUE(out.empty());
  pl.draft({1, 2, 1}, 16, out);
  EXPECT_TRUE(out.empty());
  pl.draft({1, 2, 1}, 16, out);
  EXPECT_FALSE(out.empty());
  pl.report(4, 2);  // a hit resets the back-off
  pl.draft({1, 2, 1}, 16, out);
  EXPECT_FALSE(out.empty());
}

ChatRequest two_turn(const std::string& first, const GenerationResult& answer, const std::string& second) {
  ChatRequest r;
  r.messages.push_back(ChatMessage::Text("system", "You are terse."));
  r.messages.push_back(ChatMessage::Text("user", first));
  ChatMessage a = ChatMessage::Text("assistant", answer.content);
  a.reasoning_content = answer.reasoning;
  r.messages.push_back(a);
  r.messages.push_back(ChatMessage::Text("user", second));
  return r;
}

// A follow-up turn processes only the previous answer and the new message, and gives the same
// tokens as a cold run of the whole conversation (dense and MoE).
TEST(PrefixReuse, FollowUpTurnReusesStateAndMatchesColdRun) {
  for (const Engine* e : tiny_engines())
  for (bool thinking : {true, false}) {
    const Engine& engine = *e;
    SCOPED_TRACE(engine.info().name + (thinking ? ", thinking" : ", no thinking"));
    auto session = engine.new_session();
    ChatRequest turn1;
    turn1.messages.push_back(ChatMessage::Text("system", "You are terse."));
    turn1.messages.push_back(ChatMessage::Text("user", "Name three rivers."));
    turn1.enable_thinking = thinking;
    Status st;
    GenerationResult r1 = session->chat(turn1, greedy(12), nullptr, &st);
    ASSERT_TRUE(st.ok()) << st.message;
    EXPECT_EQ(r1.cached_tokens, 0);

    ChatRequest turn2 = two_turn("Name three rivers.", r1, "And two mountains?");
    turn2.enable_thinking = thinking;
    GenerationResult r2 = session->chat(turn2, greedy(12), nullptr, &st);
    ASSERT_TRUE(st.ok()) << st.message;

    // The shared prefix ends after the first user message ("<|im_end|>\n").
    std::string render1, render2;
    ASSERT_TRUE(engine.render_chat(turn1, &render1).ok());
    const std::string gen_prompt(generation_prompt(thinking));
    const auto shared = engine.tokenize(render1.substr(0, render1.size() - gen_prompt.size()));
    EXPECT_EQ(r2.cached_tokens, int64_t(shared.size()));
    EXPECT_EQ(r2.timings.prefill_tokens, r2.prompt_tokens - r2.cached_tokens);

    GenerationResult cold = engine.new_session()->chat(turn2, greedy(12), nullptr, &st);
    ASSERT_TRUE(st.ok());
    EXPECT_EQ(cold.cached_tokens, 0);
    EXPECT_EQ(r2.tokens, cold.tokens);
  }
}

// Two sessions sharing a PrefixCache reuse each other's system prompt (dense and MoE).
TEST(PrefixReuse, AcrossSessionsThroughSharedCache) {
  for (const Engine* e : tiny_engines()) {
  const Engine& engine = *e;
  SCOPED_TRACE(engine.info().name);
  PrefixCache cache(size_t(256) << 20);
  auto a = engine.new_session(&cache), b = engine.new_session(&cache);
  ChatRequest ra, rb;
  ra.messages = {ChatMessage::Text("system", "A long shared system prompt about many things."),
                 ChatMessage::Text("user", "first question")};
  rb.messages = {ra.messages[0], ChatMessage::Text("user", "a different question")};
  Status st;
  GenerationResult x = a->chat(ra, greedy(4), nullptr, &st);
  ASSERT_TRUE(st.ok());
  GenerationResult y = b->chat(rb, greedy(4), nullptr, &st);
  ASSERT_TRUE(st.ok());
  std::string sys;
  ChatRequest only_sys;
  only_sys.messages = {ra.messages[0], ChatMessage::Text("user", "")};
  EXPECT_GT(y.cached_tokens, 0);
  GenerationResult cold = engine.new_session()->chat(rb, greedy(4), nullptr, &st);
  EXPECT_EQ(y.tokens, cold.tokens);
  EXPECT_GT(cache.hits(), 0);
  }
}

TEST(PrefixCacheBudget, EvictsLeastRecentlyUsedWithinBudget) {
  const EngineImpl& e = impl_of(tiny_engine());
  std::mt19937 rng(5);
  Sequence seq(e);
  auto ids = random_ids(rng, 8);
  seq.feed_text(ids.data(), 8, DeltaRuleMode::kAuto, 0, nullptr);
  const size_t one = seq.snapshot()->bytes();
  PrefixCache cache(one * 3 + one / 2);
  std::vector<std::vector<uint64_t>> keys;
  for (int i = 0; i < 6; ++i) {
    Sequence s(e);
    auto p = random_ids(rng, 8);
    s.feed_text(p.data(), 8, DeltaRuleMode::kAuto, 0, nullptr);
    std::shared_ptr<const SnapshotData> snap = s.snapshot();
    keys.push_back(snap->keys);
    impl_of(cache).put(snap);
    EXPECT_LE(cache.bytes(), cache.budget());
  }
  EXPECT_EQ(cache.entries(), 3u);
  EXPECT_EQ(impl_of(cache).find(keys[0].data(), 8), nullptr);  // oldest evicted
  EXPECT_NE(impl_of(cache).find(keys[5].data(), 8), nullptr);
  EXPECT_EQ(impl_of(cache).find(keys[5].data(), 7), nullptr);  // longer than allowed
  PrefixCache tiny(one / 2);
  impl_of(tiny).put(seq.snapshot());
  EXPECT_EQ(tiny.entries(), 0u);  // larger than the whole budget: not stored
}

TEST(Session, PromptOverContextIsAClearError) {
  const Engine& engine = tiny_engine();
  std::vector<int32_t> ids(5000, 100);
  Status st;
  auto g = engine.new_session()->start_completion(ids, greedy(4), nullptr, &st);
  EXPECT_EQ(g, nullptr);
  EXPECT_EQ(st.code, StatusCode::kContextOverflow);
  EXPECT_NE(st.message.find("context"), std::string::npos);
}

TEST(Session, CancelFromCallbackStops) {
  const Engine& engine = tiny_engine();
  Status st;
  int events = 0;
  auto r = engine.new_session()->complete({1, 2, 3}, greedy(50, SpecMode::kOff),
                                          [&](const GenerationEvent& ev) { return ++events < 3; }, &st);
  ASSERT_TRUE(st.ok());
  EXPECT_EQ(r.stop_reason, StopReason::kCancelled);
  EXPECT_LT(r.completion_tokens, 50);
}

}  // namespace
}  // namespace qwen35::test
