#include "common/strings.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <string_view>

namespace tessera {
namespace {

TEST(ParseFiniteDouble, AcceptsWholeFixedAndScientificNumbers) {
  double v = 0;
  EXPECT_TRUE(ParseFiniteDouble("0.25", &v));
  EXPECT_DOUBLE_EQ(v, 0.25);
  EXPECT_TRUE(ParseFiniteDouble("-3", &v));
  EXPECT_DOUBLE_EQ(v, -3);
  EXPECT_TRUE(ParseFiniteDouble("1e9", &v));
  EXPECT_DOUBLE_EQ(v, 1e9);
}

TEST(ParseFiniteDouble, RefusesEmptyPartialAndNonFiniteText) {
  double v = 0;
  for (std::string_view bad :
       {"", " 1", "1 ", "1s", "0x10", "inf", "-inf", "nan", "1e999", "."}) {
    EXPECT_FALSE(ParseFiniteDouble(bad, &v)) << "'" << bad << "'";
  }
}

TEST(ParseInt64, AcceptsOnlyNonNegativeDecimals) {
  int64_t v = 0;
  EXPECT_TRUE(ParseInt64("100000", &v));
  EXPECT_EQ(v, 100000);
  for (std::string_view bad :
       {"", "-1", "1.5", "12a", "99999999999999999999"}) {
    EXPECT_FALSE(ParseInt64(bad, &v)) << "'" << bad << "'";
  }
}

}  // namespace
}  // namespace tessera
