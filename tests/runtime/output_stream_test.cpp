#include "runtime/output_stream.h"

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

namespace qwen35 {
namespace {

// One input to the stream: a text piece or a thinking marker.
struct Event {
  enum Kind { kText, kThinkStart, kThinkEnd };
  Kind kind = kText;
  std::string text;
};
Event text(std::string s) { return {Event::kText, std::move(s)}; }
const Event kStart{Event::kThinkStart, {}};
const Event kEnd{Event::kThinkEnd, {}};

struct Released {
  std::string content;
  std::string reasoning;
  bool stopped = false;
  std::vector<std::string> content_after_call;    // content() after each event
  std::vector<std::string> reasoning_after_call;  // reasoning() after each event
};

// Feeds the events and checks the invariants that hold for every input: no empty pieces, pieces
// concatenate to content()/reasoning(), and nothing is released once a stop string matched.
Released feed(bool start_in_reasoning, const std::vector<std::string>& stop, const std::vector<Event>& events,
         bool finish = true) {
  OutputStream s(start_in_reasoning, stop);
  std::vector<OutputPiece> out;
  Released r;
  for (const Event& e : events) {
    const size_t before = out.size();
    switch (e.kind) {
      case Event::kText: {
        const bool stopped_before = s.stopped();
        const bool stopped = s.push_text(e.text, out);
        EXPECT_EQ(stopped, s.stopped());
        if (stopped_before) {
          EXPECT_EQ(out.size(), before) << "released text after a stop";
        }
        break;
      }
      case Event::kThinkStart: s.push_think_start(out); break;
      case Event::kThinkEnd: s.push_think_end(out); break;
    }
    for (size_t i = before + 1; i < out.size(); ++i)
      EXPECT_NE(out[i].channel, out[i - 1].channel) << "pieces of one call were not merged";
    r.content_after_call.push_back(s.content());
    r.reasoning_after_call.push_back(s.reasoning());
  }
  if (finish) s.finish(out);
  std::string content, reasoning;
  for (const OutputPiece& p : out) {
    EXPECT_FALSE(p.text.empty());
    (p.channel == Channel::kContent ? content : reasoning) += p.text;
  }
  EXPECT_EQ(content, s.content());
  EXPECT_EQ(reasoning, s.reasoning());
  r.content = s.content();
  r.reasoning = s.reasoning();
  r.stopped = s.stopped();
  return r;
}

// All 2^(n-1) ways to cut `s` into consecutive non-empty pieces.
std::vector<std::vector<std::string>> all_splits(const std::string& s) {
  std::vector<std::vector<std::string>> result;
  if (s.empty()) return {{}};
  const size_t n = s.size();
  for (uint64_t mask = 0; mask < (uint64_t(1) << (n - 1)); ++mask) {
    std::vector<std::string> pieces(1);
    for (size_t i = 0; i < n; ++i) {
      pieces.back() += s[i];
      if (i + 1 < n && (mask >> i & 1)) pieces.emplace_back();
    }
    result.push_back(std::move(pieces));
  }
  return result;
}

std::vector<Event> as_events(const std::vector<std::string>& pieces) {
  std::vector<Event> e;
  for (const std::string& p : pieces) e.push_back(text(p));
  return e;
}

std::vector<Event> one_char_at_a_time(const std::string& s) {
  std::vector<Event> e;
  for (char c : s) e.push_back(text(std::string(1, c)));
  return e;
}

// Brute-force oracle on the whole text: the match that ends first (on equal ends the longer).
struct StopResult {
  std::string released;
  bool matched = false;
};
StopResult oracle_stop(const std::string& s, const std::vector<std::string>& stops) {
  for (size_t end = 1; end <= s.size(); ++end) {
    size_t best_start = std::string::npos;
    for (const std::string& stop : stops) {
      if (stop.empty() || stop.size() > end) continue;
      if (s.compare(end - stop.size(), stop.size(), stop) == 0) best_start = std::min(best_start, end - stop.size());
    }
    if (best_start != std::string::npos) return {s.substr(0, best_start), true};
  }
  return {s, false};
}

std::string strip_newlines(std::string s) {
  while (!s.empty() && s.front() == '\n') s.erase(0, 1);
  while (!s.empty() && s.back() == '\n') s.pop_back();
  return s;
}
std::string lstrip_newlines(std::string s) {
  while (!s.empty() && s.front() == '\n') s.erase(0, 1);
  return s;
}

// ---------------------------------------------------------------------------------------------
// Stop strings

struct StopCase {
  std::string text;
  std::vector<std::string> stops;
  std::string expected;
  bool matched;
};

void check_every_split(const StopCase& c) {
  const StopResult oracle = oracle_stop(c.text, c.stops);
  ASSERT_EQ(oracle.released, c.expected) << "the oracle disagrees with the hand-written answer for " << c.text;
  ASSERT_EQ(oracle.matched, c.matched);
  for (const auto& pieces : all_splits(c.text)) {
    const Released r = feed(false, c.stops, as_events(pieces));
    ASSERT_EQ(r.content, c.expected) << "text '" << c.text << "', " << pieces.size() << " pieces";
    ASSERT_EQ(r.stopped, c.matched);
    // Before finish() only a possible stop-string beginning is held, so the released content is
    // always a prefix of the answer.
    for (const std::string& partial : r.content_after_call) ASSERT_EQ(c.expected.compare(0, partial.size(), partial), 0);
  }
}

TEST(OutputStreamStop, EverySplitOfTheText) {
  const StopCase cases[] = {
      {"xyST STOPz!", {"STOP"}, "xyST ", true},
      {"abcabdab", {"abd"}, "abc", true},
      {"aaaab", {"aab"}, "aa", true},
      {"no match here.", {"here!"}, "no match here.", false},
      {"a\n\n\nUser: hi", {"\n\nUser:"}, "a\n", true},
      {"STOP", {"STOP"}, "", true},
      {"STO", {"STOP"}, "STO", false},
  };
  for (const StopCase& c : cases) check_every_split(c);
}

TEST(OutputStreamStop, OverlappingStopStrings) {
  const StopCase cases[] = {
      {"xabcde", {"bc", "abc"}, "x", true},     // same end: the longer (earlier start) wins
      {"xabcde", {"abcd", "c"}, "xab", true},   // "c" completes first
      {"xabcd", {"bcd", "abc"}, "x", true},     // "abc" completes first
      {"ababab", {"aba"}, "", true},
      {"xxSTOPyy", {"TOP", "STOP", "OPy"}, "xx", true},
      {"hello world", {"wor", "world", "lo w"}, "hel", true},
  };
  for (const StopCase& c : cases) check_every_split(c);
}

TEST(OutputStreamStop, MatchStartingInsideHeldText) {
  // After "xab" the tail "ab" is held; "aab" shows it was not the start, but the new tail "ab"
  // is; "ab" completes "abab" starting inside the text held before.
  std::vector<Event> events = {text("xab"), text("aab"), text("ab"), text("tail")};
  const Released r = feed(false, {"abab"}, events);
  EXPECT_EQ(r.content_after_call, (std::vector<std::string>{"x", "xaba", "xaba", "xaba"}));
  EXPECT_EQ(r.content, "xaba");
  EXPECT_TRUE(r.stopped);
  check_every_split({"xabaababtail", {"abab"}, "xaba", true});
}

TEST(OutputStreamStop, NoFalseMatchesAndNoNeedlessHolding) {
  std::vector<Event> events = {text("</ans"), text("wer >"), text("stop"), text("Stop")};
  const Released r = feed(false, {"</answer>", "STOP"}, events, /*finish=*/false);
  EXPECT_FALSE(r.stopped);
  // Text that cannot begin a stop string is released at once.
  EXPECT_EQ(r.content_after_call, (std::vector<std::string>{"", "</answer >", "</answer >stop", "</answer >stopStop"}));
}

TEST(OutputStreamStop, FinishFlushesAHeldPartialMatch) {
  const Released held = feed(false, {"STOP", "\n\n###"}, {text("abcST")}, /*finish=*/false);
  EXPECT_EQ(held.content, "abc");
  const Released flushed = feed(false, {"STOP", "\n\n###"}, {text("abcST"), text("\n\n#")});
  EXPECT_EQ(flushed.content_after_call.back(), "abcST");
  EXPECT_EQ(flushed.content, "abcST\n\n#");
  EXPECT_FALSE(flushed.stopped);
}

TEST(OutputStreamStop, NotMatchedInReasoningNorAcrossIt) {
  const Released r = feed(true, {"STOP"}, {text("STOP thinking"), kEnd, text("\nanswer STOP more")});
  EXPECT_EQ(r.reasoning, "STOP thinking");
  EXPECT_EQ(r.content, "answer ");
  EXPECT_TRUE(r.stopped);

  // A reasoning block between "ST" and "OP" breaks the match; the held "ST" is released at <think>.
  const Released across = feed(false, {"STOP"}, {text("abcST"), kStart, text("r"), kEnd, text("OP")}, false);
  EXPECT_EQ(across.content_after_call[1], "abcST");
  EXPECT_EQ(across.content, "abcSTOP");
  EXPECT_FALSE(across.stopped);
}

TEST(OutputStreamStop, EmptyStopStringsAreIgnored) {
  const Released r = feed(false, {"", "Z"}, {text("abc"), text("dZe")});
  EXPECT_EQ(r.content, "abcd");
  EXPECT_TRUE(r.stopped);
}

// ---------------------------------------------------------------------------------------------
// Reasoning and content

TEST(OutputStreamThinking, EndMarkerAtEveryPosition) {
  const std::string all = "\n\nLet me see.\n\nStep two\n\n\nThe answer is 4.\n";
  for (bool start_in_reasoning : {true, false}) {
    for (size_t k = 0; k <= all.size(); ++k) {
      const std::string r_text = all.substr(0, k), c_text = all.substr(k);
      const std::string want_r = strip_newlines(r_text), want_c = lstrip_newlines(c_text);
      std::vector<Event> head;
      if (!start_in_reasoning) head.push_back(kStart);

      // Whole pieces, one character at a time, and every two-way split of each side.
      std::vector<std::vector<Event>> streams;
      std::vector<Event> whole = head;
      whole.push_back(text(r_text));
      whole.push_back(kEnd);
      whole.push_back(text(c_text));
      streams.push_back(whole);
      std::vector<Event> chars = head;
      for (const Event& e : one_char_at_a_time(r_text)) chars.push_back(e);
      chars.push_back(kEnd);
      for (const Event& e : one_char_at_a_time(c_text)) chars.push_back(e);
      streams.push_back(chars);
      for (size_t i = 0; i <= r_text.size(); i += 3) {
        for (size_t j = 0; j <= c_text.size(); j += 3) {
          std::vector<Event> e = head;
          e.push_back(text(r_text.substr(0, i)));
          e.push_back(text(r_text.substr(i)));
          e.push_back(kEnd);
          e.push_back(text(c_text.substr(0, j)));
          e.push_back(text(c_text.substr(j)));
          streams.push_back(e);
        }
      }
      for (const auto& events : streams) {
        const Released r = feed(start_in_reasoning, {}, events);
        ASSERT_EQ(r.reasoning, want_r) << "k=" << k << " start_in_reasoning=" << start_in_reasoning;
        ASSERT_EQ(r.content, want_c) << "k=" << k;
      }
    }
  }
}

TEST(OutputStreamThinking, NewlinesTrimmedWhenStreamedOneCharacterAtATime) {
  std::vector<Event> events = one_char_at_a_time("\n\nline one\n\nline two\n\n\n");
  const size_t reasoning_events = events.size();
  events.push_back(kEnd);
  for (const Event& e : one_char_at_a_time("\n\nanswer\n\n")) events.push_back(e);
  const Released r = feed(true, {}, events);
  EXPECT_EQ(r.reasoning, "line one\n\nline two");
  EXPECT_EQ(r.content, "answer\n\n");  // only leading newlines of the content are the template's
  // The inner blank line (events 10 and 11) was held only until the "l" of "line two" arrived.
  EXPECT_EQ(r.reasoning_after_call[11], "line one");
  EXPECT_EQ(r.reasoning_after_call[12], "line one\n\nl");
  EXPECT_EQ(r.reasoning_after_call[reasoning_events - 1], "line one\n\nline two");
}

TEST(OutputStreamThinking, HeldNewlinesAreReleasedWithTheNextTextInOnePiece) {
  OutputStream s(true, {});
  std::vector<OutputPiece> out;
  s.push_text("a\n\n", out);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].text, "a");
  out.clear();
  s.push_text("b", out);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].channel, Channel::kReasoning);
  EXPECT_EQ(out[0].text, "\n\nb");
}

