// Structured output through the API (issue 45): response_format (json_object, json_schema),
// llama-server's json_schema and grammar fields, /v1/completions, tool calls under
// tool_choice "required" or a named function, and the 400s for what cannot be enforced. The tiny
// model's random weights write gibberish unless constrained.
#include <gtest/gtest.h>

#include <cstdlib>

#include <nlohmann/json.hpp>

#include "raw_http.h"
#include "served.h"

namespace qwen35::server {
namespace {

using namespace std::chrono_literals;
using json = nlohmann::json;
using test::post_request;
using test::raw_exchange;
using test::RawResponse;
using test::ServedTiny;

const json kSchema = json::parse(R"({"type": "object", "properties": {
    "ok": {"type": "boolean"}, "n": {"type": "integer", "minimum": -5, "maximum": 5},
    "word": {"type": "string", "pattern": "^[a-z]{1,8}$"}},
  "required": ["ok", "n", "word"], "additionalProperties": false})");

json chat_body(json extra) {
  json b = {{"messages", {{{"role", "user"}, {"content", "Answer in JSON."}}}},
            {"chat_template_kwargs", {{"enable_thinking", false}}},
            {"max_tokens", 200},
            {"temperature", 1.0},
            {"seed", 7}};
  for (auto it = extra.begin(); it != extra.end(); ++it) b[it.key()] = it.value();
  return b;
}

RawResponse post(int port, const char* path, const json& body) {
  return raw_exchange(port, post_request(path, body.dump()), 60s);
}

void expect_valid(const std::string& text) {
  ASSERT_TRUE(json::accept(text)) << text;
  const json v = json::parse(text);
  ASSERT_TRUE(v.is_object()) << text;
  ASSERT_EQ(v.size(), 3u) << text;
  EXPECT_TRUE(v["ok"].is_boolean());
  ASSERT_TRUE(v["n"].is_number_integer()) << text;
  EXPECT_LE(std::abs(v["n"].get<int>()), 5);
  const std::string w = v["word"].get<std::string>();
  EXPECT_TRUE(!w.empty() && w.size() <= 8 && std::all_of(w.begin(), w.end(), [](char c) { return c >= 'a' && c <= 'z'; })) << w;
}

TEST(StructuredOutput, ResponseFormatJsonSchemaAndJsonObject) {
  ServedTiny s;
  for (int seed : {1, 2, 3}) {
    const RawResponse r = post(s.port(), "/v1/chat/completions",
                               chat_body({{"seed", seed},
                                          {"response_format", {{"type", "json_schema"},
                                                               {"json_schema", {{"name", "t"}, {"schema", kSchema}, {"strict", true}}}}}}));
    ASSERT_EQ(r.status, 200) << r.body;
    const json a = json::parse(r.body);
    EXPECT_EQ(a["choices"][0]["finish_reason"], "stop");
    expect_valid(a["choices"][0]["message"]["content"].get<std::string>());
  }
  const RawResponse o = post(s.port(), "/v1/chat/completions", chat_body({{"response_format", {{"type", "json_object"}}}}));
  ASSERT_EQ(o.status, 200) << o.body;
  EXPECT_EQ(json::parse(o.body)["choices"][0]["message"]["content"].get<std::string>().front(), '{');
}

TEST(StructuredOutput, LlamaServerFieldsAndCompletions) {
  ServedTiny s;
  RawResponse r = post(s.port(), "/v1/chat/completions", chat_body({{"json_schema", kSchema}}));
  ASSERT_EQ(r.status, 200) << r.body;
  expect_valid(json::parse(r.body)["choices"][0]["message"]["content"].get<std::string>());
  r = post(s.port(), "/v1/chat/completions", chat_body({{"grammar", "root ::= \"A\" [0-9] \"!\""}}));
  ASSERT_EQ(r.status, 200) << r.body;
  const std::string g = json::parse(r.body)["choices"][0]["message"]["content"].get<std::string>();
  EXPECT_TRUE(g.size() == 3 && g[0] == 'A' && g[1] >= '0' && g[1] <= '9' && g[2] == '!') << g;
  r = post(s.port(), "/v1/completions",
           {{"prompt", "JSON: "}, {"max_tokens", 200}, {"temperature", 1.0}, {"seed", 3}, {"json_schema", kSchema}});
  ASSERT_EQ(r.status, 200) << r.body;
  expect_valid(json::parse(r.body)["choices"][0]["text"].get<std::string>());
}

