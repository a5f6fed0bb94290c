// End-to-end tests of `tessera simulate --mode timed --elastic`: a trace
// whose gang-only and elastic figures are worked out by hand, the JSON
// contract, the text table, and the refused flags.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "tests/cli/cli_runner.h"

namespace tessera {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using Json = nlohmann::json;
using testlib::RunResult;
using testlib::RunTessera;
using testlib::TempDir;

// One node of four GPUs; three 1-GPU pods hold three of them for 0-100 s
// and a 4-GPU pod of 100 s arrives at 0. Gang-only it waits until 100 and
// ends at 200; elastic (min 1) it runs one worker 0-100 (a quarter of its
// 400 GPU-seconds), then four: it ends at 175.
struct ElasticTrace {
  TempDir dir;
  std::string nodes, pods;
  ElasticTrace() {
    nodes = Write("nodes.csv",
                  "sn,cpu_milli,memory_mib,gpu,model\n"
                  "n0,32000,131072,4,T4\n");
    pods = Write("pods.csv",
                 "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,"
                 "pod_phase,creation_time,deletion_time,scheduled_time\n"
                 "a,1000,1024,1,1000,,LS,Running,0,100,0\n"
                 "b,1000,1024,1,1000,,LS,Running,0,100,0\n"
                 "c,1000,1024,1,1000,,LS,Running,0,100,0\n"
                 "big,4000,4096,4,1000,,LS,Running,0,100,0\n");
  }
  std::string Write(const std::string& name, const std::string& text) const {
    std::ofstream(dir.File(name)) << text;
    return "'" + dir.File(name) + "'";
  }
  std::string Args() const {
    return "simulate --mode timed --nodes " + nodes + " --pods " + pods +
           " --policy best-fit --threads 1";
  }
};

TEST(SimulateElasticCli, GangVsElasticOnTheSameArrivalsByHand) {
  ElasticTrace t;
  RunResult r = RunTessera(t.Args() + " --elastic 100 --json", t.dir);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const Json j = Json::parse(r.out);
  EXPECT_EQ(j["elastic"]["pct"], 100);
  EXPECT_EQ(j["elastic"]["min"], 1);
  EXPECT_EQ(j["elastic"]["pods"], 1);
  ASSERT_EQ(j["results"].size(), 1u);
  const Json& res = j["results"][0];
  EXPECT_EQ(res["policy"], "best-fit");
  EXPECT_EQ(res["queue_policy"], "fifo");
  EXPECT_DOUBLE_EQ(res["gang"]["makespan_s"].get<double>(), 200);
  EXPECT_DOUBLE_EQ(res["elastic"]["makespan_s"].get<double>(), 175);
  EXPECT_DOUBLE_EQ(res["gang"]["mean_elastic_jct_s"].get<double>(), 200);
  EXPECT_DOUBLE_EQ(res["elastic"]["mean_elastic_jct_s"].get<double>(), 175);
  EXPECT_DOUBLE_EQ(res["gang"]["mean_jct_s"].get<double>(), 125);
  EXPECT_DOUBLE_EQ(res["elastic"]["mean_jct_s"].get<double>(), 118.75);
  EXPECT_DOUBLE_EQ(res["gang"]["mean_wait_s"].get<double>(), 25);
  EXPECT_DOUBLE_EQ(res["elastic"]["mean_wait_s"].get<double>(), 0);
  EXPECT_DOUBLE_EQ(res["ratio"]["makespan"].get<double>(), 0.875);
  EXPECT_EQ(res["elastic"]["grows"], 1);
  EXPECT_EQ(res["elastic"]["workers_grown"], 3);
  EXPECT_EQ(res["gang"]["grows"], 0);
  EXPECT_EQ(res["elastic"]["started"], 4);

  // Sub-linear: at efficiency 0.5 one worker does 40 of the 100 s.
  RunResult half = RunTessera(
      t.Args() + " --elastic 100 --elastic-efficiency 0.5 --json", t.dir);
  ASSERT_EQ(half.exit_code, 0) << half.err;
  EXPECT_NEAR(Json::parse(half.out)["results"][0]["elastic"]["makespan_s"]
                  .get<double>(),
              160, 1e-9);

  RunResult text = RunTessera(t.Args() + " --elastic 100", t.dir);
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_THAT(text.out, HasSubstr("elastic/gang"));
  EXPECT_THAT(text.out, HasSubstr("0.875"));
  EXPECT_THAT(text.out, HasSubstr("= 1 pods, min 1"));
}

TEST(SimulateElasticCli, ElasticFlagsRefuseBadValues) {
  ElasticTrace t;
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"--elastic 101", "--elastic"},
      {"--elastic -1", "--elastic"},
      {"--elastic 50 --elastic-min 0", "--elastic-min"},
      {"--elastic 50 --elastic-efficiency 0", "--elastic-efficiency"},
      {"--elastic 50 --elastic-efficiency 1.5", "--elastic-efficiency"},
      {"--elastic 50 --model-pods 10", "--model-pods"},
      {"--elastic 50 --plot x.svg", "--plot"},
  };
  for (const auto& [flags, named] : cases) {
    SCOPED_TRACE(flags);
    RunResult r = RunTessera(t.Args() + " " + flags, t.dir);
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_THAT(r.err, HasSubstr(named));
  }
}

// The replay's own checks name its options' fields (min_workers,
// scaling_efficiency); the command prints the flags that set them.
TEST(SimulateElasticCli, TheReplaysErrorsNameTheFlags) {
  ElasticTrace t;
  RunResult r = RunTessera(t.Args() + " --elastic 50 --elastic-min 0", t.dir);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("error: --elastic-min: at least 1, got 0\n"));
  EXPECT_THAT(r.err, Not(HasSubstr("min_workers")));
  r = RunTessera(t.Args() + " --elastic 50 --elastic-efficiency 1.5", t.dir);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("error: --elastic-efficiency: in (0, 1], got "));
  EXPECT_THAT(r.err, Not(HasSubstr("scaling_efficiency")));
}

TEST(SimulateElasticCli, HelpShowsTheElasticExample) {
  TempDir dir;
  RunResult r = RunTessera("simulate --help", dir);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("--elastic 100"));
  EXPECT_THAT(r.out, HasSubstr("--elastic-efficiency"));
}

}  // namespace
}  // namespace tessera