TEST(OutputStreamThinking, StartInReasoningFalseIsContentOnlyAndUntouched) {
  const Released r = feed(false, {}, {text("\n\nHello\n"), text("\n")});
  EXPECT_EQ(r.content, "\n\nHello\n\n");
  EXPECT_EQ(r.reasoning, "");
}

TEST(OutputStreamThinking, StartInReasoningTrueWithoutEndMarker) {
  // Cut off by length inside the reasoning: finish() releases the held trailing newlines.
  const Released held = feed(true, {}, {text("\nthinking\n\n")}, /*finish=*/false);
  EXPECT_EQ(held.reasoning, "thinking");
  const Released r = feed(true, {}, {text("\nthinking\n\n")});
  EXPECT_EQ(r.reasoning, "thinking\n\n");
  EXPECT_EQ(r.content, "");
}

TEST(OutputStreamThinking, EndMarkerWithoutStartIsDropped) {
  const Released r = feed(false, {}, {text("abc"), kEnd, text("\ndef")});
  EXPECT_EQ(r.content, "abc\ndef");
  EXPECT_EQ(r.reasoning, "");
  // A second </think> after the reasoning ended changes nothing either.
  const Released twice = feed(true, {}, {text("r"), kEnd, text("\nc1\n"), kEnd, text("\nc2")});
  EXPECT_EQ(twice.reasoning, "r");
  EXPECT_EQ(twice.content, "c1\n\nc2");
}

