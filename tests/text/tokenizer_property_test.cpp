// Properties on random inputs: round trips, streaming == batch decoding, repair of ill-formed
// UTF-8, and the heap BPE against a slow, obviously correct twin.
#include <map>
#include <random>
#include <thread>

#include "text/byte_level.h"
#include "text/bpe.h"
#include "text/streaming_decoder.h"
#include "text/unicode.h"
#include "text/utf8.h"
#include "tokenizer_test_util.h"

namespace qwen35::test {
namespace {

std::string nfc(std::string_view s) {
  std::string out;
  unicode::normalize(unicode::NormalForm::kNFC, s, out);
  return out;
}

// A random code point from a mix of ranges that stress the pipeline: ASCII, controls, Latin with
// combining marks, CJK, Hangul jamo (NFC composes them), emoji, all planes up to private use.
char32_t random_code_point(std::mt19937& rng) {
  static const std::pair<char32_t, char32_t> ranges[] = {
      {0x20, 0x7E},       {0x20, 0x7E},       {0x20, 0x7E},       {'a', 'z'},         {'0', '9'},
      {0x00, 0x1F},       {0x7F, 0x9F},       {0xA0, 0x24F},      {0x300, 0x36F},     {0x370, 0x3FF},
      {0x400, 0x4FF},     {0x590, 0x6FF},     {0x900, 0x97F},     {0xE00, 0xE7F},     {0x1100, 0x11FF},
      {0x180E, 0x180E},   {0x2000, 0x206F},   {0x3000, 0x30FF},   {0x4E00, 0x9FFF},   {0xAC00, 0xD7A3},
      {0xE000, 0xF8FF},   {0xF900, 0xFAFF},   {0xFB00, 0xFFFF},   {0x10000, 0x1FFFF}, {0x1F300, 0x1FAFF},
      {0x20000, 0x3FFFF}, {0xE0000, 0xE01EF}, {0xF0000, 0x10FFFF}, {0x11F00, 0x11F5F},
  };
  const auto& [lo, hi] = ranges[std::uniform_int_distribution<size_t>(0, std::size(ranges) - 1)(rng)];
  char32_t cp = std::uniform_int_distribution<uint32_t>(lo, hi)(rng);
  if (cp >= 0xD800 && cp <= 0xDFFF) cp = 0xFFFD;
  return cp;
}

std::string random_text(std::mt19937& rng, size_t max_chars, bool with_added_tokens) {
  static const char* const added[] = {"<|im_start|>", "<|im_end|>", "<think>", "</think>", "<|endoftext|>", "<tool_call>"};
  std::string s;
  size_t n = std::uniform_int_distribution<size_t>(0, max_chars)(rng);
  for (size_t i = 0; i < n; ++i) {
    if (with_added_tokens && rng() % 40 == 0) {
      s += added[rng() % std::size(added)];
      continue;
    }
    utf8::append(s, random_code_point(rng));
  }
  return s;
}

TEST(TokenizerProperty, DecodeOfEncodeIsTheNormalizedText) {
  std::mt19937 rng(1234);
  const Tokenizer* toks[] = {&tiny_tokenizer(), &qwen3_tokenizer()};
  for (int i = 0; i < 1500; ++i) {
    std::string text = random_text(rng, 60, true);
    const std::string expected = nfc(text);
    for (const Tokenizer* tok : toks) {
      for (AddedTokenMode mode : {AddedTokenMode::kMatchAll, AddedTokenMode::kSplitSpecial, AddedTokenMode::kPlainText}) {
        std::vector<int32_t> ids = tok->encode(text, mode);
        ASSERT_EQ(tok->decode(ids), expected) << "case " << i << " mode " << int(mode);
      }
    }
  }
}

TEST(TokenizerProperty, AddedTokensAreMatchedOnlyWhenAsked) {
  const Tokenizer& tok = tiny_tokenizer();
  const int32_t im_start = *tok.token_to_id("<|im_start|>");
  const int32_t think = *tok.token_to_id("<think>");
  auto count = [](const std::vector<int32_t>& ids, int32_t id) { return std::count(ids.begin(), ids.end(), id); };
  const std::string text = "<|im_start|>user<think>x</think><|im_start|>";
  EXPECT_EQ(count(tok.encode(text), im_start), 2);
  EXPECT_EQ(count(tok.encode(text), think), 1);
  EXPECT_EQ(count(tok.encode(text, AddedTokenMode::kSplitSpecial), im_start), 0);
  EXPECT_EQ(count(tok.encode(text, AddedTokenMode::kSplitSpecial), think), 1);
  EXPECT_EQ(count(tok.encode(text, AddedTokenMode::kPlainText), think), 0);
  // Longest match first, no word boundaries, partial spellings are text.
  EXPECT_EQ(tok.encode("<tts_text_bos_single>"), std::vector<int32_t>{*tok.token_to_id("<tts_text_bos_single>")});
  EXPECT_EQ(count(tok.encode("x<|im_start|>>"), im_start), 1);
  EXPECT_EQ(count(tok.encode("<|im_start|"), im_start), 0);
}

TEST(TokenizerProperty, StreamingEqualsBatchOnRandomIds) {
  std::mt19937 rng(99);
  const Tokenizer& tok = tiny_tokenizer();
  // Single-byte tokens make ill-formed and split sequences common; the rest covers everything
  // else, including ids past the vocabulary that must be dropped.
  std::vector<int32_t> byte_tokens;
  for (int b = 0; b < 256; ++b) byte_tokens.push_back(*tok.token_to_id(byte_level::encode(std::string(1, char(b)))));
  const std::vector<int32_t> emoji = tok.encode("😊🎉 déjà vu 你好");
  for (int i = 0; i < 3000; ++i) {
    std::vector<int32_t> ids;
    size_t n = std::uniform_int_distribution<size_t>(0, 40)(rng);
    for (size_t k = 0; k < n; ++k) {
      switch (rng() % 4) {
        case 0: ids.push_back(byte_tokens[0x80 + rng() % 0x80]); break;
        case 1: ids.push_back(emoji[rng() % emoji.size()]); break;
        case 2: ids.push_back(int32_t(rng() % (tok.vocab_size() + 300))); break;
        default: ids.push_back(248044 + int32_t(rng() % 40)); break;
      }
    }
    for (bool skip : {false, true}) {
      StreamingDecoder d(tok, skip);
      std::string streamed, appended;
      StreamingDecoder appending(tok, skip);
      for (int32_t id : ids) {
        std::string piece = d.push(id);
        ASSERT_TRUE(utf8::is_valid(piece));
        streamed += piece;
        appending.push(id, appended);
      }
      streamed += d.finish();
      appended += appending.finish();
      ASSERT_EQ(streamed, tok.decode(ids, skip)) << "case " << i << " skip " << skip;
      ASSERT_EQ(appended, streamed);
    }
  }
}

TEST(TokenizerProperty, StreamingHoldsASplitCharacterUntilItIsWhole) {
  const Tokenizer& tok = tiny_tokenizer();
  auto byte_id = [&](uint8_t b) { return *tok.token_to_id(byte_level::encode(std::string(1, char(b)))); };
  StreamingDecoder d(tok);
  EXPECT_EQ(d.push(byte_id(0xF0)), "");
  EXPECT_EQ(d.push(byte_id(0x9F)), "");
  EXPECT_EQ(d.push(byte_id(0x98)), "");
  EXPECT_EQ(d.pending_bytes(), 3u);
  EXPECT_EQ(d.push(byte_id(0x8A)), "😊");
  EXPECT_EQ(d.push(byte_id(0xF0)), "");
  EXPECT_EQ(d.push(byte_id('a')), "\uFFFDa");  // the cut-short sequence is now known bad
  EXPECT_EQ(d.push(byte_id(0xE2)), "");
  EXPECT_EQ(d.finish(), "\uFFFD");
}

TEST(TokenizerProperty, IllFormedInputIsRepairedNotRejected) {
  const Tokenizer& tok = tiny_tokenizer();
  EXPECT_EQ(tok.encode("a\xED\xA0\x80z"), tok.encode("a\uFFFD\uFFFD\uFFFDz"));
  EXPECT_EQ(tok.encode("\xC0\x80"), tok.encode("\uFFFD\uFFFD"));
  EXPECT_EQ(tok.encode("tail \xF0\x9F\x98"), tok.encode("tail \uFFFD"));
  EXPECT_EQ(tok.encode("<|im_end|>\xFF<|im_end|>"), tok.encode("<|im_end|>\uFFFD<|im_end|>"));
  std::mt19937 rng(7);
  for (int i = 0; i < 2000; ++i) {
    std::string bytes(std::uniform_int_distribution<size_t>(0, 40)(rng), '\0');
    for (char& c : bytes) c = char(rng() % 4 == 0 ? rng() % 0x80 : 0x80 + rng() % 0x80);
    std::string repaired;
    utf8::append_lossy(repaired, bytes);
    std::vector<int32_t> ids;
    ASSERT_NO_THROW(ids = tok.encode(bytes)) << i;
    ASSERT_EQ(tok.decode(ids), nfc(repaired)) << i;
  }
}

// The slow twin: merge the lowest-ranked adjacent pair (leftmost on ties) until none is left,
// rescanning the whole piece each time.
class NaiveBpe {
 public:
  explicit NaiveBpe(const TokenizerSpec& spec) {
    std::map<std::string, int32_t> vocab(spec.vocab.begin(), spec.vocab.end());
    for (int b = 0; b < 256; ++b) byte_ids_[b] = vocab.at(byte_level::encode(std::string(1, char(b))));
    for (size_t r = 0; r < spec.merges.size(); ++r) {
      const auto& [a, b] = spec.merges[r];
      merges_[{vocab.at(a), vocab.at(b)}] = {int32_t(r), vocab.at(a + b)};
    }
    model_merges_.reserve(spec.merges.size());
    for (const auto& [a, b] : spec.merges) model_merges_.push_back({vocab.at(a), vocab.at(b), vocab.at(a + b)});
  }

