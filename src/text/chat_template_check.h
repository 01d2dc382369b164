// Whether a model ships the chat template that render_chat (chat_format.h) implements. The renderer
// is native code, not a Jinja engine, so a model with a different template (Qwen3.5-0.8B's, or a
// fine-tune's) would be prompted in a format it was not trained on: callers warn about it.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace qwen35 {

// sha256 of Qwen/Qwen3.5-9B chat_template.jinja (7,756 bytes, no trailing newline).
inline constexpr std::string_view kQwen35ChatTemplateSha256 =
    "a4aee8afcf2e0711942cf848899be66016f8d14a889ff9ede07bca099c28f715";

std::string sha256_hex(std::string_view bytes);

// True when `text` is that template, also after a copy turned its line ends into CRLF or added
// trailing whitespace (such copies render identically).
bool is_qwen35_chat_template(std::string_view text);

struct ModelChatTemplate {
  std::string text;
  std::string source;  // the file it came from
};

// The template a model folder ships, with transformers' precedence: chat_template.jinja, else the
// "chat_template" of tokenizer_config.json (a string, or the entry named "default" of a list); for a
// GGUF model file, its tokenizer.chat_template. nullopt when there is none. Throws qwen35::Error when a file exists but cannot be read or parsed.
std::optional<ModelChatTemplate> read_model_chat_template(const std::string& model_dir);

}  // namespace qwen35
