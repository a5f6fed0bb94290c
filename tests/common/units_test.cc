// Units: sizes, bandwidths and durations as people write them.
#include "common/units.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace tessera {
namespace {

using ::testing::HasSubstr;

TEST(Units, SizesInDecimalAndBinaryUnits) {
  EXPECT_EQ(*ParseBytes("8GiB"), 8 * kGiB);
  EXPECT_EQ(*ParseBytes("24 GB"), 24'000'000'000);
  EXPECT_EQ(*ParseBytes("1.5KiB"), 1536);
  EXPECT_EQ(*ParseBytes("0"), 0);
  EXPECT_EQ(kMiB, 1024 * kKiB);
}

TEST(Units, RefusalsQuoteTheTextAndTheUnits) {
  for (const char* bad : {"8", "8 gib", "-1GiB", "GiB", "1e400GiB"}) {
    Result<int64_t> r = ParseBytes(bad);
    ASSERT_FALSE(r) << bad;
    EXPECT_EQ(r.error().code, ErrorCode::kBadInput);
    EXPECT_THAT(r.error().message, HasSubstr("'")) << bad;
  }
  EXPECT_THAT(ParseBytes("8gb").error().message, HasSubstr("GiB"));
  EXPECT_THAT(ParseBytes("1e30TiB").error().message, HasSubstr("too large"));
}

TEST(Units, BandwidthsAndDurations) {
  EXPECT_DOUBLE_EQ(*ParseBandwidth("25GB/s"), 25e9);
  EXPECT_DOUBLE_EQ(*ParseSeconds("5us"), 5e-6);
  EXPECT_DOUBLE_EQ(*ParseSeconds("2s"), 2);
  EXPECT_FALSE(ParseSeconds("2 min"));
}

}  // namespace
}  // namespace tessera
