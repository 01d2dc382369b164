// qwen35 tokenize: JSON lines of text to ids and back, with the model's tokenizer.
#include <cstdio>
#include <cstring>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "apps/qwen35/engine_options.h"
#include "apps/qwen35/input_files.h"
#include "core/error.h"
#include "text/tokenizer.h"

namespace qwen35::app {

namespace {

constexpr const char* kUsage =
    "usage: qwen35 tokenize [-m MODEL] [--decode] [--skip-special] [--split-special]\n"
    "\n"
    "Reads JSON lines on stdin and writes one JSON line per input line on stdout.\n"
    "  encode (default):  {\"text\": \"...\"}  ->  {\"ids\": [...]}\n"
    "  --decode:          {\"ids\": [...]}     ->  {\"text\": \"...\"}\n"
    "\n"
    "options:\n"
    "  -m, --model MODEL   model directory containing tokenizer.json, or the file itself\n"
    "  --decode            ids to text\n"
    "  --skip-special      with --decode: drop special added tokens (<|im_end|>, ...; not <think>)\n"
    "  --split-special     when encoding: special added tokens written in the text are plain text\n"
    "                      (Hugging Face split_special_tokens=True); <think> etc. still match\n"
    "  -h, --help          this text\n"
    "\n"
    "Encoding adds no BOS/EOS; added tokens in the text are matched. Ids that name no token are\n"
    "dropped when decoding. Empty input lines are skipped.\n"
    "\n"
    "errors: a line that is not a JSON object with the expected key (\"text\": a string, or \"ids\":\n"
    "an array of integers) stops the command with a message on stderr naming the line number and\n"
    "exit status 1; the lines before it have been answered. Usage errors exit with status 2.\n";

int usage_error(const std::string& message) {
  std::fprintf(stderr, "qwen35 tokenize: %s\n\n%s", message.c_str(), kUsage);
  return 2;
}

// Answers one input line. Throws qwen35::Error describing what is wrong with it.
std::string answer(const Tokenizer& tok, const std::string& line, bool decode, bool skip_special, AddedTokenMode mode) {
  nlohmann::json in;
  try {
    in = nlohmann::json::parse(line);
  } catch (const nlohmann::json::exception& e) {
    fail("not valid JSON: ", e.what());
  }
  if (!in.is_object()) fail("expected a JSON object, got ", in.type_name());
  nlohmann::json out = nlohmann::json::object();
  if (!decode) {
    auto text = in.find("text");
    if (text == in.end() || !text->is_string()) fail("expected {\"text\": \"...\"}");
    out["ids"] = tok.encode(text->get_ref<const std::string&>(), mode);
  } else {
    auto ids = in.find("ids");
    if (ids == in.end() || !ids->is_array()) fail("expected {\"ids\": [...]}");
    std::vector<int32_t> values;
    values.reserve(ids->size());
    for (const nlohmann::json& v : *ids) {
      if (!v.is_number_integer()) fail("ids must be integers, got ", v.dump());
      int64_t x = v.get<int64_t>();
      // Out-of-range ids are dropped like any id naming no token; only keep them representable.
      values.push_back(x < 0 || x > INT32_MAX ? -1 : int32_t(x));
    }
    out["text"] = tok.decode(values, skip_special);
  }
  return out.dump();
}

}  // namespace

int cmd_tokenize(int argc, char** argv) {
  std::string model;
  bool decode = false, skip_special = false, split_special = false;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "-h" || arg == "--help") {
      std::fputs(kUsage, stdout);
      return 0;
    } else if (arg == "-m" || arg == "--model") {
      if (i + 1 >= argc) return usage_error(arg + " needs a value");
      model = argv[++i];
    } else if (arg == "--decode") {
      decode = true;
    } else if (arg == "--skip-special") {
      skip_special = true;
    } else if (arg == "--split-special") {
      split_special = true;
    } else {
      return usage_error("unknown option '" + arg + "'");
    }
  }
  try {
    model = model_or_bundled(model);
  } catch (const Error& e) {
    std::fprintf(stderr, "qwen35 tokenize: %s\n", e.what());
    return 1;
  }
  if (skip_special && !decode) return usage_error("--skip-special only applies to --decode");
  if (split_special && decode) return usage_error("--split-special only applies to encoding");

  std::optional<Tokenizer> tok;
  try {
    tok.emplace(Tokenizer::from_file(model));
  } catch (const Error& e) {
    std::fprintf(stderr, "qwen35 tokenize: %s\n", e.what());
    return 1;
  }
  const AddedTokenMode mode = split_special ? AddedTokenMode::kSplitSpecial : AddedTokenMode::kMatchAll;

  std::ios::sync_with_stdio(false);
  std::string line;
  for (long number = 1; read_line_capped(std::cin, line, kMaxInputLineBytes); ++number) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.find_first_not_of(" \t") == std::string::npos) continue;
    try {
      std::string out = answer(*tok, line, decode, skip_special, mode);
      std::cout << out << '\n' << std::flush;  // one answer per line, usable interactively
    } catch (const Error& e) {
      std::cout << std::flush;
      std::fprintf(stderr, "qwen35 tokenize: line %ld: %s\n", number, e.what());
      return 1;
    }
  }
  return 0;
}

}  // namespace qwen35::app
