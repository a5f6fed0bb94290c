// End-to-end tests of tessera's cost graph (docs/cost_graph.md): `tessera
// profile MODEL --cost-graph FILE` writes it, `tessera plan --cost-graph
// FILE` places it (and the format of Tarnawski et al.), measured times
// patched in change the plan, and bad files are refused naming the field.
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

const std::string kResNet =
    std::string("'") + TESSERA_SOURCE_DIR + "/models/zoo/resnet50.onnx'";
const std::string kTarnawski =
    std::string(TESSERA_SOURCE_DIR) +
    "/data/dnn-partitioning/throughput-inputs/LayerGraphs/"
    "resnet50_inference.json";

// Two kinds, a chain a -> b -> c; c runs on the CPU only.
const char* const kSmall = R"({
  "format": "tessera-cost-graph", "version": 1,
  "devices": [{"kind": "gpu", "count": 2, "memory_bytes": 1000},
              {"kind": "cpu", "count": 1, "charges_communication": false}],
  "link": {"bytes_per_s": 1e9},
  "operators": [{"id": 0, "name": "a", "time_s": {"gpu": 1.0, "cpu": 8.0}},
                {"id": 1, "name": "b", "time_s": {"gpu": 1.0, "cpu": 8.0}},
                {"id": 2, "name": "c", "time_s": {"cpu": 0.5}}],
  "edges": [{"from": 0, "to": 1, "bytes": 2000000000},
            {"from": 1, "to": 2, "time_s": 0.25}]})";

class CostGraphCli : public ::testing::Test {
 protected:
  RunResult Run(const std::string& args) const {
    return testlib::RunTessera(args, dir_);
  }
  Json ReadJson(const std::string& path) const {
    return Json::parse(testlib::ReadFile(path));
  }
  testlib::TempDir dir_;
};

TEST_F(CostGraphCli, PlansTesseraFormatAndTarnawskisByTheirKeys) {
  const std::string small = dir_.Write("small.json", kSmall);
  RunResult r = Run("plan --json --cost-graph '" + small + "'");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  Json j = Json::parse(r.out);
  EXPECT_EQ(j["format"], "tessera-cost-graph");
  // a and b apart: a's 2 GB take 2 s to send, and each GPU pays them (3);
  // together: 1 + 1, and 0.25 for sending b to c, on the CPU (receiving
  // is free there).
  EXPECT_NEAR(j["objective"]["max_load"].get<double>(), 2.25, 1e-9);
  EXPECT_EQ(j["placement"]["2"], "cpu0");
  EXPECT_EQ(j["devices"][0]["id"], "gpu0");
  r = Run("plan --cost-graph '" + small + "'");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("3 nodes on 2 gpu 1 cpu"));

  r = Run("plan --algo contiguous --json --cost-graph '" + kTarnawski + "'");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(Json::parse(r.out)["format"], "tarnawski");
  r = Run("plan --algo contiguous --cost-graph '" + kTarnawski + "'");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("177 nodes on 6 acc 1 cpu"));

  const std::string neither = dir_.Write("neither.json", R"({"nodes": []})");
  r = Run("plan --cost-graph '" + neither + "'");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("not a format tessera reads"));
  EXPECT_THAT(r.err, HasSubstr("\"format\": \"tessera-cost-graph\""));
  EXPECT_THAT(r.err, HasSubstr("maxSizePerFPGA"));
}

TEST_F(CostGraphCli, BadFilesAreRefusedNamingTheField) {
  Json j = Json::parse(kSmall);
  j["operators"][1]["time_s"]["gpu"] = -1;
  std::string path = dir_.Write("bad.json", j.dump());
  RunResult r = Run("plan --cost-graph '" + path + "'");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr(path + ": operators[1].time_s.gpu: must be a "
                                      "number >= 0 or null"));
  j = Json::parse(kSmall);
  j["version"] = 2;
  path = dir_.Write("v2.json", j.dump());
  r = Run("plan --cost-graph '" + path + "'");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("version: 2 is not supported: this tessera "
                               "reads version 1"));
  // Valid, but c fits nowhere: exit 3.
  j = Json::parse(kSmall);
  j["devices"][1]["count"] = 0;
  path = dir_.Write("nocpu.json", j.dump());
  r = Run("plan --cost-graph '" + path + "'");
  EXPECT_EQ(r.exit_code, 3) << r.err;
}

