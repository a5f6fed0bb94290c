#include "cuda/calibration_yaml.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "estimator/device_catalog.h"

namespace tessera::cuda {
namespace {

using ::testing::HasSubstr;

CalibrationResult SampleResult() {
  CalibrationResult r;
  r.gpu_index = 0;
  r.gpu_name = "NVIDIA A100-SXM4-80GB";
  r.compute_major = 8;
  r.compute_minor = 0;
  r.memory_bytes = 85'899'345'920;
  r.date = "2026-11-22";
  r.gemm_size = 8192;
  r.fp32_flops = 19.1e12;
  r.tf32_flops = 142.5e12;
  r.fp16_flops = 280.25e12;
  r.bf16_flops = 279.5e12;
  r.int8_ops = 550e12;
  r.memory_bandwidth = 1720.5e9;
  r.memory_test_bytes = 512 << 20;
  r.host_to_device = {9e-6, 24.5e9, 9, 0.02};
  r.device_to_host = {8e-6, 25.25e9, 9, 0.03};
  r.launch_overhead_s = 2.5e-6;
  return r;
}

class CalibrationYamlTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ =
        std::filesystem::temp_directory_path() /
        ("tessera_calibration_yaml_" +
         std::string(
             ::testing::UnitTest::GetInstance()->current_test_info()->name()));
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  // Writes `yaml` and merges it into the built-in catalog.
  Result<estimator::DeviceCatalog> Merge(const std::string& yaml) {
    const std::string path = (dir_ / "devices.yaml").string();
    std::ofstream(path) << yaml;
    estimator::DeviceCatalog catalog = estimator::DeviceCatalog::BuiltIn();
    if (Status s = catalog.MergeYaml(path); !s) return s.error();
    return catalog;
  }

