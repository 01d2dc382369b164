#include "server/openai/chat_json.h"

#include <fstream>
#include <optional>
#include <sstream>

#include "core/error.h"

namespace qwen35::server {
namespace {

using json = nlohmann::ordered_json;

// Images and videos: the same sources (data: URLs, http(s) when allowed, local files in
// the CLI) with their own size limits.
std::vector<uint8_t> read_local_file(const std::string& path, size_t max_bytes, const char* what,
                                     const std::string& where) {
  std::ifstream in(path, std::ios::binary);
  if (!in) fail(where, ": cannot read ", what, " file '", path, "'");
  std::vector<uint8_t> bytes;
  char buf[1 << 16];
  while (in.read(buf, sizeof(buf)) || in.gcount() > 0) {
    bytes.insert(bytes.end(), buf, buf + in.gcount());
    if (bytes.size() > max_bytes) fail(where, ": ", what, " file '", path, "' is larger than ", max_bytes, " bytes");
  }
  return bytes;
}

std::vector<uint8_t> load_url(const std::string& url, const ImageSourcePolicy& policy, size_t max_bytes, bool video,
                              const std::string& where) {
  const char* what = video ? "video" : "image";
  if (url.rfind("data:", 0) == 0) {
    std::vector<uint8_t> bytes;
    try {
      bytes = decode_data_uri(url);
    } catch (const Error& e) {
      fail(where, ": ", e.what());
    }
    if (bytes.size() > max_bytes) fail(where, ": ", what, " is ", bytes.size(), " bytes, over the limit of ", max_bytes);
    return bytes;
  }
  if (url.rfind("http://", 0) == 0 || url.rfind("https://", 0) == 0) {
    if (!policy.allow_remote || !policy.fetch_remote)
      fail(where, ": remote ", what, " URLs are disabled (start the server with --allow-remote-images, or send a data: URL)");
    try {
      return policy.fetch_remote(url, max_bytes, video);
    } catch (const Error& e) {
      fail(where, ": ", e.what());
    }
  }
  if (policy.allow_local_files) {
    std::string path = url.rfind("file://", 0) == 0 ? url.substr(7) : url;
    return read_local_file(path, max_bytes, what, where);
  }
  fail(where, ": unsupported ", what, " URL (expected a data: URL", policy.allow_remote ? " or http(s)" : "", ")");
}

std::vector<uint8_t> load_image_url(const std::string& url, const ImageSourcePolicy& policy, const std::string& where) {
  return load_url(url, policy, policy.max_image_bytes, false, where);
}

std::string text_of(const json& v, const std::string& where) {
  if (!v.is_string()) fail(where, " must be a string");
  return v.get<std::string>();
}

bool is_video_part(const json& part, const std::string& type) {
  if (type == "video_url" || type == "input_video" || type == "video") return true;
  return type.empty() && (part.contains("video_url") || part.contains("input_video") || part.contains("video"));
}

// A positive number (an integer when `integer`) at most `most`, at part[key] or, when the source is
// an object, source[key]; nothing when absent.
std::optional<double> video_option(const json& part, const json& source, const char* key, double most, bool integer,
                                   const std::string& where) {
  const json* v = part.contains(key)                               ? &part[key]
                  : source.is_object() && source.contains(key) ? &source[key]
                                                               : nullptr;
  if (!v || v->is_null()) return std::nullopt;
  if (!(integer ? v->is_number_integer() : v->is_number())) fail(where, ".", key, " must be ", integer ? "an integer" : "a number");
  const double x = v->get<double>();
  if (!(x > 0) || x > most) fail(where, ".", key, " must be above 0 and at most ", most, ", got ", x);
  return x;
}

VideoInput parse_video_part(const json& part, const std::string& type, const ImageSourcePolicy& policy,
                            const std::string& where) {
  const char* key = type == "input_video" || (type.empty() && part.contains("input_video")) ? "input_video"
                    : type == "video_url" || (type.empty() && part.contains("video_url")) ? "video_url"
                                                                                          : "video";
  if (!part.contains(key)) fail(where, ": video part without ", key);
  const json& src = part[key];
  const std::string sw = where + "." + key;
  VideoInput video;
  if (std::string_view(key) == "input_video") {
    if (!src.is_object() || !src.contains("data") || !src["data"].is_string())
      fail(sw, " must be {\"data\": base64 string, \"format\": string}");
    try {
      video = VideoInput::File(decode_base64(src["data"].get<std::string>()));
    } catch (const Error& e) {
      fail(sw, ".data: ", e.what());
    }
    if (video.file.empty()) fail(sw, ".data holds no bytes");
    if (video.file.size() > policy.max_video_bytes)
      fail(sw, ".data: video is ", video.file.size(), " bytes, over the limit of ", policy.max_video_bytes);
  } else if (src.is_array() && std::string_view(key) == "video") {
    if (src.empty()) fail(sw, " must list at least one frame");
    if (src.size() > policy.max_video_frames)
      fail(sw, " has ", src.size(), " frames, the limit is ", policy.max_video_frames);
    std::vector<std::vector<uint8_t>> frames;
    for (size_t i = 0; i < src.size(); ++i) {
      const std::string fw = sw + "[" + std::to_string(i) + "]";
      const json& f = src[i];
      const json* url = f.is_string() ? &f : f.is_object() && f.contains("url") ? &f["url"] : nullptr;
      if (!url || !url->is_string()) fail(fw, " must be an image URL (a string or {\"url\": string})");
      frames.push_back(load_image_url(url->get<std::string>(), policy, fw));
    }
    video = VideoInput::Images(std::move(frames), video_option(part, src, "frame_rate", 1000.0, false, where).value_or(2.0));
  } else {
    const json* url = src.is_string() ? &src : src.is_object() && src.contains("url") ? &src["url"] : nullptr;
    if (!url || !url->is_string()) fail(sw, " must be {\"url\": string}");
    video = VideoInput::File(load_url(url->get<std::string>(), policy, policy.max_video_bytes, true, sw + ".url"));
  }
  // Sampling: the request may ask for less than the server allows, never more.
  const VideoSampling& caps = policy.video_caps;
  video.sampling = caps;
  if (auto fps = video_option(part, src, "fps", 60.0, false, where)) video.sampling.fps = *fps;
  const int64_t frame_cap = caps.max_frames > 0 ? caps.max_frames : 768;
  if (auto n = video_option(part, src, "max_frames", double(frame_cap), true, where)) video.sampling.max_frames = int64_t(*n);
  const int64_t token_cap = caps.max_tokens > 0 ? caps.max_tokens : int64_t(1) << 30;
  if (auto n = video_option(part, src, "max_tokens", double(token_cap), true, where)) video.sampling.max_tokens = int64_t(*n);
  return video;
}

void parse_content(const json& content, ChatMessage& m, const ImageSourcePolicy& policy, const std::string& where) {
  if (content.is_null()) return;
  if (content.is_string()) {
    m.content.push_back(ContentPart::Text(content.get<std::string>()));
    return;
  }
  if (!content.is_array()) fail(where, " must be a string, an array of parts or null");
  for (size_t i = 0; i < content.size(); ++i) {
    const json& part = content[i];
    const std::string pw = where + "[" + std::to_string(i) + "]";
    if (!part.is_object()) fail(pw, " must be an object");
    const std::string type = part.contains("type") && part["type"].is_string() ? part["type"].get<std::string>() : "";
    if (type == "text" || (type.empty() && part.contains("text"))) {
      if (!part.contains("text")) fail(pw, ".text is missing");
      m.content.push_back(ContentPart::Text(text_of(part["text"], pw + ".text")));
    } else if (type == "image_url" || type == "image" || part.contains("image_url") || part.contains("image")) {
      const json* src = part.contains("image_url") ? &part["image_url"] : part.contains("image") ? &part["image"] : nullptr;
      if (!src) fail(pw, ": image part without image_url");
      std::string url;
      if (src->is_string()) url = src->get<std::string>();
      else if (src->is_object() && src->contains("url") && (*src)["url"].is_string()) url = (*src)["url"].get<std::string>();
      else fail(pw, ".image_url must be {\"url\": string}");
      m.content.push_back(ContentPart::Image(load_image_url(url, policy, pw + ".image_url.url")));
    } else if (is_video_part(part, type)) {
      m.content.push_back(ContentPart::Video(parse_video_part(part, type, policy, pw)));
    } else {
      fail(pw, ": unsupported content part type '", type, "' (expected text, image_url, video_url, input_video or video)");
    }
  }
}

}  // namespace

namespace {

// The content parts of all messages for which is(part, its type or "") holds.
template <class Is>
size_t count_parts(const json& messages, const Is& is) {
  size_t n = 0;
  if (!messages.is_array()) return 0;
  for (const json& m : messages) {
    if (!m.is_object() || !m.contains("content") || !m["content"].is_array()) continue;
    for (const json& part : m["content"]) {
      if (!part.is_object()) continue;
      const std::string type = part.contains("type") && part["type"].is_string() ? part["type"].get<std::string>() : "";
      n += is(part, type);
    }
  }
  return n;
}

}  // namespace

size_t count_image_parts(const json& messages) {
  return count_parts(messages, [](const json& part, const std::string& type) {
    return type == "image_url" || type == "image" || part.contains("image_url") || part.contains("image");
  });
}

size_t count_video_parts(const json& messages) { return count_parts(messages, is_video_part); }

std::vector<uint8_t> decode_base64(const std::string& text) {
  auto value = [](char c) -> int {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '+' || c == '-') return 62;
    if (c == '/' || c == '_') return 63;
    return -1;
  };
  std::vector<uint8_t> out;
  out.reserve(text.size() * 3 / 4);
  uint32_t acc = 0;
  int bits = 0;
  bool padding = false;
  for (char c : text) {
    if (c == ' ' || c == '\n' || c == '\r' || c == '\t') continue;
    if (c == '=') {
      padding = true;
      continue;
    }
    if (padding) fail("invalid base64: data after '=' padding");
    const int v = value(c);
    if (v < 0) fail("invalid base64 character '", c, "'");
    acc = (acc << 6) | uint32_t(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(uint8_t(acc >> bits));
    }
  }
  if (bits >= 6) fail("invalid base64: truncated input");
  return out;
}

