// Loading tokenizer.json (errors, both merge spellings, the supported variants) and the lookup API,
// on small hand-made tokenizers and on the bundled ones.
#include <fstream>

#include "core/error.h"
#include "text/byte_level.h"
#include "tokenizer_test_util.h"

namespace qwen35::test {
namespace {

using nlohmann::json;

// A small byte-level tokenizer: the 256 byte tokens, a few merges building "hello" and " w",
// a special and a non-special added token, NFC and the Qwen3.5 split pattern.
json small_tokenizer_json(bool merges_as_strings = false) {
  json vocab = json::object();
  for (int b = 0; b < 256; ++b) vocab[byte_level::encode(std::string(1, char(b)))] = b;
  const std::vector<std::pair<std::string, std::string>> merges = {
      {"h", "e"}, {"l", "l"}, {"he", "ll"}, {"hell", "o"}, {"Ġ", "w"}, {"o", "r"}, {"Ġw", "or"}};
  int32_t next = 256;
  json merge_list = json::array();
  for (const auto& [a, b] : merges) {
    if (!vocab.contains(a + b)) vocab[a + b] = next++;
    merge_list.push_back(merges_as_strings ? json(a + " " + b) : json::array({a, b}));
  }
  vocab["xyz"] = next++;  // reachable only with ignore_merges
  json added = json::array({
      {{"id", 300}, {"content", "<|x|>"}, {"special", true}, {"normalized", false}},
      {{"id", 301}, {"content", "<y>"}, {"special", false}, {"normalized", false}},
  });
  return {
      {"version", "1.0"},
      {"added_tokens", added},
      {"normalizer", {{"type", "NFC"}}},
      {"pre_tokenizer",
       {{"type", "Sequence"},
        {"pretokenizers",
         json::array({{{"type", "Split"}, {"pattern", {{"Regex", std::string(kQwen35SplitPattern)}}}, {"behavior", "Isolated"}, {"invert", false}},
                      {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", false}, {"use_regex", false}}})}}},
      {"post_processor", nullptr},
      {"decoder", {{"type", "ByteLevel"}}},
      {"model", {{"type", "BPE"}, {"dropout", nullptr}, {"unk_token", nullptr}, {"byte_fallback", false}, {"vocab", vocab}, {"merges", merge_list}}},
  };
}

Tokenizer make(const json& j) { return Tokenizer(parse_tokenizer_json(j.dump(), "test.json")); }

int32_t id_of(const Tokenizer& tok, std::string_view spelled) {
  auto id = tok.token_to_id(spelled);
  EXPECT_TRUE(id.has_value()) << spelled;
  return id.value_or(-1);
}

// The qwen35::Error message of parsing `j`, or "" when it parses and builds.
std::string load_error(const json& j) {
  try {
    make(j);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(TokenizerLoad, BothMergeSpellingsGiveTheSameTokenizer) {
  Tokenizer pairs = make(small_tokenizer_json(false));
  Tokenizer strings = make(small_tokenizer_json(true));
  const std::vector<int32_t> expected = {id_of(pairs, "hello"), id_of(pairs, "Ġwor"), id_of(pairs, "l"), id_of(pairs, "d")};
  EXPECT_EQ(pairs.encode("hello world"), expected);
  EXPECT_EQ(strings.encode("hello world"), expected);
  EXPECT_EQ(pairs.vocab_size(), 302);
}

TEST(TokenizerLoad, AddedTokensAndLookups) {
  Tokenizer tok = make(small_tokenizer_json());
  EXPECT_EQ(tok.encode("a<|x|>b<y>"), (std::vector<int32_t>{'a', 300, 'b', 301}));
  EXPECT_TRUE(tok.is_special(300));
  EXPECT_FALSE(tok.is_special(301));
  EXPECT_TRUE(tok.is_added(301));
  EXPECT_FALSE(tok.is_added(5));
  EXPECT_EQ(tok.decode(std::vector<int32_t>{'a', 300, 'b', 301}, true), "ab<y>");
  EXPECT_EQ(tok.id_to_token(id_of(tok, "Ġwor")), "Ġwor");
  EXPECT_EQ(tok.token_bytes(id_of(tok, "Ġwor")), " wor");
  // Ids between the vocabulary and the added tokens, and past them, name nothing.
  EXPECT_FALSE(tok.is_valid_id(299));
  EXPECT_EQ(tok.id_to_token(299), "");
  EXPECT_EQ(tok.decode(std::vector<int32_t>{'o', 299, 5000, -1, 'k'}), "ok");
}

TEST(TokenizerLoad, IgnoreMergesTakesWholeVocabularyPieces) {
  json j = small_tokenizer_json();
  EXPECT_EQ(make(j).encode("xyz"), (std::vector<int32_t>{'x', 'y', 'z'}));
  j["model"]["ignore_merges"] = true;
  Tokenizer tok = make(j);
  EXPECT_EQ(tok.encode("xyz"), std::vector<int32_t>{id_of(tok, "xyz")});
}

TEST(TokenizerLoad, Gpt2ByteLevelRegexAndPrefixSpace) {
  json j = small_tokenizer_json();
  j["pre_tokenizer"] = {{"type", "ByteLevel"}, {"add_prefix_space", true}, {"use_regex", true}};
  Tokenizer tok = make(j);
  EXPECT_EQ(tok.pretokenize("hello world's 42"), (std::vector<std::string>{"Ġhello", "Ġworld", "'s", "Ġ42"}));
  EXPECT_EQ(tok.decode(tok.encode("hello")), " hello");
}

TEST(TokenizerLoad, AddedTokenStripAndWordOptions) {
  json j = small_tokenizer_json();
  j["added_tokens"][0]["lstrip"] = true;
  j["added_tokens"][0]["rstrip"] = true;
  j["added_tokens"][1]["single_word"] = true;
  Tokenizer tok = make(j);
  EXPECT_EQ(tok.encode("a  <|x|>  b"), (std::vector<int32_t>{'a', 300, 'b'}));
  EXPECT_EQ(tok.encode("a <y> b"), (std::vector<int32_t>{'a', id_of(tok, "Ġ"), 301, id_of(tok, "Ġ"), 'b'}));
  // Inside a word, a single_word token is plain text.
  std::vector<int32_t> ids = tok.encode("a<y>b");
  EXPECT_EQ(std::count(ids.begin(), ids.end(), 301), 0);
}

TEST(TokenizerLoad, NormalizedAddedTokensMatchAfterNormalization) {
  json j = small_tokenizer_json();
  j["added_tokens"].push_back({{"id", 302}, {"content", "\u00E9t\u00E9"}, {"special", false}, {"normalized", true}});
  Tokenizer tok = make(j);
  // Decomposed input: only found once NFC has composed it.
  EXPECT_EQ(tok.encode("e\u0301te\u0301!"), (std::vector<int32_t>{302, '!'}));
}

TEST(TokenizerLoad, ErrorsNameTheProblem) {
  auto expect_error = [](json j, const std::string& needle) {
    std::string message = load_error(j);
    EXPECT_NE(message.find(needle), std::string::npos) << "message: \"" << message << "\", expected to contain: " << needle;
  };
  json j = small_tokenizer_json();
  j.erase("model");
  expect_error(j, "missing key \"model\"");

  j = small_tokenizer_json();
  j["model"].erase("vocab");
  expect_error(j, "missing key \"vocab\"");

  j = small_tokenizer_json();
  j["model"]["merges"][0] = 7;
  expect_error(j, "model.merges[0]");

  j = small_tokenizer_json();
  j["model"]["merges"].push_back("h");
  expect_error(j, "expected \"left right\"");

  j = small_tokenizer_json();
  j["model"]["merges"].push_back(json::array({"q", "zz"}));
  expect_error(j, "missing from the vocabulary");

  j = small_tokenizer_json();
  j["model"]["type"] = "WordPiece";
  expect_error(j, "only BPE");

  j = small_tokenizer_json();
  j["model"]["byte_fallback"] = true;
  expect_error(j, "byte fallback");

  j = small_tokenizer_json();
  j["normalizer"] = {{"type", "Lowercase"}};
  expect_error(j, "unsupported normalizer \"Lowercase\"");

  j = small_tokenizer_json();
  j["pre_tokenizer"]["pretokenizers"][0]["behavior"] = "Removed";
  expect_error(j, "only \"Isolated\"");

  j = small_tokenizer_json();
  j["pre_tokenizer"] = j["pre_tokenizer"]["pretokenizers"][0];
  expect_error(j, "no ByteLevel step");

  j = small_tokenizer_json();
  j["pre_tokenizer"]["pretokenizers"][0]["pattern"] = {{"Regex", "(unclosed"}};
  expect_error(j, "split pattern does not compile");

  j = small_tokenizer_json();
  j["decoder"] = {{"type", "WordPiece"}};
  expect_error(j, "only ByteLevel");

  j = small_tokenizer_json();
  j["model"]["vocab"]["Ġh"] = 5;  // id 5 is already a byte token
  expect_error(j, "id 5 is used by two vocabulary entries");

  j = small_tokenizer_json();
  j["added_tokens"][0]["id"] = "300";
  expect_error(j, "added_tokens[0].id");

  EXPECT_NE(load_error(json::array()).find("expected an object"), std::string::npos);
  try {
    parse_tokenizer_json("{\"model\": ", "broken.json");
    ADD_FAILURE() << "no error for truncated JSON";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("broken.json: not valid JSON"), std::string::npos) << e.what();
  }
  try {
    Tokenizer::from_file("/nonexistent/dir/tokenizer.json");
    ADD_FAILURE() << "no error for a missing file";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent/dir/tokenizer.json"), std::string::npos) << e.what();
  }
}

TEST(TokenizerLoad, BundledTokenizersHaveTheDocumentedShape) {
  const Tokenizer& tiny = tiny_tokenizer();
  EXPECT_EQ(tiny.vocab_size(), 248077);
  EXPECT_EQ(tiny.token_to_id("<|endoftext|>"), 248044);
  EXPECT_EQ(tiny.token_to_id("<|im_start|>"), 248045);
  EXPECT_EQ(tiny.token_to_id("<|im_end|>"), 248046);
  EXPECT_EQ(tiny.token_to_id("<think>"), 248068);
  EXPECT_EQ(tiny.token_to_id("<|audio_pad|>"), 248076);
  EXPECT_EQ(tiny.token_to_id("Ġ"), 220);
  EXPECT_EQ(tiny.token_to_id("Ċ"), 198);
  EXPECT_EQ(tiny.token_to_id("no such token"), std::nullopt);
  EXPECT_EQ(tiny.added_tokens().size(), 33u);
  for (int32_t id = 248044; id <= 248076; ++id) {
    bool special = !(id >= 248058 && id <= 248069);
    EXPECT_EQ(tiny.is_special(id), special) << id;
  }
  EXPECT_EQ(tiny.token_bytes(271), "\n\n");
  EXPECT_EQ(tiny.id_to_token(189494), "<unused189494>");
  // Embedding padding rows are not tokens and decode to nothing.
  EXPECT_FALSE(tiny.is_valid_id(248077));
  EXPECT_EQ(tiny.decode(std::vector<int32_t>{9707, 248100, 248319}), "Hello");

  const Tokenizer& qwen3 = qwen3_tokenizer();
  EXPECT_EQ(qwen3.vocab_size(), 151669);
  EXPECT_EQ(qwen3.token_to_id("<|im_start|>"), 151644);
  EXPECT_EQ(qwen3.encode("Hello"), std::vector<int32_t>{9707});
}

TEST(TokenizerLoad, ModelDirectoryAndFilePathAreBothAccepted) {
  std::string dir = temp_dir("tokenizer-load");
  std::ofstream(dir + "/tokenizer.json") << small_tokenizer_json().dump();
  EXPECT_EQ(Tokenizer::from_file(dir).encode("hello"), Tokenizer::from_file(dir + "/tokenizer.json").encode("hello"));
}

}  // namespace
}  // namespace qwen35::test

namespace qwen35::test {
namespace {

TEST(TokenizerLoad, SparseIdsAreRejectedInsteadOfAllocatingGigabytes) {
  json j = small_tokenizer_json();
  j["model"]["vocab"]["zzqqxx"] = 2147483000;
  EXPECT_NE(load_error(j).find("too sparse"), std::string::npos) << load_error(j);
}

TEST(TokenizerLoad, ModesApplyToNormalizedAddedTokensToo) {
  json j = small_tokenizer_json();
  for (auto& a : j["added_tokens"]) a["normalized"] = true;
  Tokenizer tok = make(j);
  EXPECT_EQ(tok.encode("he<|x|>", AddedTokenMode::kMatchAll).back(), 300);
  EXPECT_NE(tok.encode("he<|x|>", AddedTokenMode::kPlainText).back(), 300);
  EXPECT_NE(tok.encode("he<|x|>", AddedTokenMode::kSplitSpecial).back(), 300);  // special: plain text here
  EXPECT_EQ(tok.encode("he<y>", AddedTokenMode::kSplitSpecial).back(), 301);     // not special: still matched
}

}  // namespace
}  // namespace qwen35::test