  std::filesystem::path dir_;
};

TEST_F(CalibrationYamlTest, NewDeviceRoundTripsThroughMergeYaml) {
  const std::string yaml =
      CalibrationYaml(SampleResult(), "calibrated-gpu0", "");
  const Result<estimator::DeviceCatalog> catalog = Merge(yaml);
  ASSERT_TRUE(catalog) << catalog.error().message << "\n" << yaml;
  const estimator::DeviceSpec* d = catalog->Find("calibrated-gpu0");
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(d->display_name, "NVIDIA A100-SXM4-80GB");
  EXPECT_EQ(d->kind, estimator::DeviceKind::kGpu);
  EXPECT_EQ(d->memory_bytes, 85'899'345'920);
  EXPECT_NEAR(d->fp32_flops, 19.1e12, 1e9);
  EXPECT_NEAR(d->tf32_flops, 142.5e12, 1e9);
  EXPECT_NEAR(d->fp16_flops, 280.25e12, 1e9);
  EXPECT_NEAR(d->bf16_flops, 279.5e12, 1e9);
  EXPECT_NEAR(d->int8_ops, 550e12, 1e9);
  EXPECT_NEAR(d->memory_bandwidth, 1720.5e9, 1e7);
  // The slower direction of the host link.
  EXPECT_NEAR(d->pcie_bandwidth, 24.5e9, 1e7);
  EXPECT_EQ(d->nvlink_bandwidth, 0);  // not measured: no entry, default 0
  EXPECT_NEAR(d->launch_overhead_s, 2.5e-6, 1e-9);
  EXPECT_EQ(d->sources,
            "measured by tessera calibrate on NVIDIA A100-SXM4-80GB, "
            "2026-11-22");
  EXPECT_THAT(yaml, HasSubstr("# Host to device (pinned): 9.000us + bytes / "
                              "24.50GB/s (9 sizes, max error 2.0%)"));
}

TEST_F(CalibrationYamlTest, BaseKeepsFiguresThatWereNotMeasured) {
  CalibrationResult r = SampleResult();
  r.int8_ops = 0;  // skipped
  r.bf16_flops = 0;
  r.notes.push_back("int8 GemmEx skipped: CUBLAS_STATUS_NOT_SUPPORTED");
  r.p2p_peer = 1;
  r.peer_to_peer = {3e-6, 250e9, 9, 0.01};
  const std::string yaml = CalibrationYaml(r, "my-a100", "a100-80gb");
  EXPECT_THAT(yaml, HasSubstr("# Note: int8 GemmEx skipped"));
  EXPECT_THAT(yaml, ::testing::Not(HasSubstr("int8_tops")));
  const Result<estimator::DeviceCatalog> catalog = Merge(yaml);
  ASSERT_TRUE(catalog) << catalog.error().message << "\n" << yaml;
  const estimator::DeviceSpec* base = catalog->Find("a100-80gb");
  const estimator::DeviceSpec* d = catalog->Find("my-a100");
  ASSERT_NE(base, nullptr);
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(d->int8_ops, base->int8_ops);
  EXPECT_EQ(d->bf16_flops, base->bf16_flops);
  EXPECT_NEAR(d->fp16_flops, 280.25e12, 1e9);
  EXPECT_NEAR(d->nvlink_bandwidth, 250e9, 1e7);
  EXPECT_THAT(d->sources, HasSubstr("measured by tessera calibrate"));
}

TEST_F(CalibrationYamlTest, NewDeviceWithoutOptionalThroughputsDefaultsToFp32) {
  CalibrationResult r = SampleResult();
  r.tf32_flops = r.fp16_flops = r.bf16_flops = r.int8_ops = 0;
  const Result<estimator::DeviceCatalog> catalog =
      Merge(CalibrationYaml(r, "t4-measured", ""));
  ASSERT_TRUE(catalog) << catalog.error().message;
  const estimator::DeviceSpec* d = catalog->Find("t4-measured");
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(d->tf32_flops, d->fp32_flops);
  EXPECT_EQ(d->int8_ops, d->fp32_flops);
}

TEST_F(CalibrationYamlTest, QuotesOddGpuNames) {
  CalibrationResult r = SampleResult();
  r.gpu_name = "GPU \"x\" #1: \\ test";
  const Result<estimator::DeviceCatalog> catalog =
      Merge(CalibrationYaml(r, "odd", ""));
  ASSERT_TRUE(catalog) << catalog.error().message;
  EXPECT_EQ(catalog->Find("odd")->display_name, "GPU \"x\" #1: \\ test");
}

// A hand-made efficiency sweep: what calibrate writes, MergeYaml reads.
EfficiencyCalibration SampleEfficiency(const CalibrationResult& r) {
  EfficiencyCalibration e;
  e.ran = true;
  e.kernel_s = 1.8e-6;
  e.eager_op_s = 18.5e-6;
  e.elementwise = {2e-6, 2.6e12, 4, 0.01};
  e.elementwise_bandwidth = 2.6e12 / r.memory_bandwidth;  // > 1: clamped
  const auto sweep = [](const char* kind, bool tensor, double max,
                        double half) {
    KernelSweep s;
    s.kind = kind;
    s.tensor_cores = tensor;
    s.dtype = tensor ? "bf16" : "fp32";
    s.peak_flops = tensor ? 279.5e12 : 19.1e12;
    s.fit = {max, half, 12, 0.02, 0.05};
    return s;
  };
  e.sweeps = {sweep("gemm", false, 0.9512, 1.25e9),
              sweep("gemm", true, 0.8125, 2.5e10),
              sweep("spatial_conv", false, 1.35, 4e9),
              sweep("conv", true, 0.55, 6.5e10),
              sweep("depthwise_conv", false, 0.08, 0)};
  KernelSweep unfitted = sweep("conv", false, 0, 0);
  unfitted.fit = {};
  e.sweeps.push_back(unfitted);
  return e;
}

TEST_F(CalibrationYamlTest, EfficiencySweepRoundTripsThroughMergeYaml) {
  CalibrationResult r = SampleResult();
  r.efficiency = SampleEfficiency(r);
  const std::string yaml = CalibrationYaml(r, "a100-measured", "a100-80gb");
  EXPECT_THAT(yaml,
              HasSubstr("    efficiency:\n      kernel_time: 1.800us\n"
                        "      eager_op: 18.500us\n"
                        "      bandwidth: {elementwise: 1.000}\n"
                        "      cuda_cores:\n"
                        "        gemm: {max: 0.9512, half_gflop: 1.25}\n"));
  EXPECT_THAT(yaml, HasSubstr("# Efficiency gemm bf16 (tensor_cores): max x W "
                              "/ (W + half) of 279.500 TFLOP/s, fitted to 12 "
                              "shapes"));
  const Result<estimator::DeviceCatalog> catalog = Merge(yaml);
  ASSERT_TRUE(catalog) << catalog.error().message << "\n" << yaml;
  const estimator::DeviceSpec* d = catalog->Find("a100-measured");
  ASSERT_NE(d, nullptr);
  const estimator::EfficiencySurface& e = d->efficiency;
  const auto at = [](estimator::KernelKind k) {
    return static_cast<size_t>(k);
  };
  using estimator::KernelKind;
  EXPECT_TRUE(e.measured);
  EXPECT_NEAR(e.kernel_s, 1.8e-6, 1e-12);
  EXPECT_NEAR(e.eager_op_s, 18.5e-6, 1e-12);
  EXPECT_DOUBLE_EQ(e.elementwise_bandwidth, 1.0);
  EXPECT_EQ(e.reduction_bandwidth, 0);  // not measured
  EXPECT_DOUBLE_EQ(e.cuda_cores[at(KernelKind::kGemm)].max, 0.9512);
  EXPECT_NEAR(e.cuda_cores[at(KernelKind::kGemm)].half_flops, 1.25e9, 1);
  EXPECT_DOUBLE_EQ(e.tensor_cores[at(KernelKind::kGemm)].max, 0.8125);
  EXPECT_NEAR(e.tensor_cores[at(KernelKind::kGemm)].half_flops, 2.5e10, 1);
  EXPECT_DOUBLE_EQ(e.cuda_cores[at(KernelKind::kSpatialConv)].max, 1.35);
  EXPECT_DOUBLE_EQ(e.tensor_cores[at(KernelKind::kConv)].max, 0.55);
  EXPECT_NEAR(e.tensor_cores[at(KernelKind::kConv)].half_flops, 6.5e10, 1);
  EXPECT_DOUBLE_EQ(e.cuda_cores[at(KernelKind::kDepthwiseConv)].max, 0.08);
  EXPECT_EQ(e.cuda_cores[at(KernelKind::kDepthwiseConv)].half_flops, 0);
  EXPECT_EQ(e.cuda_cores[at(KernelKind::kConv)].max, 0);  // not fitted
  // The peaks the efficiencies are relative to are the entry's own.
  EXPECT_NEAR(d->fp32_flops, 19.1e12, 1e9);
  EXPECT_NEAR(d->bf16_flops, 279.5e12, 1e9);
}

TEST_F(CalibrationYamlTest, FittedSweepRoundTrips) {
  CalibrationResult r = SampleResult();
  r.efficiency.ran = true;
  r.efficiency.kernel_s = 2e-6;
  KernelSweep sweep;
  sweep.kind = "gemm";
  sweep.dtype = "fp32";
  sweep.peak_flops = r.fp32_flops;
  for (double n = 256; n <= 8192; n *= 2) {
    const double w = 2 * n * n * n;
    sweep.samples.push_back(
        {"n", w, 2e-6 + w / (r.fp32_flops * 0.9 * w / (w + 2e9))});
  }
  ASSERT_TRUE(FitKernelSweep(r.efficiency.kernel_s, &sweep).ok());
  r.efficiency.sweeps.push_back(sweep);
  const Result<estimator::DeviceCatalog> catalog =
      Merge(CalibrationYaml(r, "fitted", ""));
  ASSERT_TRUE(catalog) << catalog.error().message;
  const estimator::EfficiencySurface& e = catalog->Find("fitted")->efficiency;
  EXPECT_NEAR(e.cuda_cores[0].max, 0.9, 1e-4);
  EXPECT_NEAR(e.cuda_cores[0].half_flops / 2e9, 1, 1e-4);
  EXPECT_NEAR(e.kernel_s, 2e-6, 1e-12);
}

TEST_F(CalibrationYamlTest, SkippedOrEmptySweepWritesNoEfficiency) {
  CalibrationResult r = SampleResult();
  EXPECT_THAT(CalibrationYaml(r, "x", ""),
              ::testing::Not(HasSubstr("efficiency")));
  r.efficiency.ran = true;  // ran, measured nothing
  const std::string yaml = CalibrationYaml(r, "x", "");
  EXPECT_THAT(yaml, ::testing::Not(HasSubstr("efficiency:")));
  const Result<estimator::DeviceCatalog> catalog = Merge(yaml);
  ASSERT_TRUE(catalog) << catalog.error().message;
  EXPECT_FALSE(catalog->Find("x")->efficiency.measured);
}

}  // namespace
}  // namespace tessera::cuda
