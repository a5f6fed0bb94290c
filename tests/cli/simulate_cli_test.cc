// End-to-end tests of `tessera simulate` (snapshot mode): the table, the
// JSON contract, the chart, and the errors a user meets (missing columns,
// bad rows, unplaceable pods, unknown flags' values); of models mode's
// interference laws (--sharing, --interference); and of timed mode's model
// pods (--model-pods, --admission).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "tests/cli/cli_runner.h"
#include "tests/testlib/repo_paths.h"

namespace tessera {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using Json = nlohmann::json;
using testlib::RunResult;
using testlib::RunTessera;
using testlib::TempDir;

const std::string kOpenb = tessera::repo::OpenbDir();

std::string Write(const TempDir& dir, const std::string& name,
                  const std::string& text) {
  std::ofstream(dir.File(name)) << text;
  return "'" + dir.File(name) + "'";
}

// Four nodes of two GPUs, and a handful of pods of every kind.
struct SmallTrace {
  TempDir dir;
  std::string nodes, pods;
  SmallTrace() {
    nodes = Write(dir, "nodes.csv",
                  "sn,cpu_milli,memory_mib,gpu,model\n"
                  "n0,32000,131072,2,T4\nn1,32000,131072,2,T4\n"
                  "n2,64000,262144,2,V100M32\nn3,16000,65536,2,P100\n"
                  "cpu0,32000,131072,0,\n");
    pods = Write(dir, "pods.csv",
                 "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec\n"
                 "a,4000,8192,1,300,\nb,8000,16384,1,650,\n"
                 "c,12000,32768,1,1000,\nd,16000,65536,2,1000,\n"
                 "e,4000,8192,0,0,\nf,3000,8192,1,810,V100M32\n");
  }
  std::string Args() const {
    return "simulate --nodes " + nodes + " --pods " + pods;
  }
};

TEST(SimulateCli, PrintsTheAllocationTableWithTheLimit) {
  SmallTrace t;
  RunResult r = RunTessera(t.Args() + " --policy fgd,tessera --seeds 3", t.dir);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("5 nodes, 8 GPUs"));
  EXPECT_THAT(r.out, HasSubstr("6 pods"));
  EXPECT_THAT(r.out, HasSubstr("80%"));
  EXPECT_THAT(r.out, HasSubstr("physical limit"));
  EXPECT_THAT(r.out, HasSubstr("At 100% arrived"));
  EXPECT_THAT(r.out, HasSubstr("tessera"));
}

TEST(SimulateCli, JsonHasTheIssuesKeysForEveryPolicyAndLevel) {
  SmallTrace t;
  RunResult r = RunTessera(t.Args() + " --policy all --seeds 2 --json", t.dir);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const Json j = Json::parse(r.out);
  EXPECT_EQ(j["seeds"], 2);
  EXPECT_EQ(j["inflation_pct"], 130);
  EXPECT_THAT(j["nodes_file"].get<std::string>(), HasSubstr("nodes.csv"));
  EXPECT_THAT(j["pods_file"].get<std::string>(), HasSubstr("pods.csv"));
  ASSERT_EQ(j["results"].size(), 7u * 5u);  // policy x level
  std::set<std::string> policies;
  for (const Json& res : j["results"]) {
    policies.insert(res["policy"].get<std::string>());
    for (const char* key : {"alloc_ratio_pct", "frag_ratio_pct"}) {
      const Json& s = res[key];
      EXPECT_LE(s["min"].get<double>(), s["mean"].get<double>());
      EXPECT_LE(s["mean"].get<double>(), s["max"].get<double>());
    }
    EXPECT_TRUE(res["failed_pods"].contains("mean"));
    EXPECT_GE(res["arrived_pct"].get<int>(), 80);
  }
  EXPECT_EQ(policies, (std::set<std::string>{"random", "dot-product",
                                             "gpu-clustering", "gpu-packing",
                                             "best-fit", "fgd", "tessera"}));
  ASSERT_EQ(j["physical_limit"].size(), 5u);
  // Every limit was solved: none stood in for by the GPUs' capacity.
  EXPECT_EQ(j["notes"], Json::array()) << r.err;
  EXPECT_THAT(r.err, Not(HasSubstr("note:")));
  EXPECT_TRUE(j["alloc_curves_pct"].contains("tessera"));
}

