// JSON parsing with a nesting limit. nlohmann's parser is iterative, but copying and dumping a
// document recurse, so a hostile body nested 100000 deep would overflow the stack later on.
// Every JSON that comes from outside (request bodies, tool arguments, model output) goes through
// this parser.
#pragma once

#include <string_view>

#include <nlohmann/json.hpp>

#include "core/error.h"

namespace qwen35 {

constexpr int kMaxJsonDepth = 64;

// Parses `text`; throws qwen35::Error on invalid JSON or nesting deeper than max_depth.
template <typename Json = nlohmann::ordered_json>
Json parse_json_limited(std::string_view text, int max_depth = kMaxJsonDepth) {
  // `depth` counts the containers around the event: the n-th nested array starts at depth n - 1.
  auto limit = [max_depth](int depth, typename Json::parse_event_t event, Json&) {
    const bool opens = event == Json::parse_event_t::array_start || event == Json::parse_event_t::object_start;
    if (opens && depth >= max_depth) fail("JSON nested deeper than ", max_depth, " levels");
    return true;
  };
  try {
    return Json::parse(text.begin(), text.end(), limit);
  } catch (const typename Json::exception& e) {
    fail("invalid JSON: ", e.what());
  }
}

}  // namespace qwen35
