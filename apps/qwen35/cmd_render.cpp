// qwen35 render: print the prompt the Qwen3.5 chat format gives for a conversation, byte for byte
// (no newline added), so prompts can be diffed against transformers' apply_chat_template.
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "apps/qwen35/args.h"
#include "apps/qwen35/engine_options.h"
#include "apps/qwen35/input_files.h"
#include "core/error.h"
#include "io/gguf.h"
#include "text/chat_format.h"
#include "text/chat_template_check.h"

namespace qwen35::app {
namespace {

using json = nlohmann::ordered_json;

const char* kUsage =
    "usage: qwen35 render [-m MODEL_DIR] --messages FILE.json [--kwargs JSON] [--tools FILE.json]\n"
    "                     [--no-generation-prompt]\n"
    "\n"
    "Renders chat messages with the Qwen3.5 chat template and prints the prompt exactly.\n"
    "\n"
    "options:\n"
    "  -m, --model PATH          model folder or GGUF; its chat template is checked against the Qwen3.5 one\n"
    "  --messages FILE           JSON array of messages, or {\"messages\": [...], \"tools\": [...]};\n"
    "                            '-' reads standard input\n"
    "  --kwargs JSON             template variables, e.g. '{\"enable_thinking\": false, \"add_vision_id\": true}'\n"
    "  --tools FILE              JSON array of tool definitions (overrides \"tools\" in the messages file)\n"
    "  --no-generation-prompt    end after the last message (default: append the assistant prompt)\n"
    "\n"
    "exit status: 0 rendered, 1 the template rejected the conversation, 2 bad usage or input\n";

// Thrown for problems with the command line or its files (exit 2), as opposed to a conversation
// the template rejects (exit 1).
struct UsageError : Error {
  using Error::Error;
};

std::string read_input(const std::string& path) {
  try {
    return read_capped(path, kMaxInputFileBytes, "input");
  } catch (const Error& e) {
    throw UsageError(e.what());
  }
}

json parse_json(const std::string& text, const std::string& what) {
  json v = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (v.is_discarded()) throw UsageError(str(what, " is not valid JSON"));
  return v;
}

// A model whose template differs would be prompted in a format it was not trained on; say so, but
// still render, since the renderer does not depend on the file.
void check_model_template(const std::string& model_dir) {
  std::error_code ec;
  if (!std::filesystem::is_directory(model_dir, ec) && !is_gguf_file(model_dir))
    throw UsageError(str("model ", model_dir, " is neither a folder nor a GGUF file"));
  const std::optional<ModelChatTemplate> tmpl = read_model_chat_template(model_dir);
  if (!tmpl) {
    std::fprintf(stderr, "qwen35 render: warning: %s has no chat template; rendering the Qwen3.5 chat format\n",
                 model_dir.c_str());
  } else if (!is_qwen35_chat_template(tmpl->text)) {
    std::fprintf(stderr,
                 "qwen35 render: warning: %s is not the Qwen3.5 chat template this renderer implements "
                 "(sha256 %s, expected %s; %s); rendering the Qwen3.5 format anyway\n",
                 tmpl->source.c_str(), sha256_hex(tmpl->text).c_str(), std::string(kQwen35ChatTemplateSha256).c_str(),
                 describe_template_difference(tmpl->text).c_str());
  }
}

struct Request {
  json messages;
  ChatRenderOptions options;
};

Request read_request(int argc, char** argv, bool& help) {
  Args args(argc, argv, {"-m", "--model", "--messages", "--kwargs", "--tools"},
            {"--no-generation-prompt", "--help", "-h"});
  help = args.has("--help") || args.has("-h");
  if (help) return {};
  if (!args.positionals().empty()) throw UsageError(str("unexpected argument '", args.positionals()[0], "'"));
  const std::string model_dir = model_or_bundled(args);
  const auto messages_path = args.get("--messages");
  if (!messages_path) throw UsageError("missing --messages FILE.json (see --help)");
  check_model_template(model_dir);

  Request req;
  json file = parse_json(read_input(*messages_path), *messages_path);
  json tools = nullptr;
  if (file.is_object()) {
    if (!file.contains("messages")) throw UsageError(str(*messages_path, " has no \"messages\""));
    req.messages = std::move(file["messages"]);
    if (file.contains("tools")) tools = std::move(file["tools"]);
  } else if (file.is_array()) {
    req.messages = std::move(file);
  } else {
    throw UsageError(str(*messages_path, " must hold a JSON array of messages or an object with \"messages\""));
  }

  json kwargs = json::object();
  if (const auto text = args.get("--kwargs")) {
    kwargs = parse_json(*text, "--kwargs");
    if (!kwargs.is_object()) throw UsageError("--kwargs must be a JSON object");
  }
  if (!tools.is_null() && !kwargs.contains("tools")) kwargs["tools"] = std::move(tools);
  if (const auto path = args.get("--tools")) {
    json t = parse_json(read_input(*path), *path);
    if (t.is_object() && t.contains("tools")) t = std::move(t["tools"]);
    if (!t.is_array()) throw UsageError(str(*path, " must hold a JSON array of tool definitions"));
    kwargs["tools"] = std::move(t);
  }
  req.options = chat_options_from_kwargs(kwargs, ChatRenderOptions{.add_generation_prompt = true});
  if (args.has("--no-generation-prompt")) req.options.add_generation_prompt = false;
  return req;
}

}  // namespace

int cmd_render(int argc, char** argv) {
  Request req;
  try {
    bool help = false;
    req = read_request(argc, argv, help);
    if (help) {
      std::fputs(kUsage, stdout);
      return 0;
    }
  } catch (const Error& e) {
    std::fprintf(stderr, "qwen35 render: %s\n", e.what());
    return 2;
  }
  try {
    const std::string prompt = render_chat(req.messages, req.options);
    std::fwrite(prompt.data(), 1, prompt.size(), stdout);
    return std::fflush(stdout) == 0 ? 0 : 1;
  } catch (const Error& e) {
    std::fprintf(stderr, "qwen35 render: %s\n", e.what());
    return 1;
  }
}

}  // namespace qwen35::app
