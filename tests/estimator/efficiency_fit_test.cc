#include "estimator/efficiency_fit.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

namespace tessera::estimator {
namespace {

// Square GEMMs m = n = k = 256 ... 8192 as `tessera calibrate` sweeps them,
// at max x W / (W + half), with deterministic alternating relative noise.
std::vector<EfficiencySample> Synthetic(double max, double half,
                                        double noise = 0) {
  std::vector<EfficiencySample> samples;
  int i = 0;
  for (double n = 256; n <= 8192; n *= 2, ++i) {
    const double w = 2 * n * n * n;
    const double factor = 1 + (i % 2 == 0 ? noise : -noise);
    samples.push_back({w, max * w / (w + half) * factor});
  }
  return samples;
}

TEST(EfficiencyFitTest, RecoversExactParameters) {
  const Result<EfficiencyFit> fit = FitEfficiencyCurve(Synthetic(0.8, 2e9));
  ASSERT_TRUE(fit) << fit.error().message;
  EXPECT_NEAR(fit->max, 0.8, 1e-6);
  EXPECT_NEAR(fit->half_flops / 2e9, 1, 1e-5);
  EXPECT_EQ(fit->points, 6);
  EXPECT_LT(fit->rms_error, 1e-7);
  EXPECT_LT(fit->max_abs_error, 1e-6);
}

TEST(EfficiencyFitTest, RecoversTensorCoreLikeParameters) {
  // Tensor cores need far larger problems to fill: half at ~ the 4096^3 GEMM.
  const Result<EfficiencyFit> fit = FitEfficiencyCurve(Synthetic(0.65, 5e10));
  ASSERT_TRUE(fit) << fit.error().message;
  EXPECT_NEAR(fit->max, 0.65, 1e-5);
  EXPECT_NEAR(fit->half_flops / 5e10, 1, 1e-4);
}

TEST(EfficiencyFitTest, ToleratesNoise) {
  const Result<EfficiencyFit> fit =
      FitEfficiencyCurve(Synthetic(0.9, 1e10, 0.05));
  ASSERT_TRUE(fit) << fit.error().message;
  EXPECT_NEAR(fit->max, 0.9, 0.05);
  EXPECT_NEAR(std::log10(fit->half_flops), 10, 0.15);
  EXPECT_GT(fit->rms_error, 0);
  EXPECT_LT(fit->max_abs_error, 0.1);
}

TEST(EfficiencyFitTest, FlatEfficiencyGivesNoHalf) {
  std::vector<EfficiencySample> samples = {
      {1e8, 0.5}, {1e10, 0.5}, {1e12, 0.5}};
  const Result<EfficiencyFit> fit = FitEfficiencyCurve(samples);
  ASSERT_TRUE(fit) << fit.error().message;
  EXPECT_NEAR(fit->max, 0.5, 1e-9);
  EXPECT_LT(fit->half_flops, 1e8 * 1e-2);  // 0 or negligible
}

TEST(EfficiencyFitTest, MaxIsCappedForWinogradLikeEfficiencies) {
  const Result<EfficiencyFit> fit = FitEfficiencyCurve(Synthetic(3.0, 1e9));
  ASSERT_TRUE(fit) << fit.error().message;
  EXPECT_DOUBLE_EQ(fit->max, kMaxKernelEfficiency);
  // Above 1 is allowed: a 3x3 Winograd convolution at 1.4 x nominal.
  const Result<EfficiencyFit> winograd =
      FitEfficiencyCurve(Synthetic(1.4, 1e9));
  ASSERT_TRUE(winograd) << winograd.error().message;
  EXPECT_NEAR(winograd->max, 1.4, 1e-6);
}

TEST(EfficiencyFitTest, RejectsBadSamples) {
  EXPECT_FALSE(FitEfficiencyCurve({}));
  EXPECT_FALSE(FitEfficiencyCurve({{1e9, 0.5}}));
  EXPECT_FALSE(FitEfficiencyCurve({{1e9, 0.5}, {1e9, 0.6}}));
  const Result<EfficiencyFit> negative =
      FitEfficiencyCurve({{1e9, 0.5}, {1e10, -0.1}});
  ASSERT_FALSE(negative);
  EXPECT_EQ(negative.error().code, ErrorCode::kBadInput);
  EXPECT_NE(negative.error().message.find("sample 1"), std::string::npos);
  EXPECT_FALSE(FitEfficiencyCurve({{1e9, 0.5}, {NAN, 0.6}}));
  EXPECT_FALSE(FitEfficiencyCurve({{0, 0.5}, {1e10, 0.6}}));
}

}  // namespace
}  // namespace tessera::estimator
