// End-to-end tests of `tessera simulate --mode models --elastic`: the JSON
// contract, min = max reproducing the gang run, determinism, the text
// table and the refused flags.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "tests/cli/cli_runner.h"
#include "tests/testlib/repo_paths.h"

namespace tessera {
namespace {

using ::testing::HasSubstr;
using Json = nlohmann::json;
using testlib::RunResult;
using testlib::RunTessera;
using testlib::TempDir;

// MobileNetV2 training jobs (one GPU each by memory) on the example
// config's a100 pool of four GPUs.
std::string Args() {
  const std::string root = TESSERA_SOURCE_DIR;
  return "simulate --mode models --config '" + root +
         "/examples/serve.yaml' --models '" + root +
         "/models/zoo/mobilenet_v2.onnx' --batches 8 --jobs 30 "
         "--arrival-rate 60 --duration fixed:3600 --seeds 2 --threads 1 "
         "--policy best-fit";
}

TEST(SimulateModelsElasticCli, GangVsElasticJson) {
  TempDir dir;
  RunResult r = RunTessera(Args() + " --elastic 50 --json", dir);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const Json j = Json::parse(r.out);
  EXPECT_EQ(j["mode"], "models");
  EXPECT_EQ(j["pool"], "a100");
  EXPECT_EQ(j["elastic"]["pct"], 50);
  EXPECT_EQ(j["elastic"]["min"], 1);
  EXPECT_EQ(j["elastic"]["max"], 4);
  EXPECT_EQ(j["kinds"][0]["whole_gpus"], 1);
  ASSERT_EQ(j["results"].size(), 2u);
  EXPECT_EQ(j["results"][0]["seed"], 42);
  EXPECT_EQ(j["results"][1]["seed"], 43);
  for (const Json& res : j["results"]) {
    EXPECT_GT(res["sweeps"].get<int>(), 0);
    EXPECT_LT(res["sweeps"].get<int>(), 30);
    for (const char* run : {"gang", "elastic"}) {
      EXPECT_EQ(res[run]["started"], 30) << run;
      EXPECT_GT(res[run]["makespan_s"].get<double>(), 0);
      EXPECT_LE(res[run]["mean_utilization_pct"].get<double>(), 100 + 1e-9);
    }
    EXPECT_EQ(res["gang"]["grows"], 0);
    EXPECT_GT(res["elastic"]["grows"].get<int>(), 0);
    EXPECT_NEAR(res["ratio"]["makespan"].get<double>(),
                res["elastic"]["makespan_s"].get<double>() /
                    res["gang"]["makespan_s"].get<double>(),
                1e-9);
  }
  EXPECT_TRUE(j["mean_ratio"].contains("mean_elastic_jct"));
  // The same seeds give the same runs.
  RunResult again = RunTessera(Args() + " --elastic 50 --json", dir);
  ASSERT_EQ(again.exit_code, 0) << again.err;
  EXPECT_EQ(Json::parse(again.out)["results"][0]["elastic"]["mean_jct_s"],
            j["results"][0]["elastic"]["mean_jct_s"]);
}

TEST(SimulateModelsElasticCli, MinEqualToMaxIsTheGangRun) {
  TempDir dir;
  RunResult r =
      RunTessera(Args() + " --elastic 100 --elastic-workers 2:2 --json", dir);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const Json out = Json::parse(r.out);  // outlives the loop below
  for (const Json& res : out["results"]) {
    EXPECT_EQ(res["sweeps"], 30);
    EXPECT_EQ(res["elastic"]["mean_jct_s"], res["gang"]["mean_jct_s"]);
    EXPECT_EQ(res["elastic"]["makespan_s"], res["gang"]["makespan_s"]);
    EXPECT_EQ(res["elastic"]["grows"], 0);
  }
}

TEST(SimulateModelsElasticCli, TextTable) {
  TempDir dir;
  RunResult r = RunTessera(Args() + " --elastic 50", dir);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("data-parallel sweeps of 4 replicas"));
  EXPECT_THAT(r.out, HasSubstr("sweep JCT"));
  EXPECT_THAT(r.out, HasSubstr("elastic/gang"));
  EXPECT_THAT(r.out, HasSubstr("Elastic/gang over 2 seed(s)"));
}

TEST(SimulateModelsElasticCli, RefusesBadFlags) {
  TempDir dir;
  for (const auto& [flags, message] :
       std::vector<std::pair<std::string, std::string>>{
           {"--elastic 101", "--elastic: a percentage in 0..100"},
           {"--elastic 50 --elastic-workers 3:2", "--elastic-workers"},
           {"--elastic 50 --elastic-workers 0:2", "--elastic-workers"},
           {"--elastic 50 --elastic-workers four", "--elastic-workers"},
           {"--elastic 50 --elastic-efficiency 0", "--elastic-efficiency"},
           {"--elastic 50 --interference 0.5", "not combined"},
           {"--elastic 50 --sharing mps", "not combined"},
           {"--elastic 50 --plot x.svg", "--plot"}}) {
    RunResult r = RunTessera(Args() + " " + flags, dir);
    EXPECT_EQ(r.exit_code, 2) << flags;
    EXPECT_THAT(r.err, HasSubstr(message)) << flags;
  }
}

}  // namespace
}  // namespace tessera