TEST(SimulateCli, DecidesArrivalsInRoundsWhenAsked) {
  SmallTrace t;
  RunResult r = RunTessera(
      t.Args() + " --policy tessera --seeds 2 --round-pods 4 --json", t.dir);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const Json j = Json::parse(r.out);
  EXPECT_EQ(j["round_pods"], 4);
  EXPECT_EQ(j["repack_rounds"], true);
  EXPECT_EQ(j["results"].size(), 5u);
  r = RunTessera(t.Args() + " --policy tessera --seeds 1 --round-pods 4",
                 t.dir);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("decided in rounds of 4"));
  EXPECT_THAT(r.out, HasSubstr("then each fraction again"));
  // --no-repack: largest first only, and the JSON says so.
  r = RunTessera(t.Args() +
                     " --policy tessera --seeds 1 --round-pods 4 "
                     "--no-repack --json",
                 t.dir);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(Json::parse(r.out)["repack_rounds"], false);
  r = RunTessera(
      t.Args() + " --policy tessera --seeds 1 --round-pods 4 --no-repack",
      t.dir);
  EXPECT_THAT(r.out, HasSubstr("(largest request first)"));
  // One at a time (the default) says nothing of rounds.
  r = RunTessera(t.Args() + " --policy tessera --seeds 1", t.dir);
  EXPECT_THAT(r.out, Not(HasSubstr("rounds of")));
  for (const char* bad : {"0", "-3"}) {
    r = RunTessera(t.Args() + " --seeds 1 --round-pods " + std::string(bad),
                   t.dir);
    EXPECT_EQ(r.exit_code, 2) << bad;
    EXPECT_THAT(r.err, HasSubstr("--round-pods")) << bad;
  }
}

TEST(SimulateCli, KeepsIdleGpusForWholePodsWhenAsked) {
  SmallTrace t;
  RunResult r =
      RunTessera(t.Args() +
                     " --policy tessera --seeds 2 --round-pods 4 --reserve 0.5 "
                     "--json",
                 t.dir);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(Json::parse(r.out)["reserve_share"], 0.5);
  r = RunTessera(t.Args() + " --policy tessera --seeds 1 --reserve 0.5", t.dir);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("idle GPUs kept for whole-GPU pods"));
  r = RunTessera(t.Args() + " --policy tessera --seeds 1 --json", t.dir);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(Json::parse(r.out)["reserve_share"], 0.0);
  for (const char* bad : {"-0.5", "2", "nan"}) {
    r = RunTessera(t.Args() + " --seeds 1 --reserve " + std::string(bad),
                   t.dir);
    EXPECT_EQ(r.exit_code, 2) << bad;
    EXPECT_THAT(r.err, HasSubstr("--reserve")) << bad;
  }
}

TEST(SimulateCli, PlotsAnSvgChart) {
  SmallTrace t;
  const std::string svg = t.dir.File("alloc.svg");
  RunResult r = RunTessera(
      t.Args() + " --policy best-fit,fgd --seeds 2 --plot '" + svg + "'",
      t.dir);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string chart = testlib::ReadFile(svg);
  EXPECT_THAT(chart, HasSubstr("<svg"));
  EXPECT_THAT(chart, HasSubstr("</svg>"));
  EXPECT_THAT(chart, HasSubstr(">best-fit<"));
  EXPECT_THAT(chart, HasSubstr(">physical limit<"));
  EXPECT_THAT(r.out, HasSubstr("Chart written to"));
  // An unwritable path is a bad input, not a crash.
  r = RunTessera(t.Args() + " --seeds 1 --plot /nonexistent/dir/a.svg", t.dir);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("/nonexistent/dir/a.svg"));
}

