#include "cuda/kernel_sweep.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

namespace tessera::cuda {
namespace {

using ::testing::HasSubstr;

// Square GEMMs whose time is kernel_s + W / (peak x max x W / (W + half)).
KernelSweep SyntheticSweep(double kernel_s, double peak, double max,
                           double half) {
  KernelSweep sweep;
  sweep.kind = "gemm";
  sweep.dtype = "fp32";
  sweep.peak_flops = peak;
  for (double n = 256; n <= 8192; n *= 2) {
    const double w = 2 * n * n * n;
    sweep.samples.push_back(
        {"n", w, kernel_s + w / (peak * max * w / (w + half))});
  }
  return sweep;
}

TEST(KernelSweepTest, FitsTheCurveOfTheTimeBeyondTheKernelTime) {
  KernelSweep sweep = SyntheticSweep(2e-6, 51e12, 0.95, 3e9);
  ASSERT_TRUE(FitKernelSweep(2e-6, &sweep).ok());
  EXPECT_NEAR(sweep.fit.max, 0.95, 1e-6);
  EXPECT_NEAR(sweep.fit.half_flops / 3e9, 1, 1e-5);
  EXPECT_EQ(sweep.fit.points, 6);
  EXPECT_EQ(sweep.dropped, 0);
}

TEST(KernelSweepTest, DropsSamplesThatAreAllFixedCost) {
  KernelSweep sweep = SyntheticSweep(2e-6, 51e12, 0.95, 3e9);
  sweep.samples.push_back({"tiny", 1e3, 2.5e-6});  // < 1.5 x kernel_s
  ASSERT_TRUE(FitKernelSweep(2e-6, &sweep).ok());
  EXPECT_EQ(sweep.dropped, 1);
  EXPECT_EQ(sweep.fit.points, 6);
}

TEST(KernelSweepTest, NeedsAPeakAndTwoSizes) {
  KernelSweep no_peak = SyntheticSweep(0, 51e12, 0.9, 1e9);
  no_peak.peak_flops = 0;
  const Status s = FitKernelSweep(0, &no_peak);
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(s.error().message, HasSubstr("gemm fp32: no peak"));
  KernelSweep one = SyntheticSweep(0, 51e12, 0.9, 1e9);
  one.samples.resize(1);
  EXPECT_FALSE(FitKernelSweep(0, &one).ok());
}

TEST(KernelSweepTest, ParsesTheEagerSnippetsOutput) {
  const Result<double> ok =
      ParseEagerOutput("some warning\neager_op_s 1.85e-05\n");
  ASSERT_TRUE(ok) << ok.error().message;
  EXPECT_DOUBLE_EQ(*ok, 1.85e-05);
  const Result<double> no_torch = ParseEagerOutput("no_torch ImportError\n");
  ASSERT_FALSE(no_torch);
  EXPECT_THAT(no_torch.error().message, HasSubstr("cannot import torch"));
  const Result<double> no_cuda = ParseEagerOutput("no_cuda\n");
  ASSERT_FALSE(no_cuda);
  EXPECT_THAT(no_cuda.error().message, HasSubstr("is_available() is false"));
  const Result<double> failed =
      ParseEagerOutput("Traceback ...\nRuntimeError: CUDA error\n");
  ASSERT_FALSE(failed);
  EXPECT_THAT(failed.error().message,
              HasSubstr("failed: RuntimeError: CUDA error"));
  EXPECT_FALSE(ParseEagerOutput("eager_op_s nan\n"));
  EXPECT_FALSE(ParseEagerOutput("eager_op_s -1\n"));
  EXPECT_FALSE(ParseEagerOutput(""));
}

// Without a GPU (or torch) the measurement fails cleanly with a reason.
TEST(KernelSweepTest, EagerMeasurementWithoutAGpuSaysWhy) {
  const Result<double> eager = MeasureEagerOverhead(0, true);
  if (eager) GTEST_SKIP() << "this machine has torch with a GPU";
  EXPECT_FALSE(eager.error().message.empty());
}

}  // namespace
}  // namespace tessera::cuda
