// The one MPS rule: the smallest share's compute in whole percent, rounded
// up, and each visible GPU's memory by position.
#include "scheduler/mps.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

namespace tessera::scheduler {
namespace {

TEST(MpsLimits, SmallestShareRoundedUpAndMemoryByPosition) {
  const std::vector<int> milli = {250, 125};
  const std::vector<int64_t> memory = {8192, 4096};
  const MpsLimits m = MpsLimitsFor(milli, memory);
  EXPECT_EQ(m.active_thread_percentage, "13");  // 125 milli: 12.5% -> 13
  EXPECT_EQ(m.pinned_device_mem_limit, "0=8192M,1=4096M");
}

TEST(MpsLimits, AtLeastOnePercentAndAtMostAHundred) {
  const std::vector<int64_t> memory = {1};
  EXPECT_EQ(MpsLimitsFor(std::vector<int>{1}, memory).active_thread_percentage,
            "1");
  EXPECT_EQ(
      MpsLimitsFor(std::vector<int>{1000}, memory).active_thread_percentage,
      "100");
  EXPECT_EQ(MpsLimitsFor(std::vector<int>{1}, memory).pinned_device_mem_limit,
            "0=1M");
}

}  // namespace
}  // namespace tessera::scheduler