TEST(SimulateCli, BadRowsAreSkippedWithAWarningUnlessStrict) {
  SmallTrace t;
  const std::string pods =
      Write(t.dir, "bad.csv",
            "name,cpu_milli,memory_mib,num_gpu,gpu_milli\n"
            "a,4000,8192,1,300\nb,lots,16384,1,650\nc,1000,1024,1,1200\n");
  RunResult r = RunTessera(
      "simulate --nodes " + t.nodes + " --pods " + pods + " --seeds 1", t.dir);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.err, HasSubstr("2 rows skipped"));
  EXPECT_THAT(r.err, HasSubstr("bad.csv:3: column 'cpu_milli'"));
  r = RunTessera(
      "simulate --nodes " + t.nodes + " --pods " + pods + " --seeds 1 --strict",
      t.dir);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("bad.csv:3"));
}

TEST(SimulateCli, PodsNoNodeCouldHoldAreNamed) {
  SmallTrace t;
  const std::string pods = Write(t.dir, "big.csv",
                                 "name,cpu_milli,memory_mib,num_gpu,gpu_milli\n"
                                 "ok,4000,8192,1,300\nhuge,4000,8192,8,1000\n");
  RunResult r = RunTessera(
      "simulate --nodes " + t.nodes + " --pods " + pods + " --seeds 1", t.dir);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.err, HasSubstr("1 pods fit no node"));
  EXPECT_THAT(r.err, HasSubstr("huge"));
  r = RunTessera(
      "simulate --nodes " + t.nodes + " --pods " + pods + " --seeds 1 --strict",
      t.dir);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("huge"));
}

TEST(SimulateCli, ClearErrorsForMissingColumnsFilesAndFlags) {
  SmallTrace t;
  const std::string no_column =
      Write(t.dir, "pods2.csv", "name,cpu_milli,memory_mib,num_gpu\np,1,1,0\n");
  RunResult r =
      RunTessera("simulate --nodes " + t.nodes + " --pods " + no_column, t.dir);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("pods2.csv: no column 'gpu_milli'"));
  r = RunTessera("simulate --nodes /no/such.csv --pods " + t.pods, t.dir);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("/no/such.csv"));
  r = RunTessera(t.Args() + " --policy tightest", t.dir);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("unknown policy 'tightest'"));
  EXPECT_THAT(r.err, HasSubstr("gpu-packing"));
  r = RunTessera(t.Args() + " --seeds 0", t.dir);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("--seeds"));
  r = RunTessera(t.Args() + " --mode sideways", t.dir);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("--mode"));
  r = RunTessera("simulate --pods " + t.pods, t.dir);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("--nodes"));
}

TEST(SimulateCli, HelpHasExamples) {
  TempDir dir;
  RunResult r = RunTessera("simulate --help", dir);
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_THAT(r.out, HasSubstr("Examples:"));
  EXPECT_THAT(r.out, HasSubstr("--policy all --plot"));
}

// Models mode on a small mix: MobileNetV2 training jobs arriving fast
// enough to share the example config's GPUs.
std::string ModelsArgs() {
  const std::string root = TESSERA_SOURCE_DIR;
  return "simulate --mode models --config '" + root +
         "/examples/serve.yaml' --models '" + root +
         "/models/zoo/mobilenet_v2.onnx' --batches 8 --jobs 30 "
         "--arrival-rate 120 --duration fixed:3600 --seeds 1 --threads 1";
}

Json ResultOf(const Json& j, const std::string& admission) {
  for (const Json& r : j["results"]) {
    if (r["admission"] == admission) return r;
  }
  ADD_FAILURE() << "no result for " << admission;
  return {};
}

