// JSON parsing for everything that comes from outside (request bodies, tool arguments, model
// output), with limits and in time linear in the input:
//   * nesting: nlohmann's parser is iterative, but copying and dumping a document recurse, so a
//     hostile body nested 100000 deep would overflow the stack later on;
//   * keys per object and values in all: bound what a document costs after parsing (a lookup in
//     an ordered object is a scan of its keys);
//   * time: nlohmann's ordered_json inserts each key with a scan of the keys before it, so one
//     object of n keys costs n^2/2 comparisons (100k keys: seconds). The builder below appends
//     keys and finds duplicates (the last value wins, in the place of the first, as nlohmann
//     does) with a hash set per open object, so parsing is linear whatever the input.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <type_traits>
#include <unordered_map>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/error.h"

namespace qwen35 {

constexpr int kMaxJsonDepth = 64;

struct JsonLimits {
  int max_depth = kMaxJsonDepth;
  size_t max_keys_per_object = 4096;
  size_t max_values = size_t(4) << 20;  // every value, containers included
};

namespace json_detail {

template <typename T, typename = void>
struct has_container : std::false_type {};
template <typename T>
struct has_container<T, std::void_t<typename T::Container>> : std::true_type {};

// nlohmann's SAX interface, building the document with the limits of JsonLimits.
template <typename Json>
class LimitedBuilder {
 public:
  using number_integer_t = typename Json::number_integer_t;
  using number_unsigned_t = typename Json::number_unsigned_t;
  using number_float_t = typename Json::number_float_t;
  using string_t = typename Json::string_t;
  using binary_t = typename Json::binary_t;
  using object_t = typename Json::object_t;

  explicit LimitedBuilder(const JsonLimits& limits) : limits_(limits) {}
  Json take() { return std::move(root_); }

  bool null() { return place(Json(nullptr)); }
  bool boolean(bool v) { return place(Json(v)); }
  bool number_integer(number_integer_t v) { return place(Json(v)); }
  bool number_unsigned(number_unsigned_t v) { return place(Json(v)); }
  bool number_float(number_float_t v, const string_t&) { return place(Json(v)); }
  bool string(string_t& v) { return place(Json(std::move(v))); }
  bool binary(binary_t& v) { return place(Json::binary(std::move(v))); }

  bool start_object(std::size_t) { return open(Json::object()); }
  bool start_array(std::size_t) { return open(Json::array()); }
  bool end_object() { return close(); }
  bool end_array() { return close(); }

  bool key(string_t& k) {
    Frame& f = stack_.back();
    f.key = std::move(k);
    return true;
  }

  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception& e) {
    fail("invalid JSON: ", e.what());
  }

 private:
  struct Frame {
    Json* value;
    std::unordered_map<string_t, size_t> index;  // objects: key -> position
    string_t key;                                // objects: the key of the next value
  };

  bool open(Json v) {
    if (int(stack_.size()) >= limits_.max_depth) fail("JSON nested deeper than ", limits_.max_depth, " levels");
    Json* placed = put(std::move(v));
    stack_.push_back(Frame{placed, {}, {}});
    return true;
  }

  bool close() {
    stack_.pop_back();
    return true;
  }

  bool place(Json v) {
    put(std::move(v));
    return true;
  }

  // Puts a value where the parser is; returns where it lives (stable while it is open: its
  // parent grows only after it is closed).
  Json* put(Json v) {
    if (++values_ > limits_.max_values) fail("the JSON has more than ", limits_.max_values, " values");
    if (stack_.empty()) {
      root_ = std::move(v);
      return &root_;
    }
    Frame& f = stack_.back();
    if (f.value->is_array()) {
      auto& a = f.value->template get_ref<typename Json::array_t&>();
      a.push_back(std::move(v));
      return &a.back();
    }
    auto& obj = f.value->template get_ref<object_t&>();
    const auto [it, fresh] = f.index.try_emplace(f.key, f.index.size());
    if (!fresh) {  // a duplicate key: the last value wins, in the first one's place
      if constexpr (has_container<object_t>::value) {
        auto& slot = static_cast<typename object_t::Container&>(obj)[it->second].second;
        slot = std::move(v);
        return &slot;
      } else {
        Json& slot = obj[f.key];
        slot = std::move(v);
        return &slot;
      }
    }
    if (f.index.size() > limits_.max_keys_per_object)
      fail("a JSON object has more than ", limits_.max_keys_per_object, " keys");
    if constexpr (has_container<object_t>::value) {
      auto& items = static_cast<typename object_t::Container&>(obj);
      items.emplace_back(std::move(f.key), std::move(v));
      return &items.back().second;
    } else {
      return &obj.emplace(std::move(f.key), std::move(v)).first->second;
    }
  }

  JsonLimits limits_;
  Json root_;
  std::vector<Frame> stack_;
  size_t values_ = 0;
};

}  // namespace json_detail

// Parses `text`; throws qwen35::Error on invalid JSON or input over the limits.
template <typename Json = nlohmann::ordered_json>
Json parse_json_limited(std::string_view text, const JsonLimits& limits) {
  json_detail::LimitedBuilder<Json> builder(limits);
  Json::sax_parse(text.begin(), text.end(), &builder);
  return builder.take();
}

template <typename Json = nlohmann::ordered_json>
Json parse_json_limited(std::string_view text, int max_depth = kMaxJsonDepth) {
  JsonLimits limits;
  limits.max_depth = max_depth;
  return parse_json_limited<Json>(text, limits);
}

}  // namespace qwen35
