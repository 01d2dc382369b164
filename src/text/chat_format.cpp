// The steps below are the steps of chat_template.jinja, in its order: the system/tools header, the
// backwards scan for the last real user query, one block per message, the generation prompt.
// Where the template leans on a Python or Jinja2 behaviour (Python `in` on strings, str() of
// values, str.strip(), `loop.previtem` being undefined on the first message) that behaviour is
// reproduced, because it decides bytes of the prompt or which error is raised first.
#include "text/chat_format.h"

#include <algorithm>

#include "core/json_parse.h"

#include "core/error.h"
#include "text/python_format.h"

namespace qwen35 {

namespace {

using json = nlohmann::ordered_json;

// Literal text of chat_template.jinja, copied verbatim.
constexpr std::string_view kImageTag = "<|vision_start|><|image_pad|><|vision_end|>";
constexpr std::string_view kVideoTag = "<|vision_start|><|video_pad|><|vision_end|>";
constexpr std::string_view kToolsHeader =
    "# Tools\n"
    "\n"
    "You have access to the following functions:\n"
    "\n"
    "<tools>";
constexpr std::string_view kToolsFooter = "\n</tools>";
constexpr std::string_view kToolCallInstructions =
    "\n"
    "\n"
    "If you choose to call a function ONLY reply in the following format with NO suffix:\n"
    "\n"
    "<tool_call>\n"
    "<function=example_function_name>\n"
    "<parameter=example_parameter_1>\n"
    "value_1\n"
    "</parameter>\n"
    "<parameter=example_parameter_2>\n"
    "This is the value for the second parameter\n"
    "that can span\n"
    "multiple lines\n"
    "</parameter>\n"
    "</function>\n"
    "</tool_call>\n"
    "\n"
    "<IMPORTANT>\n"
    "Reminder:\n"
    "- Function calls MUST follow the specified format: an inner <function=...></function> block must be nested "
    "within <tool_call></tool_call> XML tags\n"
    "- Required parameters MUST be specified\n"
    "- You may provide optional reasoning for your function call in natural language BEFORE the function call, but "
    "NOT after\n"
    "- If there is no function call available, answer the question like normal with your current knowledge and do "
    "not tell the user about function calls\n"
    "</IMPORTANT>";
constexpr std::string_view kPromptThinking = "<|im_start|>assistant\n<think>\n";
constexpr std::string_view kPromptNoThinking = "<|im_start|>assistant\n<think>\n\n</think>\n\n";

// The template's raise_exception messages, word for word: servers return them to clients.
constexpr const char* kErrNoMessages = "No messages provided.";
constexpr const char* kErrNoUserQuery = "No user query found in messages.";
constexpr const char* kErrSystemNotFirst = "System message must be at the beginning.";
constexpr const char* kErrUnexpectedRole = "Unexpected message role.";
constexpr const char* kErrSystemImage = "System message cannot contain images.";
constexpr const char* kErrSystemVideo = "System message cannot contain videos.";
constexpr const char* kErrUnexpectedItem = "Unexpected item type in content.";
constexpr const char* kErrUnexpectedContent = "Unexpected content type.";

// Jinja's `obj.key` on a JSON value: nullptr stands for undefined (not a dict, or no such key).
const json* attr(const json& obj, const char* key) {
  if (!obj.is_object()) return nullptr;
  const auto it = obj.find(key);
  return it == obj.end() ? nullptr : &*it;
}

bool role_is(const json& message, std::string_view role) {
  const json* r = attr(message, "role");
  return r && r->is_string() && r->get_ref<const std::string&>() == role;
}

// Python's `needle in item` as the template uses it on a content part: a key test on a dict, but a
// substring test on a string and a membership test on a list.
bool python_in(const json& item, std::string_view needle) {
  if (item.is_object()) return item.contains(needle);
  if (item.is_string()) return item.get_ref<const std::string&>().find(needle) != std::string::npos;
  if (item.is_array()) {
    for (const json& e : item)
      if (e.is_string() && e.get_ref<const std::string&>() == needle) return true;
    return false;
  }
  fail("content parts must be objects, got ", item.type_name(), " (", item.dump(), ")");
}

enum class PartKind { kImage, kVideo, kText, kUnknown };

// The template's test order: image first, so a part with both "image" and "text" is an image.
PartKind classify_part(const json& item) {
  const json* type = attr(item, "type");
  const auto type_is = [&](std::string_view t) {
    return type && type->is_string() && type->get_ref<const std::string&>() == t;
  };
  if (python_in(item, "image") || python_in(item, "image_url") || type_is("image")) return PartKind::kImage;
  if (python_in(item, "video") || type_is("video")) return PartKind::kVideo;
  if (python_in(item, "text")) return PartKind::kText;
  return PartKind::kUnknown;
}

// Splits a <think> block out of assistant content exactly as the template does:
//   reasoning = content.split('</think>')[0].rstrip('\n').split('<think>')[-1].lstrip('\n')
//   content   = content.split('</think>')[-1].lstrip('\n')
// (neither tag can overlap itself, so first/last occurrence is find/rfind). Both are views of `text`.
struct ThinkSplit {
  std::string_view reasoning, content;
};
ThinkSplit split_think_views(std::string_view text) {
  const size_t first_close = text.find("</think>");
  const size_t last_close = text.rfind("</think>");
  std::string_view before = py::rstrip_chars(text.substr(0, first_close), "\n");
  if (const size_t open = before.rfind("<think>"); open != std::string_view::npos) before = before.substr(open + 7);
  return {py::lstrip_chars(before, "\n"), py::lstrip_chars(text.substr(last_close + 8), "\n")};
}

AssistantReply split_think_block(std::string_view text) {
  const ThinkSplit t = split_think_views(text);
  return {std::string(t.reasoning), std::string(t.content)};
}

// Text on its way into the prompt with the byte ranges the template itself wrote into it (image
// and video tags, their labels); everything else in it came from the request.
struct Marked {
  std::string text;
  std::vector<std::pair<size_t, size_t>> literal;

