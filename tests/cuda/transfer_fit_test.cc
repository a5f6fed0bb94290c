#include "cuda/transfer_fit.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

namespace tessera::cuda {
namespace {

// 4 KiB, 16 KiB, ... 256 MiB, as `tessera calibrate` measures.
std::vector<TransferSample> Synthetic(double latency, double bandwidth,
                                      double noise = 0) {
  std::vector<TransferSample> samples;
  int i = 0;
  for (double bytes = 4096; bytes <= 256.0 * (1 << 20); bytes *= 4, ++i) {
    // Deterministic +-noise, alternating in sign.
    const double factor = 1 + (i % 2 == 0 ? noise : -noise);
    samples.push_back({bytes, (latency + bytes / bandwidth) * factor});
  }
  return samples;
}

TEST(TransferFitTest, RecoversExactParameters) {
  const Result<TransferFit> fit = FitTransfer(Synthetic(8e-6, 25e9));
  ASSERT_TRUE(fit) << fit.error().message;
  EXPECT_NEAR(fit->latency_s, 8e-6, 1e-12);
  EXPECT_NEAR(fit->bytes_per_second, 25e9, 1);
  EXPECT_EQ(fit->points, 9);
  EXPECT_LT(fit->max_relative_error, 1e-9);
}

TEST(TransferFitTest, RecoversNvlinkLikeParameters) {
  const Result<TransferFit> fit = FitTransfer(Synthetic(2e-6, 300e9));
  ASSERT_TRUE(fit) << fit.error().message;
  EXPECT_NEAR(fit->latency_s, 2e-6, 1e-12);
  EXPECT_NEAR(fit->bytes_per_second / 300e9, 1, 1e-9);
}

TEST(TransferFitTest, ToleratesNoiseOnBothEnds) {
  // 3% noise: the latency, seen only by the small sizes, stays within a few
  // percent because the fit weighs relative residuals.
  const Result<TransferFit> fit = FitTransfer(Synthetic(10e-6, 12e9, 0.03));
  ASSERT_TRUE(fit) << fit.error().message;
  EXPECT_NEAR(fit->latency_s / 10e-6, 1, 0.1);
  EXPECT_NEAR(fit->bytes_per_second / 12e9, 1, 0.05);
  EXPECT_GT(fit->max_relative_error, 0.01);
  EXPECT_LT(fit->max_relative_error, 0.1);
}

TEST(TransferFitTest, ClampsNegativeLatencyToZero) {
  // Pure bandwidth, the smallest transfer measured a little fast.
  std::vector<TransferSample> samples = Synthetic(0, 10e9);
  samples[0].seconds *= 0.8;
  const Result<TransferFit> fit = FitTransfer(samples);
  ASSERT_TRUE(fit) << fit.error().message;
  EXPECT_EQ(fit->latency_s, 0);
  EXPECT_NEAR(fit->bytes_per_second / 10e9, 1, 0.05);
}

TEST(TransferFitTest, TwoPointsAreEnough) {
  const Result<TransferFit> fit =
      FitTransfer({{1e6, 5e-6 + 1e6 / 20e9}, {1e8, 5e-6 + 1e8 / 20e9}});
  ASSERT_TRUE(fit) << fit.error().message;
  EXPECT_NEAR(fit->latency_s, 5e-6, 1e-12);
  EXPECT_NEAR(fit->bytes_per_second / 20e9, 1, 1e-9);
}

TEST(TransferFitTest, RejectsTooFewOrBadSamples) {
  EXPECT_FALSE(FitTransfer({}));
  EXPECT_FALSE(FitTransfer({{4096, 1e-5}}));
  EXPECT_FALSE(FitTransfer({{4096, 1e-5}, {4096, 2e-5}}));
  const Result<TransferFit> negative = FitTransfer({{4096, 1e-5}, {8192, -1}});
  ASSERT_FALSE(negative);
  EXPECT_EQ(negative.error().code, ErrorCode::kBadInput);
  EXPECT_NE(negative.error().message.find("sample 1"), std::string::npos);
  EXPECT_FALSE(FitTransfer({{4096, 1e-5}, {8192, NAN}}));
  // Time falling with size: no bandwidth.
  EXPECT_FALSE(FitTransfer({{4096, 2e-5}, {8192, 1e-5}}));
}

}  // namespace
}  // namespace tessera::cuda
