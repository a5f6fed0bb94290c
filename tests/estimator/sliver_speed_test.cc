// What a share of a GPU's threads buys (RuntimeOptions::compute_share):
// one job alone under MPS at 100, 50 and 25% of an H200's threads
// (data/gpu-truth/h200_mps_fraction.json) against the runtime model's
// steps at those shares. kBandwidthShare was chosen on these runs (they
// are the only ones), so the bound below says what the model is, not how
// it does on unseen ones.

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "bench/estimator/gpu_truth.h"
#include "estimator/device_catalog.h"
#include "estimator/runtime/runtime.h"
#include "tests/testlib/repo_paths.h"

namespace tessera::estimator {
namespace {

const std::string kSrc = std::string(TESSERA_SOURCE_DIR);

std::vector<bench::TruthRun> MpsRuns() {
  auto runs =
      bench::LoadTruth(kSrc + "/data/gpu-truth/h200_mps_fraction.json", false);
  EXPECT_TRUE(runs.has_value());
  return runs ? *runs : std::vector<bench::TruthRun>{};
}

TEST(SliverSpeed, TheFileSaysWhatShareEachRunHad) {
  int shares[3] = {};
  for (const auto& r : MpsRuns()) {
    shares[0] += r.share == 1.0;
    shares[1] += r.share == 0.5;
    shares[2] += r.share == 0.25;
  }
  EXPECT_GE(shares[0], 4);
  EXPECT_GE(shares[1], 4);
  EXPECT_GE(shares[2], 4);
}

// The slowdown against the same job on the whole GPU, measured and
// predicted, for every run whose whole-GPU twin was measured.
TEST(SliverSpeed, SlowdownsFollowTheMeasuredOnes) {
  const std::vector<bench::TruthRun> runs = MpsRuns();
  bench::TruthModels models({kSrc + "/models/zoo", kSrc + "/models/archs"});
  const DeviceSpec h200 = *DeviceCatalog::BuiltIn().Find("h200");
  const RuntimeCosts costs = DefaultCosts(Runtime::kPyTorch);
  double error = 0;
  int n = 0;
  for (const auto& r : runs) {
    if (r.share >= 1.0) continue;
    const bench::TruthRun* whole = bench::WholeGpuTwin(runs, r);
    if (!whole) continue;
    auto part = bench::Predict(models, r, h200, costs);
    auto all = bench::Predict(models, *whole, h200, costs);
    ASSERT_TRUE(part && all);
    const double measured = r.ms / whole->ms;
    const double predicted = part->ms / all->ms;
    // A share never speeds a job up, and never slows it past 1 / share.
    EXPECT_GE(predicted, 1.0 - 1e-9) << r.model;
    EXPECT_LE(predicted, 1.0 / r.share + 1e-9) << r.model;
    error += std::abs(predicted / measured - 1);
    ++n;
  }
  ASSERT_GE(n, 6);
  EXPECT_LT(error / n, 0.2) << "mean error of the slowdown over " << n;
}

// Compute-bound work slows with the share; a host-bound step barely does.
TEST(SliverSpeed, HostBoundStepsBarelySlow) {
  bench::TruthModels models({kSrc + "/models/zoo"});
  const DeviceSpec h200 = *DeviceCatalog::BuiltIn().Find("h200");
  const RuntimeCosts costs = DefaultCosts(Runtime::kPyTorch);
  auto step = [&](int batch, double share) {
    bench::TruthRun r;
    r.model = "resnet50";
    r.batch = batch;
    r.share = share;
    auto p = bench::Predict(models, r, h200, costs);
    EXPECT_TRUE(p);
    return p ? p->ms : 0.0;
  };
  const double big = step(64, 0.25) / step(64, 1.0);
  const double small = step(1, 0.25) / step(1, 1.0);
  EXPECT_GT(big, 2.0);
  EXPECT_LT(small, 1.3);
  // Monotone in the share.
  double last = 0;
  for (const double share : {1.0, 0.75, 0.5, 0.3, 0.1}) {
    const double t = step(32, share);
    EXPECT_GE(t, last) << share;
    last = t;
  }
}

}  // namespace
}  // namespace tessera::estimator
