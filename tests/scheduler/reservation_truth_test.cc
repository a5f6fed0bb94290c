// The queue's memory reservation against every PyTorch run measured on a
// real GPU (data/gpu-truth: the zoo and its batch sweep on an H100, 17 more
// architectures on an H200): each run is sized as the queue sizes a model
// job (SizeModel with the run's batch, mode and autocast; ModelDemand with
// the service's default headroom) and the reservation must hold the run's
// allocated peak every time (below it the job dies under a hard limit), its
// reserved peak in at least 95% of the runs (below it the job is slower to
// allocate or, under a hard limit, fails), and be at most 1.3x the reserved
// peak at the median (above it the queue wastes what others could use).

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "bench/estimator/gpu_truth.h"
#include "scheduler/job.h"
#include "scheduler/model_jobs.h"
#include "tests/testlib/repo_paths.h"

namespace tessera::scheduler {
namespace {

constexpr double kMiB = 1024.0 * 1024.0;

TEST(ReservationTruth, HoldsWhatEveryMeasuredRunTook) {
  const std::string src = TESSERA_SOURCE_DIR;
  // The H100's runs and its batch sweep, the H200's runs.
  auto every = bench::LoadAllTruth(src, true);
  ASSERT_TRUE(every.has_value()) << every.error().message;
  const std::vector<bench::TruthRun>& runs = *every;
  const bench::TruthModels models({src + "/models/zoo", src + "/models/archs"});
  ASSERT_GE(runs.size(), 140u);  // 36 + 8 on the H100, 102 on the H200
  const double headroom = kDefaultModelHeadroom;  // the service's
  int below_reserved = 0;
  std::vector<double> ratios;
  for (const bench::TruthRun& r : runs) {
    const std::string what = r.device + " " + r.model + " b" +
                             std::to_string(r.batch) +
                             (r.train ? " train " : " infer ") + r.precision;
    ModelRequest request;
    request.path = models.Path(r.model);
    ASSERT_TRUE(std::filesystem::exists(request.path))
        << what << ": no model file";
    request.batch = r.batch;
    request.train = r.train;
    // tf32 changes how fp32 products compute, not what they hold.
    if (r.precision == "bf16") request.amp = "bf16";
    auto sized = SizeModel(request, r.device);
    ASSERT_TRUE(sized.has_value()) << what << ": " << sized.error().message;
    const double reserve_mib =
        static_cast<double>(ModelDemand(*sized, headroom).gpu_memory_mib);
    const double allocated_mib = static_cast<double>(r.allocated) / kMiB;
    const double reserved_mib = static_cast<double>(r.reserved) / kMiB;
    EXPECT_GE(reserve_mib, allocated_mib)
        << what << ": reserves " << reserve_mib << " MiB for a live peak of "
        << allocated_mib << " MiB";
    if (reserve_mib < reserved_mib) {
      ++below_reserved;
      std::printf("below the reserved peak: %s reserves %.0f MiB of %.0f\n",
                  what.c_str(), reserve_mib, reserved_mib);
    }
    ratios.push_back(reserve_mib / reserved_mib);
  }
  const auto n = static_cast<double>(runs.size());
  EXPECT_LE(below_reserved, static_cast<int>(0.05 * n))
      << below_reserved << " of " << runs.size()
      << " runs reserved more than the queue gives them";
  std::sort(ratios.begin(), ratios.end());
  const double median = ratios[ratios.size() / 2];
  EXPECT_LE(median, 1.3);
  EXPECT_GE(median, 1.0);
  std::printf("reservation / reserved peak: median %.3f, %d of %zu below\n",
              median, below_reserved, runs.size());
}

// The slack holds for a small job; the headroom for a large one; and a
// GPU's usable memory is the inverse of what a peak reserves.
TEST(ReservationTruth, SlackAndHeadroomAreOneRule) {
  const double h = 0.25;
  const double slack_mib = static_cast<double>(kReserveSlackBytes) / kMiB;
  EXPECT_EQ(ReserveMiB(100 * kMiB, h), static_cast<int64_t>(100 + slack_mib));
  EXPECT_EQ(ReserveMiB(4000 * kMiB, h), 5000);
  for (const int64_t mib : {int64_t{150}, int64_t{200}, int64_t{384},
                            int64_t{1000}, int64_t{81920}}) {
    const double usable = UsableBytes(mib, h);
    EXPECT_LE(ReserveMiB(usable, h), mib) << mib;
    EXPECT_GT(ReserveMiB(usable + 2 * kMiB, h), mib) << mib;
  }
  EXPECT_EQ(UsableBytes(64, h), 0.0);  // below the slack: nothing fits
}

}  // namespace
}  // namespace tessera::scheduler
