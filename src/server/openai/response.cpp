#include "server/openai/response.h"

#include "server/openai/tool_calls.h"

#include <chrono>
#include <random>

namespace qwen35::server {
namespace {

using json = nlohmann::ordered_json;

json bytes_json(const std::string& s) {
  json b = json::array();
  for (unsigned char c : s) b.push_back(int(c));
  return b;
}

double per_second(double n, double ms) { return ms > 0 ? n * 1000.0 / ms : 0.0; }

}  // namespace

ResponseMeta new_response_meta(const std::string& prefix, const std::string& model) {
  static thread_local std::mt19937_64 rng(std::random_device{}());
  static const char* hex = "0123456789abcdef";
  std::string id = prefix + "-";
  for (int i = 0; i < 24; ++i) id += hex[rng() & 15];
  ResponseMeta m;
  m.id = std::move(id);
  m.created = std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
  m.model = model;
  return m;
}

json finish_reason_json(StopReason r) {
  switch (r) {
    case StopReason::kEos:
    case StopReason::kStopString:
      return "stop";
    case StopReason::kMaxTokens:
    case StopReason::kContextFull:
      return "length";
    case StopReason::kNone:
    case StopReason::kCancelled:
      break;
  }
  return nullptr;
}

json usage_json(const GenerationResult& r) {
  return json{{"prompt_tokens", r.prompt_tokens},
              {"completion_tokens", r.completion_tokens},
              {"total_tokens", r.prompt_tokens + r.completion_tokens},
              {"prompt_tokens_details",
               {{"cached_tokens", r.cached_tokens}, {"image_tokens", r.image_tokens}, {"video_tokens", r.video_tokens}}},
              {"completion_tokens_details", {{"reasoning_tokens", r.reasoning_tokens}}}};
}

json timings_json(const GenerationResult& r) {
  const Timings& t = r.timings;
  return json{{"prompt_n", t.prefill_tokens},
              {"prompt_ms", t.prefill_ms},
              {"prompt_per_second", per_second(double(t.prefill_tokens), t.prefill_ms)},
              {"predicted_n", r.completion_tokens},
              {"predicted_ms", t.decode_ms},
              {"predicted_per_second", per_second(double(t.decode_tokens), t.decode_ms)},
              {"cached_n", r.cached_tokens},
              {"vision_ms", t.vision_ms},
              {"draft_n", r.drafted()},
              {"draft_n_accepted", r.accepted()},
              {"draft_ms", t.draft_ms}};
}

json chat_logprobs_json(const std::vector<TokenLogprob>& lps, int top_n, const TokenText& text) {
  json content = json::array();
  for (const TokenLogprob& lp : lps) {
    json top = json::array();
    for (size_t i = 0; i < lp.top.size() && int(i) < top_n; ++i) {
      const std::string t = text ? text(lp.top[i].first) : std::string();
      top.push_back({{"token", t}, {"logprob", lp.top[i].second}, {"bytes", bytes_json(t)}});
    }
    content.push_back({{"token", lp.text}, {"logprob", lp.logprob}, {"bytes", bytes_json(lp.text)}, {"top_logprobs", top}});
  }
  return json{{"content", content}};
}

json completion_logprobs_json(const std::vector<TokenLogprob>& lps, int top_n, const TokenText& text,
                              size_t text_offset) {
  json tokens = json::array(), token_logprobs = json::array(), top = json::array(), offsets = json::array();
  for (const TokenLogprob& lp : lps) {
    tokens.push_back(lp.text);
    token_logprobs.push_back(lp.logprob);
    json alt = json::object();
    for (size_t i = 0; i < lp.top.size() && int(i) < top_n; ++i)
      alt[text ? text(lp.top[i].first) : std::to_string(lp.top[i].first)] = lp.top[i].second;
    top.push_back(top_n > 0 ? alt : json(nullptr));
    offsets.push_back(text_offset);
    text_offset += lp.text.size();
  }
  return json{{"tokens", tokens}, {"token_logprobs", token_logprobs}, {"top_logprobs", top}, {"text_offset", offsets}};
}

json chat_completion_json(const ResponseMeta& meta, const GenerationResult& r, const std::vector<TokenLogprob>* lps,
                          int top_n, const TokenText& text, const json& tools) {
  json message = {{"role", "assistant"}, {"content", r.content}};
  if (!r.reasoning.empty()) message["reasoning_content"] = r.reasoning;
  json finish = finish_reason_json(r.stop_reason);
  if (!tools.is_null()) {
    ToolCallSplit split = parse_tool_calls(r.content, tools);
    if (!split.calls.empty()) {
      message["content"] = split.content.empty() ? json(nullptr) : json(split.content);
      message["tool_calls"] = tool_calls_json(split.calls);
      finish = "tool_calls";
    }
  }
  json choice = {{"index", 0},
                 {"message", message},
                 {"logprobs", lps ? chat_logprobs_json(*lps, top_n, text) : json(nullptr)},
                 {"finish_reason", finish}};
  return json{{"id", meta.id},           {"object", "chat.completion"}, {"created", meta.created},
              {"model", meta.model},     {"choices", json::array({choice})},
              {"usage", usage_json(r)}, {"timings", timings_json(r)}};
}

json text_completion_json(const ResponseMeta& meta, const std::string& text, const GenerationResult& r,
                          const std::vector<TokenLogprob>* lps, int top_n, const TokenText& token_text,
                          size_t text_offset) {
  json choice = {{"index", 0},
                 {"text", text},
                 {"logprobs", lps ? completion_logprobs_json(*lps, top_n, token_text, text_offset) : json(nullptr)},
                 {"finish_reason", finish_reason_json(r.stop_reason)}};
  return json{{"id", meta.id},           {"object", "text_completion"}, {"created", meta.created},
              {"model", meta.model},     {"choices", json::array({choice})},
              {"usage", usage_json(r)}, {"timings", timings_json(r)}};
}

nlohmann::json model_meta(const ModelInfo& info) {
  nlohmann::json m = {{"context_size", info.context_size},
                      {"has_vision", info.has_vision},
                      {"vocab_size", info.vocab_size},
                      {"num_layers", info.num_layers},
                      {"hidden_size", info.hidden_size},
                      {"weight_bytes", info.weight_bytes},
                      {"format", info.format},
                      {"file_type", info.file_type},
                      {"file_bytes", info.file_bytes},
                      {"has_mtp", info.has_mtp},
                      {"kernels", info.kernels},
                      {"device", info.device}};
  if (!info.mmproj_path.empty()) m["mmproj"] = info.mmproj_path;
  return m;
}

std::string dump_json(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

std::string sse_data(const json& j) { return "data: " + dump_json(j) + "\n\n"; }

// ---------------------------------------------------------------------------------------------

ChatStream::ChatStream(ResponseMeta meta, bool include_usage, bool logprobs, int top_n, TokenText text)
    : meta_(std::move(meta)), include_usage_(include_usage), logprobs_(logprobs), top_n_(top_n), text_(std::move(text)) {}

json ChatStream::chunk(json delta, json finish_reason, json logprobs) const {
  json choice = {{"index", 0}, {"delta", std::move(delta)}, {"logprobs", std::move(logprobs)},
                 {"finish_reason", std::move(finish_reason)}};
  json c = {{"id", meta_.id},       {"object", "chat.completion.chunk"}, {"created", meta_.created},
            {"model", meta_.model}, {"choices", json::array({choice})}};
  if (include_usage_) c["usage"] = nullptr;  // as OpenAI: null on every chunk but the last
  return c;
}

std::string ChatStream::start() { return sse_data(chunk({{"role", "assistant"}, {"content", ""}}, nullptr, nullptr)); }

std::string ChatStream::releasable_content(const std::string& text) {
  if (tools_.is_null()) return text;
  if (calls_) {
    pending_ = calls_->feed(text);
    return "";
  }
  held_ += text;
  const std::string open = kToolCallOpen;
  if (const size_t k = held_.find(open); k != std::string::npos) {
    std::string out = held_.substr(0, k);
    calls_.emplace(tools_);
    pending_ = calls_->feed(held_.substr(k));
    held_.clear();
    return out;
  }
  // Keep the longest tail that could still grow into "<tool_call>".
  size_t keep = std::min(held_.size(), open.size() - 1);
  while (keep > 0 && held_.compare(held_.size() - keep, keep, open, 0, keep) != 0) --keep;
  std::string out = held_.substr(0, held_.size() - keep);
  held_.erase(0, held_.size() - keep);
  return out;
}

std::string ChatStream::event(const GenerationEvent& ev) {
  const bool has_logprobs = logprobs_ && !ev.logprobs.empty();
  const bool reasoning = ev.channel == Channel::kReasoning;
  pending_.clear();
  const std::string text = reasoning ? ev.text : releasable_content(ev.text);
  std::string out;
  if (!text.empty() || has_logprobs) {
    json delta = json::object();
    if (!text.empty()) delta[reasoning ? "reasoning_content" : "content"] = text;
    else delta["content"] = "";
    out = sse_data(chunk(std::move(delta), nullptr, has_logprobs ? chat_logprobs_json(ev.logprobs, top_n_, text_) : json(nullptr)));
  }
  for (json& call : pending_) out += sse_data(chunk(json{{"tool_calls", json::array({std::move(call)})}}, nullptr, nullptr));
  pending_.clear();
  return out;
}

std::string ChatStream::finish(const GenerationResult& r) {
  json reason = finish_reason_json(r.stop_reason);
  if (reason.is_null()) reason = "stop";
  std::string out;
  if (calls_ && calls_->started()) {
    if (calls_->complete()) reason = "tool_calls";  // else cut off (length): the reason says so
  } else {
    // Text that never became a call is content after all.
    const std::string rest = calls_ ? calls_->text() : held_;
    if (!rest.empty()) out += sse_data(chunk(json{{"content", rest}}, nullptr, nullptr));
  }
  held_.clear();
  calls_.reset();
  out += sse_data(chunk(json::object(), reason, nullptr));
  if (include_usage_) {
    json c = {{"id", meta_.id},       {"object", "chat.completion.chunk"}, {"created", meta_.created},
              {"model", meta_.model}, {"choices", json::array()},          {"usage", usage_json(r)},
              {"timings", timings_json(r)}};
    out += sse_data(c);
  }
  return out + sse_done();
}

std::string ChatStream::error(const ApiError& e) { return sse_data(error_json(e)) + sse_done(); }

// ---------------------------------------------------------------------------------------------

CompletionStream::CompletionStream(ResponseMeta meta, bool include_usage, bool logprobs, int top_n, TokenText text)
    : meta_(std::move(meta)), include_usage_(include_usage), logprobs_(logprobs), top_n_(top_n), text_(std::move(text)) {}

json CompletionStream::chunk(const std::string& text, json finish_reason, json logprobs) const {
  json choice = {{"index", 0}, {"text", text}, {"logprobs", std::move(logprobs)}, {"finish_reason", std::move(finish_reason)}};
  json c = {{"id", meta_.id},       {"object", "text_completion"}, {"created", meta_.created},
            {"model", meta_.model}, {"choices", json::array({choice})}};
  if (include_usage_) c["usage"] = nullptr;
  return c;
}

std::string CompletionStream::start(const std::string& echo_text) {
  if (echo_text.empty()) return "";
  offset_ += echo_text.size();
  return sse_data(chunk(echo_text, nullptr, nullptr));
}

std::string CompletionStream::event(const GenerationEvent& ev) {
  const bool has_logprobs = logprobs_ && !ev.logprobs.empty();
  if (ev.text.empty() && !has_logprobs) return "";
  json lp = has_logprobs ? completion_logprobs_json(ev.logprobs, top_n_, text_, offset_) : json(nullptr);
  offset_ += ev.text.size();
  return sse_data(chunk(ev.text, nullptr, std::move(lp)));
}

std::string CompletionStream::finish(const GenerationResult& r) {
  json reason = finish_reason_json(r.stop_reason);
  if (reason.is_null()) reason = "stop";
  std::string out = sse_data(chunk("", reason, nullptr));
  if (include_usage_) {
    json c = {{"id", meta_.id},       {"object", "text_completion"}, {"created", meta_.created},
              {"model", meta_.model}, {"choices", json::array()},    {"usage", usage_json(r)},
              {"timings", timings_json(r)}};
    out += sse_data(c);
  }
  return out + sse_done();
}

std::string CompletionStream::error(const ApiError& e) { return sse_data(error_json(e)) + sse_done(); }

}  // namespace qwen35::server
