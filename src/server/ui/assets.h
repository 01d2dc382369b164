// The web UI's files (src/server/ui/web/*), embedded into the binary at build time, so the chat
// page works offline with nothing but the qwen35 binary.
#pragma once

#include <string_view>
#include <vector>

namespace qwen35::server {

struct UiAsset {
  std::string_view path;          // "/index.html", "/app.js", ...
  std::string_view content_type;  // "text/html; charset=utf-8", ...
  std::string_view data;
};

// The asset for a request path ("/" means "/index.html"); nullptr when there is none. Only exact
// embedded names match, so no path can reach outside the embedded set.
const UiAsset* find_ui_asset(std::string_view path);
std::vector<std::string_view> ui_asset_paths();

}  // namespace qwen35::server
