// Tool calls in Qwen3.5's XML format -> OpenAI tool_calls, non-streaming and streamed.
#include <gtest/gtest.h>

#include "server/openai/response.h"
#include "server/openai/tool_calls.h"

namespace qwen35::server {
namespace {

using json = nlohmann::ordered_json;

json weather_tools() {
  return json::parse(R"([{"type":"function","function":{"name":"get_weather","parameters":{"type":"object",
    "properties":{"city":{"type":"string"},"days":{"type":"integer"},"zip":{"type":"string"},"opts":{"type":"object"}}}}}])");
}

const char* kCall =
    "Let me check.\n\n<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n"
    "<parameter=days>\n3\n</parameter>\n<parameter=zip>\n75001\n</parameter>\n<parameter=opts>\n{\"units\": \"C\"}\n"
    "</parameter>\n</function>\n</tool_call>";

TEST(ToolCalls, ParsesTheTemplateFormat) {
  const ToolCallSplit s = parse_tool_calls(kCall, weather_tools());
  EXPECT_EQ(s.content, "Let me check.");
  ASSERT_EQ(s.calls.size(), 1u);
  EXPECT_EQ(s.calls[0].name, "get_weather");
  EXPECT_EQ(s.calls[0].id.rfind("call_", 0), 0u);
  const json args = json::parse(s.calls[0].arguments_json);
  EXPECT_EQ(args["city"], "Paris");
  EXPECT_EQ(args["days"], 3);         // integer by schema
  EXPECT_EQ(args["zip"], "75001");    // string by schema, though it looks like a number
  EXPECT_EQ(args["opts"]["units"], "C");
  EXPECT_EQ(args.begin().key(), "city");  // the model's order
}

TEST(ToolCalls, SeveralCallsAndMultiLineValues) {
  const std::string two =
      "<tool_call>\n<function=a>\n<parameter=text>\nline one\nline two\n</parameter>\n</function>\n</tool_call>\n"
      "<tool_call>\n<function=b>\n</function>\n</tool_call>";
  const ToolCallSplit s = parse_tool_calls(two, nullptr);
  ASSERT_EQ(s.calls.size(), 2u);
  EXPECT_EQ(s.content, "");
  EXPECT_EQ(json::parse(s.calls[0].arguments_json)["text"], "line one\nline two");
  EXPECT_EQ(s.calls[1].name, "b");
  EXPECT_EQ(s.calls[1].arguments_json, "{}");
  EXPECT_NE(s.calls[0].id, s.calls[1].id);
}

TEST(ToolCalls, MalformedOrCutOffOutputStaysContent) {
  for (const std::string& text : {std::string("no call here"), std::string("<tool_call>\n<function=f>\n<parameter=x>\n1"),
                                 std::string("<tool_call>\nnot a function\n</tool_call>"),
                                 std::string("<tool_call>\n<function=>\n</function>\n</tool_call>")}) {
    const ToolCallSplit s = parse_tool_calls(text, nullptr);
    EXPECT_TRUE(s.calls.empty()) << text;
    EXPECT_EQ(s.content, text);
  }
}

TEST(ToolCalls, ChatCompletionMessage) {
  GenerationResult r;
  r.content = kCall;
  r.stop_reason = StopReason::kEos;
  const json j = chat_completion_json({"chatcmpl-1", 1, "m"}, r, nullptr, 0, nullptr, weather_tools());
  const json& choice = j["choices"][0];
  EXPECT_EQ(choice["finish_reason"], "tool_calls");
  EXPECT_EQ(choice["message"]["content"], "Let me check.");
  ASSERT_EQ(choice["message"]["tool_calls"].size(), 1u);
  EXPECT_EQ(choice["message"]["tool_calls"][0]["type"], "function");
  EXPECT_EQ(choice["message"]["tool_calls"][0]["function"]["name"], "get_weather");
  EXPECT_TRUE(choice["message"]["tool_calls"][0]["function"]["arguments"].is_string());
  // Without tools in the request the text is plain content.
  const json k = chat_completion_json({"chatcmpl-1", 1, "m"}, r, nullptr, 0, nullptr);
  EXPECT_EQ(k["choices"][0]["message"]["content"], kCall);
  EXPECT_EQ(k["choices"][0]["finish_reason"], "stop");
}

std::vector<json> events_of(const std::string& sse) {
  std::vector<json> out;
  size_t pos = 0;
  while ((pos = sse.find("data: ", pos)) != std::string::npos) {
    const size_t end = sse.find("\n\n", pos);
    const std::string data = sse.substr(pos + 6, end - pos - 6);
    if (data != "[DONE]") out.push_back(json::parse(data));
    pos = end;
  }
  return out;
}

// The stream assembled the way the OpenAI SDK's stream helpers do it: per index, the first delta
// brings id, type and name, later ones append to the arguments (and bring no id or name).
struct Assembled {
  std::string content, reason;
  json calls = json::array();
};

