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

}  // namespace
}  // namespace tessera::cuda
