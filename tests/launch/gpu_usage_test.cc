// GPU usage (launch/gpu_usage.h): the meter adds readings up per job by
// its processes; without NVML the probe says why, and nothing fails.
#include "launch/gpu_usage.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace tessera::launch {
namespace {

using ::testing::HasSubstr;

GpuReadings Readings(std::vector<ProcessReading> processes) {
  return {{{0, 30000, 81920, 80}, {1, 2000, 81920, 20}}, std::move(processes)};
}

TEST(UsageMeter, PeakLastAndUtilizationPerJob) {
  UsageMeter meter;
  const std::map<JobId, std::set<uint32_t>> pids = {{1, {100, 101}},
                                                    {2, {200}}};
  // Job 1: two processes (a worker and its data loader) on GPU 0.
  meter.Add(Readings({{0, 100, 6000},
                      {0, 101, 500},
                      {1, 200, 1500},
                      {0, 999, 4000}}),  // nobody's
            pids);
  meter.Add(Readings({{0, 100, 4000}, {1, 200, 1800}}), pids);
  const JobUsage one = meter.Of(1);
  EXPECT_EQ(one.readings, 2);
  EXPECT_EQ(one.peak_mib, 6500);
  EXPECT_EQ(one.last_mib, 4000);
  EXPECT_DOUBLE_EQ(one.mean_utilization_pct, 80);
  const JobUsage two = meter.Of(2);
  EXPECT_EQ(two.peak_mib, 1800);
  EXPECT_DOUBLE_EQ(two.mean_utilization_pct, 20);
  // A job with no process on a GPU yet: read, nothing used.
  meter.Add(Readings({}), {{3, {300}}});
  EXPECT_EQ(meter.Of(3).readings, 1);
  EXPECT_EQ(meter.Of(3).peak_mib, 0);
  meter.Forget(1);
  EXPECT_EQ(meter.Of(1).readings, 0);
}

TEST(OpenNvml, WithoutTheLibraryItSaysWhy) {
  auto probe = OpenNvml("libtessera-no-such-nvml.so.1");
  ASSERT_FALSE(probe);
  EXPECT_EQ(probe.error().code, ErrorCode::kUnavailable);
  EXPECT_THAT(probe.error().message,
              HasSubstr("cannot load libtessera-no-such-nvml.so.1"));
}

TEST(OpenNvml, ALibraryWithoutNvmlSaysWhatItLacks) {
  // libm is everywhere and has none of NVML's functions.
  auto probe = OpenNvml("libm.so.6");
  ASSERT_FALSE(probe);
  EXPECT_THAT(probe.error().message, HasSubstr("lacks nvmlInit_v2"));
}

}  // namespace
}  // namespace tessera::launch
