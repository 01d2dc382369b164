// Response JSON and the exact SSE bytes of chat and completion streams.
#include <gtest/gtest.h>

#include "server/openai/response.h"

namespace qwen35::server {
namespace {

using json = nlohmann::ordered_json;

ResponseMeta meta() { return {"chatcmpl-abc", 1700000000, "tiny"}; }

GenerationResult result(StopReason reason) {
  GenerationResult r;
  r.content = "Hello";
  r.reasoning = "think";
  r.stop_reason = reason;
  r.prompt_tokens = 12;
  r.cached_tokens = 8;
  r.completion_tokens = 5;
  r.reasoning_tokens = 3;
  r.image_tokens = 4;
  r.video_tokens = 6;
  r.timings.prefill_tokens = 4;
  r.timings.prefill_ms = 2;
  r.timings.decode_tokens = 4;
  r.timings.decode_ms = 8;
  r.timings.vision_ms = 1.5;
  r.timings.draft_ms = 0.5;
  r.mtp_drafted = 6;
  r.mtp_accepted = 2;
  r.pld_drafted = 3;
  r.pld_accepted = 1;
  return r;
}

std::vector<json> parse_sse(const std::string& text, bool* done) {
  std::vector<json> out;
  *done = false;
  size_t pos = 0;
  while (pos < text.size()) {
    const size_t end = text.find("\n\n", pos);
    EXPECT_NE(end, std::string::npos) << "every event ends with a blank line";
    if (end == std::string::npos) break;
    const std::string event = text.substr(pos, end - pos);
    EXPECT_EQ(event.rfind("data: ", 0), 0u) << event;
    const std::string data = event.substr(6);
    if (data == "[DONE]") *done = true;
    else out.push_back(json::parse(data));
    pos = end + 2;
  }
  return out;
}

TEST(OpenAIResponse, FinishReasons) {
  EXPECT_EQ(finish_reason_json(StopReason::kEos), "stop");
  EXPECT_EQ(finish_reason_json(StopReason::kStopString), "stop");
  EXPECT_EQ(finish_reason_json(StopReason::kMaxTokens), "length");
  EXPECT_EQ(finish_reason_json(StopReason::kContextFull), "length");
  EXPECT_TRUE(finish_reason_json(StopReason::kCancelled).is_null());
}

TEST(OpenAIResponse, UsageAndTimings) {
  const json u = usage_json(result(StopReason::kEos));
  EXPECT_EQ(u["prompt_tokens"], 12);
  EXPECT_EQ(u["completion_tokens"], 5);
  EXPECT_EQ(u["total_tokens"], 17);
  EXPECT_EQ(u["prompt_tokens_details"]["cached_tokens"], 8);
  EXPECT_EQ(u["prompt_tokens_details"]["image_tokens"], 4);
  EXPECT_EQ(u["prompt_tokens_details"]["video_tokens"], 6);
  EXPECT_EQ(u["completion_tokens_details"]["reasoning_tokens"], 3);
  const json t = timings_json(result(StopReason::kEos));
  EXPECT_EQ(t["prompt_n"], 4);
  EXPECT_DOUBLE_EQ(t["prompt_ms"].get<double>(), 2.0);
  EXPECT_DOUBLE_EQ(t["prompt_per_second"].get<double>(), 2000.0);
  EXPECT_EQ(t["predicted_n"], 5);
  EXPECT_DOUBLE_EQ(t["predicted_per_second"].get<double>(), 500.0);
  EXPECT_EQ(t["cached_n"], 8);
  EXPECT_DOUBLE_EQ(t["vision_ms"].get<double>(), 1.5);
  EXPECT_EQ(t["draft_n"], 9);  // speculative drafts of both sources
  EXPECT_EQ(t["draft_n_accepted"], 3);
  EXPECT_DOUBLE_EQ(t["draft_ms"].get<double>(), 0.5);
  GenerationResult idle;
  EXPECT_EQ(timings_json(idle)["prompt_per_second"], 0.0);  // no division by zero
}

TEST(OpenAIResponse, ChatCompletionObject) {
  const json j = chat_completion_json(meta(), result(StopReason::kEos), nullptr, 0, nullptr);
  EXPECT_EQ(j.begin().key(), "id");  // OpenAI's key order
  EXPECT_EQ(j["object"], "chat.completion");
  EXPECT_EQ(j["model"], "tiny");
  EXPECT_EQ(j["choices"][0]["message"]["role"], "assistant");
  EXPECT_EQ(j["choices"][0]["message"]["content"], "Hello");
  EXPECT_EQ(j["choices"][0]["message"]["reasoning_content"], "think");
  EXPECT_EQ(j["choices"][0]["finish_reason"], "stop");
  EXPECT_TRUE(j["choices"][0]["logprobs"].is_null());
  EXPECT_EQ(j["usage"]["prompt_tokens_details"]["cached_tokens"], 8);
  EXPECT_EQ(j["usage"]["completion_tokens_details"]["reasoning_tokens"], 3);
  EXPECT_TRUE(j["timings"].contains("predicted_per_second"));
  GenerationResult plain = result(StopReason::kMaxTokens);
  plain.reasoning.clear();
  const json k = chat_completion_json(meta(), plain, nullptr, 0, nullptr);
  EXPECT_FALSE(k["choices"][0]["message"].contains("reasoning_content"));
  EXPECT_EQ(k["choices"][0]["finish_reason"], "length");
}

TEST(OpenAIResponse, ChatLogprobs) {
  TokenLogprob lp;
  lp.token = 7;
  lp.text = "\xe6\xb8";  // a token that ends mid-character
  lp.logprob = -0.5f;
  lp.top = {{7, -0.5f}, {9, -1.5f}, {11, -2.5f}};
  auto text = [](int32_t id) { return std::string("t").append(std::to_string(id)); };
  const json j = chat_logprobs_json({lp}, 2, text);
  ASSERT_EQ(j["content"].size(), 1u);
  EXPECT_EQ(j["content"][0]["bytes"], json::array({0xe6, 0xb8}));
  EXPECT_DOUBLE_EQ(j["content"][0]["logprob"].get<double>(), -0.5);
  ASSERT_EQ(j["content"][0]["top_logprobs"].size(), 2u);
  EXPECT_EQ(j["content"][0]["top_logprobs"][1]["token"], "t9");
  // Dumping never throws on the broken character: it is replaced.
  const std::string s = dump_json(j);
  EXPECT_NE(s.find("\xef\xbf\xbd"), std::string::npos);
}

TEST(OpenAIResponse, CompletionLogprobs) {
  TokenLogprob a{1, "ab", -1.0f, {{1, -1.0f}, {2, -2.0f}}};
  TokenLogprob b{2, "c", -2.0f, {{3, -0.5f}, {2, -2.0f}}};
  const json j = completion_logprobs_json({a, b}, 1, [](int32_t id) { return std::string("x").append(std::to_string(id)); }, 10);
  EXPECT_EQ(j["tokens"], json::array({"ab", "c"}));
  EXPECT_EQ(j["text_offset"], json::array({10, 12}));
  EXPECT_EQ(j["top_logprobs"][1].size(), 1u);
  EXPECT_DOUBLE_EQ(j["top_logprobs"][1]["x3"].get<double>(), -0.5);
}

TEST(OpenAIResponse, ChatStreamBytes) {
  ChatStream s(meta(), /*include_usage=*/true, false, 0, nullptr);
  std::string all = s.start();
  EXPECT_EQ(all.rfind("data: {\"id\":\"chatcmpl-abc\",\"object\":\"chat.completion.chunk\",\"created\":1700000000,", 0), 0u)
      << all;
  all += s.event({Channel::kReasoning, "Let me think", {}});
  all += s.event({Channel::kContent, "", {}});  // nothing to send
  all += s.event({Channel::kContent, "Hi", {}});
  all += s.finish(result(StopReason::kEos));
  bool done = false;
  const std::vector<json> chunks = parse_sse(all, &done);
  EXPECT_TRUE(done);
  EXPECT_EQ(all.substr(all.size() - 14), "data: [DONE]\n\n");
  ASSERT_EQ(chunks.size(), 5u);
  EXPECT_EQ(chunks[0]["choices"][0]["delta"]["role"], "assistant");
  EXPECT_EQ(chunks[1]["choices"][0]["delta"]["reasoning_content"], "Let me think");
  EXPECT_FALSE(chunks[1]["choices"][0]["delta"].contains("content"));
  EXPECT_EQ(chunks[2]["choices"][0]["delta"]["content"], "Hi");
  EXPECT_TRUE(chunks[2]["choices"][0]["finish_reason"].is_null());
  EXPECT_TRUE(chunks[2]["usage"].is_null());  // include_usage: null until the last chunk
  EXPECT_EQ(chunks[3]["choices"][0]["finish_reason"], "stop");
  EXPECT_TRUE(chunks[3]["choices"][0]["delta"].empty());
  EXPECT_TRUE(chunks[4]["choices"].empty());
  EXPECT_EQ(chunks[4]["usage"]["total_tokens"], 17);
  EXPECT_EQ(chunks[4]["usage"]["prompt_tokens_details"]["cached_tokens"], 8);
  EXPECT_EQ(chunks[4]["usage"]["completion_tokens_details"]["reasoning_tokens"], 3);
  EXPECT_EQ(chunks[4]["timings"]["cached_n"], 8);
  for (const json& c : chunks) EXPECT_EQ(c["id"], "chatcmpl-abc");
}

TEST(OpenAIResponse, ChatStreamWithoutUsage) {
  ChatStream s(meta(), false, false, 0, nullptr);
  std::string all = s.start() + s.event({Channel::kContent, "x", {}}) + s.finish(result(StopReason::kMaxTokens));
  bool done = false;
  const std::vector<json> chunks = parse_sse(all, &done);
  ASSERT_EQ(chunks.size(), 3u);
  for (const json& c : chunks) EXPECT_FALSE(c.contains("usage"));
  EXPECT_EQ(chunks[2]["choices"][0]["finish_reason"], "length");
  EXPECT_TRUE(done);
}

TEST(OpenAIResponse, ChatStreamLogprobsAndErrors) {
  ChatStream s(meta(), false, true, 1, [](int32_t) { return std::string("alt"); });
  TokenLogprob lp{5, "x", -0.25f, {{6, -0.1f}}};
  bool done = false;
  std::vector<json> c = parse_sse(s.event({Channel::kContent, "x", {lp}}), &done);
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(c[0]["choices"][0]["logprobs"]["content"][0]["top_logprobs"][0]["token"], "alt");
  // logprobs of a token without text yet (a partial character) still go out
  c = parse_sse(s.event({Channel::kContent, "", {lp}}), &done);
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(c[0]["choices"][0]["delta"]["content"], "");
  c = parse_sse(s.error(ApiError(503, "shutting down", "unavailable_error")), &done);
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(c[0]["error"]["message"], "shutting down");
  EXPECT_TRUE(done);
}

TEST(OpenAIResponse, CompletionStreamBytes) {
  ResponseMeta m{"cmpl-1", 1, "tiny"};
  CompletionStream s(m, true, false, 0, nullptr);
  std::string all = s.start("Once");
  all += s.event({Channel::kContent, " upon", {}});
  all += s.event({Channel::kReasoning, " a time", {}});
  all += s.finish(result(StopReason::kStopString));
  bool done = false;
  const std::vector<json> chunks = parse_sse(all, &done);
  EXPECT_TRUE(done);
  ASSERT_EQ(chunks.size(), 5u);
  EXPECT_EQ(chunks[0]["object"], "text_completion");
  EXPECT_EQ(chunks[0]["choices"][0]["text"], "Once");
  EXPECT_EQ(chunks[1]["choices"][0]["text"], " upon");
  EXPECT_EQ(chunks[2]["choices"][0]["text"], " a time");
  EXPECT_EQ(chunks[3]["choices"][0]["finish_reason"], "stop");
  EXPECT_EQ(chunks[4]["usage"]["completion_tokens"], 5);
  EXPECT_EQ(CompletionStream(m, false, false, 0, nullptr).start(""), "");
}

TEST(OpenAIResponse, TextCompletionObject) {
  const json j = text_completion_json({"cmpl-1", 1, "tiny"}, "abc", result(StopReason::kEos), nullptr, 0, nullptr, 0);
  EXPECT_EQ(j["object"], "text_completion");
  EXPECT_EQ(j["choices"][0]["text"], "abc");
  EXPECT_EQ(j["choices"][0]["finish_reason"], "stop");
  EXPECT_EQ(j["usage"]["prompt_tokens"], 12);
}

TEST(OpenAIResponse, IdsAreFreshAndPrefixed) {
  const ResponseMeta a = new_response_meta("chatcmpl", "m"), b = new_response_meta("chatcmpl", "m");
  EXPECT_EQ(a.id.rfind("chatcmpl-", 0), 0u);
  EXPECT_EQ(a.id.size(), 9u + 24u);
  EXPECT_NE(a.id, b.id);
  EXPECT_GT(a.created, 1600000000);
}

}  // namespace
}  // namespace qwen35::server