  // The part [pos, pos + len), its literal ranges clipped to it.
  Marked sub(size_t pos, size_t len) const {
    Marked m{text.substr(pos, len), {}};
    for (const auto& [a, b] : literal) {
      const size_t lo = std::max(a, pos), hi = std::min(b, pos + len);
      if (lo < hi) m.literal.emplace_back(lo - pos, hi - pos);
    }
    return m;
  }
  // The part a view of `text` (from py::strip and friends) covers.
  Marked part(std::string_view view) const {
    return sub(view.empty() ? 0 : size_t(view.data() - text.data()), view.size());
  }
};

// Tool-call arguments as the mapping the template iterates. OpenAI clients send a JSON string;
// servers (vLLM's chat utils, for one) json.loads it first and treat empty arguments as {}.
const json& arguments_mapping(const json& args, const std::string& function_name, json& parsed) {
  if (args.is_object()) return args;
  if (args.is_null() || (args.is_string() && args.get_ref<const std::string&>().empty())) {
    parsed = json::object();
    return parsed;
  }
  if (args.is_string()) {
    try {
      parsed = parse_json_limited<json>(args.get_ref<const std::string&>());
    } catch (const Error&) {
      parsed = nullptr;
    }
    if (parsed.is_object()) return parsed;
    fail("arguments of tool call '", function_name, "' must be a JSON object, got the string ", args.dump());
  }
  fail("arguments of tool call '", function_name, "' must be a JSON object, got ", args.type_name(), " ",
       args.dump());
}

// `args_value | tojson if args_value is mapping or (args_value is sequence and args_value is not
// string) else args_value | string`.
std::string parameter_value(const json& value) {
  return value.is_object() || value.is_array() ? py::json_dumps(value) : py::str(value);
}

class ChatRenderer {
 public:
  ChatRenderer(const json& messages, const ChatRenderOptions& opts, std::vector<std::pair<size_t, size_t>>* from_request)
      : messages_(messages), opts_(opts), spans_(from_request) {}

  std::string render() {
    if (messages_.is_null() || (messages_.is_array() && messages_.empty())) fail(kErrNoMessages);
    if (!messages_.is_array()) fail("messages must be a JSON array of message objects, got ", messages_.type_name());
    render_system_and_tools();
    const size_t last_query = find_last_query_index();
    for (size_t i = 0; i < messages_.size(); ++i) render_message(i, last_query);
    if (opts_.add_generation_prompt) literal(generation_prompt(opts_.enable_thinking));
    return std::move(out_);
  }

 private:
  // The template's own text.
  void literal(std::string_view s) { out_ += s; }
  // Text from the request (recorded in spans_).
  void data(std::string_view s) {
    span(out_.size(), out_.size() + s.size());
    out_ += s;
  }
  void data(const Marked& m) {
    const size_t base = out_.size();
    size_t pos = 0;
    for (const auto& [a, b] : m.literal) {
      span(base + pos, base + a);
      pos = b;
    }
    span(base + pos, base + m.text.size());
    out_ += m.text;
  }
  void span(size_t a, size_t b) {
    if (!spans_ || a >= b) return;
    if (!spans_->empty() && spans_->back().second == a) spans_->back().second = b;
    else spans_->emplace_back(a, b);
  }

