#include "text/tokenizer_json.h"

#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "text/pretokenizer.h"

namespace qwen35 {

namespace {

using json = nlohmann::json;

// Error context: which file and which field.
struct Where {
  const std::string& origin;
  [[noreturn]] void fail_at(const std::string& field, const std::string& what) const {
    fail(origin, ": ", field, ": ", what);
  }
};

const json& member(const json& obj, const char* key, const std::string& field, const Where& w) {
  auto it = obj.find(key);
  if (it == obj.end()) w.fail_at(field, std::string("missing key \"") + key + "\"");
  return *it;
}

std::string type_of(const json& obj, const std::string& field, const Where& w) {
  if (!obj.is_object()) w.fail_at(field, "expected an object, got " + std::string(obj.type_name()));
  const json& t = member(obj, "type", field, w);
  if (!t.is_string()) w.fail_at(field + ".type", "expected a string");
  return t.get<std::string>();
}

bool bool_or(const json& obj, const char* key, bool fallback, const std::string& field, const Where& w) {
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return fallback;
  if (!it->is_boolean()) w.fail_at(field + "." + key, "expected true or false, got " + it->dump());
  return it->get<bool>();
}

std::string escape_literal(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (std::string_view("\\^$.|?*+()[]{}").find(c) != std::string_view::npos) out += '\\';
    out += c;
  }
  return out;
}

void read_model(const json& model, TokenizerSpec& spec, const Where& w) {
  if (!model.is_object()) w.fail_at("model", "expected an object");
  if (model.contains("type") && type_of(model, "model", w) != "BPE")
    w.fail_at("model.type", "only BPE is supported, got \"" + model["type"].get<std::string>() + "\"");
  if (bool_or(model, "byte_fallback", false, "model", w)) w.fail_at("model.byte_fallback", "byte fallback is not supported");
  for (const char* key : {"continuing_subword_prefix", "end_of_word_suffix"}) {
    auto it = model.find(key);
    if (it != model.end() && !it->is_null() && !(it->is_string() && it->get<std::string>().empty()))
      w.fail_at(std::string("model.") + key, "must be empty for byte-level BPE, got " + it->dump());
  }
  spec.ignore_merges = bool_or(model, "ignore_merges", false, "model", w);
  auto unk = model.find("unk_token");
  if (unk != model.end() && !unk->is_null()) {
    if (!unk->is_string()) w.fail_at("model.unk_token", "expected a string or null");
    spec.unk_token = unk->get<std::string>();
  }

  const json& vocab = member(model, "vocab", "model", w);
  if (!vocab.is_object()) w.fail_at("model.vocab", "expected an object of token -> id");
  spec.vocab.reserve(vocab.size());
  for (auto it = vocab.begin(); it != vocab.end(); ++it) {
    if (!it.value().is_number_integer() || it.value().get<int64_t>() < 0 || it.value().get<int64_t>() > INT32_MAX)
      w.fail_at("model.vocab[\"" + it.key() + "\"]", "expected a non-negative integer id, got " + it.value().dump());
    spec.vocab.emplace_back(it.key(), it.value().get<int32_t>());
  }

  const json& merges = member(model, "merges", "model", w);
  if (!merges.is_array()) w.fail_at("model.merges", "expected an array");
  spec.merges.reserve(merges.size());
  for (size_t i = 0; i < merges.size(); ++i) {
    const json& m = merges[i];
    // Two serialisations exist: ["a", "b"] (current) and "a b" (older files).
    if (m.is_array() && m.size() == 2 && m[0].is_string() && m[1].is_string()) {
      spec.merges.emplace_back(m[0].get<std::string>(), m[1].get<std::string>());
    } else if (m.is_string()) {
      const std::string& s = m.get_ref<const std::string&>();
      size_t space = s.find(' ');
      if (space == std::string::npos || s.find(' ', space + 1) != std::string::npos)
        w.fail_at("model.merges[" + std::to_string(i) + "]", "expected \"left right\", got " + m.dump());
      spec.merges.emplace_back(s.substr(0, space), s.substr(space + 1));
    } else {
      w.fail_at("model.merges[" + std::to_string(i) + "]", "expected [\"left\", \"right\"] or \"left right\", got " + m.dump());
    }
  }
}

unicode::NormalForm normal_form_of(const std::string& type) {
  if (type == "NFC") return unicode::NormalForm::kNFC;
  if (type == "NFD") return unicode::NormalForm::kNFD;
  if (type == "NFKC") return unicode::NormalForm::kNFKC;
  if (type == "NFKD") return unicode::NormalForm::kNFKD;
  return unicode::NormalForm::kNone;
}

void read_normalizer(const json& n, TokenizerSpec& spec, const Where& w) {
  spec.normal_form = unicode::NormalForm::kNone;
  if (n.is_null()) return;
  std::string type = type_of(n, "normalizer", w);
  std::vector<const json*> parts;
  if (type == "Sequence") {
    const json& list = member(n, "normalizers", "normalizer", w);
    if (!list.is_array()) w.fail_at("normalizer.normalizers", "expected an array");
    for (const json& x : list) parts.push_back(&x);
  } else {
    parts.push_back(&n);
  }
  for (const json* p : parts) {
    std::string t = type_of(*p, "normalizer", w);
    unicode::NormalForm form = normal_form_of(t);
    if (form == unicode::NormalForm::kNone) w.fail_at("normalizer", "unsupported normalizer \"" + t + "\"");
    if (spec.normal_form != unicode::NormalForm::kNone) w.fail_at("normalizer", "more than one normal form");
    spec.normal_form = form;
  }
}

void read_pre_tokenizer(const json& p, TokenizerSpec& spec, const Where& w) {
  if (p.is_null()) w.fail_at("pre_tokenizer", "null; a byte-level BPE tokenizer needs a ByteLevel pre-tokenizer");
  std::vector<const json*> steps;
  if (type_of(p, "pre_tokenizer", w) == "Sequence") {
    const json& list = member(p, "pretokenizers", "pre_tokenizer", w);
    if (!list.is_array()) w.fail_at("pre_tokenizer.pretokenizers", "expected an array");
    for (const json& x : list) steps.push_back(&x);
  } else {
    steps.push_back(&p);
  }
  bool byte_level = false;
  for (size_t i = 0; i < steps.size(); ++i) {
    const json& s = *steps[i];
    std::string field = "pre_tokenizer[" + std::to_string(i) + "]";
    std::string type = type_of(s, field, w);
    if (type == "Split") {
      if (byte_level) w.fail_at(field, "a Split after ByteLevel is not supported");
      const json& pattern = member(s, "pattern", field, w);
      if (pattern.contains("Regex") && pattern["Regex"].is_string()) {
        spec.split_patterns.push_back(pattern["Regex"].get<std::string>());
      } else if (pattern.contains("String") && pattern["String"].is_string()) {
        spec.split_patterns.push_back(escape_literal(pattern["String"].get<std::string>()));
      } else {
        w.fail_at(field + ".pattern", "expected {\"Regex\": ...} or {\"String\": ...}, got " + pattern.dump());
      }
      const json& behavior = member(s, "behavior", field, w);
      if (behavior != "Isolated") w.fail_at(field + ".behavior", "only \"Isolated\" is supported, got " + behavior.dump());
      if (bool_or(s, "invert", false, field, w)) w.fail_at(field + ".invert", "inverted splits are not supported");
    } else if (type == "ByteLevel") {
      byte_level = true;
      bool prefix = bool_or(s, "add_prefix_space", false, field, w);
      // The reference adds the space to every piece that exists at this point; that equals one
      // space per text segment only when nothing has split the segment yet.
      if (prefix && !spec.split_patterns.empty())
        w.fail_at(field + ".add_prefix_space", "add_prefix_space after a Split is not supported");
      spec.add_prefix_space = prefix;
      if (bool_or(s, "use_regex", true, field, w)) spec.split_patterns.emplace_back(kGpt2SplitPattern);
    } else {
      w.fail_at(field + ".type", "unsupported pre-tokenizer \"" + type + "\"");
    }
  }
  if (!byte_level) w.fail_at("pre_tokenizer", "no ByteLevel step; only byte-level BPE is supported");
}

void read_decoder(const json& d, const Where& w) {
  if (d.is_null()) w.fail_at("decoder", "null; expected ByteLevel");
  std::string type = type_of(d, "decoder", w);
  if (type == "Sequence") {
    const json& list = member(d, "decoders", "decoder", w);
    if (!list.is_array() || list.size() != 1) w.fail_at("decoder", "only a Sequence of one ByteLevel decoder is supported");
    type = type_of(list[0], "decoder.decoders[0]", w);
  }
  if (type != "ByteLevel") w.fail_at("decoder.type", "only ByteLevel is supported, got \"" + type + "\"");
}

void read_added_tokens(const json& list, TokenizerSpec& spec, const Where& w) {
  if (list.is_null()) return;
  if (!list.is_array()) w.fail_at("added_tokens", "expected an array");
  for (size_t i = 0; i < list.size(); ++i) {
    const json& t = list[i];
    std::string field = "added_tokens[" + std::to_string(i) + "]";
    if (!t.is_object()) w.fail_at(field, "expected an object");
    const json& id = member(t, "id", field, w);
    const json& content = member(t, "content", field, w);
    if (!id.is_number_integer() || id.get<int64_t>() < 0 || id.get<int64_t>() > INT32_MAX)
      w.fail_at(field + ".id", "expected a non-negative integer, got " + id.dump());
    if (!content.is_string() || content.get_ref<const std::string&>().empty())
      w.fail_at(field + ".content", "expected a non-empty string");
    AddedToken a;
    a.id = id.get<int32_t>();
    a.content = content.get<std::string>();
    a.special = bool_or(t, "special", false, field, w);
    a.normalized = bool_or(t, "normalized", false, field, w);
    a.lstrip = bool_or(t, "lstrip", false, field, w);
    a.rstrip = bool_or(t, "rstrip", false, field, w);
    a.single_word = bool_or(t, "single_word", false, field, w);
    spec.added_tokens.push_back(std::move(a));
  }
}

}  // namespace

