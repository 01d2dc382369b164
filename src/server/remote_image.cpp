#include "server/remote_image.h"

#include <chrono>

#include <httplib.h>

#include "core/error.h"

namespace qwen35::server {

SplitUrl split_url(const std::string& url) {
  size_t scheme_end = 0;
  if (url.rfind("http://", 0) == 0) scheme_end = 7;
  else if (url.rfind("https://", 0) == 0) scheme_end = 8;
  else fail("image URL '", url, "' is not http(s)");
  const size_t host_end = url.find_first_of("/?#", scheme_end);
  SplitUrl s;
  s.origin = url.substr(0, host_end);
  if (s.origin.size() == scheme_end) fail("image URL '", url, "' has no host");
  for (char c : s.origin)
    if (c <= ' ' || c == '@' || c == '\\') fail("image URL '", url, "' has a malformed host");
  std::string path = host_end == std::string::npos ? "/" : url.substr(host_end);
  if (const size_t hash = path.find('#'); hash != std::string::npos) path.resize(hash);
  if (path.empty() || path[0] != '/') path = "/" + path;
  for (char c : path)
    if (c <= ' ' || c == 0x7f) fail("image URL '", url, "' has spaces or control characters in its path");
  s.path = path;
  return s;
}

std::vector<uint8_t> fetch_remote_image(const std::string& url, size_t max_bytes, const RemoteImageLimits& limits) {
  using Clock = std::chrono::steady_clock;
  const auto deadline = Clock::now() + std::chrono::seconds(limits.total_timeout_s);
  std::string current = url;
  for (int hop = 0; hop <= limits.max_redirects; ++hop) {
    const SplitUrl u = split_url(current);
    httplib::Client client(u.origin);
    if (!client.is_valid()) fail("cannot fetch image '", url, "': unsupported URL");
    client.set_connection_timeout(limits.connect_timeout_s, 0);
    client.set_read_timeout(limits.read_timeout_s, 0);
    client.set_write_timeout(limits.read_timeout_s, 0);
    client.set_follow_location(false);  // redirects are followed below, each one checked again

    std::vector<uint8_t> bytes;
    std::string error;
    int status = 0;
    std::string location;
    auto on_response = [&](const httplib::Response& r) {
      status = r.status;
      if (r.status >= 300 && r.status < 400) {
        location = r.get_header_value("Location");
        return false;
      }
      if (r.status != 200) return false;
      if (r.has_header("Content-Length")) {
        const std::string len = r.get_header_value("Content-Length");
        if (!len.empty() && len.size() < 20 && std::stoull(len) > max_bytes) {
          error = "the image is " + len + " bytes, over the limit of " + std::to_string(max_bytes);
          return false;
        }
      }
      return true;
    };
    auto on_data = [&](const char* data, size_t n) {
      if (Clock::now() > deadline) {
        error = "the download took longer than " + std::to_string(limits.total_timeout_s) + " s";
        return false;
      }
      if (bytes.size() + n > max_bytes) {
        error = "the image is larger than the limit of " + std::to_string(max_bytes) + " bytes";
        return false;
      }
      bytes.insert(bytes.end(), data, data + n);
      return true;
    };
    httplib::Result res = client.Get(u.path, httplib::Headers{{"Accept", "image/*"}}, on_response, on_data);
    if (!error.empty()) fail("cannot fetch image '", url, "': ", error);
    if (!location.empty()) {
      if (location.rfind("http://", 0) != 0 && location.rfind("https://", 0) != 0) {
        if (location[0] != '/') fail("cannot fetch image '", url, "': unsupported redirect to '", location, "'");
        location = u.origin + location;
      }
      current = location;
      continue;
    }
    if (status != 0 && status != 200) fail("cannot fetch image '", url, "': the server answered HTTP ", status);
    if (!res) fail("cannot fetch image '", url, "': ", httplib::to_string(res.error()));
    if (bytes.empty()) fail("cannot fetch image '", url, "': the response is empty");
    return bytes;
  }
  fail("cannot fetch image '", url, "': more than ", limits.max_redirects, " redirects");
}

}  // namespace qwen35::server
