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

}  // namespace
}  // namespace qwen35
