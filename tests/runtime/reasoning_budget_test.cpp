// Reasoning budgets: after N thought tokens the engine forces the closing sentence and </think>,
// and the model answers from there, exactly as if those tokens had been its own; speculation
// never runs past the budget.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "runtime/engine_impl.h"
#include "runtime/engine_internal.h"
#include "runtime/session_impl.h"
#include "runtime/thought_budget.h"
#include "runtime_harness.h"

namespace qwen35::test {
namespace {

constexpr const char* kSentence =
    "Considering the limited time by the user, I have to give the solution based on the thinking directly now.";

ChatRequest question(bool thinking = true) {
  ChatRequest r;
  r.messages.push_back(ChatMessage::Text("user", "How many legs does a spider have?"));
  r.enable_thinking = thinking;
  return r;
}

std::vector<int32_t> prompt_of(const Engine& engine, const ChatRequest& r) {
  Status st;
  auto prepared = engine.prepare_chat(r, &st);
  EXPECT_TRUE(prepared) << st.message;
  return prepared ? prepared->tokens() : std::vector<int32_t>{};
}

SamplingParams budgeted(int64_t budget, int64_t max_tokens, bool pld) {
  SamplingParams p = greedy(max_tokens, pld ? SpecMode::kPld : SpecMode::kOff);
  p.reasoning_budget = budget;
  return p;
}

// Closing tokens before its </think>: what it adds to reasoning_tokens.
int64_t closing_thought_tokens(const EngineImpl& e) {
  const auto& c = e.thought_closing_ids;
  return std::find(c.begin(), c.end(), e.think_end_id) - c.begin();
}

std::string without_leading_newlines(std::string s) {
  s.erase(0, s.find_first_not_of('\n'));
  return s;
}

// The counting itself, on made-up ids: 1 = <think>, 2 = </think>, closing {7, 8, 2}.
TEST(ThoughtBudget, CountsTokensBetweenTheMarkersOverAllThoughts) {
  const std::vector<int32_t> closing = {7, 8, 2};
  ThoughtBudget b(5, /*starts_in_thought=*/true, 1, 2, closing);
  EXPECT_EQ(b.room(), 5);
  for (int32_t t : {10, 11, 1}) b.observe(t);  // a nested <think> is a thought token too
  EXPECT_EQ(b.room(), 2);
  b.observe(2);  // the model closes the thought itself: nothing to force
  EXPECT_EQ(b.room(), ThoughtBudget::kUnlimited);
  b.observe(2);  // a </think> outside a thought changes nothing
  b.observe(12);
  EXPECT_EQ(b.thought_tokens(), 3);
  EXPECT_EQ(b.room(), ThoughtBudget::kUnlimited);
  b.observe(1);  // a second thought spends what is left of the same budget
  EXPECT_EQ(b.room(), 2);
  b.observe(13);
  b.observe(14);
  EXPECT_TRUE(b.closing_due());
  EXPECT_EQ(b.begin_closing(), closing);
  EXPECT_EQ(b.room(), ThoughtBudget::kUnlimited);  // while the closing is fed
  b.observe(7);
  b.observe(8);
  EXPECT_EQ(b.room(), ThoughtBudget::kUnlimited);
  b.observe(2);
  EXPECT_EQ(b.thought_tokens(), 7);  // 5 + the closing's two tokens before its </think>
  b.observe(1);
  EXPECT_TRUE(b.closing_due());  // a thought opened after the budget is spent closes at once
}

TEST(ThoughtBudget, UnlimitedZeroAndInactive) {
  const std::vector<int32_t> closing = {7, 2}, none;
  ThoughtBudget unlimited(-1, true, 1, 2, closing);
  for (int i = 0; i < 100; ++i) unlimited.observe(10);
  EXPECT_EQ(unlimited.room(), ThoughtBudget::kUnlimited);
  EXPECT_EQ(unlimited.thought_tokens(), 100);
  EXPECT_TRUE(ThoughtBudget(0, true, 1, 2, closing).closing_due());
  ThoughtBudget outside(0, false, 1, 2, closing);  // thinking off: no thought yet
  EXPECT_FALSE(outside.closing_due());
  outside.observe(1);
  EXPECT_TRUE(outside.closing_due());
  ThoughtBudget raw(0, true, -1, -1, closing);  // raw completion: no thoughts at all
  raw.observe(1);
  raw.observe(10);
  EXPECT_FALSE(raw.closing_due());
  EXPECT_EQ(raw.thought_tokens(), 0);
  ThoughtBudget no_closing(0, true, 1, 2, none);  // counted, never closed
  no_closing.observe(10);
  EXPECT_FALSE(no_closing.closing_due());
  EXPECT_EQ(no_closing.thought_tokens(), 1);
}

// Sampling: the forced tokens take no draw, so a seeded budgeted answer is reproducible and
// starts with the unbudgeted answer's first N tokens.
TEST(ReasoningBudget, SampledWithASeed) {
  const Engine& engine = tiny_engine();
  const auto& closing = impl_of(engine).thought_closing_ids;
  SamplingParams p;
  p.temperature = 1.0f;
  p.seed = 42;
  p.ignore_eos = true;
  p.max_tokens = 40;
  Status st;
  const GenerationResult free = engine.new_session()->chat(question(), p, nullptr, &st);
  ASSERT_TRUE(st.ok()) << st.message;
  p.reasoning_budget = 6;
  const GenerationResult a = engine.new_session()->chat(question(), p, nullptr, &st);
  const GenerationResult b = engine.new_session()->chat(question(), p, nullptr, &st);
  EXPECT_EQ(a.tokens, b.tokens);
  ASSERT_EQ(a.tokens.size(), 40u);
  EXPECT_EQ(std::vector<int32_t>(a.tokens.begin(), a.tokens.begin() + 6),
            std::vector<int32_t>(free.tokens.begin(), free.tokens.begin() + 6));
  EXPECT_EQ(std::vector<int32_t>(a.tokens.begin() + 6, a.tokens.begin() + 6 + int64_t(closing.size())), closing);
}

TEST(ReasoningBudget, ClosingIsTheSentenceThenThinkEnd) {
  const EngineImpl& e = impl_of(tiny_engine());
  const auto& c = e.thought_closing_ids;
  ASSERT_FALSE(c.empty());
  EXPECT_EQ(std::count(c.begin(), c.end(), e.think_end_id), 1);
  EXPECT_GT(closing_thought_tokens(e), 10);
  EXPECT_LT(closing_thought_tokens(e) + 1, int64_t(c.size()));  // "\n\n" follows </think>
  EXPECT_EQ(tiny_engine().detokenize(c), kThoughtClosing);
}

// Budget N: the model's own first N thought tokens, the closing, then the model's answer to
// everything before it (a raw completion of the prompt, the N tokens and the closing is the
// oracle). The closing streams on the reasoning channel up to </think>.
TEST(ReasoningBudget, ClosesTheThoughtAfterExactlyNTokens) {
  const Engine& engine = tiny_engine();
  const EngineImpl& e = impl_of(engine);
  const auto& closing = e.thought_closing_ids;
  const int64_t F = int64_t(closing.size()), answer = 10;
  const std::vector<int32_t> prompt = prompt_of(engine, question());
  Status st;
  const GenerationResult free = engine.new_session()->chat(question(), greedy(40, SpecMode::kOff), nullptr, &st);
  ASSERT_TRUE(st.ok()) << st.message;
  ASSERT_EQ(std::count(free.tokens.begin(), free.tokens.end(), e.think_end_id), 0) << "the model closed its own thought";
  EXPECT_EQ(free.reasoning_tokens, 40);

  for (int64_t n : {0, 1, 5, 16, 33}) {
    SCOPED_TRACE("budget " + std::to_string(n));
    std::string streamed_reasoning, streamed_content;
    const GenerationResult r = engine.new_session()->chat(
        question(), budgeted(n, n + F + answer, false),
        [&](const GenerationEvent& ev) {
          (ev.channel == Channel::kReasoning ? streamed_reasoning : streamed_content) += ev.text;
          return true;
        },
        &st);
    ASSERT_TRUE(st.ok()) << st.message;
    ASSERT_EQ(int64_t(r.tokens.size()), n + F + answer);
    EXPECT_EQ(std::vector<int32_t>(r.tokens.begin(), r.tokens.begin() + n),
              std::vector<int32_t>(free.tokens.begin(), free.tokens.begin() + n));
    EXPECT_EQ(std::vector<int32_t>(r.tokens.begin() + n, r.tokens.begin() + n + F), closing);
    EXPECT_EQ(r.reasoning_tokens, n + closing_thought_tokens(e));
    EXPECT_EQ(r.completion_tokens, n + F + answer);
    EXPECT_EQ(r.stop_reason, StopReason::kMaxTokens);

    std::vector<int32_t> forced_prompt = prompt;
    forced_prompt.insert(forced_prompt.end(), r.tokens.begin(), r.tokens.begin() + n + F);
    const GenerationResult oracle = engine.new_session()->complete(forced_prompt, greedy(answer, SpecMode::kOff), nullptr, &st);
    ASSERT_TRUE(st.ok()) << st.message;
    EXPECT_EQ(std::vector<int32_t>(r.tokens.begin() + n + F, r.tokens.end()), oracle.tokens);

    EXPECT_TRUE(r.reasoning.ends_with(kSentence)) << r.reasoning;
    if (n == 0) {
      EXPECT_EQ(r.reasoning, kSentence);
    }
    EXPECT_EQ(r.content, without_leading_newlines(oracle.content));
    EXPECT_EQ(streamed_reasoning, r.reasoning);
    EXPECT_EQ(streamed_content, r.content);
  }
}

// The budget counts thought tokens only: without thinking, or in a raw completion, it changes
// nothing, and a budget the answer does not reach changes nothing either.
TEST(ReasoningBudget, NoThoughtNoEffect) {
  const Engine& engine = tiny_engine();
  Status st;
  const GenerationResult off = engine.new_session()->chat(question(false), greedy(12, SpecMode::kOff), nullptr, &st);
  ASSERT_TRUE(st.ok()) << st.message;
  EXPECT_EQ(off.reasoning_tokens, 0);
  const GenerationResult off0 = engine.new_session()->chat(question(false), budgeted(0, 12, false), nullptr, &st);
  EXPECT_EQ(off0.tokens, off.tokens);
  EXPECT_EQ(off0.reasoning_tokens, 0);

  const std::vector<int32_t> prompt = prompt_of(engine, question());  // ends with "<think>\n"
  const GenerationResult raw = engine.new_session()->complete(prompt, greedy(12, SpecMode::kOff), nullptr, &st);
  const GenerationResult raw0 = engine.new_session()->complete(prompt, budgeted(0, 12, false), nullptr, &st);
  EXPECT_EQ(raw0.tokens, raw.tokens);
  EXPECT_EQ(raw0.reasoning_tokens, 0);

  const GenerationResult free = engine.new_session()->chat(question(), greedy(12, SpecMode::kOff), nullptr, &st);
  const GenerationResult roomy = engine.new_session()->chat(question(), budgeted(12, 12, false), nullptr, &st);
  EXPECT_EQ(roomy.tokens, free.tokens);  // the 12th token is the last: nothing left to force
  EXPECT_EQ(roomy.reasoning_tokens, 12);
}

// A generation that stops inside the closing keeps its timeline where plain decoding would:
// everything emitted but the last token has been fed.
TEST(ReasoningBudget, StopInsideTheClosing) {
  const Engine& engine = tiny_engine();
  const std::vector<int32_t> prompt = prompt_of(engine, question());
  const auto& closing = impl_of(engine).thought_closing_ids;
  for (int64_t cut : {1, 3}) {
    for (bool pld : {false, true}) {
      Status st;
      auto session = engine.new_session();
      const GenerationResult r = session->chat(question(), budgeted(4, 4 + cut, pld), nullptr, &st);
      ASSERT_TRUE(st.ok()) << st.message;
      ASSERT_EQ(int64_t(r.tokens.size()), 4 + cut);
      EXPECT_EQ(std::vector<int32_t>(r.tokens.begin() + 4, r.tokens.end()),
                std::vector<int32_t>(closing.begin(), closing.begin() + cut));
      EXPECT_EQ(r.reasoning_tokens, 4 + cut);
      std::vector<int32_t> timeline = prompt;
      timeline.insert(timeline.end(), r.tokens.begin(), r.tokens.end() - 1);
      EXPECT_EQ(session->tokens(), timeline) << "cut " << cut << (pld ? " pld" : "");
    }
  }
}

// Drafts (forced through the prompt-lookup hook) are cut so that their verify step cannot emit a
// thought token past the budget: drafts of the unbudgeted continuation would otherwise be
// accepted right through it. Drafts that know the budgeted answer are accepted across the
// closing. Either way output and timeline are those of plain decoding with the budget.
TEST(ReasoningBudget, SpeculationNeverRunsPastTheBudget) {
  const Engine& engine = tiny_engine();
  const EngineImpl& e = impl_of(engine);
  const int64_t F = int64_t(e.thought_closing_ids.size());
  const std::vector<int32_t> prompt = prompt_of(engine, question());
  Status st;
  const GenerationResult free = engine.new_session()->chat(question(), greedy(80, SpecMode::kOff), nullptr, &st);
  ASSERT_TRUE(st.ok()) << st.message;
  for (int64_t n : {0, 3, 9, 20}) {
    const int64_t max_tokens = n + F + 12;
    auto plain_session = engine.new_session();
    const GenerationResult plain = plain_session->chat(question(), budgeted(n, max_tokens, false), nullptr, &st);
    ASSERT_TRUE(st.ok()) << st.message;
    for (const GenerationResult* source : {&free, &plain}) {
      SCOPED_TRACE("budget " + std::to_string(n) + (source == &free ? ", unbudgeted drafts" : ", budgeted drafts"));
      auto session = engine.new_session();
      auto gen = session->start_chat(question(), budgeted(n, max_tokens, true), nullptr, &st);
      ASSERT_TRUE(st.ok()) << st.message;
      int64_t most_reach = 0;
      impl_of(*gen).draft_source = [&](const std::vector<int32_t>& history, int max_draft, std::vector<int32_t>& out) {
        const size_t done = history.size() - prompt.size();  // emitted so far, the pending one included
        if (int64_t(done) < n) most_reach = std::max(most_reach, int64_t(done) + max_draft + 1);
        for (int i = 0; i < max_draft && done + size_t(i) < source->tokens.size(); ++i)
          out.push_back(source->tokens[done + size_t(i)]);
      };
      while (gen->step()) {
      }
      const GenerationResult& r = gen->result();
      EXPECT_EQ(r.tokens, plain.tokens);
      EXPECT_EQ(r.reasoning, plain.reasoning);
      EXPECT_EQ(r.content, plain.content);
      EXPECT_EQ(r.reasoning_tokens, plain.reasoning_tokens);
      EXPECT_EQ(session->tokens(), plain_session->tokens());
      EXPECT_LE(most_reach, n);  // no verify step could emit a thought token past the budget
      if (n >= 3) {
        EXPECT_GT(r.pld_accepted, 0);
      }
    }
  }
}

}  // namespace
}  // namespace qwen35::test
