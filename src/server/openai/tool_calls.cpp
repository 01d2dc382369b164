#include "server/openai/tool_calls.h"

#include "core/json_parse.h"

#include <random>

namespace qwen35::server {
namespace {

using json = nlohmann::ordered_json;

std::string call_id() {
  static thread_local std::mt19937_64 rng(std::random_device{}());
  static const char* hex = "0123456789abcdef";
  std::string id = "call_";
  for (int i = 0; i < 24; ++i) id += hex[rng() & 15];
  return id;
}

// The schema type of tools[name].parameters.properties[param] ("" when unknown).
std::string param_type(const json& tools, const std::string& name, const std::string& param) {
  if (!tools.is_array()) return "";
  for (const json& t : tools) {
    const json& fn = t.is_object() && t.contains("function") ? t["function"] : t;
    if (!fn.is_object() || !fn.contains("name") || fn["name"] != name) continue;
    const json* props = fn.contains("parameters") && fn["parameters"].is_object() && fn["parameters"].contains("properties")
                            ? &fn["parameters"]["properties"]
                            : nullptr;
    if (!props || !props->is_object() || !props->contains(param)) return "";
    const json& p = (*props)[param];
    if (p.is_object() && p.contains("type") && p["type"].is_string()) return p["type"].get<std::string>();
    return "";
  }
  return "";
}

std::string strip_newline_edges(std::string s) {
  if (!s.empty() && s.front() == '\n') s.erase(0, 1);
  if (!s.empty() && s.back() == '\n') s.pop_back();
  return s;
}

bool is_space(char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; }

std::string trim(const std::string& s) {
  size_t a = 0, b = s.size();
  while (a < b && is_space(s[a])) ++a;
  while (b > a && is_space(s[b - 1])) --b;
  return s.substr(a, b - a);
}

// A parameter's text between its tags as the argument's value: a string by schema stays text,
// anything else is JSON when it parses.
json parameter_value(const json& tools, const std::string& fn, const std::string& param, const std::string& between_tags) {
  const std::string raw = strip_newline_edges(between_tags);
  json value = raw;
  if (param_type(tools, fn, param) != "string") {
    try {
      value = parse_json_limited<json>(raw);
    } catch (const Error&) {  // not JSON after all (or absurdly nested): keep the text
    }
  }
  return value;
}

// One "<function=NAME>...</function>" body; false when malformed.
bool parse_function(const std::string& block, const json& tools, ParsedToolCall& out) {
  const std::string body = trim(block);
  const std::string open = "<function=";
  if (body.rfind(open, 0) != 0) return false;
  const size_t name_end = body.find('>', open.size());
  if (name_end == std::string::npos) return false;
  out.name = trim(body.substr(open.size(), name_end - open.size()));
  if (out.name.empty()) return false;
  const size_t fn_end = body.rfind("</function>");
  if (fn_end == std::string::npos || fn_end < name_end) return false;
  json args = json::object();
  size_t pos = name_end + 1;
  for (;;) {
    const size_t p = body.find("<parameter=", pos);
    if (p == std::string::npos || p > fn_end) break;
    const size_t pname_end = body.find('>', p);
    if (pname_end == std::string::npos) return false;
    const std::string pname = trim(body.substr(p + 11, pname_end - p - 11));
    const size_t close = body.find("</parameter>", pname_end);
    if (close == std::string::npos || close > fn_end) return false;
    args[pname] = parameter_value(tools, out.name, pname, body.substr(pname_end + 1, close - pname_end - 1));
    pos = close + 12;
  }
  out.arguments_json = args.dump(-1, ' ', false, json::error_handler_t::replace);
  return true;
}

}  // namespace

ToolCallSplit parse_tool_calls(const std::string& content, const json& tools) {
  ToolCallSplit split;
  split.content = content;
  const size_t first = content.find(kToolCallOpen);
  if (first == std::string::npos) return split;
  std::vector<ParsedToolCall> calls;
  size_t pos = first;
  while (pos != std::string::npos) {
    const size_t start = pos + std::string(kToolCallOpen).size();
    const size_t end = content.find("</tool_call>", start);
    if (end == std::string::npos) return split;  // cut off (max_tokens): not a call
    ParsedToolCall call;
    if (!parse_function(content.substr(start, end - start), tools, call)) return split;
    call.id = call_id();
    calls.push_back(std::move(call));
    pos = content.find(kToolCallOpen, end);
  }
  std::string before = content.substr(0, first);
  while (!before.empty() && is_space(before.back())) before.pop_back();
  split.content = std::move(before);
  split.calls = std::move(calls);
  return split;
}

json tool_calls_json(const std::vector<ParsedToolCall>& calls) {
  json out = json::array();
  for (const ParsedToolCall& c : calls)
    out.push_back({{"id", c.id}, {"type", "function"}, {"function", {{"name", c.name}, {"arguments", c.arguments_json}}}});
  return out;
}

std::vector<json> ToolCallStreamer::feed(const std::string& text) {
  buf_ += text;
  std::vector<json> out;
  // Whether the unread text starts with `tag`: 1 yes, 0 not yet decidable, -1 no.
  auto starts = [&](const std::string& tag) {
    const size_t n = std::min(tag.size(), buf_.size() - pos_);
    if (buf_.compare(pos_, n, tag, 0, n) != 0) return -1;
    return n == tag.size() ? 1 : 0;
  };
  for (;;) {
    if (state_ == kBad) return out;
    while (pos_ < buf_.size() && is_space(buf_[pos_])) ++pos_;
    if (state_ == kOpen || state_ == kBetween) {
      const int s = starts(kToolCallOpen);
      if (s == 0) return out;
      if (s < 0) {
        if (state_ == kOpen) state_ = kBad;
        // After a call, text that is not another call is dropped (as parse_tool_calls does): wait
        // for the next "<tool_call>".
        if (state_ == kBetween) {
          const size_t k = buf_.find(kToolCallOpen, pos_);
          if (k == std::string::npos) return out;
          pos_ = k;
          continue;
        }
        return out;
      }
      pos_ += std::string(kToolCallOpen).size();
      state_ = kFunction;
    } else if (state_ == kFunction) {
      const std::string open = "<function=";
      const int s = starts(open);
      if (s <= 0) {
        if (s < 0) state_ = kBad;
        return out;
      }
      const size_t end = buf_.find('>', pos_ + open.size());
      if (end == std::string::npos) return out;
      name_ = trim(buf_.substr(pos_ + open.size(), end - pos_ - open.size()));
      if (name_.empty()) {
        state_ = kBad;
        return out;
      }
      out.push_back({{"index", calls_}, {"id", call_id()}, {"type", "function"}, {"function", {{"name", name_}, {"arguments", ""}}}});
      ++calls_;
      params_ = 0;
      pos_ = end + 1;
      state_ = kParams;
    } else if (state_ == kParams) {
      const std::string param = "<parameter=", fn_close = "</function>";
      const int p = starts(param), f = starts(fn_close);
      if (p == 1) {
        const size_t pname_end = buf_.find('>', pos_);
        if (pname_end == std::string::npos) return out;
        const size_t close = buf_.find("</parameter>", pname_end);
        if (close == std::string::npos) return out;
        const std::string pname = trim(buf_.substr(pos_ + param.size(), pname_end - pos_ - param.size()));
        const json value = parameter_value(tools_, name_, pname, buf_.substr(pname_end + 1, close - pname_end - 1));
        const std::string frag = (params_ == 0 ? "{" : ",") + json(pname).dump(-1, ' ', false, json::error_handler_t::replace) + ":" +
                                 value.dump(-1, ' ', false, json::error_handler_t::replace);
        out.push_back({{"index", calls_ - 1}, {"function", {{"arguments", frag}}}});
        ++params_;
        pos_ = close + std::string("</parameter>").size();
      } else if (f == 1) {
        out.push_back({{"index", calls_ - 1}, {"function", {{"arguments", params_ == 0 ? "{}" : "}"}}}});
        pos_ += fn_close.size();
        state_ = kClose;
      } else {
        if (p < 0 && f < 0) state_ = kBad;
        return out;
      }
    } else if (state_ == kClose) {
      const int s = starts("</tool_call>");
      if (s <= 0) {
        if (s < 0) state_ = kBad;
        return out;
      }
      pos_ += std::string("</tool_call>").size();
      state_ = kBetween;
    }
  }
}

}  // namespace qwen35::server