TEST(StructuredOutput, RequiredAndNamedToolCalls) {
  ServedTiny s(ServedTiny::defaults(), true, 1024);  // the tools' system prompt is long
  const json tools = json::parse(R"([
    {"type": "function", "function": {"name": "set_level", "parameters": {"type": "object",
      "properties": {"level": {"type": "integer", "minimum": 0, "maximum": 9}, "mode": {"type": "string", "enum": ["on", "off"]}},
      "required": ["level", "mode"]}}},
    {"type": "function", "function": {"name": "ping", "parameters": {"type": "object", "properties": {}}}}])");
  for (const json& choice : {json("required"), json{{"type", "function"}, {"function", {{"name", "set_level"}}}}}) {
    const RawResponse r = post(s.port(), "/v1/chat/completions",
                               chat_body({{"tools", tools}, {"tool_choice", choice}, {"parallel_tool_calls", false}}));
    ASSERT_EQ(r.status, 200) << r.body;
    const json m = json::parse(r.body)["choices"][0];
    EXPECT_EQ(m["finish_reason"], "tool_calls") << r.body;
    ASSERT_EQ(m["message"]["tool_calls"].size(), 1u) << r.body;
    const json fn = m["message"]["tool_calls"][0]["function"];
    const json args = json::parse(fn["arguments"].get<std::string>());
    if (choice.is_object()) {
      EXPECT_EQ(fn["name"], "set_level");
    }
    if (fn["name"] == "set_level") {
      ASSERT_TRUE(args["level"].is_number_integer()) << args;
      EXPECT_LE(args["level"].get<int>(), 9);
      EXPECT_TRUE(args["mode"] == "on" || args["mode"] == "off") << args;
    } else {
      EXPECT_EQ(fn["name"], "ping");
    }
  }
}

// A mask past the masker's work bound (QWEN35_MAX_MASK_WORK makes any grammar cross it) ends that
// request with a 400 naming the bound, or an error event where the answer streams; the server
// keeps serving.
TEST(StructuredOutput, AMaskPastItsWorkBoundIs400) {
  struct Bound {
    Bound() { setenv("QWEN35_MAX_MASK_WORK", "1", 1); }
    ~Bound() { unsetenv("QWEN35_MAX_MASK_WORK"); }
  };
  ServedTiny s;
  const json format = {{"response_format", {{"type", "json_schema"}, {"json_schema", {{"name", "t"}, {"schema", kSchema}}}}}};
  {
    Bound bound;
    RawResponse r = post(s.port(), "/v1/chat/completions", chat_body(format));
    ASSERT_EQ(r.status, 400) << r.body;
    const std::string m = json::parse(r.body)["error"]["message"].get<std::string>();
    EXPECT_NE(m.find("cannot be enforced"), std::string::npos) << m;
    EXPECT_NE(m.find("more than 1 matcher steps"), std::string::npos) << m;
    json streamed = chat_body(format);
    streamed["stream"] = true;
    r = post(s.port(), "/v1/chat/completions", streamed);
    EXPECT_NE(r.body.find("cannot be enforced"), std::string::npos) << r.body;
  }
  const RawResponse ok = post(s.port(), "/v1/chat/completions", chat_body(format));
  ASSERT_EQ(ok.status, 200) << ok.body;
  expect_valid(json::parse(ok.body)["choices"][0]["message"]["content"].get<std::string>());
}

TEST(StructuredOutput, WhatCannotBeEnforcedIs400) {
  ServedTiny s;
  json schema = kSchema;
  schema["properties"]["n"]["multipleOf"] = 2;
  RawResponse r = post(s.port(), "/v1/chat/completions",
                       chat_body({{"response_format", {{"type", "json_schema"}, {"json_schema", {{"name", "t"}, {"schema", schema}}}}}}));
  ASSERT_EQ(r.status, 400) << r.body;
  json e = json::parse(r.body)["error"];
  EXPECT_EQ(e["param"], "response_format");
  EXPECT_NE(e["message"].get<std::string>().find("'multipleOf' at #/properties/n"), std::string::npos) << e;
  // strict: false relaxes it.
  r = post(s.port(), "/v1/chat/completions",
           chat_body({{"max_tokens", 4},
                      {"response_format", {{"type", "json_schema"}, {"json_schema", {{"name", "t"}, {"schema", schema}, {"strict", false}}}}}}));
  EXPECT_EQ(r.status, 200) << r.body;
  r = post(s.port(), "/v1/chat/completions", chat_body({{"grammar", "root ::= (\"x\""}}));
  ASSERT_EQ(r.status, 400) << r.body;
  EXPECT_EQ(json::parse(r.body)["error"]["param"], "grammar");
  r = post(s.port(), "/v1/chat/completions", chat_body({{"grammar", "root ::= \"x\""}, {"json_schema", kSchema}}));
  ASSERT_EQ(r.status, 400) << r.body;
  r = post(s.port(), "/v1/chat/completions", chat_body({{"response_format", {{"type", "yaml"}}}}));
  ASSERT_EQ(r.status, 400) << r.body;
  EXPECT_EQ(json::parse(r.body)["error"]["param"], "response_format.type");
  r = post(s.port(), "/v1/completions", {{"prompt", "x"}, {"json_schema", {{"type", "string"}, {"pattern", "(?=x)"}}}});
  ASSERT_EQ(r.status, 400) << r.body;
  EXPECT_NE(json::parse(r.body)["error"]["message"].get<std::string>().find("pattern"), std::string::npos);
}

}  // namespace
}  // namespace qwen35::server
