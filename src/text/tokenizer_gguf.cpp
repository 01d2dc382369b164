#include "text/tokenizer_gguf.h"

#include <algorithm>
#include <array>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "io/gguf.h"
#include "io/gguf_writer.h"
#include "text/pretokenizer.h"

namespace qwen35 {
namespace {

// <|...|> tokens that Qwen's tokenizer.json has as non-special added tokens; llama.cpp's converter
// makes every <|...|> token CONTROL, so reading a GGUF restores their flag.
constexpr std::array<std::string_view, 6> kNonSpecialControlTokens = {
    "<|fim_prefix|>", "<|fim_middle|>", "<|fim_suffix|>", "<|fim_pad|>", "<|repo_name|>", "<|file_sep|>"};

bool looks_like_control(std::string_view s) {
  return s.size() >= 4 && s.substr(0, 2) == "<|" && s.substr(s.size() - 2) == "|>";
}

std::string pre_type_for(const std::vector<std::string>& patterns) {
  if (patterns.size() == 1) {
    if (patterns[0] == kQwen35SplitPattern) return "qwen35";
    if (patterns[0] == kQwen2SplitPattern) return "qwen2";
  }
  fail("the tokenizer's split pattern is not one llama.cpp knows by name (expected the Qwen3.5 regex)");
}

nlohmann::json read_json(const std::filesystem::path& path) {
  std::ifstream in(path);
  if (!in) return nlohmann::json();
  nlohmann::json j = nlohmann::json::parse(in, nullptr, false);
  if (j.is_discarded()) fail(path.string(), " is not valid JSON");
  return j;
}

}  // namespace

GgufTokenizerKeys tokenizer_keys_from_hf(const std::string& dir, const TokenizerSpec& spec, int64_t vocab_size) {
  GgufTokenizerKeys k;
  k.vocab_size = vocab_size;
  const nlohmann::json tc = read_json(std::filesystem::path(dir) / "tokenizer_config.json");
  const nlohmann::json cfg = read_json(std::filesystem::path(dir) / "config.json");
  auto id_of = [&](const std::string& text) -> std::optional<int64_t> {
    for (const AddedToken& a : spec.added_tokens)
      if (a.content == text) return a.id;
    for (const auto& [t, id] : spec.vocab)
      if (t == text) return id;
    return std::nullopt;
  };
  auto special = [&](const char* token_key, const char* id_key) -> std::optional<int64_t> {
    if (tc.is_object() && tc.contains(token_key)) {
      const nlohmann::json& t = tc[token_key];
      if (t.is_string()) return id_of(t.get<std::string>());
      if (t.is_object() && t.contains("content") && t["content"].is_string()) return id_of(t["content"].get<std::string>());
    }
    for (const nlohmann::json* c : {&cfg, cfg.is_object() && cfg.contains("text_config") ? &cfg["text_config"] : nullptr}) {
      if (!c || !c->is_object() || !c->contains(id_key)) continue;
      const nlohmann::json& v = (*c)[id_key];
      if (v.is_number_integer()) return v.get<int64_t>();
      if (v.is_array() && !v.empty() && v[0].is_number_integer()) return v[0].get<int64_t>();
    }
    return std::nullopt;
  };
  k.bos_id = special("bos_token", "bos_token_id");
  k.eos_id = special("eos_token", "eos_token_id");
  k.pad_id = special("pad_token", "pad_token_id");
  if (tc.is_object() && tc.contains("add_bos_token") && tc["add_bos_token"].is_boolean())
    k.add_bos = tc["add_bos_token"].get<bool>();
  if (tc.is_object() && tc.contains("chat_template") && tc["chat_template"].is_string()) {
    k.chat_template = tc["chat_template"].get<std::string>();
  } else if (std::ifstream in(std::filesystem::path(dir) / "chat_template.jinja", std::ios::binary); in) {
    std::ostringstream os;
    os << in.rdbuf();
    k.chat_template = os.str();
  }
  return k;
}

void copy_tokenizer_keys(const GgufFile& src, GgufWriter& w) {
  for (const auto& [key, value] : src.metadata())
    if (key.rfind("tokenizer.", 0) == 0) w.set_value(key, value);
}

TokenizerSpec tokenizer_spec_from_gguf(const GgufFile& f) {
  const std::string model(f.get_string("tokenizer.ggml.model"));
  if (model != "gpt2") fail(f.path(), ": tokenizer.ggml.model '", model, "' is not supported (expected gpt2, byte-level BPE)");
  TokenizerSpec spec;
  const std::string pre(f.get_string_opt("tokenizer.ggml.pre").value_or("default"));
  const auto pattern = split_pattern_for_pre_type(pre);
  if (!pattern) fail(f.path(), ": tokenizer.ggml.pre '", pre, "' is not supported (expected qwen35)");
  spec.split_patterns.emplace_back(*pattern);
  spec.normal_form = unicode::NormalForm::kNFC;

  const GgufValue& tokens = f.get_array("tokenizer.ggml.tokens");
  if (tokens.elem_type != GgufType::kString) fail(f.path(), ": tokenizer.ggml.tokens must be an array of strings");
  if (tokens.count > uint64_t(INT32_MAX)) fail(f.path(), ": tokenizer.ggml.tokens has too many entries");
  const GgufValue* types = f.find("tokenizer.ggml.token_type");
  if (types && (!types->is_array() || !types->is_integer() || types->count != tokens.count))
    fail(f.path(), ": tokenizer.ggml.token_type must be an integer array as long as tokenizer.ggml.tokens (",
         tokens.count, ")");
  spec.vocab.reserve(size_t(tokens.count));
  for (uint64_t i = 0; i < tokens.count; ++i) {
    const std::string_view text = tokens.string_at(i);
    const int64_t type = types ? types->int_at(i) : int64_t(GgufTokenType::kNormal);
    switch (GgufTokenType(type)) {
      case GgufTokenType::kNormal:
      case GgufTokenType::kByte:
      case GgufTokenType::kUnknown: spec.vocab.emplace_back(std::string(text), int32_t(i)); break;
      case GgufTokenType::kControl:
      case GgufTokenType::kUserDefined: {
        AddedToken a;
        a.id = int32_t(i);
        a.content = std::string(text);
        a.special = GgufTokenType(type) == GgufTokenType::kControl &&
                    std::find(kNonSpecialControlTokens.begin(), kNonSpecialControlTokens.end(), text) ==
                        kNonSpecialControlTokens.end();
        if (a.content.empty()) fail(f.path(), ": token ", i, " is an empty added token");
        spec.added_tokens.push_back(std::move(a));
        break;
      }
      case GgufTokenType::kUnused: break;  // padding rows of the embedding
      default: fail(f.path(), ": token ", i, " has unknown token_type ", type);
    }
  }

  if (const GgufValue* merges = f.find("tokenizer.ggml.merges")) {
    if (!merges->is_array() || merges->elem_type != GgufType::kString)
      fail(f.path(), ": tokenizer.ggml.merges must be an array of strings");
    spec.merges.reserve(size_t(merges->count));
    for (uint64_t i = 0; i < merges->count; ++i) {
      const std::string_view m = merges->string_at(i);
      const size_t space = m.find(' ');
      if (space == std::string_view::npos || space == 0 || space + 1 == m.size() ||
          m.find(' ', space + 1) != std::string_view::npos)
        fail(f.path(), ": tokenizer.ggml.merges[", i, "] = '", m, "' is not two tokens separated by one space");
      spec.merges.emplace_back(std::string(m.substr(0, space)), std::string(m.substr(space + 1)));
    }
  }
  return spec;
}

void write_tokenizer_gguf(const TokenizerSpec& spec, const GgufTokenizerKeys& k, GgufWriter& w) {
  if (k.vocab_size <= 0) fail("write_tokenizer_gguf: vocab_size must be positive");
  std::vector<std::string> tokens(size_t(k.vocab_size));
  std::vector<int32_t> types(size_t(k.vocab_size), int32_t(GgufTokenType::kUnused));
  std::vector<bool> set(size_t(k.vocab_size), false);
  auto place = [&](int32_t id, const std::string& text, GgufTokenType type) {
    if (id < 0 || id >= k.vocab_size)
      fail("tokenizer id ", id, " ('", text, "') is outside the model's vocabulary of ", k.vocab_size, " rows");
    tokens[size_t(id)] = text;
    types[size_t(id)] = int32_t(type);
    set[size_t(id)] = true;
  };
  for (const auto& [text, id] : spec.vocab) place(id, text, GgufTokenType::kNormal);
  for (const AddedToken& a : spec.added_tokens)
    place(a.id, a.content,
          a.special || looks_like_control(a.content) ? GgufTokenType::kControl : GgufTokenType::kUserDefined);
  for (int64_t i = 0; i < k.vocab_size; ++i)
    if (!set[size_t(i)]) tokens[size_t(i)] = "[PAD" + std::to_string(i) + "]";
  std::vector<std::string> merges;
  merges.reserve(spec.merges.size());
  for (const auto& [a, b] : spec.merges) merges.push_back(a + " " + b);

  w.set_string("tokenizer.ggml.model", "gpt2");
  w.set_string("tokenizer.ggml.pre", k.pre.empty() ? pre_type_for(spec.split_patterns) : k.pre);
  w.set_array_strings("tokenizer.ggml.tokens", tokens);
  w.set_array_i32("tokenizer.ggml.token_type", types);
  w.set_array_strings("tokenizer.ggml.merges", merges);
  if (k.eos_id) w.set_u32("tokenizer.ggml.eos_token_id", uint32_t(*k.eos_id));
  if (k.pad_id) w.set_u32("tokenizer.ggml.padding_token_id", uint32_t(*k.pad_id));
  if (k.bos_id) w.set_u32("tokenizer.ggml.bos_token_id", uint32_t(*k.bos_id));
  w.set_bool("tokenizer.ggml.add_bos_token", k.add_bos);
  if (!k.chat_template.empty()) w.set_string("tokenizer.chat_template", k.chat_template);
}

}  // namespace qwen35