TEST(OutputStreamThinking, StartMarkerInsideReasoningIsDropped) {
  const Released r = feed(true, {}, {text("a"), kStart, text("\nb"), kEnd, text("c")});
  EXPECT_EQ(r.reasoning, "a\nb");
  EXPECT_EQ(r.content, "c");
}

TEST(OutputStreamThinking, ContentBeforeAnEmittedThinkBlock) {
  const Released r = feed(false, {}, {text("pre\n"), kStart, text("\nR\n"), kEnd, text("\n\nC")});
  EXPECT_EQ(r.content, "pre\nC");  // only newlines right after </think> are dropped
  EXPECT_EQ(r.reasoning, "R");
}

// ---------------------------------------------------------------------------------------------
// Property: any split of the same events releases the same text

TEST(OutputStreamProperty, RandomSplitsMatchOneShot) {
  std::mt19937 rng(4242);
  const std::string alphabet = "aSTOPx \n\n\n";
  const std::vector<std::string> stops = {"STOP", "\n\nx a", "OPS", "aaa"};
  auto rand_int = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  int stopped_runs = 0, reasoning_runs = 0;
  for (int iter = 0; iter < 3000; ++iter) {
    const bool start_in_reasoning = rand_int(0, 1) == 1;
    std::vector<Event> whole;
    const int segments = rand_int(1, 6);
    for (int s = 0; s < segments; ++s) {
      const int kind = rand_int(0, 9);
      if (kind == 0) {
        whole.push_back(kStart);
      } else if (kind <= 2) {
        whole.push_back(kEnd);
      } else {
        std::string t;
        const int len = rand_int(0, 40);
        for (int i = 0; i < len; ++i) t += alphabet[size_t(rand_int(0, int(alphabet.size()) - 1))];
        whole.push_back(text(t));
      }
    }
    std::vector<Event> split;
    for (const Event& e : whole) {
      if (e.kind != Event::kText) {
        split.push_back(e);
        continue;
      }
      std::string piece;
      for (char c : e.text) {
        piece += c;
        if (rand_int(0, 3) == 0) {
          split.push_back(text(piece));
          piece.clear();
        }
      }
      split.push_back(text(piece));  // sometimes empty: must be harmless
    }
    for (bool finish : {false, true}) {
      const Released a = feed(start_in_reasoning, stops, whole, finish);
      const Released b = feed(start_in_reasoning, stops, split, finish);
      ASSERT_EQ(a.content, b.content) << "iteration " << iter;
      ASSERT_EQ(a.reasoning, b.reasoning) << "iteration " << iter;
      ASSERT_EQ(a.stopped, b.stopped) << "iteration " << iter;
      if (finish) {
        stopped_runs += a.stopped;
        reasoning_runs += !a.reasoning.empty();
      }
    }
  }
  // The generator must exercise both features for the property to mean anything.
  EXPECT_GT(stopped_runs, 100);
  EXPECT_GT(reasoning_runs, 300);
}

}  // namespace
}  // namespace qwen35