// The issue's loop: profile writes the estimator's cost graph, plan places
// it; measured times patched in change the plan.
TEST_F(CostGraphCli, ProfileWritesWhatPlanPlaces) {
  const std::string graph = dir_.File("resnet50.json");
  RunResult r = Run("profile " + kResNet + " --batch 8 --json --cost-graph '" +
                    graph + "'");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(Json::parse(r.out)["ops"].size(), 175u);  // stdout stays JSON
  EXPECT_THAT(r.err, HasSubstr("cost graph: " + graph + " (175 operators, "));
  const Json j = ReadJson(graph);
  EXPECT_EQ(j["format"], "tessera-cost-graph");
  EXPECT_EQ(j["version"], 1);
  ASSERT_EQ(j["devices"].size(), 1u);  // the built-in cluster: 4 A100s
  EXPECT_EQ(j["devices"][0]["kind"], "a100-80gb");
  EXPECT_EQ(j["devices"][0]["count"], 4);
  EXPECT_GT(j["devices"][0]["memory_bytes"].get<int64_t>(), 70'000'000'000);
  EXPECT_GT(j["link"]["bytes_per_s"].get<double>(), 1e10);  // NVLink
  ASSERT_EQ(j["operators"].size(), 175u);
  double total = 0;
  for (const Json& op : j["operators"]) {
    total += op["time_s"]["a100-80gb"].get<double>();
  }
  EXPECT_GT(total, 0);
  EXPECT_GT(j["edges"].size(), 175u);

  // The DP, then the ILP from its split.
  r = Run("plan --json --ilp-time-limit 2 --cost-graph '" + graph + "'");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const Json plan = Json::parse(r.out);
  EXPECT_EQ(plan["format"], "tessera-cost-graph");
  EXPECT_EQ(plan["algorithm"], "ilp");
  EXPECT_EQ(plan["placement"].size(), 175u);
  EXPECT_EQ(plan["devices"].size(), 4u);
  EXPECT_EQ(plan["devices"][3]["id"], "a100-80gb3");
  const double load = plan["objective"]["max_load"].get<double>();
  EXPECT_GT(load, 0);
  EXPECT_LE(load, total);  // no worse than one device

  // "Measured": the first operator takes as long as all the rest. The
  // best split is now that operator alone, the rest on the others.
  Json patched = j;
  patched["operators"][0]["time_s"]["a100-80gb"] = total;
  const std::string patched_path = dir_.Write("patched.json", patched.dump(1));
  r = Run("plan --algo contiguous --json --cost-graph '" + patched_path + "'");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const Json replanned = Json::parse(r.out);
  EXPECT_GE(replanned["objective"]["max_load"].get<double>(), total);
  EXPECT_LT(replanned["objective"]["max_load"].get<double>(), 1.05 * total);
}

TEST_F(CostGraphCli, ProfileInTrainingWritesBackwardOperators) {
  const std::string graph = dir_.File("train.json");
  RunResult r = Run("profile " + kResNet + " --batch 8 --train --cost-graph '" +
                    graph + "'");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("cost graph: " + graph + " (350 operators"));
  const Json j = ReadJson(graph);
  ASSERT_EQ(j["operators"].size(), 350u);
  EXPECT_EQ(j["operators"][175]["backward_of"], 0);
  EXPECT_FALSE(j["operators"][0].contains("backward_of"));
  r = Run("plan --algo contiguous --json --cost-graph '" + graph + "'");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const Json plan = Json::parse(r.out);
  EXPECT_EQ(plan["placement"].size(), 350u);
  // Each backward operator on its forward operator's device.
  EXPECT_EQ(plan["placement"]["175"], plan["placement"]["0"]);
  EXPECT_EQ(plan["placement"]["349"], plan["placement"]["174"]);
}

TEST_F(CostGraphCli, ProfileRefusesWhatTheCostGraphCannotSay) {
  RunResult r = Run("profile " + kResNet + " --cluster x.yaml");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("--cluster gives the devices of --cost-graph"));
  r = Run("profile " + kResNet + " --runtime pytorch --cost-graph '" +
          dir_.File("g.json") + "'");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("leave out --runtime"));
  r = Run("profile " + kResNet + " --cost-graph '" + dir_.File("g.json") +
          "' --cluster '" + dir_.File("missing.yaml") + "'");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("missing.yaml"));
  r = Run("profile " + kResNet + " --cost-graph '" + dir_.File("no/g.json") +
          "'");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("cannot write"));
}

}  // namespace
}  // namespace tessera
