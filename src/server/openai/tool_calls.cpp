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
    const std::string raw = strip_newline_edges(body.substr(pname_end + 1, close - pname_end - 1));
    const std::string type = param_type(tools, out.name, pname);
    json value = raw;
    if (type != "string") {
      try {
        value = parse_json_limited<json>(raw);
      } catch (const Error&) {  // not JSON after all (or absurdly nested): keep the text
      }
    }
    args[pname] = std::move(value);
    pos = close + 12;
  }
  out.arguments_json = args.dump();
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

}  // namespace qwen35::server
