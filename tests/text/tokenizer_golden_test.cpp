// Goldens from the Hugging Face `tokenizers` library (see tests/data/tokenizer/README.md): every
// case of every file must match exactly.
#include <cstdlib>
#include <filesystem>

#include "text/streaming_decoder.h"
#include "tokenizer_test_util.h"

namespace qwen35::test {
namespace {

using nlohmann::json;

// Reads an optional golden key that defaults to another one when absent.
const json& value_or(const json& row, const char* key, const char* fallback) {
  return row.contains(key) ? row[key] : row[fallback];
}

std::string streamed(const Tokenizer& tok, const std::vector<int32_t>& ids, bool skip_special) {
  StreamingDecoder d(tok, skip_special);
  std::string out;
  for (int32_t id : ids) out += d.push(id);
  return out + d.finish();
}

TEST(TokenizerGolden, VisibleTextWithQwen3Tokenizer) {
  const Tokenizer& tok = qwen3_tokenizer();
  const Tokenizer& tok35 = qwen3_tokenizer_with_qwen35_regex();
  auto rows = read_jsonl("tokenizer/golden/visible_text.jsonl");
  ASSERT_EQ(rows.size(), 162u);
  int pretoken_cases = 0, split_special_cases = 0, qwen35_cases = 0;
  for (const json& row : rows) {
    const std::string id = row["id"];
    const std::string text = row["text"];
    const std::vector<int32_t> ids = ids_of(row["ids"]);
    EXPECT_EQ(tok.encode(text), ids) << id;
    EXPECT_EQ(tok.encode(text, AddedTokenMode::kSplitSpecial), ids_of(value_or(row, "ids_split_special", "ids"))) << id;
    EXPECT_EQ(tok35.encode(text), ids_of(value_or(row, "ids_qwen35_regex", "ids"))) << id;
    split_special_cases += row.contains("ids_split_special");
    qwen35_cases += row.contains("ids_qwen35_regex");

    const std::string decoded = row["decoded"];
    const std::string decoded_skip = value_or(row, "decoded_skip_special", "decoded");
    EXPECT_EQ(tok.decode(ids), decoded) << id;
    EXPECT_EQ(tok.decode(ids, true), decoded_skip) << id;
    EXPECT_EQ(streamed(tok, ids, false), decoded) << id;
    EXPECT_EQ(streamed(tok, ids, true), decoded_skip) << id;

    if (row.contains("pretokens")) {
      ++pretoken_cases;
      EXPECT_EQ(tok.pretokenize(text), row["pretokens"].get<std::vector<std::string>>()) << id;
      EXPECT_EQ(tok35.pretokenize(text), value_or(row, "pretokens_qwen35_regex", "pretokens").get<std::vector<std::string>>())
          << id;
    }
  }
  EXPECT_EQ(pretoken_cases, 157);
  EXPECT_EQ(split_special_cases, 13);
  EXPECT_EQ(qwen35_cases, 8);
}

TEST(TokenizerGolden, TinyModelTokenizerText) {
  const Tokenizer& tok = tiny_tokenizer();
  auto rows = read_jsonl("tiny-qwen35/golden/tokenizer_text.jsonl");
  ASSERT_EQ(rows.size(), 63u);
  for (const json& row : rows) {
    const std::string id = row["id"];
    const std::vector<int32_t> ids = ids_of(row["ids"]);
    EXPECT_EQ(tok.encode(row["text"].get<std::string>()), ids) << id;
    EXPECT_EQ(tok.decode(ids), row["decoded"].get<std::string>()) << id;
    EXPECT_EQ(tok.decode(ids, true), value_or(row, "decoded_skip_special", "decoded").get<std::string>()) << id;
    EXPECT_EQ(streamed(tok, ids, true), value_or(row, "decoded_skip_special", "decoded").get<std::string>()) << id;
  }
}

TEST(TokenizerGolden, VisibleChatRenderedWithQwen3Tokenizer) {
  const Tokenizer& tok = qwen3_tokenizer();
  auto rows = read_jsonl("tokenizer/golden/visible_chat.jsonl");
  ASSERT_EQ(rows.size(), 13u);
  int checked = 0;
  for (const json& row : rows) {
    if (row["rendered"].is_null()) continue;
    ASSERT_TRUE(row.contains("ids")) << row["id"];
    EXPECT_EQ(tok.encode(row["rendered"].get<std::string>()), ids_of(row["ids"])) << row["id"];
    ++checked;
  }
  EXPECT_EQ(checked, 12);
}

TEST(TokenizerGolden, ChatEndToEndWithTinyTokenizer) {
  const Tokenizer& tok = tiny_tokenizer();
  auto rows = read_jsonl("tiny-qwen35/golden/chat_e2e.jsonl");
  ASSERT_EQ(rows.size(), 7u);
  for (const json& row : rows) {
    const std::string id = row["id"];
    EXPECT_EQ(tok.encode(row["rendered"].get<std::string>()), ids_of(row["rendered_ids"])) << id;
    const std::vector<int32_t> generated = ids_of(row["generated_ids"]);
    EXPECT_EQ(tok.decode(generated), row["continuation_text"].get<std::string>()) << id;
    EXPECT_EQ(tok.decode(generated, true), row["continuation_text_skip_special"].get<std::string>()) << id;
    EXPECT_EQ(streamed(tok, generated, false), row["continuation_text"].get<std::string>()) << id;
    EXPECT_EQ(streamed(tok, generated, true), row["continuation_text_skip_special"].get<std::string>()) << id;
  }
}

// Needs the real Qwen3.5 tokenizer.json, which is not bundled: point QWEN35_REAL_TOKENIZER at it
// (the file or the model directory).
TEST(TokenizerGolden, ExternalQwen35Ids) {
  const char* path = std::getenv("QWEN35_REAL_TOKENIZER");
  if (!path || !*path) GTEST_SKIP() << "set QWEN35_REAL_TOKENIZER to the real Qwen3.5 tokenizer.json to run these goldens";
  ASSERT_TRUE(std::filesystem::exists(path)) << path;
  Tokenizer tok = Tokenizer::from_file(path);
  EXPECT_EQ(tok.vocab_size(), 248077);
  auto rows = read_jsonl("tokenizer/golden/visible_qwen35_external.jsonl");
  ASSERT_EQ(rows.size(), 12u);
  for (const json& row : rows) {
    const std::string id = row["id"];
    const std::string mode = row["mode"];
    ASSERT_TRUE(mode == "encode" || mode == "ordinary") << id << " mode " << mode;
    AddedTokenMode m = mode == "encode" ? AddedTokenMode::kMatchAll : AddedTokenMode::kPlainText;
    const std::vector<int32_t> ids = ids_of(row["ids"]);
    EXPECT_EQ(tok.encode(row["text"].get<std::string>(), m), ids) << id;
    if (row.contains("tokens")) {
      std::vector<std::string> tokens;
      for (int32_t t : ids) tokens.emplace_back(tok.id_to_token(t));
      EXPECT_EQ(tokens, row["tokens"].get<std::vector<std::string>>()) << id;
    }
  }
}

}  // namespace
}  // namespace qwen35::test
