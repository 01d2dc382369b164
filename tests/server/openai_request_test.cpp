// Request parsing: every field read into the public types, every bad field answered with the
// right status, param and code.
#include <gtest/gtest.h>

#include "server/http/json_error.h"
#include "server/openai/api_error.h"
#include "server/openai/request.h"

namespace qwen35::server {
namespace {

using json = nlohmann::ordered_json;

RequestPolicy policy() {
  RequestPolicy p;
  p.model_id = "tiny-qwen35";
  p.max_images = 2;
  return p;
}

SamplingParams defaults() {
  SamplingParams p;
  p.temperature = 0.7f;
  p.top_p = 0.8f;
  p.top_k = 20;
  return p;
}

json chat(json extra = json::object()) {
  json body = {{"model", "tiny-qwen35"}, {"messages", {{{"role", "user"}, {"content", "hi"}}}}};
  for (auto& [k, v] : extra.items()) body[k] = v;
  return body;
}

struct Expected {
  int status;
  std::string param;
  std::string code;
};

Expected chat_error(const json& body) {
  try {
    parse_chat_completion(body, defaults(), policy());
  } catch (const ApiError& e) {
    return {e.status, e.param, e.code};
  }
  return {0, "", ""};
}

Expected completion_error(const json& body) {
  try {
    parse_completion(body, defaults(), policy());
  } catch (const ApiError& e) {
    return {e.status, e.param, e.code};
  }
  return {0, "", ""};
}

#define EXPECT_API_ERROR(expr, st, prm, cd)    \
  do {                                          \
    const Expected e_ = (expr);                 \
    EXPECT_EQ(e_.status, st) << #expr;          \
    EXPECT_EQ(e_.param, prm) << #expr;          \
    EXPECT_EQ(e_.code, cd) << #expr;            \
  } while (0)

TEST(OpenAIRequest, ChatFieldsReachThePublicTypes) {
  json body = chat({{"temperature", 0.5},
                    {"top_p", 0.9},
                    {"top_k", 5},
                    {"min_p", 0.1},
                    {"presence_penalty", 0.5},
                    {"frequency_penalty", -0.5},
                    {"repetition_penalty", 1.1},
                    {"seed", 42},
                    {"stop", {"a", "b"}},
                    {"max_tokens", 7},
                    {"logprobs", true},
                    {"top_logprobs", 3},
                    {"stream", true},
                    {"stream_options", {{"include_usage", true}}},
                    {"chat_template_kwargs", {{"enable_thinking", false}}},
                    {"tools", json::array({{{"type", "function"}, {"function", {{"name", "f"}, {"parameters", {{"z", 1}, {"a", 2}}}}}}})},
                    {"some_future_field", {{"anything", 1}}}});
  ChatCompletionRequest r = parse_chat_completion(body, defaults(), policy());
  EXPECT_FLOAT_EQ(r.params.temperature, 0.5f);
  EXPECT_FLOAT_EQ(r.params.top_p, 0.9f);
  EXPECT_EQ(r.params.top_k, 5);
  EXPECT_FLOAT_EQ(r.params.min_p, 0.1f);
  EXPECT_FLOAT_EQ(r.params.presence_penalty, 0.5f);
  EXPECT_FLOAT_EQ(r.params.frequency_penalty, -0.5f);
  EXPECT_FLOAT_EQ(r.params.repetition_penalty, 1.1f);
  ASSERT_TRUE(r.params.seed.has_value());
  EXPECT_EQ(*r.params.seed, 42u);
  EXPECT_EQ(r.params.stop, (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(r.params.max_tokens, 7);
  EXPECT_TRUE(r.params.logprobs);
  EXPECT_EQ(r.params.top_logprobs, 3);
  EXPECT_TRUE(r.stream);
  EXPECT_TRUE(r.include_usage);
  ASSERT_TRUE(r.chat.enable_thinking.has_value());
  EXPECT_FALSE(*r.chat.enable_thinking);
  // Key order survives into the template's tools JSON.
  EXPECT_NE(r.chat.tools_json.find("{\"z\":1,\"a\":2}"), std::string::npos) << r.chat.tools_json;
  ASSERT_EQ(r.chat.messages.size(), 1u);
  EXPECT_EQ(r.chat.messages[0].role, "user");
}

TEST(OpenAIRequest, ChatDefaults) {
  ChatCompletionRequest r = parse_chat_completion(chat(), defaults(), policy());
  EXPECT_FLOAT_EQ(r.params.temperature, 0.7f);  // the model's generation_config
  EXPECT_EQ(r.params.top_k, 20);
  EXPECT_EQ(r.params.max_tokens, -1);
  EXPECT_FALSE(r.params.seed.has_value());
  EXPECT_FALSE(r.stream);
  EXPECT_FALSE(r.include_usage);
  EXPECT_FALSE(r.chat.enable_thinking.has_value());
  EXPECT_TRUE(r.chat.tools_json.empty());
}

TEST(OpenAIRequest, MaxCompletionTokensAndTopLevelThinking) {
  ChatCompletionRequest r =
      parse_chat_completion(chat({{"max_completion_tokens", 9}, {"enable_thinking", true}, {"stop", "x"}}), defaults(), policy());
  EXPECT_EQ(r.params.max_tokens, 9);
  ASSERT_TRUE(r.chat.enable_thinking.has_value());
  EXPECT_TRUE(*r.chat.enable_thinking);
  EXPECT_EQ(r.params.stop, std::vector<std::string>{"x"});
  // null means "default" for every optional field
  r = parse_chat_completion(chat({{"max_tokens", nullptr}, {"temperature", nullptr}, {"stop", nullptr}, {"model", nullptr}}),
                            defaults(), policy());
  EXPECT_EQ(r.params.max_tokens, -1);
  EXPECT_FLOAT_EQ(r.params.temperature, 0.7f);
  // 5.0 is an integer
  r = parse_chat_completion(chat({{"max_tokens", 5.0}}), defaults(), policy());
  EXPECT_EQ(r.params.max_tokens, 5);
}

TEST(OpenAIRequest, ToolChoiceNoneDropsTools) {
  json tools = json::array({{{"type", "function"}, {"function", {{"name", "f"}}}}});
  EXPECT_TRUE(parse_chat_completion(chat({{"tools", tools}, {"tool_choice", "none"}}), defaults(), policy()).chat.tools_json.empty());
  EXPECT_FALSE(parse_chat_completion(chat({{"tools", tools}, {"tool_choice", "auto"}}), defaults(), policy()).chat.tools_json.empty());
}

// Issue 11, finding 8: a single-model server takes any model name, as llama-server and ollama do.
TEST(OpenAIRequest, AnyModelNameIsServed) {
  EXPECT_EQ(chat_error(chat({{"model", ""}})).status, 0);
  json no_model = chat();
  no_model.erase("model");
  EXPECT_EQ(chat_error(no_model).status, 0);
  EXPECT_EQ(chat_error(chat({{"model", "gpt-4o"}})).status, 0);
  EXPECT_EQ(completion_error({{"model", "other"}, {"prompt", "x"}}).status, 0);
  EXPECT_API_ERROR(chat_error(chat({{"model", 3}})), 400, "model", "invalid_type");
}

// Issue 11, finding 8: malformed tools and tool_choice are 400 with the field named.
TEST(OpenAIRequest, MalformedToolsAndToolChoiceAre400) {
  const json f = {{"type", "function"}, {"function", {{"name", "f"}, {"parameters", json::object()}}}};
  const json g = {{"type", "function"}, {"function", {{"name", "g"}}}};
  auto with = [&](json extra) {
    json body = chat();
    for (auto& [k, v] : extra.items()) body[k] = v;
    return chat_error(body);
  };
  EXPECT_API_ERROR(with({{"tools", {{{"type", "function"}}}}}), 400, "tools[0].function", "missing_field");
  EXPECT_API_ERROR(with({{"tools", {{{"type", "retrieval"}, {"function", {{"name", "f"}}}}}}}), 400, "tools[0].type",
                   "invalid_value");
  EXPECT_API_ERROR(with({{"tools", {{{"type", "function"}, {"function", "f"}}}}}), 400, "tools[0].function",
                   "invalid_type");
  EXPECT_API_ERROR(with({{"tools", {{{"type", "function"}, {"function", {{"name", 5}}}}}}}), 400,
                   "tools[0].function.name", "invalid_type");
  EXPECT_API_ERROR(with({{"tools", {{{"type", "function"}, {"function", {{"description", "x"}}}}}}}), 400,
                   "tools[0].function.name", "missing_field");
  EXPECT_API_ERROR(with({{"tools", {{{"type", "function"}, {"function", {{"name", ""}}}}}}}), 400,
                   "tools[0].function.name", "invalid_value");
  EXPECT_API_ERROR(with({{"tools", {{{"type", "function"}, {"function", {{"name", "f"}, {"parameters", "{}"}}}}}}}), 400,
                   "tools[0].function.parameters", "invalid_type");
  EXPECT_API_ERROR(with({{"tools", {f, f}}}), 400, "tools[1].function.name", "invalid_value");
  EXPECT_API_ERROR(with({{"tools", {f}}, {"tool_choice", "sometimes"}}), 400, "tool_choice", "invalid_value");
  EXPECT_API_ERROR(with({{"tools", {f}}, {"tool_choice", 3}}), 400, "tool_choice", "invalid_type");
  EXPECT_API_ERROR(with({{"tools", {f}}, {"tool_choice", {{"type", "function"}}}}), 400, "tool_choice", "invalid_value");
  EXPECT_API_ERROR(with({{"tools", {f}}, {"tool_choice", {{"type", "function"}, {"function", {{"name", "nope"}}}}}}), 400,
                   "tool_choice", "invalid_value");
  EXPECT_API_ERROR(with({{"tool_choice", "required"}}), 400, "tool_choice", "invalid_value");
  EXPECT_API_ERROR(with({{"tools", {f}}, {"parallel_tool_calls", "yes"}}), 400, "parallel_tool_calls", "invalid_type");
  // Well-formed: a named function is the only one offered; "auto" and "required" offer all.
  ChatCompletionRequest r = parse_chat_completion(
      chat({{"tools", {f, g}}, {"tool_choice", {{"type", "function"}, {"function", {{"name", "g"}}}}}}), defaults(), policy());
  EXPECT_EQ(r.tools.size(), 1u);
  EXPECT_EQ(r.tools[0]["function"]["name"], "g");
  r = parse_chat_completion(chat({{"tools", {f, g}}, {"tool_choice", "required"}, {"parallel_tool_calls", false}}),
                            defaults(), policy());
  EXPECT_EQ(r.tools.size(), 2u);
  EXPECT_EQ(with({{"tools", {g}}}).status, 0);  // no type: taken as a function
}

TEST(OpenAIRequest, WrongTypesAre400WithTheFieldNamed) {
  EXPECT_API_ERROR(chat_error(chat({{"temperature", "hot"}})), 400, "temperature", "invalid_type");
  EXPECT_API_ERROR(chat_error(chat({{"top_p", true}})), 400, "top_p", "invalid_type");
  EXPECT_API_ERROR(chat_error(chat({{"top_k", 1.5}})), 400, "top_k", "invalid_type");
  EXPECT_API_ERROR(chat_error(chat({{"min_p", "0.1"}})), 400, "min_p", "invalid_type");
  EXPECT_API_ERROR(chat_error(chat({{"presence_penalty", json::array()}})), 400, "presence_penalty", "invalid_type");
  EXPECT_API_ERROR(chat_error(chat({{"frequency_penalty", json::object()}})), 400, "frequency_penalty", "invalid_type");
  EXPECT_API_ERROR(chat_error(chat({{"repetition_penalty", "1"}})), 400, "repetition_penalty", "invalid_type");
  EXPECT_API_ERROR(chat_error(chat({{"seed", "42"}})), 400, "seed", "invalid_type");
  EXPECT_API_ERROR(chat_error(chat({{"max_tokens", "10"}})), 400, "max_tokens", "invalid_type");
  EXPECT_API_ERROR(chat_error(chat({{"max_completion_tokens", 2.5}})), 400, "max_completion_tokens", "invalid_type");
  EXPECT_API_ERROR(chat_error(chat({{"stop", 5}})), 400, "stop", "invalid_type");
  EXPECT_API_ERROR(chat_error(chat({{"stop", {"a", 1}}})), 400, "stop[1]", "invalid_type");
  EXPECT_API_ERROR(chat_error(chat({{"logprobs", 1}})), 400, "logprobs", "invalid_type");
  EXPECT_API_ERROR(chat_error(chat({{"logprobs", true}, {"top_logprobs", "2"}})), 400, "top_logprobs", "invalid_type");
  EXPECT_API_ERROR(chat_error(chat({{"stream", "yes"}})), 400, "stream", "invalid_type");
  EXPECT_API_ERROR(chat_error(chat({{"stream_options", true}})), 400, "stream_options", "invalid_type");
  EXPECT_API_ERROR(chat_error(chat({{"stream_options", {{"include_usage", "y"}}}})), 400,
                   "stream_options.include_usage", "invalid_type");
  EXPECT_API_ERROR(chat_error(chat({{"chat_template_kwargs", "x"}})), 400, "chat_template_kwargs", "invalid_type");
  EXPECT_API_ERROR(chat_error(chat({{"chat_template_kwargs", {{"enable_thinking", "no"}}}})), 400,
                   "chat_template_kwargs.enable_thinking", "invalid_type");
  EXPECT_API_ERROR(chat_error(chat({{"enable_thinking", 0}})), 400, "enable_thinking", "invalid_type");
  EXPECT_API_ERROR(chat_error(chat({{"tools", {{"type", "function"}}}})), 400, "tools", "invalid_type");
  EXPECT_API_ERROR(chat_error(chat({{"tools", {1}}})), 400, "tools[0]", "invalid_type");
  EXPECT_API_ERROR(chat_error(chat({{"n", "1"}})), 400, "n", "invalid_type");
}

TEST(OpenAIRequest, BadValuesAre400WithTheFieldNamed) {
  EXPECT_API_ERROR(chat_error(chat({{"max_tokens", -1}})), 400, "max_tokens", "invalid_value");
  EXPECT_API_ERROR(chat_error(chat({{"max_completion_tokens", -5}})), 400, "max_completion_tokens", "invalid_value");
  EXPECT_API_ERROR(chat_error(chat({{"temperature", -0.1}})), 400, "temperature", "invalid_value");
  EXPECT_API_ERROR(chat_error(chat({{"temperature", 2.5}})), 400, "temperature", "invalid_value");
  EXPECT_API_ERROR(chat_error(chat({{"top_p", 1.5}})), 400, "top_p", "invalid_value");
  EXPECT_API_ERROR(chat_error(chat({{"top_k", -2}})), 400, "top_k", "invalid_value");
  EXPECT_API_ERROR(chat_error(chat({{"min_p", 2}})), 400, "min_p", "invalid_value");
  EXPECT_API_ERROR(chat_error(chat({{"presence_penalty", 3}})), 400, "presence_penalty", "invalid_value");
  EXPECT_API_ERROR(chat_error(chat({{"repetition_penalty", 0}})), 400, "repetition_penalty", "invalid_value");
  EXPECT_API_ERROR(chat_error(chat({{"stop", {""}}})), 400, "stop", "invalid_value");
  EXPECT_API_ERROR(chat_error(chat({{"stop", json::array({"1", "2", "3", "4", "5", "6", "7", "8", "9", "10", "11",
                                                          "12", "13", "14", "15", "16", "17"})}})),
                   400, "stop", "invalid_value");
  EXPECT_API_ERROR(chat_error(chat({{"logprobs", true}, {"top_logprobs", 21}})), 400, "top_logprobs", "invalid_value");
  EXPECT_API_ERROR(chat_error(chat({{"top_logprobs", 2}})), 400, "top_logprobs", "invalid_value");  // without logprobs
  EXPECT_API_ERROR(chat_error(chat({{"n", 2}})), 400, "n", "invalid_value");
  EXPECT_EQ(chat_error(chat({{"top_k", -1}})).status, 0);  // -1: off, as in vLLM
  EXPECT_EQ(chat_error(chat({{"max_tokens", 0}})).status, 0);
}

// max_tokens: the request's, else the server's default cap (--max-tokens), which a request may
// exceed; /v1/completions keeps OpenAI's 16.
TEST(OpenAIRequest, MaxTokensDefaultsToTheServersCap) {
  RequestPolicy p = policy();
  p.max_tokens = 8192;
  EXPECT_EQ(parse_chat_completion(chat(json::object()), defaults(), p).params.max_tokens, 8192);
  EXPECT_EQ(parse_chat_completion(chat({{"max_tokens", 20000}}), defaults(), p).params.max_tokens, 20000);
  EXPECT_EQ(parse_chat_completion(chat({{"max_completion_tokens", 3}}), defaults(), p).params.max_tokens, 3);
  EXPECT_EQ(parse_chat_completion(chat({{"max_tokens", nullptr}}), defaults(), p).params.max_tokens, 8192);
  EXPECT_EQ(parse_completion(json{{"prompt", "hi"}}, defaults(), p).params.max_tokens, 16);
}

// The thought budget: thinking_budget over reasoning_effort over the server's default.
TEST(OpenAIRequest, ReasoningBudget) {
  auto budget = [](const json& extra, int64_t server_default = -1) {
    RequestPolicy p = policy();
    p.reasoning_budget = server_default;
    return parse_chat_completion(chat(extra), defaults(), p).params.reasoning_budget;
  };
  EXPECT_EQ(budget(json::object()), -1);
  EXPECT_EQ(budget(json::object(), 300), 300);
  EXPECT_EQ(budget({{"reasoning_effort", "low"}}), kReasoningEffortLow);
  EXPECT_EQ(budget({{"reasoning_effort", "medium"}}, 300), kReasoningEffortMedium);
  EXPECT_EQ(budget({{"reasoning_effort", "high"}}), kReasoningEffortHigh);
  EXPECT_EQ(budget({{"reasoning_effort", nullptr}}, 300), 300);  // null: the default
  EXPECT_LT(kReasoningEffortLow, kReasoningEffortMedium);
  EXPECT_LT(kReasoningEffortMedium, kReasoningEffortHigh);
  EXPECT_EQ(budget({{"chat_template_kwargs", {{"thinking_budget", 64}}}}), 64);
  EXPECT_EQ(budget({{"chat_template_kwargs", {{"thinking_budget", 0}}}}, 300), 0);
  EXPECT_EQ(budget({{"chat_template_kwargs", {{"thinking_budget", -1}}}}, 300), -1);
  EXPECT_EQ(budget({{"chat_template_kwargs", {{"thinking_budget", 16.0}}}}), 16);
  EXPECT_EQ(budget({{"reasoning_effort", "high"}, {"chat_template_kwargs", {{"thinking_budget", 7}}}}), 7);
  EXPECT_EQ(budget({{"chat_template_kwargs", {{"thinking_budget", 7}}}, {"reasoning_effort", "low"}}), 7);
  EXPECT_EQ(budget({{"chat_template_kwargs", {{"enable_thinking", true}}}, {"reasoning_effort", "low"}}),
            kReasoningEffortLow);

  EXPECT_API_ERROR(chat_error(chat({{"reasoning_effort", "extreme"}})), 400, "reasoning_effort", "invalid_value");
  EXPECT_API_ERROR(chat_error(chat({{"reasoning_effort", ""}})), 400, "reasoning_effort", "invalid_value");
  EXPECT_API_ERROR(chat_error(chat({{"reasoning_effort", "LOW"}})), 400, "reasoning_effort", "invalid_value");
  EXPECT_API_ERROR(chat_error(chat({{"reasoning_effort", 2}})), 400, "reasoning_effort", "invalid_type");
  const std::string kw = "chat_template_kwargs.thinking_budget";
  EXPECT_API_ERROR(chat_error(chat({{"chat_template_kwargs", {{"thinking_budget", -2}}}})), 400, kw, "invalid_value");
  EXPECT_API_ERROR(chat_error(chat({{"chat_template_kwargs", {{"thinking_budget", 1.5}}}})), 400, kw, "invalid_type");
  EXPECT_API_ERROR(chat_error(chat({{"chat_template_kwargs", {{"thinking_budget", "64"}}}})), 400, kw, "invalid_type");
  EXPECT_API_ERROR(chat_error(chat({{"chat_template_kwargs", {{"thinking_budget", true}}}})), 400, kw, "invalid_type");
  EXPECT_API_ERROR(chat_error(chat({{"chat_template_kwargs", {{"thinking_budget", json::array()}}}})), 400, kw,
                   "invalid_type");
  try {
    parse_chat_completion(chat({{"reasoning_effort", "extreme"}}), defaults(), policy());
    ADD_FAILURE() << "no error";
  } catch (const ApiError& e) {
    EXPECT_EQ(e.type, "invalid_request_error");
    EXPECT_NE(std::string(e.what()).find("\"low\", \"medium\" or \"high\""), std::string::npos) << e.what();
  }
}

// Our extension "speculative": {mode, draft_max}, on both endpoints; absent fields keep the
// server's defaults.
TEST(OpenAIRequest, SpeculativeOverride) {
  SamplingParams d = defaults();
  d.speculative.mode = SpecMode::kPld;
  d.speculative.draft_max = 5;
  ChatCompletionRequest r = parse_chat_completion(chat(), d, policy());
  EXPECT_EQ(r.params.speculative.mode, SpecMode::kPld);
  EXPECT_EQ(r.params.speculative.draft_max, 5);
  r = parse_chat_completion(chat({{"speculative", {{"mode", "mtp"}, {"draft_max", 3}}}}), d, policy());
  EXPECT_EQ(r.params.speculative.mode, SpecMode::kMtp);
  EXPECT_EQ(r.params.speculative.draft_max, 3);
  r = parse_chat_completion(chat({{"speculative", {{"mode", "off"}}}}), d, policy());
  EXPECT_EQ(r.params.speculative.mode, SpecMode::kOff);
  EXPECT_EQ(r.params.speculative.draft_max, 5);
  r = parse_chat_completion(chat({{"speculative", nullptr}}), d, policy());
  EXPECT_EQ(r.params.speculative.mode, SpecMode::kPld);
  const CompletionRequest c =
      parse_completion({{"prompt", "x"}, {"speculative", {{"mode", "auto"}, {"draft_max", 16}}}}, d, policy());
  EXPECT_EQ(c.params.speculative.mode, SpecMode::kAuto);
  EXPECT_EQ(c.params.speculative.draft_max, 16);

  EXPECT_API_ERROR(chat_error(chat({{"speculative", "mtp"}})), 400, "speculative", "invalid_type");
  EXPECT_API_ERROR(chat_error(chat({{"speculative", {{"mode", "eagle"}}}})), 400, "speculative.mode", "invalid_value");
  EXPECT_API_ERROR(chat_error(chat({{"speculative", {{"mode", 1}}}})), 400, "speculative.mode", "invalid_type");
  EXPECT_API_ERROR(chat_error(chat({{"speculative", {{"draft_max", 0}}}})), 400, "speculative.draft_max", "invalid_value");
  EXPECT_API_ERROR(chat_error(chat({{"speculative", {{"draft_max", 17}}}})), 400, "speculative.draft_max", "invalid_value");
  EXPECT_API_ERROR(chat_error(chat({{"speculative", {{"draft_max", 2.5}}}})), 400, "speculative.draft_max", "invalid_type");
  EXPECT_API_ERROR(completion_error({{"prompt", "x"}, {"speculative", {{"mode", "fast"}}}}), 400, "speculative.mode",
                   "invalid_value");
}

TEST(OpenAIRequest, MessagesProblemsNameTheMessage) {
  json body = chat();
  body.erase("messages");
  EXPECT_API_ERROR(chat_error(body), 400, "messages", "missing_field");
  EXPECT_API_ERROR(chat_error(chat({{"messages", "hi"}})), 400, "messages", "invalid_value");
  EXPECT_API_ERROR(chat_error(chat({{"messages", json::array()}})), 400, "messages", "invalid_value");
  EXPECT_API_ERROR(chat_error(chat({{"messages", {{{"role", "wizard"}, {"content", "x"}}}}})), 400, "messages[0].role",
                   "invalid_value");
  EXPECT_API_ERROR(chat_error(chat({{"messages", {{{"role", "user"}, {"content", "a"}}, {{"role", "user"}}}}})), 400,
                   "messages[1].content", "invalid_value");
  json bad_b64 = {{{"role", "user"},
                   {"content", {{{"type", "image_url"}, {"image_url", {{"url", "data:image/png;base64,@@@@"}}}}}}}};
  EXPECT_API_ERROR(chat_error(chat({{"messages", bad_b64}})), 400, "messages[0].content[0].image_url.url", "invalid_value");
  json remote = {{{"role", "user"},
                  {"content", {{{"type", "image_url"}, {"image_url", {{"url", "http://example.com/a.png"}}}}}}}};
  EXPECT_API_ERROR(chat_error(chat({{"messages", remote}})), 400, "messages[0].content[0].image_url.url", "invalid_value");
  json local = {{{"role", "user"}, {"content", {{{"type", "image_url"}, {"image_url", {{"url", "/etc/passwd"}}}}}}}};
  EXPECT_API_ERROR(chat_error(chat({{"messages", local}})), 400, "messages[0].content[0].image_url.url", "invalid_value");
}

TEST(OpenAIRequest, ImageCountIsLimited) {
  json part = {{"type", "image_url"}, {"image_url", {{"url", "data:image/png;base64,iVBORw0KGgo="}}}};
  json two = {{{"role", "user"}, {"content", {part, part}}}};
  json three = {{{"role", "user"}, {"content", {part, part, part}}}};
  EXPECT_EQ(chat_error(chat({{"messages", two}})).status, 0);
  EXPECT_API_ERROR(chat_error(chat({{"messages", three}})), 400, "messages", "too_many_images");
}

TEST(OpenAIRequest, CompletionPrompts) {
  CompletionRequest r = parse_completion({{"prompt", "hello"}}, defaults(), policy());
  EXPECT_TRUE(r.prompt_is_text);
  EXPECT_EQ(r.prompt_text, "hello");
  EXPECT_EQ(r.params.max_tokens, 16);  // OpenAI's default for completions
  r = parse_completion({{"prompt", {1, 2, 3}}, {"max_tokens", 4}, {"logprobs", 2}, {"echo", true}}, defaults(), policy());
  EXPECT_FALSE(r.prompt_is_text);
  EXPECT_EQ(r.prompt_ids, (std::vector<int32_t>{1, 2, 3}));
  EXPECT_EQ(r.params.max_tokens, 4);
  EXPECT_TRUE(r.params.logprobs);
  EXPECT_EQ(r.params.top_logprobs, 2);
  EXPECT_TRUE(r.echo);
  r = parse_completion({{"prompt", {"only one"}}}, defaults(), policy());
  EXPECT_EQ(r.prompt_text, "only one");
  r = parse_completion({{"prompt", {{5, 6}}}}, defaults(), policy());
  EXPECT_EQ(r.prompt_ids, (std::vector<int32_t>{5, 6}));
}

TEST(OpenAIRequest, CompletionErrors) {
  EXPECT_API_ERROR(completion_error(json::object()), 400, "prompt", "missing_field");
  EXPECT_API_ERROR(completion_error({{"prompt", 5}}), 400, "prompt", "invalid_type");
  EXPECT_API_ERROR(completion_error({{"prompt", ""}}), 400, "prompt", "invalid_value");
  EXPECT_API_ERROR(completion_error({{"prompt", json::array()}}), 400, "prompt", "invalid_value");
  EXPECT_API_ERROR(completion_error({{"prompt", {"a", "b"}}}), 400, "prompt", "invalid_value");
  EXPECT_API_ERROR(completion_error({{"prompt", {1, -2}}}), 400, "prompt", "invalid_value");
  EXPECT_API_ERROR(completion_error({{"prompt", {1, "x"}}}), 400, "prompt[1]", "invalid_type");
  EXPECT_API_ERROR(completion_error({{"prompt", "x"}, {"max_tokens", -3}}), 400, "max_tokens", "invalid_value");
  EXPECT_API_ERROR(completion_error({{"prompt", "x"}, {"logprobs", 6}}), 400, "logprobs", "invalid_value");
  EXPECT_API_ERROR(completion_error({{"prompt", "x"}, {"echo", "yes"}}), 400, "echo", "invalid_type");
  EXPECT_API_ERROR(completion_error({{"prompt", "x"}, {"temperature", "1"}}), 400, "temperature", "invalid_type");
}

TEST(OpenAIRequest, BodyMustBeAJsonObject) {
  auto code_of = [](const std::string& text) {
    try {
      parse_json_body(text);
    } catch (const ApiError& e) {
      EXPECT_EQ(e.status, 400);
      return e.code;
    }
    return std::string("ok");
  };
  EXPECT_EQ(code_of("{\"a\": 1"), "invalid_json");
  EXPECT_EQ(code_of(""), "invalid_json");
  EXPECT_EQ(code_of("[1, 2]"), "invalid_json");
  EXPECT_EQ(code_of("\"text\""), "invalid_json");
  EXPECT_EQ(code_of("{\"b\": 1, \"a\": 2}"), "ok");
  EXPECT_EQ(parse_json_body("{\"b\": 1, \"a\": 2}").begin().key(), "b");  // order kept
  // Nesting that would overflow the stack when the document is copied or dumped later.
  const std::string deep = "{\"messages\": [{\"role\": \"assistant\", \"tool_calls\": [{\"function\": "
                           "{\"name\": \"f\", \"arguments\": " +
                           std::string(100000, '[') + std::string(100000, ']') + "}}]}]}";
  EXPECT_EQ(code_of(deep), "invalid_json");
  EXPECT_EQ(code_of("{\"a\": " + std::string(60, '[') + std::string(60, ']') + "}"), "ok");
}

TEST(OpenAIRequest, ImageLimitCheckedBeforeAnyImageIsLoaded) {
  json body = {{"messages", json::array()}};
  json content = json::array();
  // Remote URLs with remote fetching off would fail one by one; the count must fail first.
  for (int i = 0; i < 40; ++i) content.push_back({{"type", "image_url"}, {"image_url", {{"url", "http://x/" + std::to_string(i)}}}});
  body["messages"].push_back({{"role", "user"}, {"content", content}});
  try {
    parse_chat_completion(body, defaults(), policy());
    FAIL() << "expected an error";
  } catch (const ApiError& e) {
    EXPECT_EQ(e.status, 400);
    EXPECT_EQ(e.code, "too_many_images");
  }
}

TEST(OpenAIRequest, ErrorObjectShape) {
  const auto j = error_json(ApiError(400, "bad", "invalid_request_error", "top_p", "invalid_value"));
  EXPECT_EQ(j["error"]["message"], "bad");
  EXPECT_EQ(j["error"]["type"], "invalid_request_error");
  EXPECT_EQ(j["error"]["param"], "top_p");
  EXPECT_EQ(j["error"]["code"], "invalid_value");
  const auto k = error_json(503, "loading", "");
  EXPECT_EQ(k["error"]["type"], "unavailable_error");
  EXPECT_TRUE(k["error"]["param"].is_null());
  EXPECT_TRUE(k["error"]["code"].is_null());
}

TEST(OpenAIRequest, EngineStatusMapping) {
  EXPECT_EQ(api_error_from(Status::Error(StatusCode::kInvalidArgument, "broken image")).status, 400);
  const ApiError ctx = api_error_from(Status::Error(StatusCode::kContextOverflow, "too long"));
  EXPECT_EQ(ctx.status, 400);
  EXPECT_EQ(ctx.code, "context_length_exceeded");
  EXPECT_NE(std::string(ctx.what()).find("too long"), std::string::npos);
  EXPECT_EQ(api_error_from(Status::Error(StatusCode::kUnavailable, "stopping")).status, 503);
  EXPECT_EQ(api_error_from(Status::Error(StatusCode::kInternal, "oops")).status, 500);
  EXPECT_EQ(api_error_from(Status::Error(StatusCode::kNotFound, "gone")).status, 404);
}

}  // namespace
}  // namespace qwen35::server

namespace qwen35::server {
namespace {

// Bytes that the parser passes on as they are (the engine decodes them; these tests only read JSON).
const std::string kVideoB64 = "AAAAIGZ0eXBpc29t";  // the start of an MP4 file
const std::vector<uint8_t> kVideoBytes = decode_base64(kVideoB64);

ChatCompletionRequest parse_user(const json& parts, RequestPolicy p = policy()) {
  return parse_chat_completion(chat({{"messages", {{{"role", "user"}, {"content", parts}}}}}), defaults(), p);
}

Expected user_error(const json& parts, RequestPolicy p = policy()) {
  try {
    parse_user(parts, p);
  } catch (const ApiError& e) {
    return {e.status, e.param, e.code};
  }
  return {0, "", ""};
}

TEST(OpenAIRequestVideo, EveryVideoPartShapeBecomesAVideo) {
  RequestPolicy p = policy();
  p.images.video_caps.max_tokens = 1000;
  const std::string url = "data:video/mp4;base64," + kVideoB64;
  const json parts = {
      {{"type", "video_url"}, {"video_url", {{"url", url}}}},
      {{"type", "input_video"}, {"input_video", {{"data", kVideoB64}, {"format", "mp4"}}}},
      {{"type", "video"}, {"video", url}, {"fps", 1.5}, {"max_frames", 8}, {"max_tokens", 300}},
      {{"type", "text"}, {"text", "What happens?"}}};
  const ChatCompletionRequest r = parse_user(parts, p);
  const auto& content = r.chat.messages.at(0).content;
  ASSERT_EQ(content.size(), 4u);
  for (size_t i = 0; i < 3; ++i) {
    ASSERT_EQ(content[i].type, ContentPart::Type::kVideo) << i;
    EXPECT_EQ(content[i].video.source, VideoInput::Source::kFile) << i;
    EXPECT_EQ(content[i].video.file, kVideoBytes) << i;
  }
  // Without options a video gets the server's caps; with them, what it asks for.
  EXPECT_EQ(content[0].video.sampling.fps, 0.0);
  EXPECT_EQ(content[0].video.sampling.max_frames, 0);
  EXPECT_EQ(content[0].video.sampling.max_tokens, 1000);
  EXPECT_EQ(content[2].video.sampling.fps, 1.5);
  EXPECT_EQ(content[2].video.sampling.max_frames, 8);
  EXPECT_EQ(content[2].video.sampling.max_tokens, 300);
  EXPECT_EQ(content[3].text, "What happens?");
}

TEST(OpenAIRequestVideo, AListOfImagesIsAVideoOfFrames) {
  const std::string png = "data:image/png;base64,iVBORw0KGgo=";
  const json parts = {{{"type", "video"}, {"video", {png, {{"url", png}}, png}}, {"frame_rate", 4}}};
  const ChatCompletionRequest r = parse_user(parts);
  const VideoInput& v = r.chat.messages.at(0).content.at(0).video;
  EXPECT_EQ(v.source, VideoInput::Source::kImages);
  EXPECT_EQ(v.images.size(), 3u);
  EXPECT_EQ(v.images_fps, 4.0);
  // Without frame_rate the frames are taken as 2 per second: every one is used.
  const ChatCompletionRequest d = parse_user(json{{{"type", "video"}, {"video", {png}}}});
  EXPECT_EQ(d.chat.messages.at(0).content.at(0).video.images_fps, 2.0);
}

TEST(OpenAIRequestVideo, BadVideoPartsAre400NamingTheField) {
  RequestPolicy p = policy();
  p.images.video_caps.max_tokens = 1000;
  p.images.max_video_frames = 2;
  p.images.max_video_bytes = 4;
  const std::string url = "data:video/mp4;base64," + kVideoB64;
  const std::string png = "data:image/png;base64,iVBORw0KGgo=";
  const json small = {{"type", "video_url"}, {"video_url", {{"url", "data:video/mp4;base64,AAAA"}}}};
  auto with = [&](json part, const char* key, json value) {
    part[key] = value;
    return json{part};
  };
  EXPECT_EQ(user_error(json{small}, p).status, 0);
  // Over the server's caps, or not a positive number.
  EXPECT_API_ERROR(user_error(with(small, "max_tokens", 1001), p), 400, "messages[0].content[0].max_tokens", "invalid_value");
  EXPECT_API_ERROR(user_error(with(small, "max_frames", 769), p), 400, "messages[0].content[0].max_frames", "invalid_value");
  EXPECT_API_ERROR(user_error(with(small, "max_frames", 2.5), p), 400, "messages[0].content[0].max_frames", "invalid_value");
  EXPECT_API_ERROR(user_error(with(small, "fps", 0), p), 400, "messages[0].content[0].fps", "invalid_value");
  EXPECT_API_ERROR(user_error(with(small, "fps", "2"), p), 400, "messages[0].content[0].fps", "invalid_value");
  // Too big, not base64, not a data: URL, no URL at all.
  EXPECT_API_ERROR(user_error(json{{{"type", "video_url"}, {"video_url", {{"url", url}}}}}, p), 400,
                   "messages[0].content[0].video_url.url", "invalid_value");
  EXPECT_API_ERROR(user_error(json{{{"type", "video_url"}, {"video_url", {{"url", "data:video/mp4;base64,@@"}}}}}, p),
                   400, "messages[0].content[0].video_url.url", "invalid_value");
  EXPECT_API_ERROR(user_error(json{{{"type", "video_url"}, {"video_url", {{"url", "/etc/passwd"}}}}}, p), 400,
                   "messages[0].content[0].video_url.url", "invalid_value");
  EXPECT_API_ERROR(user_error(json{{{"type", "video_url"}, {"video_url", 3}}}, p), 400,
                   "messages[0].content[0].video_url", "invalid_value");
  EXPECT_API_ERROR(user_error(json{{{"type", "input_video"}, {"input_video", {{"format", "mp4"}}}}}, p), 400,
                   "messages[0].content[0].input_video", "invalid_value");
  EXPECT_API_ERROR(user_error(json{{{"type", "input_video"}, {"input_video", {{"data", "!!"}}}}}, p), 400,
                   "messages[0].content[0].input_video.data", "invalid_value");
  // Frames: too many, none, one that is not a URL.
  EXPECT_API_ERROR(user_error(json{{{"type", "video"}, {"video", {png, png, png}}}}, p), 400,
                   "messages[0].content[0].video", "invalid_value");
  EXPECT_API_ERROR(user_error(json{{{"type", "video"}, {"video", json::array()}}}, p), 400,
                   "messages[0].content[0].video", "invalid_value");
  EXPECT_API_ERROR(user_error(json{{{"type", "video"}, {"video", {png, 7}}}}, p), 400,
                   "messages[0].content[0].video[1]", "invalid_value");
}

TEST(OpenAIRequestVideo, VideoCountIsLimited) {
  RequestPolicy p = policy();
  p.max_videos = 1;
  const json part = {{"type", "input_video"}, {"input_video", {{"data", kVideoB64}}}};
  EXPECT_EQ(user_error(json{part}, p).status, 0);
  EXPECT_API_ERROR(user_error(json{part, part}, p), 400, "messages", "too_many_videos");
}

}  // namespace
}  // namespace qwen35::server