  // render_content(message.content, do_vision_count, is_system_content)|trim
  Marked content_of(const json& message, bool count_vision, bool is_system = false) {
    const json* content = attr(message, "content");
    if (!content || content->is_null()) return {};
    Marked m;
    if (content->is_string()) {
      m.text = content->get_ref<const std::string&>();
      return m.part(py::strip(m.text));
    }
    if (!content->is_array()) fail(kErrUnexpectedContent);
    for (const json& item : *content) {
      switch (classify_part(item)) {
        case PartKind::kImage:
          if (is_system) fail(kErrSystemImage);
          append_vision(m, image_count_, count_vision, "Picture ", kImageTag);
          break;
        case PartKind::kVideo:
          if (is_system) fail(kErrSystemVideo);
          append_vision(m, video_count_, count_vision, "Video ", kVideoTag);
          break;
        case PartKind::kText:
          // {{ item.text }}: str() of whatever is there; undefined (string/list parts) prints nothing.
          if (const json* t = attr(item, "text")) m.text += py::str(*t);
          break;
        case PartKind::kUnknown:
          fail(kErrUnexpectedItem);
      }
    }
    return m.part(py::strip(m.text));
  }

  // The counters only advance in the main pass, but the label is printed whenever add_vision_id is
  // set, so the backwards scan prints stale numbers; that text is only tested, never emitted.
  void append_vision(Marked& m, int& counter, bool count, const char* label, std::string_view tag) {
    if (count) ++counter;
    const size_t start = m.text.size();
    if (opts_.add_vision_id) m.text += str(label, counter, ": ");
    m.text += tag;
    m.literal.emplace_back(start, m.text.size());
  }

  bool has_tool_list() const {
    const json& t = opts_.tools;
    return py::truthy(t) && (t.is_array() || t.is_string());  // `tools and tools is iterable and tools is not mapping`
  }

  void render_system_and_tools() {
    const json& first = messages_[0];
    const bool has_system = role_is(first, "system");
    if (has_tool_list()) {
      literal("<|im_start|>system\n");
      literal(kToolsHeader);
      if (opts_.tools.is_array()) {
        for (const json& tool : opts_.tools) {
          literal("\n");
          data(py::json_dumps(tool));
        }
      } else {
        render_string_as_tools(opts_.tools.get_ref<const std::string&>());
      }
      literal(kToolsFooter);
      literal(kToolCallInstructions);
      if (has_system) {
        const Marked content = content_of(first, /*count_vision=*/false, /*is_system=*/true);
        if (!content.text.empty()) {
          literal("\n\n");
          data(content);
        }
      }
      literal("<|im_end|>\n");
    } else if (has_system) {
      literal("<|im_start|>system\n");
      data(content_of(first, false, true));
      literal("<|im_end|>\n");
    }
  }

  // A string passed as `tools` is iterable in Jinja: each character is one "tool".
  void render_string_as_tools(const std::string& s) {
    for (size_t i = 0; i < s.size();) {
      size_t len = 1;
      while (i + len < s.size() && (static_cast<unsigned char>(s[i + len]) & 0xC0) == 0x80) ++len;
      literal("\n");
      data(py::json_dumps(json(s.substr(i, len))));
      i += len;
    }
  }

  // The last user message that is not just a <tool_response> wrapper (how some clients send tool
  // results). Assistant turns after it keep their <think> block; turns before it lose it.
  size_t find_last_query_index() {
    for (size_t i = messages_.size(); i-- > 0;) {
      const json& message = messages_[i];
      if (!role_is(message, "user")) continue;
      const std::string content = content_of(message, /*count_vision=*/false).text;
      if (!(content.starts_with("<tool_response>") && content.ends_with("</tool_response>"))) return i;
    }
    fail(kErrNoUserQuery);
  }

  void render_message(size_t index, size_t last_query) {
    const json& message = messages_[index];
    // Content is rendered (and its images counted) before the role is looked at, so a bad part in a
    // misplaced system message reports the part, as the template does.
    Marked content = content_of(message, /*count_vision=*/true);
    if (role_is(message, "system")) {
      if (index != 0) fail(kErrSystemNotFirst);
    } else if (role_is(message, "user")) {
      literal("<|im_start|>user\n");
      data(content);
      literal("<|im_end|>\n");
    } else if (role_is(message, "assistant")) {
      render_assistant(message, std::move(content), index > last_query);
    } else if (role_is(message, "tool")) {
      render_tool_response(index, content);
    } else {
      fail(kErrUnexpectedRole);
    }
  }