TEST(SimulateCli, ModelsModeDefaultsToTheMeasuredTimeslicingSlowdown) {
  TempDir dir;
  RunResult r = RunTessera(ModelsArgs() + " --json", dir);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const Json j = Json::parse(r.out);
  // The PyTorch runtime model's busy fraction of the kind's step.
  const double busy = j["kinds"][0]["gpu_busy_fraction"].get<double>();
  EXPECT_GT(busy, 0);
  EXPECT_LE(busy, 1);
  ASSERT_EQ(j["results"].size(), 4u);  // one law x four admissions
  for (const Json& res : j["results"]) {
    EXPECT_TRUE(res["interference"].is_null());
    EXPECT_EQ(res["interference_law"], "measured");
    EXPECT_EQ(res["sharing"], "timeslice");
  }
  const Json ts = ResultOf(j, "fraction");
  EXPECT_GT(ts["max_running"].get<double>(), 4);  // jobs shared GPUs

  // MPS overlaps part of the kernels: shared jobs finish sooner.
  r = RunTessera(ModelsArgs() + " --sharing mps --json", dir);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const Json mps = ResultOf(Json::parse(r.out), "fraction");
  EXPECT_EQ(mps["sharing"], "mps");
  EXPECT_LT(mps["mean_jct_s"].get<double>(), ts["mean_jct_s"].get<double>());

  // The linear law overrides it; at 0 sharing is free.
  r = RunTessera(ModelsArgs() + " --interference 0 --json", dir);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const Json free = ResultOf(Json::parse(r.out), "fraction");
  EXPECT_EQ(free["interference"], 0.0);
  EXPECT_EQ(free["interference_law"], "linear");
  EXPECT_TRUE(free["sharing"].is_null());
  EXPECT_LT(free["mean_jct_s"].get<double>(), mps["mean_jct_s"].get<double>());

  r = RunTessera(ModelsArgs(), dir);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("Interference measured on an H100, timeslice"));
  EXPECT_THAT(r.out, HasSubstr("GPU busy"));
}

TEST(SimulateCli, ModelsModeRejectsAnUnknownSharingOrOneWithALinearLaw) {
  TempDir dir;
  RunResult r = RunTessera(ModelsArgs() + " --sharing mig", dir);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("--sharing 'mig': expected timeslice or mps"));
  r = RunTessera(ModelsArgs() + " --sharing mps --interference 0.5", dir);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("--interference"));
  r = RunTessera(ModelsArgs() + " --interference -0.5", dir);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("--interference: must be >= 0"));
}

// The model-job replay's checks name its fields (pool, batches); the command
// prints the flags that set them.
TEST(SimulateCli, ModelsModeLibraryErrorsNameTheFlags) {
  TempDir dir;
  RunResult r = RunTessera(ModelsArgs() + " --pool nope", dir);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("error: --pool: unknown pool 'nope' (the "
                               "config has "));
  EXPECT_THAT(r.err, Not(HasSubstr("error: pool:")));
  r = RunTessera(ModelsArgs() + " --batches 0", dir);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err,
              HasSubstr("error: --batches: 0 is not a positive batch size"));
  EXPECT_THAT(r.err, Not(HasSubstr("error: batches:")));
}

// Timed mode with model pods: two nodes of two GPUs and pods with times,
// several sharing GPUs.
struct TimedTrace {
  TempDir dir;
  std::string nodes, pods;
  TimedTrace() {
    nodes = Write(dir, "nodes.csv",
                  "sn,cpu_milli,memory_mib,gpu,model\n"
                  "n0,32000,131072,2,T4\nn1,32000,131072,2,T4\n");
    std::string rows =
        "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,"
        "pod_phase,creation_time,deletion_time,scheduled_time\n";
    for (int i = 0; i < 24; ++i) {
      const int milli = i % 4 == 3 ? 1000 : 250 + 125 * (i % 4);
      const int start = 30 * i;
      rows += "p" + std::to_string(i) + ",1000,1024,1," +
              std::to_string(milli) + ",,LS,Running," + std::to_string(start) +
              "," + std::to_string(start + 200 + 40 * (i % 5)) + "," +
              std::to_string(start) + "\n";
    }
    pods = Write(dir, "pods.csv", rows);
  }
  std::string Args() const {
    return "simulate --mode timed --nodes " + nodes + " --pods " + pods +
           " --policy best-fit --threads 1";
  }
};

