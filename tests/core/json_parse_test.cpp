#include "core/json_parse.h"

#include <gtest/gtest.h>

#include <string>

namespace qwen35 {
namespace {

TEST(JsonParse, NestingLimit) {
  EXPECT_EQ(parse_json_limited<>(std::string(64, '[') + std::string(64, ']')).size(), 1u);
  EXPECT_THROW(parse_json_limited<>(std::string(65, '[') + std::string(65, ']')), Error);
  EXPECT_THROW(parse_json_limited<>(std::string(200000, '[')), Error);
  EXPECT_THROW(parse_json_limited<>("{\"a\": "), Error);
  EXPECT_EQ(parse_json_limited<>("{\"b\": 1, \"a\": 2}").begin().key(), "b");
}

// Keys keep their order; a repeated key keeps its first place and takes the last value, as
// nlohmann's own parser does; both document types give the same document.
TEST(JsonParse, OrderAndDuplicateKeys) {
  const std::string text = R"({"b": 1, "a": {"y": [1, {"z": null}], "x": 2}, "b": 3, "c": [true, 1.5, "s"]})";
  const nlohmann::ordered_json o = parse_json_limited<nlohmann::ordered_json>(text);
  EXPECT_EQ(o.dump(), nlohmann::ordered_json::parse(text).dump());
  EXPECT_EQ(o.dump(), R"({"b":3,"a":{"y":[1,{"z":null}],"x":2},"c":[true,1.5,"s"]})");
  EXPECT_EQ(parse_json_limited<nlohmann::json>(text), nlohmann::json::parse(text));
  EXPECT_EQ(parse_json_limited<>("7"), 7);
  EXPECT_EQ(parse_json_limited<>("[]").dump(), "[]");
  EXPECT_THROW(parse_json_limited<>("{} x"), Error);
  EXPECT_THROW(parse_json_limited<>(""), Error);
}

// An object with many keys is refused by count (it used to be accepted after a quadratic
// insertion: 100k keys held a thread for seconds); the limit is per object, and on all values.
TEST(JsonParse, KeyAndValueLimits) {
  auto object_of = [](int keys) {
    std::string s = "{";
    for (int i = 0; i < keys; ++i) s += (i ? ",\"k" : "\"k") + std::to_string(i) + "\":" + std::to_string(i);
    return s + "}";
  };
  JsonLimits limits;
  limits.max_keys_per_object = 1000;
  EXPECT_EQ(parse_json_limited<>(object_of(1000), limits).size(), 1000u);
  try {
    parse_json_limited<>(object_of(1001), limits);
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("more than 1000 keys"), std::string::npos) << e.what();
  }
  // Duplicates do not count twice.
  EXPECT_EQ(parse_json_limited<>(R"({"a":1,"a":2,"a":3})", limits).size(), 1u);
  // The default limit takes 100000 keys apart quickly.
  EXPECT_THROW(parse_json_limited<>(object_of(100000)), Error);
  // Many objects, each within the limit, are fine.
  std::string many = "[";
  for (int i = 0; i < 200; ++i) {
    if (i) many += ",";
    many += object_of(1000);
  }
  EXPECT_EQ(parse_json_limited<>(many + "]").size(), 200u);
  auto ones = [](int n) {
    std::string s = "[";
    for (int i = 0; i < n; ++i) s += i ? ",1" : "1";
    return s + "]";
  };
  limits.max_values = 100;  // the array and 99 numbers
  EXPECT_EQ(parse_json_limited<>(ones(99), limits).size(), 99u);
  EXPECT_THROW(parse_json_limited<>(ones(100), limits), Error);
}

}  // namespace
}  // namespace qwen35
