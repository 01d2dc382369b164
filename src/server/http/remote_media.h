// Fetching http(s) image and video URLs for chat requests (only with --allow-remote-images): a
// Beast client with connect/read timeouts, an overall deadline, a redirect limit and a byte limit,
// so a slow or huge remote file cannot hold a request thread or memory. Compressed answers are
// refused (we never ask for them), so the limit is the size in memory; so is an answer whose
// Content-Type says it is something else (an HTML error page served with 200, a playlist).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace qwen35::server {

struct RemoteFetchLimits {
  int connect_timeout_s = 5;
  int read_timeout_s = 10;
  int total_timeout_s = 20;  // the whole download
  int max_redirects = 3;
};

// What a URL is expected to hold: it sets the Accept header and the Content-Types taken (besides
// an absent one and application/octet-stream, which say nothing).
//   kImage: image/*
//   kVideo: video/*, application/mp4, and image/gif and image/webp (animations are short videos)
enum class MediaKind { kImage, kVideo };

// Downloads `url` (http:// or https://; certificates are verified) into bytes. Throws
// qwen35::Error naming the URL when the scheme is wrong, the server does not answer 200, the
// Content-Type is not one of `kind`'s, the body passes `max_bytes` or the download takes too long.
std::vector<uint8_t> fetch_remote_media(const std::string& url, size_t max_bytes, MediaKind kind,
                                        const RemoteFetchLimits& limits = {});

// Whether a Content-Type header value (parameters and case ignored) fits `kind`.
bool content_type_fits(std::string_view content_type, MediaKind kind);

// "https://host:8443/a/b.png?x=1" -> {"https://host:8443", "/a/b.png?x=1"}; throws on anything else.
struct SplitUrl {
  std::string origin;  // scheme://host[:port]
  std::string path;    // starts with '/'
};
SplitUrl split_url(const std::string& url);

}  // namespace qwen35::server
