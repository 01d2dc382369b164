// Fetching http(s) image URLs for chat requests (only with --allow-remote-images): a Beast
// client with connect/read timeouts, an overall deadline and a byte limit, so a slow or huge
// remote file cannot hold a request thread or memory. Compressed answers are refused (we never
// ask for them), so the limit is the size in memory.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace qwen35::server {

struct RemoteImageLimits {
  int connect_timeout_s = 5;
  int read_timeout_s = 10;
  int total_timeout_s = 20;  // the whole download
  int max_redirects = 3;
};

// Downloads `url` (http:// or https://; certificates are verified) into bytes. Throws
// qwen35::Error naming the URL when the scheme is wrong, the server does not answer 200, the
// body passes `max_bytes` or the download takes too long.
std::vector<uint8_t> fetch_remote_image(const std::string& url, size_t max_bytes, const RemoteImageLimits& limits = {});

// "https://host:8443/a/b.png?x=1" -> {"https://host:8443", "/a/b.png?x=1"}; throws on anything else.
struct SplitUrl {
  std::string origin;  // scheme://host[:port]
  std::string path;    // starts with '/'
};
SplitUrl split_url(const std::string& url);

}  // namespace qwen35::server