std::vector<uint8_t> decode_data_uri(const std::string& uri) {
  const size_t comma = uri.find(',');
  if (uri.rfind("data:", 0) != 0 || comma == std::string::npos) fail("not a data: URL");
  const std::string meta = uri.substr(5, comma - 5);
  if (meta.size() < 7 || meta.compare(meta.size() - 7, 7, ";base64") != 0)
    fail("data: URL must be base64-encoded (data:<type>;base64,...)");
  std::vector<uint8_t> bytes = decode_base64(uri.substr(comma + 1));
  if (bytes.empty()) fail("data: URL holds no data");
  return bytes;
}

std::vector<ChatMessage> parse_messages(const json& messages, const ImageSourcePolicy& policy) {
  if (!messages.is_array()) fail("messages must be an array");
  if (messages.empty()) fail("messages must not be empty");
  std::vector<ChatMessage> out;
  for (size_t i = 0; i < messages.size(); ++i) {
    const json& msg = messages[i];
    const std::string where = "messages[" + std::to_string(i) + "]";
    if (!msg.is_object()) fail(where, " must be an object");
    if (!msg.contains("role")) fail(where, ".role is missing");
    ChatMessage m;
    m.role = text_of(msg["role"], where + ".role");
    if (m.role == "developer") m.role = "system";  // OpenAI's newer name for the system role
    if (m.role != "system" && m.role != "user" && m.role != "assistant" && m.role != "tool")
      fail(where, ".role '", m.role, "' is not one of system, user, assistant, tool");
    if (msg.contains("content")) parse_content(msg["content"], m, policy, where + ".content");
    else if (m.role != "assistant") fail(where, ".content is missing");
    if (msg.contains("reasoning_content") && !msg["reasoning_content"].is_null())
      m.reasoning_content = text_of(msg["reasoning_content"], where + ".reasoning_content");
    if (msg.contains("tool_calls") && !msg["tool_calls"].is_null()) {
      const json& calls = msg["tool_calls"];
      if (!calls.is_array()) fail(where, ".tool_calls must be an array");
      for (size_t j = 0; j < calls.size(); ++j) {
        const std::string cw = where + ".tool_calls[" + std::to_string(j) + "]";
        const json& c = calls[j];
        const json& fn = c.is_object() && c.contains("function") ? c["function"] : c;
        if (!fn.is_object() || !fn.contains("name")) fail(cw, ".function.name is missing");
        ToolCall tc;
        tc.name = text_of(fn["name"], cw + ".function.name");
        if (c.is_object() && c.contains("id") && c["id"].is_string()) tc.id = c["id"].get<std::string>();
        if (fn.contains("arguments")) {
          const json& a = fn["arguments"];
          tc.arguments_json = a.is_string() ? a.get<std::string>() : a.dump();
        } else {
          tc.arguments_json = "{}";
        }
        m.tool_calls.push_back(std::move(tc));
      }
    }
    if (msg.contains("tool_call_id") && msg["tool_call_id"].is_string()) m.tool_call_id = msg["tool_call_id"];
    out.push_back(std::move(m));
  }
  return out;
}

}  // namespace qwen35::server