// The JSON without the wall times.
Json WithoutSeconds(Json j) {
  for (Json& r : j["results"]) r.erase("seconds");
  return j;
}

TEST(SimulateCli, TimedModelPodsOffIsThePlainReplay) {
  TimedTrace t;
  RunResult plain = RunTessera(t.Args() + " --json", t.dir);
  ASSERT_EQ(plain.exit_code, 0) << plain.err;
  RunResult off =
      RunTessera(t.Args() + " --json --model-pods 0 --interference 2", t.dir);
  ASSERT_EQ(off.exit_code, 0) << off.err;
  EXPECT_EQ(WithoutSeconds(Json::parse(plain.out)),
            WithoutSeconds(Json::parse(off.out)));
  EXPECT_FALSE(Json::parse(off.out).contains("model_pods"));
}

TEST(SimulateCli, TimedModelPodsCompareFixedAndTessera) {
  TimedTrace t;
  RunResult r = RunTessera(
      t.Args() + " --json --model-pods 100 --interference 1 --load 2", t.dir);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const Json j = Json::parse(r.out);
  ASSERT_EQ(j["results"].size(), 2u);  // fixed, tessera
  EXPECT_EQ(j["results"][0]["admission"], "fixed");
  EXPECT_EQ(j["results"][1]["admission"], "tessera");
  const Json& m = j["results"][1]["model_pods"];
  EXPECT_EQ(m["pods"], 24);
  EXPECT_EQ(m["fractional"], 18);
  EXPECT_EQ(m["finished"], 24);
  for (const char* key : {"mean_jct_s", "mean_queueing_delay_s",
                          "mean_slowdown", "waited", "whole_gpu"}) {
    EXPECT_TRUE(m.contains(key)) << key;
  }
  EXPECT_EQ(j["model_pods"]["pct"], 100);
  EXPECT_EQ(j["model_pods"]["interference_law"], "linear");
  EXPECT_EQ(j["model_pods"]["interference"], 1.0);
  ASSERT_EQ(j["model_pods"]["tessera_vs_fixed"].size(), 1u);
  const Json& c = j["model_pods"]["tessera_vs_fixed"][0];
  EXPECT_EQ(c["model_pods"], 24);
  EXPECT_EQ(c["other_pods"], 0);
  EXPECT_TRUE(c["mean_jct_s"].contains("fixed"));
  EXPECT_TRUE(c["mean_jct_s"].contains("tessera"));

  RunResult text =
      RunTessera(t.Args() + " --model-pods 100 --admission both", t.dir);
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_THAT(text.out, HasSubstr("Model pods: 24"));
  EXPECT_THAT(text.out, HasSubstr("measured (timeslice)"));
  EXPECT_THAT(text.out, HasSubstr("Where the decision changes the outcome"));
  RunResult one = RunTessera(
      t.Args() + " --model-pods 50 --admission tessera --sharing mps", t.dir);
  ASSERT_EQ(one.exit_code, 0) << one.err;
  EXPECT_THAT(one.out, HasSubstr("measured (mps)"));
  EXPECT_THAT(one.out, Not(HasSubstr("Where the decision changes")));
}

