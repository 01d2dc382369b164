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

// The official template's text (the file whose hash is kQwen35ChatTemplateSha256).
std::string_view qwen35_chat_template();

// Where `text` first differs from the official template, for a warning: "line 12 has '...' where
// the official template has '...'" (lines cut to 80 bytes), or "" when they are the same.
std::string describe_template_difference(std::string_view text);

// The warning to give at start for the model at `model_path` (a folder or a GGUF file), or "" when
// it ships the official template. Community copies with edits (unsloth's tool-calling changes,
// for instance) are not recognised as the official one: the warning names the first differing
// line, and prompts still follow the official Qwen3.5 format, the one the model was trained on.
std::string chat_template_warning(const std::string& model_path);

struct ModelChatTemplate {
  std::string text;
  std::string source;  // the file it came from
};

// The template a model folder ships, with transformers' precedence: chat_template.jinja, else the
// "chat_template" of tokenizer_config.json (a string, or the entry named "default" of a list); for a
// GGUF model file, its tokenizer.chat_template. nullopt when there is none. Throws qwen35::Error
// when a file exists but cannot be read or parsed.
std::optional<ModelChatTemplate> read_model_chat_template(const std::string& model_dir);

}  // namespace qwen35
