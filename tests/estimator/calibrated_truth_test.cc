// Calibrating helps, never hurts: the entries `tessera calibrate` wrote on
// the H100 and the H200 of data/gpu-truth predict those GPUs' PyTorch runs
// at least as well as the catalog's entries (estimator/runtime/runtime.h:
// Achievable, ReferenceSweeps, kReferenceEagerOpS); and the achievable
// fractions the catalog uses are what those calibrations measured.

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "bench/estimator/gpu_truth.h"
#include "estimator/device_catalog.h"
#include "estimator/runtime/runtime.h"
#include "tests/testlib/repo_paths.h"

namespace tessera::estimator {
namespace {

const std::string kDir = std::string(TESSERA_SOURCE_DIR);

DeviceCatalog WithCalibrations() {
  DeviceCatalog c = DeviceCatalog::BuiltIn();
  for (const char* f : {"h100_calibrate.yaml", "h200_calibrate.yaml"}) {
    const Status s = c.MergeYaml(kDir + "/data/gpu-truth/" + f);
    EXPECT_TRUE(s.ok()) << (s.ok() ? "" : s.error().message);
  }
  return c;
}

TEST(Calibration, ItsFilesSayTheirPeaksAreMeasured) {
  const DeviceCatalog c = WithCalibrations();
  EXPECT_TRUE(c.Find("h100-calibrated")->peaks_measured);
  EXPECT_TRUE(c.Find("h200-cal")->peaks_measured);
  EXPECT_FALSE(c.Find("h100-sxm")->peaks_measured);
  // Measured peaks are taken as they are; datasheet ones are scaled.
  const DeviceSpec& cal = *c.Find("h200-cal");
  EXPECT_DOUBLE_EQ(Achievable(cal).fp32, cal.fp32_flops);
  const DeviceSpec& sheet = *c.Find("h200");
  EXPECT_DOUBLE_EQ(Achievable(sheet).bf16,
                   sheet.bf16_flops * kAchievableFraction[3]);
}

// The fractions are the mean over both GPUs of measured / datasheet.
TEST(Calibration, AchievableFractionsAreWhatTheGpusMeasured) {
  const DeviceCatalog c = WithCalibrations();
  const std::pair<const char*, const char*> pairs[] = {
      {"h100-calibrated", "h100-sxm"}, {"h200-cal", "h200"}};
  double sum[5] = {};
  for (const auto& [measured, sheet] : pairs) {
    const DeviceSpec& m = *c.Find(measured);
    const DeviceSpec& s = *c.Find(sheet);
    const double f[5] = {
        m.fp32_flops / s.fp32_flops, m.tf32_flops / s.tf32_flops,
        m.fp16_flops / s.fp16_flops, m.bf16_flops / s.bf16_flops,
        m.memory_bandwidth / s.memory_bandwidth};
    for (int i = 0; i < 5; ++i) {
      sum[i] += f[i] / 2;
      // The two GPUs agree within 3%: one SM design.
      EXPECT_NEAR(f[i], kAchievableFraction[i], 0.03) << measured << " " << i;
    }
  }
  for (int i = 0; i < 5; ++i) EXPECT_NEAR(sum[i], kAchievableFraction[i], 2e-3);
}

TEST(Calibration, ACalibratedEntryPredictsNoWorseThanTheCatalog) {
  auto runs = bench::LoadAllTruth(kDir);
  ASSERT_TRUE(runs.has_value()) << runs.error().message;
  ASSERT_EQ(runs->size(), 138u);
  bench::TruthModels models({kDir + "/models/zoo", kDir + "/models/archs"});
  const DeviceCatalog c = WithCalibrations();
  const std::map<std::string, std::pair<std::string, std::string>> entries = {
      {"h100-sxm", {"h100-sxm", "h100-calibrated"}},
      {"h200", {"h200", "h200-cal"}}};
  for (const auto& [gpu, names] : entries) {
    std::vector<bench::Prediction> catalog, calibrated;
    for (const auto& r : *runs) {
      if (r.device != gpu) continue;
      const RuntimeCosts costs = DefaultCosts(Runtime::kPyTorch);
      auto a = bench::Predict(models, r, *c.Find(names.first), costs);
      auto b = bench::Predict(models, r, *c.Find(names.second), costs);
      ASSERT_TRUE(a && b) << r.model;
      catalog.push_back(*a);
      calibrated.push_back(*b);
    }
    const auto e0 = bench::MeanErrors(catalog);
    const auto e1 = bench::MeanErrors(calibrated);
    ASSERT_GT(e0.n, 30) << gpu;
    // The measured peaks differ from datasheet x fraction by up to 1.5%:
    // the calibrated entry may move either way by that much at most.
    EXPECT_LE(e1.time, e0.time + 0.002) << gpu;
    EXPECT_LE(e1.memory, e0.memory + 1e-9) << gpu;
    std::printf(
        "%-9s catalog time %.2f%% memory %.2f%%; calibrated %.2f%% "
        "%.2f%%\n",
        gpu.c_str(), 100 * e0.time, 100 * e0.memory, 100 * e1.time,
        100 * e1.memory);
  }
}

TEST(Calibration, PeaksKeyIsCheckedAndNamed) {
  DeviceCatalog c = DeviceCatalog::BuiltIn();
  const std::string path = ::testing::TempDir() + "/peaks.yaml";
  {
    FILE* f = std::fopen(path.c_str(), "w");
    ASSERT_NE(f, nullptr);
    std::fputs(
        "devices:\n  - name: mine\n    base: a100-80gb\n"
        "    peaks: measured\n",
        f);
    std::fclose(f);
  }
  ASSERT_TRUE(c.MergeYaml(path).ok());
  EXPECT_TRUE(c.Find("mine")->peaks_measured);
  {
    FILE* f = std::fopen(path.c_str(), "w");
    std::fputs(
        "devices:\n  - name: mine2\n    base: a100-80gb\n"
        "    peaks: sometimes\n",
        f);
    std::fclose(f);
  }
  const Status bad = c.MergeYaml(path);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("'peaks'"), std::string::npos)
      << bad.error().message;
  EXPECT_NE(bad.error().message.find("measured or datasheet"),
            std::string::npos)
      << bad.error().message;
}

}  // namespace
}  // namespace tessera::estimator
