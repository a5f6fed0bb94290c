// End-to-end tests of `tessera profile` and `tessera devices`.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "tests/cli/cli_runner.h"
#include "tests/testlib/repo_paths.h"

namespace tessera {
namespace {

using ::testing::HasSubstr;
using testlib::RunResult;

const std::string kResNet =
    std::string("'") + TESSERA_SOURCE_DIR + "/models/zoo/resnet50.onnx'";

class ProfileCli : public ::testing::Test {
 protected:
  RunResult Run(const std::string& args) const {
    return testlib::RunTessera(args, dir_);
  }
  testlib::TempDir dir_;
};

TEST_F(ProfileCli, PrintsTablesAndTotals) {
  const RunResult r =
      Run("profile " + kResNet + " --device a100-80gb --batch 32");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("operators (top 10 of 175 by time)"));
  EXPECT_THAT(r.out, HasSubstr("by operator class"));
  EXPECT_THAT(r.out, HasSubstr("130.854 G"));  // 32 x 4.089 GMACs
  EXPECT_THAT(r.out, HasSubstr("fits"));
}

TEST_F(ProfileCli, JsonHasTheDocumentedKeysAndEveryOperator) {
  const RunResult r = Run("profile " + kResNet + " --device t4 --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["device"], "t4");
  EXPECT_EQ(j["batch"], 1);
  EXPECT_EQ(j["mode"], "inference");
  for (const char* key : {"macs", "flops", "weight_bytes", "peak_memory_bytes",
                          "time_ms", "fits"}) {
    EXPECT_TRUE(j["totals"].contains(key)) << key;
  }
  EXPECT_EQ(j["totals"]["macs"], 4'089'184'256);
  ASSERT_EQ(j["ops"].size(), 175u);
  for (const char* key :
       {"name", "op_type", "macs", "flops", "bytes_read", "bytes_written",
        "weight_bytes", "output_bytes", "workspace_bytes", "time_ms"}) {
    EXPECT_TRUE(j["ops"][0].contains(key)) << key;
  }
}

TEST_F(ProfileCli, RuntimePyTorchReportsTheAllocatorAndTheHost) {
  const RunResult r = Run("profile " + kResNet +
                          " --device h100-sxm --runtime pytorch --batch 32 "
                          "--train --amp bf16 --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  const auto& t = j["totals"];
  EXPECT_GE(t["reserved_peak_bytes"].get<int64_t>(),
            t["peak_memory_bytes"].get<int64_t>());
  EXPECT_EQ(t["peak_memory_bytes"], j["runtime"]["live_peak_bytes"]);
  EXPECT_GT(t["reserve_bytes"].get<int64_t>(),
            t["reserved_peak_bytes"].get<int64_t>());
  const auto& rt = j["runtime"];
  EXPECT_EQ(rt["name"], "pytorch");
  EXPECT_EQ(rt["amp"], "bf16");
  EXPECT_NEAR(rt["step_ms"].get<double>(), t["time_ms"].get<double>(), 1e-9);
  EXPECT_GT(rt["gpu_busy_fraction"].get<double>(), 0.5);  // batch 32
  EXPECT_GT(rt["kernels"].get<int>(), rt["dispatched_ops"].get<int>());
  // The table names the allocator's figures.
  const RunResult table =
      Run("profile " + kResNet + " --device h100-sxm --runtime pytorch");
  ASSERT_EQ(table.exit_code, 0) << table.err;
  EXPECT_THAT(table.out, HasSubstr("reserved peak"));
  EXPECT_THAT(table.out, HasSubstr("runtime pytorch"));
}

TEST_F(ProfileCli, RuntimeOptionsThatContradictAreRefused) {
  struct Case {
    const char* args;
    const char* says;
  } cases[] = {
      {"--runtime tensorflow", "--runtime 'tensorflow'"},
      {"--amp bf16", "add --runtime pytorch"},
      {"--tf32", "add --runtime pytorch"},
      {"--runtime pytorch --amp int4", "--amp 'int4'"},
      {"--runtime pytorch --amp bf16 --dtype bf16", "give one"},
      {"--runtime pytorch --attention flash2", "--attention 'flash2'"},
      {"--runtime onnxruntime --train", "inference only"},
      // The parsers name the options' fields; the command, its flags.
      {"--dtype int8", "error: --dtype 'int8': expected fp32, fp16 or bf16"},
      {"--optimizer lamb", "error: --optimizer 'lamb': expected adam"},
  };
  for (const Case& c : cases) {
    const RunResult r =
        Run("profile " + kResNet + " --device h100-sxm " + c.args);
    EXPECT_EQ(r.exit_code, 2) << c.args;
    EXPECT_THAT(r.err, HasSubstr(c.says)) << c.args;
  }
}

TEST_F(ProfileCli, TrainingInHalfPrecision) {
  const RunResult r = Run("profile " + kResNet +
                          " --device h100-sxm --batch 8 --train --dtype bf16 "
                          "--optimizer sgd-momentum --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["mode"], "training");
  EXPECT_EQ(j["totals"]["weight_bytes"], 2 * 25'610'152);
  // Momentum (fp32) + fp32 master weights under mixed precision.
  EXPECT_EQ(j["memory"]["optimizer_state"], 8 * 25'610'152);
}

TEST_F(ProfileCli, CsvHasOneRowPerOperator) {
  const RunResult r = Run("profile " + kResNet + " --device l4 --csv");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  int lines = 0;
  for (const char c : r.out) lines += c == '\n';
  EXPECT_EQ(lines, 1 + 175);
  EXPECT_THAT(r.out, HasSubstr("name,op_type,op_class,macs"));
}

TEST_F(ProfileCli, UnknownDeviceListsTheKnownOnes) {
  const RunResult r = Run("profile " + kResNet + " --device a100-81gb");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("unknown device 'a100-81gb'"));
  EXPECT_THAT(r.err, HasSubstr("h100-sxm"));
}

TEST_F(ProfileCli, BadDtypeAndOptimizerAreBadInput) {
  EXPECT_EQ(Run("profile " + kResNet + " --dtype int4").exit_code, 2);
  EXPECT_EQ(Run("profile " + kResNet + " --train --optimizer lamb").exit_code,
            2);
  EXPECT_EQ(Run("profile " + kResNet + " --headroom 2").exit_code, 2);
}

TEST_F(ProfileCli, UnboundInputSaysWhichToBind) {
  const std::string model = dir_.Write("cnn.onnx", testlib::SmallCnn("N"));
  const RunResult r = Run("profile '" + model + "'");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("input 'x'"));
  EXPECT_EQ(Run("profile '" + model + "' --batch 4").exit_code, 0);
}

TEST_F(ProfileCli, DevicesListsTheCatalogWithSources) {
  const RunResult r = Run("devices");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("a100-80gb"));
  EXPECT_THAT(r.out, HasSubstr("sources"));
  const RunResult j = Run("devices --json");
  ASSERT_EQ(j.exit_code, 0) << j.err;
  EXPECT_GE(nlohmann::json::parse(j.out).size(), 13u);
  const RunResult extra =
      Run("devices --devices '" + std::string(TESSERA_SOURCE_DIR) +
          "/models/devices.example.yaml'");
  ASSERT_EQ(extra.exit_code, 0) << extra.err;
  EXPECT_THAT(extra.out, HasSubstr("a100-80gb-pcie"));
  const std::string bad =
      dir_.Write("bad.yaml", "devices: [ {name: x, memory: lots} ]\n");
  EXPECT_EQ(Run("devices --devices '" + bad + "'").exit_code, 2);
}

TEST_F(ProfileCli, DevicesShowsAMeasuredEfficiencySurface) {
  const std::string yaml =
      dir_.Write("measured.yaml",
                 "devices:\n"
                 "  - name: h100-measured\n"
                 "    base: h100-sxm\n"
                 "    efficiency:\n"
                 "      kernel_time: 2.5us\n"
                 "      eager_op: 20us\n"
                 "      bandwidth: {elementwise: 0.85}\n"
                 "      cuda_cores: {gemm: {max: 0.9, half_gflop: 2}}\n"
                 "      tensor_cores: {gemm: {max: 0.7, half_gflop: 40}}\n");
  const RunResult j = Run("devices --json --devices '" + yaml + "'");
  ASSERT_EQ(j.exit_code, 0) << j.err;
  const auto devices = nlohmann::json::parse(j.out);
  bool found = false;
  for (const auto& d : devices) {
    if (d["name"] == "h100-sxm") {
      EXPECT_FALSE(d.contains("efficiency"));
    }
    if (d["name"] != "h100-measured") continue;
    found = true;
    ASSERT_TRUE(d.contains("efficiency")) << d.dump();
    const auto& e = d["efficiency"];
    EXPECT_DOUBLE_EQ(e["kernel_s"].get<double>(), 2.5e-6);
    EXPECT_DOUBLE_EQ(e["eager_op_s"].get<double>(), 20e-6);
    EXPECT_DOUBLE_EQ(e["bandwidth"]["elementwise"].get<double>(), 0.85);
    EXPECT_DOUBLE_EQ(e["cuda_cores"]["gemm"]["max"].get<double>(), 0.9);
    EXPECT_DOUBLE_EQ(e["tensor_cores"]["gemm"]["half_flops"].get<double>(),
                     40e9);
    EXPECT_FALSE(e["cuda_cores"].contains("conv"));  // not measured
  }
  EXPECT_TRUE(found) << j.out;
  const RunResult text = Run("devices --devices '" + yaml + "'");
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_THAT(text.out, HasSubstr("measured efficiency\n  h100-measured: "
                                  "kernel 2.50 us; eager op 20.0 us"));
  EXPECT_THAT(text.out, HasSubstr("gemm tensor cores 0.70 (half at 40 "
                                  "GFLOP)"));
}

// Measured times of a few ResNet-50 operators (made up, in ms): the fit
// runs, reports its errors on stderr with --json, and a bad line is named.
TEST_F(ProfileCli, CalibrationFitsMeasuredTimesAndNamesABadLine) {
  const std::string csv = dir_.Write(
      "times.csv",
      "name,ms\n/conv1/Conv,2.1\n/bn1/BatchNormalization,0.4\n"
      "/relu/Relu,0.3\n/maxpool/MaxPool,0.25\n"
      "/layer1/layer1.0/conv1/Conv,0.3\n/layer1/layer1.0/conv2/Conv,2.0\n"
      "/layer1/layer1.0/relu/Relu,0.08\n/layer1/layer1.0/conv3/Conv,0.9\n");
  const RunResult r = Run("profile " + kResNet +
                          " --device cpu --json --calibration '" + csv + "'");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.err, HasSubstr("calibration: 8 ops matched, MAPE before"));
  EXPECT_THAT(r.err, HasSubstr("(held-out ops: before"));
  EXPECT_EQ(nlohmann::json::parse(r.out)["device"], "cpu");
  const std::string bad =
      dir_.Write("bad.csv", "name,ms\n/conv1/Conv,2.1\n/relu/Relu,slow\n");
  const RunResult e =
      Run("profile " + kResNet + " --device cpu --calibration '" + bad + "'");
  EXPECT_EQ(e.exit_code, 2);
  EXPECT_THAT(e.err, HasSubstr("bad.csv:3: 'slow'"));
}

}  // namespace
}  // namespace tessera