Assembled assemble(const std::string& sse) {
  Assembled a;
  for (const json& e : events_of(sse)) {
    const json& c = e["choices"][0];
    if (c["delta"].contains("content")) a.content += c["delta"]["content"].get<std::string>();
    if (c["finish_reason"].is_string()) a.reason = c["finish_reason"];
    if (!c["delta"].contains("tool_calls")) continue;
    for (const json& tc : c["delta"]["tool_calls"]) {
      const size_t i = tc["index"].get<size_t>();
      if (i == a.calls.size()) {
        EXPECT_TRUE(tc.contains("id") && tc["type"] == "function" && tc["function"].contains("name")) << tc;
        a.calls.push_back({{"id", tc["id"]}, {"name", tc["function"]["name"]}, {"arguments", tc["function"]["arguments"]}});
      } else {
        EXPECT_LT(i, a.calls.size()) << tc;
        EXPECT_FALSE(tc.contains("id") || tc["function"].contains("name")) << tc;
        a.calls[i]["arguments"] = a.calls[i]["arguments"].get<std::string>() + tc["function"]["arguments"].get<std::string>();
      }
    }
  }
  return a;
}

TEST(ToolCalls, StreamSendsCallsAsOpenAIDoes) {
  const std::string text = kCall;
  const std::string args = parse_tool_calls(kCall, weather_tools()).calls.at(0).arguments_json;
  // Split the output at every position into two pieces, then into pieces of one byte: the stream
  // must assemble to the non-streamed call.
  for (size_t cut = 0; cut <= text.size() + 1; ++cut) {
    ChatStream s({"chatcmpl-1", 1, "m"}, false, false, 0, nullptr);
    s.enable_tool_calls(weather_tools());
    std::string sse = s.start();
    if (cut <= text.size()) {
      sse += s.event({Channel::kContent, text.substr(0, cut), {}});
      sse += s.event({Channel::kContent, text.substr(cut), {}});
    } else {
      for (char c : text) sse += s.event({Channel::kContent, std::string(1, c), {}});
    }
    GenerationResult r;
    r.stop_reason = StopReason::kEos;
    sse += s.finish(r);
    const Assembled a = assemble(sse);
    EXPECT_EQ(a.content, "Let me check.\n\n") << "cut " << cut;
    ASSERT_EQ(a.calls.size(), 1u) << "cut " << cut;
    EXPECT_EQ(a.calls[0]["name"], "get_weather");
    EXPECT_EQ(a.calls[0]["arguments"], args) << "cut " << cut;
    EXPECT_EQ(a.reason, "tool_calls");
  }
  // The name goes out as soon as the function tag closes, each argument as its parameter closes.
  ChatStream s({"chatcmpl-1", 1, "m"}, false, false, 0, nullptr);
  s.enable_tool_calls(weather_tools());
  const size_t fn = text.find("<function=get_weather>\n") + 22, city = text.find("</parameter>") + 12;
  const std::string head = s.event({Channel::kContent, text.substr(0, fn), {}});
  EXPECT_NE(head.find(R"("name":"get_weather","arguments":"")"), std::string::npos) << head;
  const std::string first = s.event({Channel::kContent, text.substr(fn, city - fn), {}});
  EXPECT_NE(first.find(R"("arguments":"{\"city\":\"Paris\"")"), std::string::npos) << first;
}

TEST(ToolCalls, StreamSeveralCallsAndACutOffOne) {
  const std::string two =
      "<tool_call>\n<function=a>\n<parameter=text>\nline one\nline two\n</parameter>\n</function>\n</tool_call>\n"
      "<tool_call>\n<function=b>\n</function>\n</tool_call>";
  ChatStream s({"chatcmpl-1", 1, "m"}, false, false, 0, nullptr);
  s.enable_tool_calls(json::array());
  std::string sse;
  for (size_t i = 0; i < two.size(); i += 5) sse += s.event({Channel::kContent, two.substr(i, 5), {}});
  GenerationResult r;
  r.stop_reason = StopReason::kEos;
  sse += s.finish(r);
  const Assembled a = assemble(sse);
  ASSERT_EQ(a.calls.size(), 2u);
  EXPECT_EQ(a.calls[0]["arguments"], R"({"text":"line one\nline two"})");
  EXPECT_EQ(a.calls[1]["name"], "b");
  EXPECT_EQ(a.calls[1]["arguments"], "{}");
  EXPECT_NE(a.calls[0]["id"], a.calls[1]["id"]);
  EXPECT_EQ(a.content, "");
  EXPECT_EQ(a.reason, "tool_calls");
  // Cut off inside the arguments: the call was announced, the reason is the cut.
  ChatStream cut({"chatcmpl-1", 1, "m"}, false, false, 0, nullptr);
  cut.enable_tool_calls(json::array());
  sse = cut.event({Channel::kContent, two.substr(0, 40), {}});
  r.stop_reason = StopReason::kMaxTokens;
  sse += cut.finish(r);
  const Assembled b = assemble(sse);
  ASSERT_EQ(b.calls.size(), 1u);
  EXPECT_EQ(b.reason, "length");
}

TEST(ToolCalls, StreamReleasesTextThatIsNotACall) {
  ChatStream s({"chatcmpl-1", 1, "m"}, false, false, 0, nullptr);
  s.enable_tool_calls(weather_tools());
  std::string sse = s.event({Channel::kContent, "a <tool", {}});
  sse += s.event({Channel::kContent, "box> b <tool_c", {}});
  GenerationResult r;
  r.stop_reason = StopReason::kMaxTokens;
  sse += s.finish(r);
  std::string content;
  std::string reason;
  for (const json& e : events_of(sse)) {
    const json& c = e["choices"][0];
    if (c["delta"].contains("content")) content += c["delta"]["content"].get<std::string>();
    if (c["finish_reason"].is_string()) reason = c["finish_reason"];
  }
  EXPECT_EQ(content, "a <toolbox> b <tool_c");
  EXPECT_EQ(reason, "length");
}

}  // namespace
}  // namespace qwen35::server
