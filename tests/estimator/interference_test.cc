// The co-location slowdown (estimator/interference.h) against the H100's
// measurement (data/gpu-truth/h100_interference.json): the constants are
// refitted here from the repository's copy of the data, the error per job
// stays under the bounds docs/estimator.md reports, and the law keeps its
// properties (1 alone, monotone in k, MPS no worse than time-slicing).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "estimator/interference.h"
#include "tests/testlib/repo_paths.h"

namespace tessera::estimator {
namespace {

using nlohmann::json;

// GPT-2 is not in h100_pytorch_eager.json (held out), so its busy fraction
// is an estimate: BERT-base's measured per-operator throughput (its b32
// profile) applied to GPT-2's FLOPs and elements at 1,024 tokens gives
// 9.4 ms of GPU work in its 11.2 ms step (docs/estimator.md).
constexpr double kGpt2BusyFraction = 0.84;

json Load(const std::string& name) {
  std::ifstream in(repo::GpuTruthDir() + "/" + name);
  EXPECT_TRUE(in) << name << " is missing";
  return json::parse(in, nullptr, /*allow_exceptions=*/false);
}

// The GPU time per step (ms) of a fp32 batch-32 run of `model`, the sum of
// its profile's aten-level operators' self device time, and its step.
struct GpuTime {
  double gpu_ms = 0, step_ms = 0;
};
GpuTime ProfiledGpuTime(const json& eager, const std::string& model,
                        bool train) {
  for (const json& r : eager["runs"]) {
    if (r["model"] != model || r["train"] != train || r["batch"] != 32 ||
        r["precision"] != "fp32" || !r.contains("profile")) {
      continue;
    }
    GpuTime t;
    t.step_ms = r["median_ms"].get<double>();
    for (const json& op : r["profile"]) {
      if (op["op"].get<std::string>().starts_with("aten::")) {
        t.gpu_ms += op["self_device_us_per_step"].get<double>() / 1e3;
      }
    }
    return t;
  }
  ADD_FAILURE() << "no fp32 b32 profile of " << model;
  return {};
}

// One (mode, job, k >= 2) of the measurement: the mean over the processes
// of their median step, over the same job's step alone (k = 1).
struct Point {
  GpuSharing sharing = GpuSharing::kTimeslice;
  std::string job;
  int k = 0;
  double slowdown = 0;
};

std::vector<Point> MeasuredSlowdowns(const json& interference,
                                     std::map<std::string, double>& alone_ms) {
  std::map<std::pair<std::string, std::string>, double> alone;
  for (const json& r : interference["runs"]) {
    if (r["k"] == 1) {
      alone[{r["mode"], r["job"]}] = r["median_ms_per_process"][0];
    }
  }
  std::vector<Point> points;
  for (const json& r : interference["runs"]) {
    if (r["k"] == 1) continue;
    double sum = 0;
    for (const json& ms : r["median_ms_per_process"]) sum += ms.get<double>();
    const auto n = static_cast<double>(r["median_ms_per_process"].size());
    Point p;
    p.sharing = *ParseGpuSharing(r["mode"].get<std::string>());
    p.job = r["job"];
    p.k = r["k"];
    p.slowdown = sum / n / alone.at({r["mode"], r["job"]});
    points.push_back(p);
  }
  for (const auto& [key, ms] : alone) alone_ms[key.second] += ms / 2;
  return points;
}

// Everything the fit uses: the points and each job's busy fraction.
struct FitData {
  std::vector<Point> points;
  std::map<std::string, double> busy;
};

FitData LoadFitData() {
  const json eager = Load("h100_pytorch_eager.json");
  const json interference = Load("h100_interference.json");
  FitData d;
  std::map<std::string, double> alone_ms;  // mean of the two modes' k = 1
  d.points = MeasuredSlowdowns(interference, alone_ms);
  const GpuTime resnet = ProfiledGpuTime(eager, "resnet50", true);
  const GpuTime bert = ProfiledGpuTime(eager, "bert_base", true);
  // MobileNetV2 was profiled at batch 32 only: its kernels' time taken as
  // proportional to the batch (a quarter at b8), over the step measured
  // alone with the interference runs (eager, CPU-bound: 3.2 ms there).
  const GpuTime mobilenet = ProfiledGpuTime(eager, "mobilenet_v2", false);
  d.busy["resnet50_train_b32"] = resnet.gpu_ms / resnet.step_ms;
  d.busy["bert_train_b32"] = bert.gpu_ms / bert.step_ms;
  d.busy["mobilenet_infer_b8"] =
      mobilenet.gpu_ms * 8 / 32 / alone_ms["mobilenet_infer_b8"];
  d.busy["gpt2_infer_b1"] = kGpt2BusyFraction;
  return d;
}

const FitData& Data() {
  static const FitData data = LoadFitData();
  return data;
}

TEST(CoLocationFit, BusyFractionsComeFromTheProfiles) {
  const auto& busy = Data().busy;
  ASSERT_EQ(busy.size(), 4u);
  EXPECT_NEAR(busy.at("resnet50_train_b32"), 0.934, 5e-4);
  EXPECT_NEAR(busy.at("bert_train_b32"), 0.950, 5e-4);
  EXPECT_NEAR(busy.at("mobilenet_infer_b8"), 0.265, 5e-4);
  // The simulator's default for training jobs is their mean.
  EXPECT_NEAR(kTrainingBusyFraction,
              (busy.at("resnet50_train_b32") + busy.at("bert_train_b32")) / 2,
              5e-3);
}

// Both laws are linear in their constant, so least squares on the
// slowdown ratios has a closed form: c = sum(x y) / sum(x x).
TEST(CoLocationFit, ConstantsAreTheLeastSquaresFitOfTheMeasurement) {
  double ts_xy = 0, ts_xx = 0, mps_xy = 0, mps_xx = 0;
  for (const Point& p : Data().points) {
    const double u = Data().busy.at(p.job);
    if (p.sharing == GpuSharing::kTimeslice) {
      const double x = u * p.k, y = p.slowdown - 1 + u;  // s = 1 - u + c u k
      ts_xy += x * y;
      ts_xx += x * x;
    } else {
      const double x = u * (p.k - 1), y = p.slowdown - 1;  // s = 1 + c (k-1) u
      mps_xy += x * y;
      mps_xx += x * x;
    }
  }
  ASSERT_EQ(Data().points.size(), 24u);  // 2 modes x 4 jobs x k = 2..4
  EXPECT_NEAR(kTimesliceCost, ts_xy / ts_xx, 5e-4);
  EXPECT_NEAR(kMpsOverlapCost, mps_xy / mps_xx, 5e-4);
}

// The error of the predicted step time per (mode, job) over k = 2..4, as
// docs/estimator.md tabulates it. MobileNetV2 under MPS is the noisy one:
// at k = 3 its processes measured 1.28x to 1.85x, at k = 4 1.11x to 1.49x
// (a CPU-bound job's steps vary with how the four land on the cores).
TEST(CoLocationFit, ErrorPerJobStaysUnderTheReportedBound) {
  std::map<std::pair<GpuSharing, std::string>, std::vector<double>> errors;
  for (const Point& p : Data().points) {
    const double predicted =
        CoLocationSlowdown(p.sharing, Data().busy.at(p.job), p.k);
    errors[{p.sharing, p.job}].push_back(predicted / p.slowdown - 1);
  }
  ASSERT_EQ(errors.size(), 8u);
  for (const auto& [key, e] : errors) {
    double mean = 0, max = 0;
    for (const double x : e) {
      mean += std::abs(x) / static_cast<double>(e.size());
      max = std::max(max, std::abs(x));
    }
    const bool noisy =
        key.first == GpuSharing::kMps && key.second == "mobilenet_infer_b8";
    std::printf(
        "%-9s %-20s u %.3f  errors %+5.1f%% %+5.1f%% %+5.1f%%  "
        "mean |e| %4.1f%%  max %4.1f%%\n",
        std::string(GpuSharingName(key.first)).c_str(), key.second.c_str(),
        Data().busy.at(key.second), 100 * e[0], 100 * e[1], 100 * e[2],
        100 * mean, 100 * max);
    EXPECT_LE(mean, noisy ? 0.20 : 0.10) << key.second;
    EXPECT_LE(max, noisy ? 0.40 : 0.15) << key.second;
  }
}

constexpr GpuSharing kModes[] = {GpuSharing::kTimeslice, GpuSharing::kMps};
constexpr double kBusy[] = {0, 0.05, 0.265, 0.5, 0.84, 0.94, 1};

TEST(CoLocationSlowdown, IsOneForAJobAlone) {
  for (const GpuSharing mode : kModes) {
    for (const double u : kBusy) {
      EXPECT_DOUBLE_EQ(CoLocationSlowdown(mode, u, 1), 1.0);
    }
  }
}

TEST(CoLocationSlowdown, GrowsWithTheJobsSharingAndWithBusyness) {
  for (const GpuSharing mode : kModes) {
    for (const double u : kBusy) {
      for (int k = 1; k < 64; ++k) {
        EXPECT_LE(CoLocationSlowdown(mode, u, k),
                  CoLocationSlowdown(mode, u, k + 1));
        EXPECT_GE(CoLocationSlowdown(mode, u, k), 1.0);
      }
    }
    for (size_t i = 1; i < std::size(kBusy); ++i) {
      EXPECT_LT(CoLocationSlowdown(mode, kBusy[i - 1], 3),
                CoLocationSlowdown(mode, kBusy[i], 3));
    }
  }
}

TEST(CoLocationSlowdown, MpsIsNeverWorseThanTimeslicing) {
  for (const double u : kBusy) {
    for (int k = 1; k <= 64; ++k) {
      EXPECT_LE(CoLocationSlowdown(GpuSharing::kMps, u, k),
                CoLocationSlowdown(GpuSharing::kTimeslice, u, k))
          << "u " << u << " k " << k;
    }
  }
}

TEST(CoLocationSlowdown, BusyJobsTakeTurnsAndPayForTheSwitches) {
  // u = 1 under time-slicing: k x the step and the switches on top.
  EXPECT_DOUBLE_EQ(CoLocationSlowdown(GpuSharing::kTimeslice, 1, 2),
                   2 * kTimesliceCost);
  EXPECT_GT(CoLocationSlowdown(GpuSharing::kTimeslice, 1, 4), 4);
  // Under MPS less than k: part of the kernels overlap.
  EXPECT_LT(CoLocationSlowdown(GpuSharing::kMps, 1, 4), 4);
  // A job that leaves the GPU idle is not slowed.
  for (const GpuSharing mode : kModes) {
    EXPECT_DOUBLE_EQ(CoLocationSlowdown(mode, 0, 8), 1.0);
  }
}

TEST(CoLocationSlowdown, ClampsTheBusyFraction) {
  for (const GpuSharing mode : kModes) {
    EXPECT_DOUBLE_EQ(CoLocationSlowdown(mode, 1.7, 3),
                     CoLocationSlowdown(mode, 1, 3));
    EXPECT_DOUBLE_EQ(CoLocationSlowdown(mode, -0.5, 3), 1.0);
    EXPECT_DOUBLE_EQ(
        CoLocationSlowdown(mode, std::numeric_limits<double>::quiet_NaN(), 3),
        1.0);
  }
}

TEST(GpuSharing, ParsesItsNames) {
  for (const GpuSharing mode : kModes) {
    auto parsed = ParseGpuSharing(GpuSharingName(mode));
    ASSERT_TRUE(parsed) << parsed.error().message;
    EXPECT_EQ(*parsed, mode);
  }
  auto bad = ParseGpuSharing("mig");
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().code, ErrorCode::kBadInput);
  EXPECT_NE(bad.error().message.find("timeslice or mps"), std::string::npos);
}

}  // namespace
}  // namespace tessera::estimator