TokenizerSpec parse_tokenizer_json(std::string_view json_text, const std::string& origin) {
  json doc;
  try {
    doc = json::parse(json_text.begin(), json_text.end());
  } catch (const json::exception& e) {
    fail(origin, ": not valid JSON: ", e.what());
  }
  Where w{origin};
  if (!doc.is_object()) w.fail_at("(top level)", "expected an object");
  TokenizerSpec spec;
  try {
    read_model(member(doc, "model", "(top level)", w), spec, w);
    auto normalizer = doc.find("normalizer");
    read_normalizer(normalizer == doc.end() ? json() : *normalizer, spec, w);
    read_pre_tokenizer(member(doc, "pre_tokenizer", "(top level)", w), spec, w);
    read_decoder(member(doc, "decoder", "(top level)", w), w);
    auto added = doc.find("added_tokens");
    if (added != doc.end()) read_added_tokens(*added, spec, w);
  } catch (const json::exception& e) {
    fail(origin, ": unexpected JSON shape: ", e.what());
  }
  return spec;
}

TokenizerSpec load_tokenizer_json(const std::string& path) {
  std::filesystem::path p(path);
  std::error_code ec;
  if (std::filesystem::is_directory(p, ec)) p /= "tokenizer.json";
  std::ifstream in(p, std::ios::binary);
  if (!in) fail("cannot open tokenizer file ", p.string());
  std::ostringstream os;
  os << in.rdbuf();
  if (!in.good() && !in.eof()) fail("cannot read tokenizer file ", p.string());
  return parse_tokenizer_json(os.str(), p.string());
}

}  // namespace qwen35
