// Nearest-rank percentiles and the mean with its range.
#include "common/stats.h"

#include <gtest/gtest.h>

#include <vector>

namespace tessera {
namespace {

TEST(Percentile, NearestRank) {
  const std::vector<double> v = {5, 1, 4, 2, 3, 10, 9, 8, 7, 6};
  EXPECT_EQ(Percentile(v, 0.50), 5);
  EXPECT_EQ(Percentile(v, 0.95), 10);
  EXPECT_EQ(Percentile(v, 0.10), 1);
  EXPECT_EQ(Percentile(v, 0.0), 1);  // the smallest, never out of range
  EXPECT_EQ(Percentile(v, 1.0), 10);
  EXPECT_EQ(Percentile({}, 0.5), 0);
  EXPECT_EQ(Percentile({7}, 0.99), 7);
}

TEST(MeanRange, OfSamples) {
  const MeanRange r = MeanRangeOf({2, 4, 9});
  EXPECT_DOUBLE_EQ(r.mean, 5);
  EXPECT_EQ(r.min, 2);
  EXPECT_EQ(r.max, 9);
  const MeanRange none = MeanRangeOf({});
  EXPECT_EQ(none.mean, 0);
  EXPECT_EQ(none.min, 0);
  EXPECT_EQ(none.max, 0);
}

}  // namespace
}  // namespace tessera
