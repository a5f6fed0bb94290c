#include "common/json_depth.h"

#include <gtest/gtest.h>

#include <string>

namespace tessera {
namespace {

TEST(JsonDepth, CountsNestingOutsideStrings) {
  EXPECT_EQ(JsonDepth("", 10), 0);
  EXPECT_EQ(JsonDepth("42", 10), 0);
  EXPECT_EQ(JsonDepth(R"({"a": [1, {"b": []}]})", 10), 4);
  EXPECT_EQ(JsonDepth(R"({"a": "[[[[{{{{", "b": "\"[[["})", 10), 1);
  EXPECT_EQ(JsonDepth("[][][]", 10), 1);
  EXPECT_EQ(JsonDepth("]]][[", 10), 2);  // need not be valid JSON
}

TEST(JsonDepth, StopsCountingPastTheLimit) {
  EXPECT_EQ(JsonDepth(std::string(100000, '[')), kMaxJsonDepth + 1);
  EXPECT_EQ(JsonDepth(std::string(kMaxJsonDepth, '{')), kMaxJsonDepth);
}

}  // namespace
}  // namespace tessera
