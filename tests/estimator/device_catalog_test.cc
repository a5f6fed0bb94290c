#include "estimator/device_catalog.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "tests/testlib/onnx_model_builder.h"
#include "tests/testlib/repo_paths.h"

namespace tessera::estimator {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

constexpr double kT = 1e12;
constexpr double kG = 1e9;
constexpr int64_t kGiB = int64_t{1} << 30;

// Relative comparison for figures written as decimal products.
void ExpectNear(double actual, double expected) {
  EXPECT_NEAR(actual, expected, expected * 1e-12);
}

// ---- Built-in catalog ------------------------------------------------------

TEST(BuiltInCatalog, HasEveryDeviceTheIssueNames) {
  DeviceCatalog catalog = DeviceCatalog::BuiltIn();
  for (const char* name :
       {"h200", "h100-sxm", "h100-pcie", "a100-40gb", "a100-80gb", "v100-16gb",
        "v100-32gb", "a10", "l4", "t4", "rtx3090", "rtx4090", "cpu"}) {
    EXPECT_NE(catalog.Find(name), nullptr) << name;
  }
}

TEST(BuiltInCatalog, EveryDeviceHasPositiveFiguresAndSources) {
  const DeviceCatalog catalog = DeviceCatalog::BuiltIn();
  for (const DeviceSpec& d : catalog.devices()) {
    SCOPED_TRACE(d.name);
    EXPECT_FALSE(d.display_name.empty());
    EXPECT_GT(d.memory_bytes, 0);
    EXPECT_GT(d.fp32_flops, 0);
    EXPECT_GT(d.tf32_flops, 0);
    EXPECT_GT(d.fp16_flops, 0);
    EXPECT_GT(d.bf16_flops, 0);
    EXPECT_GT(d.int8_ops, 0);
    EXPECT_GT(d.memory_bandwidth, 0);
    EXPECT_GE(d.nvlink_bandwidth, 0);
    EXPECT_GT(d.pcie_bandwidth, 0);
    EXPECT_GT(d.launch_overhead_s, 0);
    EXPECT_FALSE(d.sources.empty());
  }
}

TEST(BuiltInCatalog, TensorFiguresAreNeverBelowFp32) {
  const DeviceCatalog catalog = DeviceCatalog::BuiltIn();
  for (const DeviceSpec& d : catalog.devices()) {
    SCOPED_TRACE(d.name);
    EXPECT_GE(d.tf32_flops, d.fp32_flops);
    EXPECT_GE(d.fp16_flops, d.fp32_flops);
    EXPECT_GE(d.bf16_flops, d.fp32_flops);
    EXPECT_GE(d.int8_ops, d.fp32_flops);
  }
}

TEST(BuiltInCatalog, NamesAreUniqueAndInTableOrder) {
  DeviceCatalog catalog = DeviceCatalog::BuiltIn();
  std::vector<std::string> names = catalog.Names();
  EXPECT_EQ(std::set<std::string>(names.begin(), names.end()).size(),
            names.size());
  ASSERT_FALSE(names.empty());
  EXPECT_EQ(names.front(), "h200");
  EXPECT_EQ(names.back(), "cpu");
}

TEST(BuiltInCatalog, A100MatchesDenseDatasheetFigures) {
  const DeviceCatalog catalog = DeviceCatalog::BuiltIn();
  const DeviceSpec* d = catalog.Find("a100-80gb");
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(d->memory_bytes, 80 * kGiB);
  ExpectNear(d->fp32_flops, 19.5 * kT);
  ExpectNear(d->tf32_flops, 156 * kT);
  ExpectNear(d->fp16_flops, 312 * kT);
  ExpectNear(d->bf16_flops, 312 * kT);
  ExpectNear(d->int8_ops, 624 * kT);
  ExpectNear(d->memory_bandwidth, 2039 * kG);
  ExpectNear(d->nvlink_bandwidth, 300 * kG);  // 600 GB/s bidirectional
  ExpectNear(d->pcie_bandwidth, 32 * kG);     // Gen4 64 GB/s bidirectional
  const DeviceSpec* small = catalog.Find("a100-40gb");
  ASSERT_NE(small, nullptr);
  ExpectNear(small->memory_bandwidth, 1555 * kG);
}

TEST(BuiltInCatalog, HopperMatchesDenseDatasheetFigures) {
  DeviceCatalog catalog = DeviceCatalog::BuiltIn();
  const DeviceSpec* h100 = catalog.Find("h100-sxm");
  ASSERT_NE(h100, nullptr);
  ExpectNear(h100->fp32_flops, 67 * kT);
  ExpectNear(h100->tf32_flops, 494.7 * kT);
  ExpectNear(h100->bf16_flops, 989.4 * kT);
  ExpectNear(h100->int8_ops, 1978.9 * kT);
  ExpectNear(h100->memory_bandwidth, 3.35 * kT);
  ExpectNear(h100->nvlink_bandwidth, 450 * kG);
  ExpectNear(h100->pcie_bandwidth, 64 * kG);
  const DeviceSpec* pcie = catalog.Find("h100-pcie");
  ASSERT_NE(pcie, nullptr);
  ExpectNear(pcie->fp16_flops, 756 * kT);  // 1,513 with sparsity
  ExpectNear(pcie->memory_bandwidth, 2000 * kG);
  const DeviceSpec* h200 = catalog.Find("h200");
  ASSERT_NE(h200, nullptr);
  EXPECT_EQ(h200->memory_bytes, 141 * kGiB);
  ExpectNear(h200->memory_bandwidth, 4.8 * kT);
  ExpectNear(h200->fp16_flops, h100->fp16_flops);
}

TEST(BuiltInCatalog, OlderAndSmallerPartsMatchDatasheets) {
  DeviceCatalog catalog = DeviceCatalog::BuiltIn();
  const DeviceSpec* t4 = catalog.Find("t4");
  ASSERT_NE(t4, nullptr);
  ExpectNear(t4->fp16_flops, 65 * kT);
  ExpectNear(t4->int8_ops, 130 * kT);
  ExpectNear(t4->memory_bandwidth, 320 * kG);
  EXPECT_EQ(t4->nvlink_bandwidth, 0);
  ExpectNear(t4->pcie_bandwidth, 16 * kG);     // Gen3 x16
  ExpectNear(t4->bf16_flops, t4->fp32_flops);  // no BF16 on Turing
  const DeviceSpec* v100 = catalog.Find("v100-32gb");
  ASSERT_NE(v100, nullptr);
  EXPECT_EQ(v100->memory_bytes, 32 * kGiB);
  ExpectNear(v100->fp16_flops, 125 * kT);
  ExpectNear(v100->nvlink_bandwidth, 150 * kG);
  const DeviceSpec* l4 = catalog.Find("l4");
  ASSERT_NE(l4, nullptr);
  ExpectNear(l4->fp16_flops, 121 * kT);  // 242 with sparsity
  ExpectNear(l4->memory_bandwidth, 300 * kG);
  const DeviceSpec* rtx4090 = catalog.Find("rtx4090");
  ASSERT_NE(rtx4090, nullptr);
  ExpectNear(rtx4090->fp16_flops, 165.2 * kT);  // FP32 accumulate
  ExpectNear(rtx4090->memory_bandwidth, 1008 * kG);
}

TEST(BuiltInCatalog, CpuIsNominalAndSaysSo) {
  const DeviceCatalog catalog = DeviceCatalog::BuiltIn();
  const DeviceSpec* cpu = catalog.Find("cpu");
  ASSERT_NE(cpu, nullptr);
  EXPECT_EQ(cpu->kind, DeviceKind::kCpu);
  EXPECT_EQ(DeviceKindName(cpu->kind), "cpu");
  EXPECT_EQ(cpu->nvlink_bandwidth, 0);
  EXPECT_THAT(cpu->sources, HasSubstr("nominal"));
  EXPECT_THAT(cpu->sources, HasSubstr("calibrated"));
}

// ---- Lookup ----------------------------------------------------------------

TEST(DeviceCatalog, GetReturnsAKnownDevice) {
  DeviceCatalog catalog = DeviceCatalog::BuiltIn();
  Result<const DeviceSpec*> d = catalog.Get("l4");
  ASSERT_TRUE(d.has_value());
  EXPECT_EQ((*d)->name, "l4");
  EXPECT_EQ(*d, catalog.Find("l4"));
}

TEST(DeviceCatalog, GetOnUnknownNameListsKnownNames) {
  DeviceCatalog catalog = DeviceCatalog::BuiltIn();
  Result<const DeviceSpec*> d = catalog.Get("b200");
  ASSERT_FALSE(d.has_value());
  EXPECT_EQ(d.error().code, ErrorCode::kBadInput);
  EXPECT_THAT(d.error().message,
              StartsWith("unknown device 'b200' (known: h200, h100-sxm, "));
  EXPECT_THAT(d.error().message, HasSubstr("a100-80gb"));
  EXPECT_THAT(d.error().message, HasSubstr("cpu)"));
  EXPECT_EQ(catalog.Find("b200"), nullptr);
  EXPECT_EQ(catalog.Find(""), nullptr);
}

TEST(DeviceCatalog, EmptyCatalogFindsNothing) {
  DeviceCatalog catalog;
  EXPECT_TRUE(catalog.Names().empty());
  EXPECT_FALSE(catalog.Get("a100-80gb").has_value());
}

// ---- PeakFlops -------------------------------------------------------------

TEST(PeakFlops, PicksTheFigureForTheDtypeClass) {
  const DeviceSpec d = *DeviceCatalog::BuiltIn().Find("a100-80gb");
  using graph::DataType;
  EXPECT_EQ(PeakFlops(d, DataType::kFloat32, true), d.tf32_flops);
  EXPECT_EQ(PeakFlops(d, DataType::kFloat32, false), d.fp32_flops);
  EXPECT_EQ(PeakFlops(d, DataType::kFloat16, true), d.fp16_flops);
  EXPECT_EQ(PeakFlops(d, DataType::kBfloat16, true), d.bf16_flops);
  EXPECT_EQ(PeakFlops(d, DataType::kInt8, true), d.int8_ops);
  EXPECT_EQ(PeakFlops(d, DataType::kUint8, true), d.int8_ops);
}

TEST(PeakFlops, WithoutTensorCoresEveryDtypeRunsAtFp32) {
  const DeviceSpec d = *DeviceCatalog::BuiltIn().Find("h100-sxm");
  using graph::DataType;
  for (DataType t : {DataType::kFloat16, DataType::kBfloat16, DataType::kInt8,
                     DataType::kInt64, DataType::kBool}) {
    EXPECT_EQ(PeakFlops(d, t, false), d.fp32_flops);
  }
  EXPECT_EQ(PeakFlops(d, DataType::kInt32, true), d.fp32_flops);
  EXPECT_EQ(PeakFlops(d, DataType::kUndefined, true), d.fp32_flops);
}

TEST(PeakFlops, Fp64UsesTheDocumentedFallback) {
  const DeviceSpec d = *DeviceCatalog::BuiltIn().Find("v100-16gb");
  EXPECT_EQ(PeakFlops(d, graph::DataType::kFloat64, true),
            d.fp32_flops / kFp64SlowdownFallback);
  EXPECT_EQ(PeakFlops(d, graph::DataType::kFloat64, false),
            d.fp32_flops / kFp64SlowdownFallback);
}

// ---- Unit parsers ----------------------------------------------------------

TEST(ParseBytes, AcceptsDecimalAndBinaryUnits) {
  EXPECT_EQ(*ParseBytes("80GiB"), 80 * kGiB);
  EXPECT_EQ(*ParseBytes("80GB"), 80'000'000'000);
  EXPECT_EQ(*ParseBytes("512MiB"), 512 * (int64_t{1} << 20));
  EXPECT_EQ(*ParseBytes("1.5GiB"), 3 * (kGiB / 2));
  EXPECT_EQ(*ParseBytes(" 24 GB "), 24'000'000'000);
  EXPECT_EQ(*ParseBytes("1KiB"), 1024);
  EXPECT_EQ(*ParseBytes("1kB"), 1000);
  EXPECT_EQ(*ParseBytes("1TiB"), int64_t{1} << 40);
  EXPECT_EQ(*ParseBytes("123B"), 123);
  EXPECT_EQ(*ParseBytes("0"), 0);
}

TEST(ParseBytes, RejectsMissingOrWrongUnitsAndBadNumbers) {
  for (const char* bad : {"", "80", "GiB", "-1GiB", "80Gb", "80 GiBs", "abc",
                          "nanGB", "infGB", "+5GB", "1e30TiB", "8 0GB"}) {
    Result<int64_t> r = ParseBytes(bad);
    EXPECT_FALSE(r.has_value()) << bad;
    if (!r.has_value()) {
      EXPECT_EQ(r.error().code, ErrorCode::kBadInput);
    }
  }
  EXPECT_THAT(ParseBytes("80").error().message,
              HasSubstr("'80' has no unit (use B, KB"));
  EXPECT_THAT(ParseBytes("80Gb").error().message,
              HasSubstr("unknown unit 'Gb'"));
  EXPECT_THAT(ParseBytes("-1GiB").error().message,
              HasSubstr("must not be negative"));
  EXPECT_THAT(ParseBytes("1e30TiB").error().message, HasSubstr("too large"));
}

TEST(ParseBandwidth, AcceptsBytesPerSecondUnits) {
  EXPECT_DOUBLE_EQ(*ParseBandwidth("25GB/s"), 25e9);
  EXPECT_DOUBLE_EQ(*ParseBandwidth("3.35TB/s"), 3.35e12);
  EXPECT_DOUBLE_EQ(*ParseBandwidth("900 MiB/s"), 900.0 * (1 << 20));
  EXPECT_DOUBLE_EQ(*ParseBandwidth("64GiB/s"), 64.0 * kGiB);
  EXPECT_DOUBLE_EQ(*ParseBandwidth("1e3MB/s"), 1e9);
  EXPECT_DOUBLE_EQ(*ParseBandwidth("0"), 0);
}

TEST(ParseBandwidth, RejectsSizesBitsAndBareNumbers) {
  for (const char* bad :
       {"25GB", "25Gbps", "25Gb/s", "-1GB/s", "25", "/s", "fast"}) {
    EXPECT_FALSE(ParseBandwidth(bad).has_value()) << bad;
  }
  EXPECT_THAT(ParseBandwidth("25GB").error().message, HasSubstr("e.g. 25GB/s"));
}

TEST(ParseSeconds, AcceptsNsUsMsAndSeconds) {
  EXPECT_DOUBLE_EQ(*ParseSeconds("5us"), 5e-6);
  EXPECT_DOUBLE_EQ(*ParseSeconds("5\xC2\xB5s"), 5e-6);
  EXPECT_DOUBLE_EQ(*ParseSeconds("1ms"), 1e-3);
  EXPECT_DOUBLE_EQ(*ParseSeconds("100ns"), 100e-9);
  EXPECT_DOUBLE_EQ(*ParseSeconds("2s"), 2);
  EXPECT_DOUBLE_EQ(*ParseSeconds("0"), 0);
}

TEST(ParseSeconds, RejectsBareNumbersAndUnknownUnits) {
  for (const char* bad : {"5", "5 min", "-1ms", "ms", "1h", ""}) {
    EXPECT_FALSE(ParseSeconds(bad).has_value()) << bad;
  }
  EXPECT_THAT(ParseSeconds("5").error().message, HasSubstr("e.g. 5us"));
}

// ---- MergeYaml -------------------------------------------------------------

class DeviceCatalogYaml : public ::testing::Test {
 protected:
  // Writes `yaml` to a file, merges it, and returns the status.
  Status Merge(const std::string& yaml) {
    EXPECT_EQ(dir_.Write("devices.yaml", yaml), path_);
    return catalog_.MergeYaml(path_);
  }
  // Merges `yaml`, expects a kBadInput error and returns its message.
  std::string MergeError(const std::string& yaml) {
    Status s = Merge(yaml);
    EXPECT_FALSE(s.ok());
    if (s.ok()) return "";
    EXPECT_EQ(s.error().code, ErrorCode::kBadInput);
    EXPECT_THAT(s.error().message, StartsWith(path_));
    return s.error().message;
  }

  testlib::TempDir dir_;
  const std::string path_ = dir_.File("devices.yaml");
  DeviceCatalog catalog_ = DeviceCatalog::BuiltIn();
};

TEST_F(DeviceCatalogYaml, AddsDeviceCopiedFromBase) {
  ASSERT_TRUE(Merge("devices:\n"
                    "  - name: a100-80gb-pcie\n"
                    "    base: a100-80gb\n"
                    "    memory_bandwidth: 1935GB/s\n"
                    "    nvlink_bandwidth: 0\n")
                  .ok());
  const DeviceSpec* base = catalog_.Find("a100-80gb");
  const DeviceSpec* d = catalog_.Find("a100-80gb-pcie");
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(d->display_name, "a100-80gb-pcie");
  EXPECT_EQ(d->memory_bytes, base->memory_bytes);
  EXPECT_EQ(d->fp16_flops, base->fp16_flops);
  EXPECT_DOUBLE_EQ(d->memory_bandwidth, 1935e9);
  EXPECT_EQ(d->nvlink_bandwidth, 0);
  EXPECT_THAT(d->sources, HasSubstr("copy of a100-80gb"));
  EXPECT_THAT(d->sources,
              HasSubstr("memory_bandwidth, nvlink_bandwidth from " + path_));
  EXPECT_DOUBLE_EQ(base->memory_bandwidth, 2039e9);  // base untouched
}

TEST_F(DeviceCatalogYaml, OverridesOnlyTheGivenFieldsOfAnExistingDevice) {
  const DeviceSpec before = *catalog_.Find("t4");
  ASSERT_TRUE(Merge("devices:\n"
                    "  - name: t4\n"
                    "    memory: 15GiB\n"
                    "    launch_overhead: 8us\n")
                  .ok());
  const DeviceSpec* d = catalog_.Find("t4");
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(d->memory_bytes, 15 * kGiB);
  EXPECT_DOUBLE_EQ(d->launch_overhead_s, 8e-6);
  EXPECT_EQ(d->fp16_flops, before.fp16_flops);
  EXPECT_EQ(d->memory_bandwidth, before.memory_bandwidth);
  EXPECT_EQ(d->display_name, before.display_name);
  EXPECT_THAT(d->sources, StartsWith(before.sources));
  EXPECT_THAT(d->sources, HasSubstr("memory, launch_overhead from " + path_));
  EXPECT_EQ(catalog_.Names().size(), DeviceCatalog::BuiltIn().Names().size());
}

TEST_F(DeviceCatalogYaml, AddsNewDeviceAndDefaultsTheOtherThroughputs) {
  ASSERT_TRUE(Merge("devices:\n"
                    "  - name: my-gpu\n"
                    "    memory: 12GiB\n"
                    "    memory_bandwidth: 360GB/s\n"
                    "    fp32_tflops: 13.4\n"
                    "    fp16_tflops: 53.6\n"
                    "    pcie_bandwidth: 16GB/s\n")
                  .ok());
  const DeviceSpec* d = catalog_.Find("my-gpu");
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(d->kind, DeviceKind::kGpu);
  EXPECT_EQ(d->memory_bytes, 12 * kGiB);
  EXPECT_DOUBLE_EQ(d->fp32_flops, 13.4e12);
  EXPECT_DOUBLE_EQ(d->fp16_flops, 53.6e12);
  EXPECT_DOUBLE_EQ(d->tf32_flops, 13.4e12);
  EXPECT_DOUBLE_EQ(d->bf16_flops, 13.4e12);
  EXPECT_DOUBLE_EQ(d->int8_ops, 13.4e12);
  EXPECT_EQ(d->nvlink_bandwidth, 0);
  EXPECT_DOUBLE_EQ(d->launch_overhead_s, kGpuLaunchOverheadSeconds);
  EXPECT_EQ(d->sources, "from " + path_);
  EXPECT_EQ(catalog_.Names().back(), "my-gpu");
}

TEST_F(DeviceCatalogYaml, ReadsEveryField) {
  ASSERT_TRUE(Merge("devices:\n"
                    "  - name: box.cpu_2\n"
                    "    display_name: \"Two-core box\"\n"
                    "    kind: cpu\n"
                    "    memory: 23GiB\n"
                    "    memory_bandwidth: 20GB/s\n"
                    "    fp32_tflops: 0.2\n"
                    "    tf32_tflops: 0.2\n"
                    "    fp16_tflops: 0.1\n"
                    "    bf16_tflops: 0.3\n"
                    "    int8_tops: 0.4\n"
                    "    nvlink_bandwidth: 0\n"
                    "    pcie_bandwidth: 10GB/s\n"
                    "    launch_overhead: 1.5us\n"
                    "    sources: measured with ONNX Runtime\n")
                  .ok());
  const DeviceSpec* d = catalog_.Find("box.cpu_2");
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(d->display_name, "Two-core box");
  EXPECT_EQ(d->kind, DeviceKind::kCpu);
  EXPECT_EQ(d->memory_bytes, 23 * kGiB);
  EXPECT_DOUBLE_EQ(d->memory_bandwidth, 20e9);
  EXPECT_DOUBLE_EQ(d->fp32_flops, 0.2e12);
  EXPECT_DOUBLE_EQ(d->tf32_flops, 0.2e12);
  EXPECT_DOUBLE_EQ(d->fp16_flops, 0.1e12);
  EXPECT_DOUBLE_EQ(d->bf16_flops, 0.3e12);
  EXPECT_DOUBLE_EQ(d->int8_ops, 0.4e12);
  EXPECT_DOUBLE_EQ(d->pcie_bandwidth, 10e9);
  EXPECT_DOUBLE_EQ(d->launch_overhead_s, 1.5e-6);
  EXPECT_EQ(d->sources, "measured with ONNX Runtime");
}

TEST_F(DeviceCatalogYaml, NewCpuDeviceGetsTheCpuOverhead) {
  ASSERT_TRUE(Merge("devices:\n"
                    "  - {name: c, kind: cpu, memory: 8GiB,"
                    " memory_bandwidth: 20GB/s, fp32_tflops: 0.1,"
                    " pcie_bandwidth: 8GB/s}\n")
                  .ok());
  EXPECT_DOUBLE_EQ(catalog_.Find("c")->launch_overhead_s,
                   kCpuOpOverheadSeconds);
}

TEST_F(DeviceCatalogYaml, BaseMayBeDefinedEarlierInTheSameFile) {
  ASSERT_TRUE(Merge("devices:\n"
                    "  - name: first\n"
                    "    base: l4\n"
                    "    memory: 20GiB\n"
                    "  - name: second\n"
                    "    base: first\n"
                    "    fp32_tflops: 1\n")
                  .ok());
  const DeviceSpec* d = catalog_.Find("second");
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(d->memory_bytes, 20 * kGiB);
  EXPECT_DOUBLE_EQ(d->fp32_flops, 1e12);
  EXPECT_EQ(d->fp16_flops, catalog_.Find("l4")->fp16_flops);
}

TEST_F(DeviceCatalogYaml, ExampleFileInTheRepositoryLoads) {
  const std::string example =
      std::string(TESSERA_SOURCE_DIR) + "/models/devices.example.yaml";
  Status s = catalog_.MergeYaml(example);
  ASSERT_TRUE(s.ok()) << s.error().message;
  const DeviceSpec* pcie = catalog_.Find("a100-80gb-pcie");
  ASSERT_NE(pcie, nullptr);
  EXPECT_EQ(pcie->display_name, "NVIDIA A100 80GB PCIe");
  EXPECT_DOUBLE_EQ(pcie->memory_bandwidth, 1935e9);
  EXPECT_EQ(pcie->fp16_flops, catalog_.Find("a100-80gb")->fp16_flops);
  EXPECT_THAT(pcie->sources, HasSubstr("80GB PCIe column"));
  EXPECT_EQ(catalog_.Find("t4")->memory_bytes, 15 * kGiB);
  EXPECT_EQ(catalog_.Find("lab-cpu"), nullptr);  // commented out
}

TEST_F(DeviceCatalogYaml, EmptyDeviceListChangesNothing) {
  EXPECT_TRUE(Merge("devices: []\n").ok());
  EXPECT_EQ(catalog_.Names(), DeviceCatalog::BuiltIn().Names());
}

TEST_F(DeviceCatalogYaml, UnknownFieldIsNamedWithFileLineAndDevice) {
  std::string m = MergeError(
      "devices:\n"
      "  - name: t4\n"
      "    bandwith: 300GB/s\n");
  EXPECT_THAT(m, StartsWith(path_ + ":3: device 't4': unknown field "
                                    "'bandwith' (known: 'name', 'base'"));
  EXPECT_THAT(m, HasSubstr("'memory_bandwidth'"));
}

TEST_F(DeviceCatalogYaml, NegativeValueIsRejected) {
  EXPECT_THAT(MergeError("devices:\n"
                         "  - name: t4\n"
                         "    fp16_tflops: -65\n"),
              StartsWith(path_ + ":3: device 't4': field 'fp16_tflops': "
                                 "'-65' must not be negative"));
  EXPECT_THAT(MergeError("devices:\n"
                         "  - name: t4\n"
                         "    memory: -16GiB\n"),
              HasSubstr("field 'memory': '-16GiB' must not be negative"));
  EXPECT_THAT(MergeError("devices:\n"
                         "  - name: t4\n"
                         "    launch_overhead: -1us\n"),
              HasSubstr("field 'launch_overhead'"));
}

TEST_F(DeviceCatalogYaml, ZeroIsRejectedWhereAFigureMustBePositive) {
  EXPECT_THAT(MergeError("devices:\n  - {name: t4, fp32_tflops: 0}\n"),
              HasSubstr("field 'fp32_tflops': must be positive"));
  EXPECT_THAT(MergeError("devices:\n  - {name: t4, memory_bandwidth: 0}\n"),
              HasSubstr("field 'memory_bandwidth': must be positive"));
  EXPECT_THAT(MergeError("devices:\n  - {name: t4, memory: 0}\n"),
              HasSubstr("field 'memory': must be positive"));
  EXPECT_TRUE(
      Merge("devices:\n  - {name: a100-80gb, nvlink_bandwidth: 0}\n").ok());
}

TEST_F(DeviceCatalogYaml, NonNumericValueIsRejected) {
  EXPECT_THAT(MergeError("devices:\n"
                         "  - name: t4\n"
                         "    fp32_tflops: fast\n"),
              StartsWith(path_ + ":3: device 't4': field 'fp32_tflops': "
                                 "'fast' must be a plain number"));
  EXPECT_THAT(MergeError("devices:\n"
                         "  - name: t4\n"
                         "    int8_tops: 130 TOPS\n"),
              HasSubstr("field 'int8_tops': '130 TOPS' must be a plain "
                        "number"));
  EXPECT_THAT(MergeError("devices:\n"
                         "  - name: t4\n"
                         "    kind: tpu\n"),
              HasSubstr("field 'kind': 'tpu' is not a device kind"));
}

TEST_F(DeviceCatalogYaml, BadUnitIsRejected) {
  EXPECT_THAT(MergeError("devices:\n"
                         "  - name: t4\n"
                         "    memory: 16Gb\n"),
              StartsWith(path_ + ":3: device 't4': field 'memory': '16Gb' "
                                 "has unknown unit 'Gb'"));
  EXPECT_THAT(MergeError("devices:\n"
                         "  - name: t4\n"
                         "    memory_bandwidth: 320GB\n"),
              HasSubstr("field 'memory_bandwidth': '320GB' has unknown unit "
                        "'GB' (use B/s"));
  EXPECT_THAT(MergeError("devices:\n"
                         "  - name: t4\n"
                         "    launch_overhead: 5\n"),
              HasSubstr("field 'launch_overhead': '5' has no unit"));
}

TEST_F(DeviceCatalogYaml, NewDeviceWithoutBaseMustGiveRequiredFields) {
  std::string m = MergeError(
      "devices:\n"
      "  - name: new-gpu\n"
      "    memory: 8GiB\n");
  EXPECT_THAT(m, StartsWith(path_ + ":2: device 'new-gpu': a new device "
                                    "needs field(s) memory_bandwidth, "
                                    "fp32_tflops, pcie_bandwidth (or 'base'"));
}

TEST_F(DeviceCatalogYaml, UnknownBaseListsKnownDevices) {
  EXPECT_THAT(MergeError("devices:\n"
                         "  - name: mine\n"
                         "    base: a100-80\n"),
              StartsWith(path_ + ":3: device 'mine': field 'base': unknown "
                                 "device 'a100-80' (known: h200, "));
}

TEST_F(DeviceCatalogYaml, MissingOrInvalidNameIsRejected) {
  EXPECT_THAT(MergeError("devices:\n"
                         "  - base: t4\n"
                         "    memory: 8GiB\n"),
              StartsWith(path_ + ":2: devices[0]: missing required field "
                                 "'name'"));
  EXPECT_THAT(MergeError("devices:\n"
                         "  - name: t4\n"
                         "  - name: My GPU\n"),
              StartsWith(path_ + ":3: devices[1]: field 'name': 'My GPU' may "
                                 "use only"));
}

TEST_F(DeviceCatalogYaml, RepeatedDeviceOrFieldIsRejected) {
  EXPECT_THAT(MergeError("devices:\n"
                         "  - {name: t4, memory: 15GiB}\n"
                         "  - {name: t4, memory: 14GiB}\n"),
              StartsWith(path_ + ":3: device 't4': appears twice"));
  EXPECT_THAT(MergeError("devices:\n"
                         "  - name: t4\n"
                         "    memory: 15GiB\n"
                         "    memory: 14GiB\n"),
              StartsWith(path_ + ":4: device 't4': field 'memory' is given "
                                 "twice"));
}

TEST_F(DeviceCatalogYaml, FieldWithoutOrWithNestedValueIsRejected) {
  EXPECT_THAT(MergeError("devices:\n"
                         "  - name: t4\n"
                         "    memory:\n"),
              HasSubstr("device 't4': field 'memory' has no value"));
  EXPECT_THAT(MergeError("devices:\n"
                         "  - name: t4\n"
                         "    memory: [16GiB]\n"),
              HasSubstr("device 't4': field 'memory' must be a single value"));
}

TEST_F(DeviceCatalogYaml, WrongShapeOfFileIsRejected) {
  EXPECT_THAT(MergeError(""), HasSubstr("the file is empty"));
  EXPECT_THAT(MergeError("- name: t4\n"), HasSubstr("expected a map with a "
                                                    "'devices:' list"));
  EXPECT_THAT(MergeError("gpus:\n  - name: t4\n"),
              HasSubstr(":1: unknown top-level key 'gpus'"));
  EXPECT_THAT(MergeError("devices:\n  name: t4\n"),
              HasSubstr("'devices' must be a list"));
  EXPECT_THAT(MergeError("devices:\n  - t4\n"),
              StartsWith(path_ + ":2: devices[0]: expected a map of fields"));
}

TEST_F(DeviceCatalogYaml, MalformedYamlReportsTheLine) {
  std::string m = MergeError(
      "devices:\n"
      "  - name: t4\n"
      "    memory: [16GiB\n"
      "  - name: l4\n");
  EXPECT_THAT(m, HasSubstr("malformed YAML"));
  EXPECT_THAT(m, testing::MatchesRegex(".*devices\\.yaml:[3-5]: .*"));
  EXPECT_THAT(MergeError("devices:\n"
                         "  - name: t4\n"
                         "   memory: 16GiB\n"),
              StartsWith(path_ + ":3: malformed YAML"));
}

TEST_F(DeviceCatalogYaml, MissingFileIsBadInput) {
  Status s = catalog_.MergeYaml(dir_.File("absent.yaml"));
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().code, ErrorCode::kBadInput);
  EXPECT_EQ(s.error().message, dir_.File("absent.yaml") + ": no such file");
  Status d = catalog_.MergeYaml(dir_.path().string());
  ASSERT_FALSE(d.ok());
  EXPECT_THAT(d.error().message, HasSubstr("not a regular file"));
}

TEST_F(DeviceCatalogYaml, FailedMergeLeavesCatalogUnchanged) {
  const DeviceSpec before = *catalog_.Find("t4");
  MergeError(
      "devices:\n"
      "  - {name: t4, memory: 1GiB}\n"
      "  - {name: added, base: t4}\n"
      "  - {name: l4, memory: lots}\n");
  EXPECT_EQ(catalog_.Find("t4")->memory_bytes, before.memory_bytes);
  EXPECT_EQ(catalog_.Find("added"), nullptr);
}

TEST_F(DeviceCatalogYaml, GarbageNeverCrashes) {
  for (const char* text :
       {"{", "[", "devices: {", "devices: [1, 2]", ":::", "\"unterminated",
        "devices:\n  - name: [x]\n", "devices:\n  - {name: t4, ? [a]: b}\n",
        "devices: !!binary abc", "\xff\xfe\x00\x01", "devices: *nope",
        "devices:\n  - &a {name: x}\n  - *a\n", "{devices: [], devices: []}",
        "devices:\n  - {name: t4, memory: 1e999GiB}\n"}) {
    SCOPED_TRACE(text);
    MergeError(text);
  }
}

// ---- MergeYaml: the efficiency surface -------------------------------------

TEST_F(DeviceCatalogYaml, BuiltInDevicesHaveNoMeasuredEfficiency) {
  for (const DeviceSpec& d : catalog_.devices()) {
    EXPECT_FALSE(d.efficiency.measured) << d.name;
  }
}

TEST_F(DeviceCatalogYaml, ReadsAFullEfficiencySurface) {
  ASSERT_TRUE(Merge("devices:\n"
                    "  - name: h100-measured\n"
                    "    base: h100-sxm\n"
                    "    efficiency:\n"
                    "      kernel_time: 2.5us\n"
                    "      eager_op: 20us\n"
                    "      bandwidth: {elementwise: 0.8, normalization: 0.7,\n"
                    "                  reduction: 0.6, data_movement: 0.55}\n"
                    "      cuda_cores:\n"
                    "        gemm: {max: 0.8, half_gflop: 2.0}\n"
                    "        conv: {max: 0.7, half_gflop: 3}\n"
                    "        spatial_conv: {max: 1.3, half_gflop: 4}\n"
                    "        depthwise_conv: {max: 0.1, half_gflop: 0}\n"
                    "      tensor_cores:\n"
                    "        gemm: {max: 0.6, half_gflop: 20}\n"
                    "        spatial_conv:\n"
                    "          max: 2\n"
                    "          half_gflop: 1e2\n")
                  .ok());
  const DeviceSpec* d = catalog_.Find("h100-measured");
  ASSERT_NE(d, nullptr);
  const EfficiencySurface& e = d->efficiency;
  EXPECT_TRUE(e.measured);
  ExpectNear(e.kernel_s, 2.5e-6);
  ExpectNear(e.eager_op_s, 20e-6);
  EXPECT_DOUBLE_EQ(e.elementwise_bandwidth, 0.8);
  EXPECT_DOUBLE_EQ(e.normalization_bandwidth, 0.7);
  EXPECT_DOUBLE_EQ(e.reduction_bandwidth, 0.6);
  EXPECT_DOUBLE_EQ(e.data_movement_bandwidth, 0.55);
  const auto at = [](KernelKind k) { return static_cast<size_t>(k); };
  EXPECT_DOUBLE_EQ(e.cuda_cores[at(KernelKind::kGemm)].max, 0.8);
  ExpectNear(e.cuda_cores[at(KernelKind::kGemm)].half_flops, 2 * kG);
  EXPECT_DOUBLE_EQ(e.cuda_cores[at(KernelKind::kConv)].max, 0.7);
  EXPECT_DOUBLE_EQ(e.cuda_cores[at(KernelKind::kSpatialConv)].max, 1.3);
  EXPECT_DOUBLE_EQ(e.cuda_cores[at(KernelKind::kDepthwiseConv)].max, 0.1);
  EXPECT_EQ(e.cuda_cores[at(KernelKind::kDepthwiseConv)].half_flops, 0);
  EXPECT_DOUBLE_EQ(e.tensor_cores[at(KernelKind::kGemm)].max, 0.6);
  ExpectNear(e.tensor_cores[at(KernelKind::kGemm)].half_flops, 20 * kG);
  EXPECT_DOUBLE_EQ(e.tensor_cores[at(KernelKind::kSpatialConv)].max, 2.0);
  ExpectNear(e.tensor_cores[at(KernelKind::kSpatialConv)].half_flops, 100 * kG);
  EXPECT_EQ(e.tensor_cores[at(KernelKind::kConv)].max, 0);  // not given
  EXPECT_THAT(d->sources, HasSubstr("efficiency from " + path_));
  // The base keeps its (unmeasured) surface.
  EXPECT_FALSE(catalog_.Find("h100-sxm")->efficiency.measured);
}

TEST_F(DeviceCatalogYaml, EfficiencyKeysNotGivenKeepTheirValue) {
  ASSERT_TRUE(Merge("devices:\n"
                    "  - name: mine\n"
                    "    base: a100-80gb\n"
                    "    efficiency:\n"
                    "      kernel_time: 3us\n"
                    "      cuda_cores: {gemm: {max: 0.8, half_gflop: 2}}\n"
                    "  - name: mine-too\n"
                    "    base: mine\n"
                    "    efficiency:\n"
                    "      eager_op: 15us\n"
                    "      cuda_cores: {gemm: {max: 0.9}}\n"
                    "  - name: t4\n"
                    "    efficiency: {bandwidth: {reduction: 0.5}}\n")
                  .ok());
  const EfficiencySurface& e = catalog_.Find("mine-too")->efficiency;
  EXPECT_TRUE(e.measured);
  ExpectNear(e.kernel_s, 3e-6);  // from its base
  ExpectNear(e.eager_op_s, 15e-6);
  EXPECT_DOUBLE_EQ(e.cuda_cores[0].max, 0.9);
  ExpectNear(e.cuda_cores[0].half_flops, 2 * kG);  // kept
  const EfficiencySurface& t4 = catalog_.Find("t4")->efficiency;
  EXPECT_TRUE(t4.measured);
  EXPECT_DOUBLE_EQ(t4.reduction_bandwidth, 0.5);
  EXPECT_EQ(t4.elementwise_bandwidth, 0);
  EXPECT_EQ(t4.kernel_s, 0);
}

TEST_F(DeviceCatalogYaml, EmptyEfficiencyMapMeasuresNothing) {
  ASSERT_TRUE(Merge("devices:\n  - {name: t4, efficiency: {}}\n").ok());
  EXPECT_FALSE(catalog_.Find("t4")->efficiency.measured);
}

TEST_F(DeviceCatalogYaml, UnknownEfficiencyKeyIsNamedWithFileLineAndField) {
  EXPECT_THAT(MergeError("devices:\n"
                         "  - name: t4\n"
                         "    efficiency:\n"
                         "      kernel_time: 2us\n"
                         "      launch: 5us\n"),
              StartsWith(path_ + ":5: device 't4': field 'efficiency': "
                                 "unknown key 'launch' (known: "
                                 "'kernel_time', 'eager_op', 'bandwidth'"));
  EXPECT_THAT(
      MergeError("devices:\n"
                 "  - name: t4\n"
                 "    efficiency:\n"
                 "      bandwidth: {elementwise: 0.8, copy: 0.5}\n"),
      StartsWith(path_ + ":4: device 't4': field 'efficiency.bandwidth': "
                         "unknown key 'copy'"));
  EXPECT_THAT(MergeError("devices:\n"
                         "  - name: t4\n"
                         "    efficiency:\n"
                         "      tensor_cores:\n"
                         "        matmul: {max: 0.5}\n"),
              StartsWith(path_ + ":5: device 't4': field "
                                 "'efficiency.tensor_cores': unknown key "
                                 "'matmul' (known: 'gemm', 'conv', "
                                 "'spatial_conv', 'depthwise_conv')"));
  EXPECT_THAT(MergeError("devices:\n"
                         "  - name: t4\n"
                         "    efficiency:\n"
                         "      cuda_cores:\n"
                         "        gemm: {max: 0.5, half_flops: 2}\n"),
              StartsWith(path_ + ":5: device 't4': field "
                                 "'efficiency.cuda_cores.gemm': unknown key "
                                 "'half_flops' (known: 'max', 'half_gflop')"));
}

TEST_F(DeviceCatalogYaml, BadEfficiencyValuesAreRejected) {
  const auto error = [&](const std::string& efficiency) {
    return MergeError("devices:\n  - name: t4\n    efficiency:\n      " +
                      efficiency + "\n");
  };
  EXPECT_THAT(error("cuda_cores: {gemm: {max: 2.5}}"),
              StartsWith(path_ + ":4: device 't4': field "
                                 "'efficiency.cuda_cores.gemm.max': '2.5' "
                                 "must be in (0, 2]"));
  EXPECT_THAT(error("cuda_cores: {gemm: {max: 0}}"),
              HasSubstr("'efficiency.cuda_cores.gemm.max': '0' must be in "
                        "(0, 2]"));
  EXPECT_THAT(error("tensor_cores: {conv: {max: 0.5, half_gflop: -1}}"),
              HasSubstr("'efficiency.tensor_cores.conv.half_gflop': '-1' "
                        "must be in [0, "));
  EXPECT_THAT(error("tensor_cores: {conv: {max: high}}"),
              HasSubstr("'efficiency.tensor_cores.conv.max': 'high' must be "
                        "a plain number"));
  EXPECT_THAT(error("tensor_cores: {conv: {half_gflop: 3}}"),
              HasSubstr("field 'efficiency.tensor_cores.conv': 'half_gflop' "
                        "without 'max'"));
  EXPECT_THAT(error("bandwidth: {elementwise: 1.2}"),
              HasSubstr("'efficiency.bandwidth.elementwise': '1.2' must be "
                        "in (0, 1]"));
  EXPECT_THAT(error("kernel_time: 0us"),
              HasSubstr("field 'efficiency.kernel_time': must be positive"));
  EXPECT_THAT(error("eager_op: 20"),
              HasSubstr("field 'efficiency.eager_op': '20' has no unit"));
  EXPECT_THAT(error("kernel_time: [1us]"),
              HasSubstr("field 'efficiency.kernel_time': must be a single "
                        "value"));
  EXPECT_THAT(error("cuda_cores: {gemm: 0.8}"),
              HasSubstr("field 'efficiency.cuda_cores.gemm': must be a map "
                        "of 'max', 'half_gflop'"));
  EXPECT_THAT(error("cuda_cores: {gemm: {max: 0.8}, gemm: {max: 0.7}}"),
              HasSubstr("key 'gemm' is given twice"));
  EXPECT_THAT(MergeError("devices:\n  - name: t4\n    efficiency: 0.8\n"),
              StartsWith(path_ + ":3: device 't4': field 'efficiency': must "
                                 "be a map of 'kernel_time'"));
  EXPECT_THAT(MergeError("devices:\n  - name: t4\n    efficiency:\n"),
              HasSubstr("field 'efficiency': has no value"));
  // A bad value anywhere leaves the catalog unchanged.
  EXPECT_FALSE(catalog_.Find("t4")->efficiency.measured);
}

}  // namespace
}  // namespace tessera::estimator

namespace tessera::estimator {
namespace {

TEST(DeviceCatalog, BuiltInWithMergesTheGivenFileOrNone) {
  auto plain = DeviceCatalog::BuiltInWith("");
  ASSERT_TRUE(plain) << plain.error().message;
  EXPECT_EQ(plain->Names(), DeviceCatalog::BuiltIn().Names());
  auto extended = DeviceCatalog::BuiltInWith(std::string(TESSERA_SOURCE_DIR) +
                                             "/models/devices.example.yaml");
  ASSERT_TRUE(extended) << extended.error().message;
  EXPECT_NE(extended->Find("a100-80gb-pcie"), nullptr);
  auto missing = DeviceCatalog::BuiltInWith("/nonexistent/devices.yaml");
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().code, ErrorCode::kBadInput);
  EXPECT_NE(missing.error().message.find("/nonexistent/devices.yaml"),
            std::string::npos);
}

}  // namespace
}  // namespace tessera::estimator