  void render_assistant(const json& message, Marked content, bool after_last_query) {
    Marked reasoning;
    if (const json* rc = attr(message, "reasoning_content"); rc && rc->is_string()) {
      reasoning.text = rc->get<std::string>();  // content is then kept whole, even with a </think> in it
    } else if (content.text.find("</think>") != std::string::npos) {
      const ThinkSplit split = split_think_views(content.text);
      reasoning = content.part(split.reasoning);
      content = content.part(split.content);
    }
    literal("<|im_start|>assistant\n");
    if (after_last_query) {
      literal("<think>\n");
      data(reasoning.part(py::strip(reasoning.text)));
      literal("\n</think>\n\n");
    }
    data(content);
    if (const json* calls = attr(message, "tool_calls")) render_tool_calls(*calls, content.text);
    literal("<|im_end|>\n");
  }

  void render_tool_calls(const json& calls, std::string_view content) {
    // `tool_calls and tool_calls is iterable and tool_calls is not mapping`: a dict or scalar is
    // silently ignored; a string would be iterated by character and fail on the first one.
    if (!py::truthy(calls) || !(calls.is_array() || calls.is_string())) return;
    if (calls.is_string()) fail("tool_calls must be an array of tool-call objects, got a string");
    for (size_t k = 0; k < calls.size(); ++k) {
      const json* call = &calls[k];
      if (const json* function = attr(*call, "function")) call = function;
      const json* name = attr(*call, "name");
      if (!name || !name->is_string()) fail("tool call ", k, " has no function name (a string)");
      const std::string& fname = name->get_ref<const std::string&>();
      if (k > 0) literal("\n");
      else if (!py::strip(content).empty()) literal("\n\n");
      literal("<tool_call>\n<function=");
      data(fname);
      literal(">\n");
      if (const json* args = attr(*call, "arguments")) {
        json parsed;
        for (const auto& [arg_name, arg_value] : arguments_mapping(*args, fname, parsed).items()) {
          literal("<parameter=");
          data(arg_name);
          literal(">\n");
          data(parameter_value(arg_value));
          literal("\n</parameter>\n");
        }
      }
      literal("</function>\n</tool_call>");
    }
  }

  // Consecutive tool messages share one user turn. On the very first message `loop.previtem` is
  // undefined, so a leading tool message opens no turn: reproduced, not fixed.
  void render_tool_response(size_t index, const Marked& content) {
    if (index > 0 && !role_is(messages_[index - 1], "tool")) literal("<|im_start|>user");
    literal("\n<tool_response>\n");
    data(content);
    literal("\n</tool_response>");
    const bool last = index + 1 == messages_.size();
    if (last || !role_is(messages_[index + 1], "tool")) literal("<|im_end|>\n");
  }

  const json& messages_;
  const ChatRenderOptions& opts_;
  std::vector<std::pair<size_t, size_t>>* spans_;
  int image_count_ = 0;
  int video_count_ = 0;
  std::string out_;
};

}  // namespace

ChatRenderOptions chat_options_from_kwargs(const json& kwargs, ChatRenderOptions base) {
  if (kwargs.is_null()) return base;
  if (!kwargs.is_object()) fail("chat template kwargs must be a JSON object, got ", kwargs.type_name());
  if (const json* v = attr(kwargs, "add_generation_prompt")) base.add_generation_prompt = py::truthy(*v);
  if (const json* v = attr(kwargs, "enable_thinking")) base.enable_thinking = !(v->is_boolean() && !v->get<bool>());
  if (const json* v = attr(kwargs, "add_vision_id")) base.add_vision_id = py::truthy(*v);
  if (const json* v = attr(kwargs, "tools")) base.tools = *v;
  return base;
}

std::string render_chat(const json& messages, const ChatRenderOptions& opts,
                        std::vector<std::pair<size_t, size_t>>* from_request) {
  if (from_request) from_request->clear();
  return ChatRenderer(messages, opts, from_request).render();
}

std::string_view generation_prompt(bool enable_thinking) {
  return enable_thinking ? kPromptThinking : kPromptNoThinking;
}

AssistantReply split_reasoning(std::string_view generated, bool prompt_opened_think) {
  if (generated.find("</think>") == std::string_view::npos) {
    if (prompt_opened_think) return {std::string(py::strip(generated)), ""};
    return {"", std::string(generated)};
  }
  AssistantReply reply = split_think_block(generated);
  reply.reasoning = std::string(py::strip(reply.reasoning));
  return reply;
}

json assistant_message(std::string_view reasoning, std::string_view content, const json& tool_calls) {
  json message = {{"role", "assistant"},
                  {"content", std::string(content)},
                  {"reasoning_content", std::string(reasoning)}};
  if (tool_calls.is_array()) message["tool_calls"] = tool_calls;
  return message;
}

}  // namespace qwen35
