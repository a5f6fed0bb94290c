// SizedModel::sliver_speed and SliverSpeed: what a share of a GPU's threads
// buys a model job alone (the runtime model at that compute share).

#include <gtest/gtest.h>

#include <string>

#include "scheduler/model_jobs.h"
#include "tests/testlib/repo_paths.h"

namespace tessera::scheduler {
namespace {

SizedModel Sized(const char* model, int64_t batch) {
  ModelRequest request;
  request.path =
      std::string(TESSERA_SOURCE_DIR) + "/models/zoo/" + model + ".onnx";
  request.batch = batch;
  auto sized = SizeModel(request, "h200");
  EXPECT_TRUE(sized.has_value()) << sized.error().message;
  return sized.has_value() ? *sized : SizedModel{};
}

TEST(SliverSpeedOfAJob, GrowsWithTheShareUpToTheWholeGpu) {
  const SizedModel s = Sized("resnet50", 32);
  EXPECT_DOUBLE_EQ(SliverSpeed(s, 1000), 1.0);
  double last = 0;
  for (const int milli : {20, 100, 180, 250, 400, 500, 750, 1000}) {
    const double v = SliverSpeed(s, milli);
    EXPECT_GT(v, last) << milli;
    EXPECT_LE(v, 1.0) << milli;
    // Never faster than the share's part of the threads allows on
    // memory-bound work (kBandwidthShare) nor slower than the share.
    EXPECT_GE(v, milli / 1000.0 - 1e-9) << milli;
    last = v;
  }
  EXPECT_LT(SliverSpeed(s, 500), 0.9);  // batch 32 is GPU-bound
}

TEST(SliverSpeedOfAJob, AHostBoundJobLosesLittle) {
  const SizedModel b1 = Sized("resnet50", 1);
  const SizedModel b32 = Sized("resnet50", 32);
  EXPECT_GT(SliverSpeed(b1, 250), SliverSpeed(b32, 250));
  EXPECT_GT(SliverSpeed(b1, 500), 0.9);
}

}  // namespace
}  // namespace tessera::scheduler
