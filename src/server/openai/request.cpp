#include "server/openai/request.h"

#include "core/json_parse.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>

#include "server/openai/api_error.h"

namespace qwen35::server {
namespace {

using json = nlohmann::ordered_json;

// The value of a field, or nullptr when it is absent or null (null means "default" in OpenAI's API).
const json* field(const json& body, const char* name) {
  auto it = body.find(name);
  if (it == body.end() || it->is_null()) return nullptr;
  return &*it;
}

const char* json_type_name(const json& v) {
  if (v.is_boolean()) return "a boolean";
  if (v.is_number()) return "a number";
  if (v.is_string()) return "a string";
  if (v.is_array()) return "an array";
  if (v.is_object()) return "an object";
  return "null";
}

[[noreturn]] void wrong_type(const std::string& param, const char* expected, const json& got) {
  bad_field(param, param + " must be " + expected + ", got " + json_type_name(got), "invalid_type");
}

double number_of(const json& v, const std::string& param) {
  if (!v.is_number()) wrong_type(param, "a number", v);
  const double x = v.get<double>();
  if (!std::isfinite(x)) bad_field(param, param + " must be finite", "invalid_value");
  return x;
}

int64_t integer_of(const json& v, const std::string& param) {
  if (v.is_number_integer()) {
    if (v.is_number_unsigned() && v.get<uint64_t>() > uint64_t(std::numeric_limits<int64_t>::max()))
      bad_field(param, param + " is too large", "invalid_value");
    return v.get<int64_t>();
  }
  if (v.is_number_float()) {  // 16.0 is an integer; 16.5 is not
    const double x = v.get<double>();
    if (std::isfinite(x) && x == std::floor(x) && std::fabs(x) < 9.0e15) return int64_t(x);
  }
  wrong_type(param, "an integer", v);
}

bool bool_of(const json& v, const std::string& param) {
  if (!v.is_boolean()) wrong_type(param, "a boolean", v);
  return v.get<bool>();
}

void check_range(double x, double lo, double hi, const std::string& param) {
  if (x < lo || x > hi) {
    std::ostringstream os;
    os << param << " must be between " << lo << " and " << hi << ", got " << x;
    bad_field(param, os.str(), "invalid_value");
  }
}

// "speculative": {"mode": "auto" | "mtp" | "pld" | "off", "draft_max": 1..16}, both optional (the
// server's --spec / --draft-max otherwise). An extension of ours; OpenAI clients pass it as extra body.
void parse_speculative(const json& body, SpeculativeParams& spec) {
  const json* v = field(body, "speculative");
  if (!v) return;
  if (!v->is_object()) wrong_type("speculative", "an object", *v);
  if (const json* m = field(*v, "mode")) {
    if (!m->is_string()) wrong_type("speculative.mode", "a string", *m);
    if (!parse_spec_mode(m->get<std::string>(), &spec.mode))
      bad_field("speculative.mode", "speculative.mode must be auto, mtp, pld or off, got '" + m->get<std::string>() + "'",
                "invalid_value");
  }
  if (const json* d = field(*v, "draft_max")) {
    const int64_t n = integer_of(*d, "speculative.draft_max");
    if (n < 1 || n > SpeculativeParams::kMaxDraft)
      bad_field("speculative.draft_max",
                "speculative.draft_max must be between 1 and " + std::to_string(SpeculativeParams::kMaxDraft) + ", got " +
                    std::to_string(n),
                "invalid_value");
    spec.draft_max = int(n);
  }
}

// Sampling fields shared by both endpoints.
void parse_sampling(const json& body, SamplingParams& p, const RequestPolicy& policy) {
  if (const json* v = field(body, "temperature")) {
    p.temperature = float(number_of(*v, "temperature"));
    check_range(p.temperature, 0, 2, "temperature");
  }
  if (const json* v = field(body, "top_p")) {
    p.top_p = float(number_of(*v, "top_p"));
    check_range(p.top_p, 0, 1, "top_p");
  }
  if (const json* v = field(body, "top_k")) {
    const int64_t k = integer_of(*v, "top_k");
    if (k < -1) bad_field("top_k", "top_k must be >= 0 (0 or -1: off), got " + std::to_string(k), "invalid_value");
    p.top_k = k <= 0 ? 0 : int(std::min<int64_t>(k, std::numeric_limits<int>::max()));
  }
  if (const json* v = field(body, "min_p")) {
    p.min_p = float(number_of(*v, "min_p"));
    check_range(p.min_p, 0, 1, "min_p");
  }
  if (const json* v = field(body, "presence_penalty")) {
    p.presence_penalty = float(number_of(*v, "presence_penalty"));
    check_range(p.presence_penalty, -2, 2, "presence_penalty");
  }
  if (const json* v = field(body, "frequency_penalty")) {
    p.frequency_penalty = float(number_of(*v, "frequency_penalty"));
    check_range(p.frequency_penalty, -2, 2, "frequency_penalty");
  }
  if (const json* v = field(body, "repetition_penalty")) {
    p.repetition_penalty = float(number_of(*v, "repetition_penalty"));
    if (!(p.repetition_penalty > 0) || p.repetition_penalty > 10)
      bad_field("repetition_penalty", "repetition_penalty must be in (0, 10]", "invalid_value");
  }
  if (const json* v = field(body, "seed")) p.seed = uint64_t(integer_of(*v, "seed"));
  if (const json* v = field(body, "stop")) {
    if (v->is_string()) {
      p.stop.push_back(v->get<std::string>());
    } else if (v->is_array()) {
      if (v->size() > policy.max_stop)
        bad_field("stop", "stop has " + std::to_string(v->size()) + " strings, the limit is " +
                              std::to_string(policy.max_stop), "invalid_value");
      for (size_t i = 0; i < v->size(); ++i) {
        const json& s = (*v)[i];
        if (!s.is_string()) wrong_type("stop[" + std::to_string(i) + "]", "a string", s);
        p.stop.push_back(s.get<std::string>());
      }
    } else {
      wrong_type("stop", "a string or an array of strings", *v);
    }
    for (const std::string& s : p.stop)
      if (s.empty()) bad_field("stop", "stop strings must not be empty", "invalid_value");
  }
  if (const json* v = field(body, "ignore_eos")) p.ignore_eos = bool_of(*v, "ignore_eos");
  parse_speculative(body, p.speculative);
}

// max_tokens, or its newer name max_completion_tokens (which wins when both are given).
void parse_max_tokens(const json& body, SamplingParams& p) {
  for (const char* name : {"max_tokens", "max_completion_tokens"}) {
    if (const json* v = field(body, name)) {
      const int64_t n = integer_of(*v, name);
      if (n < 0) bad_field(name, std::string(name) + " must be >= 0, got " + std::to_string(n), "invalid_value");
      p.max_tokens = n;
    }
  }
}

void parse_stream(const json& body, bool& stream, bool& include_usage) {
  if (const json* v = field(body, "stream")) stream = bool_of(*v, "stream");
  if (const json* v = field(body, "stream_options")) {
    if (!v->is_object()) wrong_type("stream_options", "an object", *v);
    if (const json* u = field(*v, "include_usage")) include_usage = bool_of(*u, "stream_options.include_usage");
  }
}

void parse_n(const json& body) {
  if (const json* v = field(body, "n")) {
    const int64_t n = integer_of(*v, "n");
    if (n != 1) bad_field("n", "only n = 1 is supported, got " + std::to_string(n), "invalid_value");
  }
}

// "messages[2].content[0].image_url.url: ..." -> "messages[2].content[0].image_url.url".
std::string param_of_message_error(const std::string& message) {
  if (message.rfind("messages", 0) != 0) return "messages";
  const size_t end = message.find_first_of(" :");
  return message.substr(0, end);
}

void parse_thinking(const json& body, ChatRequest& chat) {
  if (const json* v = field(body, "enable_thinking")) chat.enable_thinking = bool_of(*v, "enable_thinking");
  if (const json* kw = field(body, "chat_template_kwargs")) {
    if (!kw->is_object()) wrong_type("chat_template_kwargs", "an object", *kw);
    if (const json* v = field(*kw, "enable_thinking"))
      chat.enable_thinking = bool_of(*v, "chat_template_kwargs.enable_thinking");
    if (const json* v = field(*kw, "add_vision_id"))
      chat.add_vision_id = bool_of(*v, "chat_template_kwargs.add_vision_id");
  }
}

// The thought budget: chat_template_kwargs.thinking_budget (tokens; -1 unlimited) wins over
// reasoning_effort ("low", "medium", "high"), which wins over the server's default.
void parse_reasoning_budget(const json& body, SamplingParams& p) {
  if (const json* v = field(body, "reasoning_effort")) {
    if (!v->is_string()) wrong_type("reasoning_effort", "a string", *v);
    const std::string effort = v->get<std::string>();
    if (effort == "low") p.reasoning_budget = kReasoningEffortLow;
    else if (effort == "medium") p.reasoning_budget = kReasoningEffortMedium;
    else if (effort == "high") p.reasoning_budget = kReasoningEffortHigh;
    else
      bad_field("reasoning_effort", "reasoning_effort must be \"low\", \"medium\" or \"high\", got \"" + effort + "\"",
                "invalid_value");
  }
  const json* kw = field(body, "chat_template_kwargs");
  if (const json* v = kw && kw->is_object() ? field(*kw, "thinking_budget") : nullptr) {
    const char* name = "chat_template_kwargs.thinking_budget";
    const int64_t n = integer_of(*v, name);
    if (n < -1)
      bad_field(name, std::string(name) + " must be a number of tokens >= 0, or -1 for no limit, got " + std::to_string(n),
                "invalid_value");
    p.reasoning_budget = n;
  }
}

constexpr size_t kMaxTools = 128;  // as OpenAI's API

// tools: [{"type": "function", "function": {"name", "description"?, "parameters"?}}]. Malformed
// entries are 400 (the template would otherwise render whatever came).
void check_tools(const json& tools) {
  if (!tools.is_array()) wrong_type("tools", "an array", tools);
  if (tools.size() > kMaxTools)
    bad_field("tools", "tools has " + std::to_string(tools.size()) + " entries, the limit is " + std::to_string(kMaxTools),
              "invalid_value");
  std::vector<std::string> names;
  for (size_t i = 0; i < tools.size(); ++i) {
    const std::string at = "tools[" + std::to_string(i) + "]";
    const json& t = tools[i];
    if (!t.is_object()) wrong_type(at, "an object", t);
    if (const json* type = field(t, "type")) {
      if (!type->is_string()) wrong_type(at + ".type", "a string", *type);
      if (*type != "function")
        bad_field(at + ".type", at + ".type must be \"function\", got \"" + type->get<std::string>() + "\"", "invalid_value");
    }
    const json* fn = field(t, "function");
    if (!fn) bad_field(at + ".function", at + ".function is required", "missing_field");
    if (!fn->is_object()) wrong_type(at + ".function", "an object", *fn);
    const json* name = field(*fn, "name");
    if (!name) bad_field(at + ".function.name", at + ".function.name is required", "missing_field");
    if (!name->is_string()) wrong_type(at + ".function.name", "a string", *name);
    const std::string n = name->get<std::string>();
    if (n.empty() || n.size() > 256)
      bad_field(at + ".function.name", at + ".function.name must have 1 to 256 characters", "invalid_value");
    if (std::find(names.begin(), names.end(), n) != names.end())
      bad_field(at + ".function.name", "two tools are named '" + n + "'", "invalid_value");
    names.push_back(n);
    if (const json* d = field(*fn, "description"); d && !d->is_string()) wrong_type(at + ".function.description", "a string", *d);
    if (const json* p = field(*fn, "parameters"); p && !p->is_object())
      wrong_type(at + ".function.parameters", "an object (a JSON Schema)", *p);
  }
}

// tool_choice: "none" | "auto" | "required" | {"type": "function", "function": {"name"}}.
// "none" offers no tools; a named function is the only one offered. The answer is constrained to
// Qwen3.5's tool-call format (OutputFormat::kToolCalls): from its start under "required" or a
// named function, from the model's <tool_call> on under "auto".
void parse_tools(const json& body, ChatRequest& chat, json& offered, OutputFormat& format) {
  const json* tools = field(body, "tools");
  if (tools) check_tools(*tools);
  const json* choice = field(body, "tool_choice");
  std::string only;  // the function tool_choice names
  bool required = false;
  if (choice) {
    if (choice->is_string()) {
      const std::string c = choice->get<std::string>();
      if (c != "none" && c != "auto" && c != "required")
        bad_field("tool_choice", "tool_choice must be \"none\", \"auto\", \"required\" or a function, got \"" + c + "\"",
                  "invalid_value");
      if (c == "none") return;  // the model is not to call tools: do not offer them
      if (c == "required" && (!tools || tools->empty()))
        bad_field("tool_choice", "tool_choice \"required\" needs tools", "invalid_value");
      required = c == "required";
    } else if (choice->is_object()) {
      const json* type = field(*choice, "type");
      const json* fn = field(*choice, "function");
      const json* name = fn && fn->is_object() ? field(*fn, "name") : nullptr;
      if (!type || *type != "function" || !name || !name->is_string())
        bad_field("tool_choice", "tool_choice must be {\"type\": \"function\", \"function\": {\"name\": ...}}",
                  "invalid_value");
      only = name->get<std::string>();
      bool known = false;
      for (const json& t : tools ? *tools : json::array()) known |= t["function"]["name"] == only;
      if (!known) bad_field("tool_choice", "tool_choice names '" + only + "', which is not in tools", "invalid_value");
    } else {
      wrong_type("tool_choice", "a string or an object", *choice);
    }
  }
  const json* parallel = field(body, "parallel_tool_calls");
  if (parallel && !parallel->is_boolean()) wrong_type("parallel_tool_calls", "a boolean", *parallel);
  if (!tools || tools->empty()) return;
  json list = json::array();
  for (const json& t : *tools)
    if (only.empty() || t["function"]["name"] == only) list.push_back(t);
  chat.tools_json = list.dump();
  format.kind = OutputFormat::Kind::kToolCalls;
  format.tools_json = chat.tools_json;
  format.tool_name = only;
  format.lazy = !required && only.empty();
  format.parallel = !parallel || parallel->get<bool>();
  offered = std::move(list);
}

// response_format {"type": "text" | "json_object" | "json_schema", "json_schema": {"name",
// "schema", "strict"}} (OpenAI), or llama-server's "json_schema" (a schema) and "grammar" (GBNF).
// One of them at most; any of them replaces a lazy tool-call format (tool_choice auto), and none
// combines with tool_choice "required" or a named function.
void parse_output_format(const json& body, OutputFormat& format) {
  OutputFormat f;
  const char* from = nullptr;
  auto set = [&](const char* name) {
    if (from) bad_field(name, std::string(name) + " and " + from + " cannot be given together", "invalid_value");
    from = name;
  };
  if (const json* rf = field(body, "response_format"); rf && !rf->is_null()) {
    if (!rf->is_object()) wrong_type("response_format", "an object", *rf);
    const json* type = field(*rf, "type");
    if (!type || !type->is_string()) bad_field("response_format.type", "response_format.type is required", "missing_field");
    const std::string t = type->get<std::string>();
    if (t == "json_object") {
      set("response_format");
      f.kind = OutputFormat::Kind::kJsonObject;
    } else if (t == "json_schema") {
      set("response_format");
      const json* js = field(*rf, "json_schema");
      if (!js || !js->is_object()) bad_field("response_format.json_schema", "response_format.json_schema must be an object", "invalid_value");
      const json* schema = field(*js, "schema");
      if (!schema) bad_field("response_format.json_schema.schema", "response_format.json_schema.schema is required", "missing_field");
      if (!schema->is_object() && !schema->is_boolean())
        wrong_type("response_format.json_schema.schema", "an object", *schema);
      if (const json* strict = field(*js, "strict"); strict && !strict->is_null()) {
        if (!strict->is_boolean()) wrong_type("response_format.json_schema.strict", "a boolean", *strict);
        f.strict = strict->get<bool>();
      }
      f.kind = OutputFormat::Kind::kJsonSchema;
      f.schema = schema->dump();
    } else if (t != "text") {
      bad_field("response_format.type", "response_format.type must be \"text\", \"json_object\" or \"json_schema\", got \"" + t + "\"",
                "invalid_value");
    }
  }
  if (const json* js = field(body, "json_schema"); js && !js->is_null()) {
    set("json_schema");
    if (!js->is_object() && !js->is_boolean()) wrong_type("json_schema", "an object", *js);
    f.kind = OutputFormat::Kind::kJsonSchema;
    f.schema = js->dump();
  }
  if (const json* g = field(body, "grammar"); g && !g->is_null()) {
    set("grammar");
    if (!g->is_string()) wrong_type("grammar", "a string", *g);
    f.kind = OutputFormat::Kind::kGrammar;
    f.grammar = g->get<std::string>();
  }
  if (f.kind == OutputFormat::Kind::kNone) return;
  if (format.kind == OutputFormat::Kind::kToolCalls && !format.lazy)
    bad_field(from, std::string(from) + " cannot be combined with tool_choice \"required\" or a named function", "invalid_value");
  format = std::move(f);
}

}  // namespace

json parse_json_body(const std::string& body) {
  json doc;
  try {
    JsonLimits limits;
    limits.max_values = kMaxBodyValues;
    doc = parse_json_limited<json>(body, limits);
  } catch (const Error& e) {
    throw ApiError(400, std::string("the request body is not valid JSON: ") + e.what(), "invalid_request_error", "",
                   "invalid_json");
  }
  if (!doc.is_object())
    throw ApiError(400, std::string("the request body must be a JSON object, got ") + json_type_name(doc),
                   "invalid_request_error", "", "invalid_json");
  return doc;
}

void check_model(const json& body, const std::string&) {
  const json* v = field(body, "model");
  if (v && !v->is_string()) wrong_type("model", "a string", *v);
}

ChatCompletionRequest parse_chat_completion(const json& body, const SamplingParams& defaults,
                                            const RequestPolicy& policy) {
  ChatCompletionRequest r;
  check_model(body, policy.model_id);
  const json* messages = field(body, "messages");
  if (!messages) bad_field("messages", "messages is required", "missing_field");
  if (const size_t images = count_image_parts(*messages); images > policy.max_images)
    bad_field("messages", "the request has " + std::to_string(images) + " images, the limit is " +
                              std::to_string(policy.max_images), "too_many_images");
  if (const size_t videos = count_video_parts(*messages); videos > policy.max_videos)
    bad_field("messages", "the request has " + std::to_string(videos) + " videos, the limit is " +
                              std::to_string(policy.max_videos), "too_many_videos");
  try {
    r.chat.messages = parse_messages(*messages, policy.images);
  } catch (const ApiError&) {
    throw;
  } catch (const std::exception& e) {
    bad_field(param_of_message_error(e.what()), e.what(), "invalid_value");
  }
  parse_thinking(body, r.chat);
  OutputFormat format;
  parse_tools(body, r.chat, r.tools, format);
  parse_output_format(body, format);
  parse_n(body);

  r.params = defaults;
  r.params.format = std::move(format);
  r.params.max_tokens = policy.max_tokens;
  r.params.stop.clear();
  r.params.reasoning_budget = policy.reasoning_budget;
  parse_sampling(body, r.params, policy);
  parse_max_tokens(body, r.params);
  parse_reasoning_budget(body, r.params);
  if (const json* v = field(body, "logprobs")) r.params.logprobs = bool_of(*v, "logprobs");
  if (const json* v = field(body, "top_logprobs")) {
    const int64_t k = integer_of(*v, "top_logprobs");
    if (k < 0 || k > 20) bad_field("top_logprobs", "top_logprobs must be between 0 and 20", "invalid_value");
    if (!r.params.logprobs && k > 0)
      bad_field("top_logprobs", "top_logprobs needs logprobs set to true", "invalid_value");
    r.params.top_logprobs = int(k);
  }
  parse_stream(body, r.stream, r.include_usage);
  return r;
}

CompletionRequest parse_completion(const json& body, const SamplingParams& defaults, const RequestPolicy& policy) {
  CompletionRequest r;
  check_model(body, policy.model_id);
  const json* prompt = field(body, "prompt");
  if (!prompt) bad_field("prompt", "prompt is required", "missing_field");
  // A string, a list of ids, or a batch of exactly one of those.
  const json* p = prompt;
  if (p->is_array() && p->size() == 1 && ((*p)[0].is_string() || (*p)[0].is_array())) p = &(*p)[0];
  else if (p->is_array() && !p->empty() && ((*p)[0].is_string() || (*p)[0].is_array()))
    bad_field("prompt", "batched prompts are not supported: send one prompt per request", "invalid_value");
  if (p->is_string()) {
    r.prompt_text = p->get<std::string>();
    if (r.prompt_text.empty()) bad_field("prompt", "prompt must not be empty", "invalid_value");
  } else if (p->is_array()) {
    if (p->empty()) bad_field("prompt", "prompt must not be empty", "invalid_value");
    r.prompt_is_text = false;
    for (size_t i = 0; i < p->size(); ++i) {
      const int64_t id = integer_of((*p)[i], "prompt[" + std::to_string(i) + "]");
      if (id < 0 || id > std::numeric_limits<int32_t>::max())
        bad_field("prompt", "token id " + std::to_string(id) + " is out of range", "invalid_value");
      r.prompt_ids.push_back(int32_t(id));
    }
  } else {
    wrong_type("prompt", "a string or an array of token ids", *prompt);
  }
  parse_n(body);
  if (const json* v = field(body, "echo")) r.echo = bool_of(*v, "echo");
  if (const json* v = field(body, "best_of")) {
    if (integer_of(*v, "best_of") != 1) bad_field("best_of", "only best_of = 1 is supported", "invalid_value");
  }

  r.params = defaults;
  r.params.max_tokens = 16;
  r.params.stop.clear();
  parse_output_format(body, r.params.format);
  parse_sampling(body, r.params, policy);
  parse_max_tokens(body, r.params);
  if (const json* v = field(body, "logprobs")) {  // legacy API: an integer 0..5 of alternatives
    const int64_t k = v->is_boolean() ? (v->get<bool>() ? 0 : -1) : integer_of(*v, "logprobs");
    if (k > 5 || k < -1) bad_field("logprobs", "logprobs must be between 0 and 5", "invalid_value");
    r.params.logprobs = k >= 0;
    r.params.top_logprobs = int(std::max<int64_t>(k, 0));
  }
  parse_stream(body, r.stream, r.include_usage);
  return r;
}

}  // namespace qwen35::server