  std::vector<int32_t> encode(std::string_view piece) const {
    std::vector<int32_t> s;
    for (char c : piece) s.push_back(byte_ids_[uint8_t(c)]);
    while (true) {
      int best = -1;
      std::pair<int32_t, int32_t> best_merge{INT32_MAX, -1};
      for (size_t i = 0; i + 1 < s.size(); ++i) {
        auto it = merges_.find({s[i], s[i + 1]});
        if (it != merges_.end() && it->second.first < best_merge.first) {
          best = int(i);
          best_merge = it->second;
        }
      }
      if (best < 0) return s;
      s[best] = best_merge.second;
      s.erase(s.begin() + best + 1);
    }
  }

  BpeModel fast() const { return BpeModel(byte_ids_, model_merges_); }

 private:
  std::array<int32_t, 256> byte_ids_{};
  std::map<std::pair<int32_t, int32_t>, std::pair<int32_t, int32_t>> merges_;
  std::vector<BpeModel::Merge> model_merges_;
};

TEST(TokenizerProperty, HeapBpeEqualsNaiveBpe) {
  const NaiveBpe naive(load_tokenizer_json(data_path("tokenizer/qwen3-fallback/tokenizer.json")));
  const BpeModel fast = naive.fast();
  BpeScratch scratch;
  std::mt19937 rng(5);
  auto check = [&](std::string_view piece) {
    std::vector<int32_t> got;
    fast.encode(piece, got, scratch);
    ASSERT_EQ(got, naive.encode(piece)) << "piece \"" << byte_level::encode(piece) << "\"";
  };
  // Real pre-tokens of the golden texts...
  const Tokenizer& tok = qwen3_tokenizer();
  int pieces = 0;
  for (const nlohmann::json& row : read_jsonl("tokenizer/golden/visible_text.jsonl")) {
    for (const std::string& spelled : tok.pretokenize(row["text"].get<std::string>())) {
      std::string bytes;
      ASSERT_TRUE(byte_level::decode(spelled, &bytes));
      check(bytes);
      ++pieces;
    }
  }
  EXPECT_GT(pieces, 3000);
  // ... and random ones over a small alphabet, where long merge chains and ties are common.
  const std::string alphabet = "aaaeeinnorsstt  .\xC3\xA9";
  for (int i = 0; i < 3000; ++i) {
    std::string piece(std::uniform_int_distribution<size_t>(1, 48)(rng), ' ');
    for (char& c : piece) c = alphabet[rng() % alphabet.size()];
    check(piece);
  }
  check(std::string(500, 'a'));
  check(std::string(333, ' '));
}

// The documented thread contract: one Tokenizer, many threads encoding and decoding at once.
TEST(TokenizerProperty, ConcurrentUseGivesTheSameResults) {
  const Tokenizer& tok = tiny_tokenizer();
  std::vector<std::string> texts;
  std::mt19937 rng(42);
  for (int i = 0; i < 32; ++i) texts.push_back(random_text(rng, 300, true) + std::string(2500, 'x'));
  std::vector<std::vector<int32_t>> expected;
  for (const std::string& t : texts) expected.push_back(tok.encode(t));
  std::vector<int> failures(4, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int round = 0; round < 2; ++round)
        for (size_t i = 0; i < texts.size(); ++i) {
          std::vector<int32_t> ids = tok.encode(texts[(i + t) % texts.size()]);
          if (ids != expected[(i + t) % texts.size()] || tok.decode(ids) != nfc(texts[(i + t) % texts.size()])) ++failures[t];
        }
    });
  }
  for (std::thread& th : threads) th.join();
  EXPECT_EQ(failures, std::vector<int>(4, 0));
}

TEST(TokenizerProperty, LongInputsEncodeInReasonableTime) {
  const Tokenizer& tok = tiny_tokenizer();
  // One 256 KiB piece (a single "word"), one 1 MiB whitespace run, 1 MiB of digits.
  std::vector<int32_t> ids = tok.encode(std::string(256 * 1024, 'a'));
  EXPECT_EQ(tok.decode(ids), std::string(256 * 1024, 'a'));
  ids = tok.encode(std::string(1 << 20, ' ') + "x");
  EXPECT_EQ(tok.decode(ids).size(), (1u << 20) + 1);
  ids = tok.encode(std::string(1 << 20, '7'));
  EXPECT_EQ(ids.size(), 1u << 20);
}

}  // namespace
}  // namespace qwen35::test