TEST(SimulateCli, TimedModelPodFlagsRefuseBadValues) {
  TimedTrace t;
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"--model-pods 101", "--model-pods"},
      {"--model-pods -5", "--model-pods"},
      {"--model-pods 20 --admission sometimes", "--admission"},
      {"--admission tessera", "--admission"},
      {"--model-pods 20 --interference -1", "--interference"},
      {"--model-pods 20 --sharing mig", "--sharing"},
      {"--model-pods 20 --sharing mps --interference 0.5", "--sharing"},
      {"--model-pods 20 --interference-sweep 0,1", "--interference-sweep"},
  };
  for (const auto& [flags, named] : cases) {
    SCOPED_TRACE(flags);
    RunResult r = RunTessera(t.Args() + " " + flags, t.dir);
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_THAT(r.err, HasSubstr(named));
  }
}

// Teams split by size, under no tree, equal and GPU-hour guarantees: one
// row per run, the same pods per team in each; bad values named.
TEST(SimulateCli, TimedTeamsSkewedSplitAndQuotaModes) {
  TimedTrace t;
  const std::string args = t.Args() +
                           " --queue-policy fair-share --load 4 --teams 2 "
                           "--team-split skewed --quotas none,equal,gpu-hours";
  RunResult r = RunTessera(args + " --json", t.dir);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const Json j = Json::parse(r.out);
  ASSERT_EQ(j["results"].size(), 3u);
  const std::vector<std::string> modes = {"none", "equal", "gpu-hours"};
  for (size_t i = 0; i < 3; ++i) {
    const Json& run = j["results"][i];
    EXPECT_EQ(run["quota_guarantees"], modes[i]);
    EXPECT_EQ(run["quotas"], i > 0);
    EXPECT_EQ(run["team_split"], "skewed");
    ASSERT_EQ(run["teams"].size(), 2u);
    // 18 fractional pods in team0, the 6 whole-GPU ones in team1.
    EXPECT_EQ(run["teams"][0]["started"], 18);
    EXPECT_EQ(run["teams"][1]["started"], 6);
  }
  RunResult text = RunTessera(args, t.dir);
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_THAT(text.out, HasSubstr("fractional-GPU pods to team0..0"));
  EXPECT_THAT(text.out, HasSubstr("Pods per team: 18 6"));
  EXPECT_THAT(text.out, HasSubstr("fair-share+quotas(gpu-hours)"));
  EXPECT_THAT(text.out, HasSubstr("queued util"));
  for (const auto& [flags, named] :
       std::vector<std::pair<std::string, std::string>>{
           {"--teams 2 --team-split size", "--team-split"},
           {"--teams 2 --quotas equal,sometimes", "--quotas"},
           {"--quotas gpu-hours", "--quotas"}}) {
    SCOPED_TRACE(flags);
    RunResult bad = RunTessera(t.Args() + " " + flags, t.dir);
    EXPECT_EQ(bad.exit_code, 2);
    EXPECT_THAT(bad.err, HasSubstr(named));
  }
}

// The real trace, one seed: the paper's FGD figure and tessera above it.
TEST(SimulateCli, OpenbDefaultTraceOneSeed) {
  ASSERT_TRUE(std::filesystem::exists(kOpenb + "/openb_pod_list_default.csv"))
      << kOpenb << ": the openb trace is missing";
  TempDir dir;
  RunResult r =
      RunTessera("simulate --nodes '" + kOpenb +
                     "/openb_node_list_gpu_node.csv' --pods '" + kOpenb +
                     "/openb_pod_list_default.csv' --policy fgd,tessera "
                     "--seeds 1 --json",
                 dir);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const Json j = Json::parse(r.out);
  EXPECT_EQ(j["cluster"]["gpus"], 6212);
  double fgd = 0, tessera = 0;
  for (const Json& res : j["results"]) {
    if (res["arrived_pct"] != 100) continue;
    const double a = res["alloc_ratio_pct"]["mean"].get<double>();
    (res["policy"] == "fgd" ? fgd : tessera) = a;
  }
  EXPECT_NEAR(fgd, 95.23, 0.6);
  EXPECT_GT(tessera, fgd);
}

}  // namespace
}  // namespace tessera
