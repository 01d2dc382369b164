// The tokenizer through GGUF metadata: tokenizer.json -> tokenizer.ggml.* (as llama.cpp's
// converter writes it) -> TokenizerSpec -> Tokenizer must give the ids, decodes and split-special
// behaviour of tokenizer.json on every tokenizer golden.
#include "text/tokenizer_gguf.h"

#include <gmock/gmock.h>

#include "core/error.h"
#include "io/gguf.h"
#include "io/gguf_writer.h"
#include "text/streaming_decoder.h"
#include "tokenizer_test_util.h"

namespace qwen35::test {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;

const json& value_or(const json& row, const char* key, const char* fallback) {
  return row.contains(key) ? row[key] : row[fallback];
}

// The GGUF bytes of a tokenizer.json (kept alive: the parsed file's values are views into them).
struct GgufTokenizer {
  std::vector<uint8_t> bytes;
  std::unique_ptr<GgufFile> file;
  std::unique_ptr<Tokenizer> tokenizer;
};

GgufTokenizer through_gguf(const std::string& tokenizer_json, int64_t vocab_size) {
  const TokenizerSpec spec = load_tokenizer_json(data_path(tokenizer_json));
  GgufTokenizerKeys keys;
  keys.vocab_size = vocab_size;
  keys.eos_id = 248046;
  GgufWriter w;
  write_tokenizer_gguf(spec, keys, w);
  GgufTokenizer g;
  g.bytes = w.to_bytes();
  g.file = GgufFile::from_bytes(g.bytes, tokenizer_json + ".gguf");
  g.tokenizer = std::make_unique<Tokenizer>(tokenizer_spec_from_gguf(*g.file));
  return g;
}

const GgufTokenizer& tiny_gguf() {
  static const GgufTokenizer g = through_gguf("tiny-qwen35/tokenizer.json", 248320);
  return g;
}

TEST(TokenizerGguf, WritesWhatLlamaCppsConverterWrites) {
  const GgufFile& f = *tiny_gguf().file;
  EXPECT_EQ(f.get_string("tokenizer.ggml.model"), "gpt2");
  EXPECT_EQ(f.get_string("tokenizer.ggml.pre"), "qwen35");
  const GgufValue& tokens = f.get_array("tokenizer.ggml.tokens");
  const GgufValue& types = f.get_array("tokenizer.ggml.token_type");
  ASSERT_EQ(tokens.count, 248320u);  // one per embedding row
  EXPECT_EQ(tokens.string_at(198), "Ċ");
  EXPECT_EQ(types.int_at(198), 1);                      // NORMAL
  EXPECT_EQ(tokens.string_at(248046), "<|im_end|>");
  EXPECT_EQ(types.int_at(248046), 3);                   // CONTROL
  EXPECT_EQ(types.int_at(248060), 3);                   // <|fim_prefix|>: CONTROL by its <|...|> form
  EXPECT_EQ(tokens.string_at(248068), "<think>");
  EXPECT_EQ(types.int_at(248068), 4);                   // USER_DEFINED
  EXPECT_EQ(tokens.string_at(248100), "[PAD248100]");  // embedding padding
  EXPECT_EQ(types.int_at(248100), 5);                   // UNUSED
  EXPECT_EQ(f.get_array("tokenizer.ggml.merges").string_at(0), "Ġ Ġ");
  EXPECT_EQ(f.get_int("tokenizer.ggml.eos_token_id"), 248046);
  EXPECT_EQ(f.get_bool_opt("tokenizer.ggml.add_bos_token"), false);
}

TEST(TokenizerGguf, TinyTokenizerGoldens) {
  const Tokenizer& tok = *tiny_gguf().tokenizer;
  const Tokenizer& ref = tiny_tokenizer();
  EXPECT_EQ(tok.vocab_size(), ref.vocab_size());
  for (int32_t id : {248058, 248060, 248065, 248068, 248046, 248076}) {
    EXPECT_EQ(tok.is_special(id), ref.is_special(id)) << id;  // the six <|fim...|> keep special = false
    EXPECT_EQ(tok.is_added(id), ref.is_added(id)) << id;
  }
  auto rows = read_jsonl("tiny-qwen35/golden/tokenizer_text.jsonl");
  ASSERT_EQ(rows.size(), 63u);
  for (const json& row : rows) {
    const std::string id = row["id"];
    const std::vector<int32_t> ids = ids_of(row["ids"]);
    EXPECT_EQ(tok.encode(row["text"].get<std::string>()), ids) << id;
    EXPECT_EQ(tok.decode(ids), row["decoded"].get<std::string>()) << id;
    EXPECT_EQ(tok.decode(ids, true), value_or(row, "decoded_skip_special", "decoded").get<std::string>()) << id;
  }
  int chats = 0;
  for (const json& row : read_jsonl("tiny-qwen35/golden/chat_e2e.jsonl")) {
    EXPECT_EQ(tok.encode(row["rendered"].get<std::string>()), ids_of(row["rendered_ids"])) << row["id"];
    EXPECT_EQ(tok.decode(ids_of(row["generated_ids"]), true), row["continuation_text_skip_special"].get<std::string>())
        << row["id"];
    ++chats;
  }
  EXPECT_EQ(chats, 7);
}

TEST(TokenizerGguf, Qwen3TokenizerGoldens) {
  // The Qwen3 tokenizer (pre "qwen2", its own added tokens): every visible text golden.
  const GgufTokenizer g = through_gguf("tokenizer/qwen3-fallback/tokenizer.json", qwen3_tokenizer().vocab_size());
  EXPECT_EQ(g.file->get_string("tokenizer.ggml.pre"), "qwen2");
  const Tokenizer& tok = *g.tokenizer;
  auto rows = read_jsonl("tokenizer/golden/visible_text.jsonl");
  ASSERT_EQ(rows.size(), 162u);
  for (const json& row : rows) {
    const std::string id = row["id"];
    const std::string text = row["text"];
    const std::vector<int32_t> ids = ids_of(row["ids"]);
    EXPECT_EQ(tok.encode(text), ids) << id;
    EXPECT_EQ(tok.encode(text, AddedTokenMode::kSplitSpecial), ids_of(value_or(row, "ids_split_special", "ids"))) << id;
    EXPECT_EQ(tok.decode(ids), row["decoded"].get<std::string>()) << id;
    EXPECT_EQ(tok.decode(ids, true), value_or(row, "decoded_skip_special", "decoded").get<std::string>()) << id;
  }
  int checked = 0;
  for (const json& row : read_jsonl("tokenizer/golden/visible_chat.jsonl")) {
    if (row["rendered"].is_null() || !row.contains("ids")) continue;
    EXPECT_EQ(tok.encode(row["rendered"].get<std::string>()), ids_of(row["ids"])) << row["id"];
    ++checked;
  }
  EXPECT_GT(checked, 0);
}

std::string spec_error(const std::vector<uint8_t>& bytes) {
  try {
    tokenizer_spec_from_gguf(*GgufFile::from_bytes(bytes, "bad.gguf"));
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(TokenizerGguf, RejectsTokenizersItCannotReproduce) {
  auto file = [](const std::string& model, const std::string& pre, std::vector<std::string> merges,
                 std::vector<int32_t> types) {
    GgufWriter w;
    w.set_string("tokenizer.ggml.model", model);
    w.set_string("tokenizer.ggml.pre", pre);
    w.set_array_strings("tokenizer.ggml.tokens", {"a", "b", "ab"});
    w.set_array_i32("tokenizer.ggml.token_type", types);
    w.set_array_strings("tokenizer.ggml.merges", merges);
    return w.to_bytes();
  };
  EXPECT_EQ(spec_error(file("gpt2", "qwen35", {"a b"}, {1, 1, 1})), "(no error)");
  EXPECT_THAT(spec_error(file("llama", "qwen35", {"a b"}, {1, 1, 1})), HasSubstr("tokenizer.ggml.model 'llama'"));
  EXPECT_THAT(spec_error(file("gpt2", "deepseek-v3", {"a b"}, {1, 1, 1})), HasSubstr("tokenizer.ggml.pre 'deepseek-v3'"));
  EXPECT_THAT(spec_error(file("gpt2", "qwen35", {"ab"}, {1, 1, 1})), HasSubstr("merges[0] = 'ab'"));
  EXPECT_THAT(spec_error(file("gpt2", "qwen35", {"a b"}, {1, 1})), HasSubstr("token_type must be"));
  EXPECT_THAT(spec_error(file("gpt2", "qwen35", {"a b"}, {1, 9, 1})), HasSubstr("token 1 has unknown token_type 9"));
}

}  // namespace
}  // namespace qwen35::test
