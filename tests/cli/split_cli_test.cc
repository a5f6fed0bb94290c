// End-to-end tests of `tessera split`: plan, then split, then what was
// written; and the errors, each with its exit code.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "tests/cli/cli_runner.h"
#include "tests/testlib/repo_paths.h"

namespace tessera {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using Json = nlohmann::json;
using testlib::RunResult;

std::string Quote(const std::string& s) { return "'" + s + "'"; }
const std::string kGpt2 =
    Quote(std::string(TESSERA_SOURCE_DIR) + "/models/zoo/gpt2.onnx");
const std::string kResNet =
    Quote(std::string(TESSERA_SOURCE_DIR) + "/models/zoo/resnet50.onnx");
const std::string kCrumbs =
    Quote(std::string(TESSERA_SOURCE_DIR) + "/models/clusters/crumbs.yaml");

class SplitCli : public ::testing::Test {
 protected:
  RunResult Run(const std::string& args) {
    return testlib::RunTessera(args, dir_);
  }
  // plan.json for `model` on crumbs, written by `tessera plan -o`.
  std::string Plan(const std::string& model, const std::string& algo) {
    const std::string plan = dir_.File("plan.json");
    const RunResult r = Run("plan " + model + " --cluster " + kCrumbs +
                            " --algo " + algo + " -o " + Quote(plan));
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return plan;
  }
  Json ReadJson(const std::string& path) {
    std::ifstream in(path);
    return Json::parse(in);
  }
  testlib::TempDir dir_;
};

TEST_F(SplitCli, WritesPartsManifestAndDeviceMap) {
  const std::string plan = Plan(kGpt2, "m-topo");
  const std::string parts = dir_.File("parts");
  const RunResult r =
      Run("split " + kGpt2 + " --plan " + Quote(plan) + " -o " + Quote(parts));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("part_0.onnx"));
  EXPECT_THAT(r.out, HasSubstr("transfers:"));
  EXPECT_THAT(r.out, HasSubstr("order:"));
  EXPECT_THAT(r.out, HasSubstr("device_map.json"));
  EXPECT_THAT(r.out, HasSubstr("every part passes ONNX's checker"));
  // The zoo file is structure-only: split says the weights are missing.
  EXPECT_THAT(r.err, HasSubstr("gpt2.onnx.data does not exist"));
  const Json manifest = ReadJson(parts + "/manifest.json");
  EXPECT_EQ(manifest["format"], "tessera-split/1");
  ASSERT_GE(manifest["parts"].size(), 2u) << "crumbs forces a split";
  for (const Json& p : manifest["parts"]) {
    const std::string file = parts + "/" + p["file"].get<std::string>();
    onnx::ModelProto part;
    std::ifstream in(file, std::ios::binary);
    EXPECT_TRUE(part.ParseFromIstream(&in)) << file;
    EXPECT_EQ(static_cast<size_t>(part.graph().input_size()),
              p["inputs"].size());
  }
  for (const Json& t : manifest["transfers"]) {
    EXPECT_LT(t["from_part"].get<int>(), t["to_part"].get<int>());
    EXPECT_GT(t["bytes"].get<int64_t>(), 0);
  }
  const Json device_map = ReadJson(parts + "/device_map.json");
  EXPECT_TRUE(device_map["device_map"].contains("wte"));
  EXPECT_TRUE(device_map["device_map"].contains("lm_head"));
}

TEST_F(SplitCli, JsonHasManifestDeviceMapAndFiles) {
  const std::string plan = Plan(kResNet, "m-etf");
  const RunResult r = Run("split " + kResNet + " --plan " + Quote(plan) +
                          " -o " + Quote(dir_.File("parts")) + " --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const Json j = Json::parse(r.out);
  EXPECT_EQ(j["manifest"]["parts"].size() + 2, j["files"].size());
  EXPECT_EQ(j["device_map"]["format"], "tessera-device-map/1");
  EXPECT_GE(j["partition_ms"].get<double>(), 0.0);
}

TEST_F(SplitCli, RefusesANonEmptyDirectoryUnlessForced) {
  const std::string plan = Plan(kResNet, "m-etf");
  const std::string parts = dir_.File("parts");
  fs::create_directories(parts);
  std::ofstream(parts + "/notes.txt") << "mine";
  const std::string args =
      "split " + kResNet + " --plan " + Quote(plan) + " -o " + Quote(parts);
  RunResult r = Run(args);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("is not empty"));
  EXPECT_THAT(r.err, HasSubstr("--force"));
  EXPECT_FALSE(fs::exists(parts + "/manifest.json"));
  r = Run(args + " --force");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(fs::exists(parts + "/manifest.json"));
  EXPECT_TRUE(fs::exists(parts + "/notes.txt"));  // left alone
}

TEST_F(SplitCli, APlanForAnotherModelIsBadInput) {
  const std::string plan = Plan(kResNet, "m-etf");
  const RunResult r = Run("split " + kGpt2 + " --plan " + Quote(plan) + " -o " +
                          Quote(dir_.File("parts")));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("does not have"));
  EXPECT_THAT(r.err, HasSubstr("another model"));
  EXPECT_FALSE(fs::exists(dir_.File("parts")));
}

TEST_F(SplitCli, APlanListingADeviceTwiceIsBadInput) {
  Json plan = ReadJson(Plan(kResNet, "m-etf"));
  plan["devices"][1]["id"] = plan["devices"][0]["id"];
  std::ofstream(dir_.File("twice.json")) << plan.dump();
  const RunResult r =
      Run("split " + kResNet + " --plan " + Quote(dir_.File("twice.json")) +
          " -o " + Quote(dir_.File("parts")));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("devices[1].id"));
  EXPECT_THAT(r.err, HasSubstr("listed twice"));
}

TEST_F(SplitCli, MalformedOrMissingPlanNamesTheFile) {
  std::ofstream(dir_.File("bad.json")) << "{\"devices\": [";
  RunResult r =
      Run("split " + kResNet + " --plan " + Quote(dir_.File("bad.json")) +
          " -o " + Quote(dir_.File("parts")));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("bad.json: not valid JSON"));
  r = Run("split " + kResNet + " --plan " + Quote(dir_.File("none.json")) +
          " -o " + Quote(dir_.File("parts")));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("none.json"));
}

TEST_F(SplitCli, DotDrawsThePartsAndTransfers) {
  const std::string plan = Plan(kGpt2, "m-topo");
  const std::string dot = dir_.File("parts.dot");
  const RunResult r = Run("split " + kGpt2 + " --plan " + Quote(plan) + " -o " +
                          Quote(dir_.File("parts")) + " --dot " + Quote(dot));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string text = testlib::ReadFile(dot);
  EXPECT_THAT(text, HasSubstr("digraph parts"));
  EXPECT_THAT(text, HasSubstr("part_0.onnx"));
  EXPECT_THAT(text, HasSubstr("p0 -> p1"));
  EXPECT_THAT(text, HasSubstr("rank=same"));
}

TEST_F(SplitCli, HelpHasExamples) {
  const RunResult r = Run("split --help");
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_THAT(r.out, HasSubstr("Examples:"));
  EXPECT_THAT(r.out, HasSubstr("tessera split model.onnx --plan plan.json"));
  EXPECT_THAT(r.out, HasSubstr("Exit codes"));
}

}  // namespace
}  // namespace tessera
