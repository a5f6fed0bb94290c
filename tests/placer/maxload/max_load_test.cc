// The max-load model of placer/maxload/max_load.h: a problem whose loads are
// worked out by hand, each constraint violated, the parser's errors, every
// published input (data/dnn-partitioning) and the published inference
// expert splits.
#include "placer/maxload/max_load.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "tests/testlib/repo_paths.h"

namespace tessera::placer {
namespace {

using ::testing::HasSubstr;
using Json = nlohmann::json;

const std::string kData =
    std::string(TESSERA_SOURCE_DIR) + "/data/dnn-partitioning";

Json ReadJson(const std::string& path) {
  std::ifstream in(path);
  EXPECT_TRUE(in) << path;
  return Json::parse(in);
}

// Four nodes a(10) b(20) c(30) d(40); edges a->b, a->c, a->d (cost 1),
// b->d (cost 2), c->d (cost 4). Two accelerators (acc0, acc1) with 100
// bytes each and one CPU (cpu0). Written as the published format has it:
// floats for whole numbers, 0/1 for booleans.
Json SmallJson() {
  auto node = [](int id, double cpu, double acc, int size) {
    return Json{{"name", "n" + std::to_string(id)},
                {"id", id},
                {"supportedOnFpga", 1},
                {"cpuLatency", cpu},
                {"fpgaLatency", acc},
                {"isBackwardNode", 0},
                {"colorClass", nullptr},
                {"size", static_cast<double>(size)}};
  };
  auto edge = [](int from, int to, double cost) {
    return Json{
        {"sourceId", from}, {"destId", to}, {"cost", cost}, {"size", 8.0}};
  };
  return Json{
      {"maxSizePerFPGA", 100.0},
      {"maxFPGAs", 2},
      {"maxCPUs", 1.0},
      {"nodes", Json::array({node(10, 100, 10, 30), node(20, 200, 20, 30),
                             node(30, 300, 30, 30), node(40, 5, 40, 30)})},
      {"edges", Json::array({edge(10, 20, 1), edge(10, 30, 1), edge(10, 40, 1),
                             edge(20, 40, 2), edge(30, 40, 4)})}};
}

MaxLoadProblem Small() {
  Result<MaxLoadProblem> p = ParseTarnawski(SmallJson(), "small.json");
  EXPECT_TRUE(p) << p.error().message;
  return *p;
}

TEST(MaxLoadTest, ParsesTheSmallProblem) {
  const MaxLoadProblem p = Small();
  EXPECT_EQ(p.source, "small.json");
  ASSERT_EQ(p.kinds.size(), 2u);
  EXPECT_EQ(p.kinds[0].memory, 100);
  EXPECT_EQ(p.kinds[0].count, 2);
  EXPECT_EQ(p.kinds[1].count, 1);
  EXPECT_EQ(p.kinds[1].memory, -1);
  EXPECT_FALSE(p.kinds[1].charges_communication);
  ASSERT_EQ(p.nodes.size(), 4U);
  EXPECT_EQ(p.nodes[1].id, 20);
  EXPECT_TRUE(p.nodes[1].RunsOn(0));
  EXPECT_FALSE(p.nodes[1].backward);
  EXPECT_EQ(p.nodes[1].color, -1);
  EXPECT_EQ(p.nodes[1].size, 30);
  EXPECT_DOUBLE_EQ(p.nodes[1].time[1], 200);
  EXPECT_DOUBLE_EQ(p.nodes[1].time[0], 20);
  ASSERT_EQ(p.edges.size(), 5U);
  EXPECT_EQ(p.edges[3].from, 1);  // indices, not ids
  EXPECT_EQ(p.edges[3].to, 3);
  EXPECT_DOUBLE_EQ(p.edges[3].cost, 2);
}

TEST(MaxLoadTest, OutCostIsTheLargestOutEdgeCost) {
  MaxLoadProblem p = Small();
  EXPECT_DOUBLE_EQ(p.OutCosts()[0], 1);
  EXPECT_DOUBLE_EQ(p.OutCosts()[2], 4);
  EXPECT_DOUBLE_EQ(p.OutCosts()[3], 0);  // no out-edges
  p.edges.push_back({0, 3, 7});
  EXPECT_DOUBLE_EQ(p.OutCosts()[0], 7);
}

TEST(MaxLoadTest, DeviceNames) {
  const MaxLoadProblem p = Small();
  EXPECT_EQ(MaxLoadDeviceName(p, 0), "acc0");
  EXPECT_EQ(MaxLoadDeviceName(p, 1), "acc1");
  EXPECT_EQ(MaxLoadDeviceName(p, 2), "cpu0");
}

TEST(MaxLoadTest, LoadsWorkedOutByHand) {
  const MaxLoadProblem p = Small();
  // a on acc0; b, c on acc1; d on cpu0.
  const MaxLoadEvaluation e = EvaluateMaxLoad(p, {{0, 1, 1, 2}});
  EXPECT_EQ(e.violation, "");
  ASSERT_EQ(e.loads.size(), 3U);
  // acc0: a's 10, plus sending a once (OutCost 1) although acc1 and cpu0
  // both receive it: 11.
  EXPECT_DOUBLE_EQ(e.loads[0], 11);
  // acc1: b's 20 + c's 30; receiving a once although b and c both read it
  // (+1); sending b to d (+2) and c to d (+4): 57.
  EXPECT_DOUBLE_EQ(e.loads[1], 57);
  // cpu0: d's CPU time 5; receiving a, b and c costs a CPU nothing.
  EXPECT_DOUBLE_EQ(e.loads[2], 5);
  EXPECT_DOUBLE_EQ(e.max_load, 57);
}

TEST(MaxLoadTest, CpuSendsForFreeAndOneDeviceHasNoCommunication) {
  const MaxLoadProblem p = Small();
  // a on cpu0 sends to acc0 (b, c, d): acc0 pays receiving a once (1);
  // cpu0 pays nothing for sending: acc0 = 20 + 30 + 40 + 1 = 91, cpu0 100.
  MaxLoadEvaluation e = EvaluateMaxLoad(p, {{2, 0, 0, 0}});
  EXPECT_EQ(e.violation, "");
  EXPECT_DOUBLE_EQ(e.loads[0], 91);
  EXPECT_DOUBLE_EQ(e.loads[1], 0);
  EXPECT_DOUBLE_EQ(e.loads[2], 100);
  EXPECT_DOUBLE_EQ(e.max_load, 100);
  // Everything on cpu0: no communication at all, 100 + 200 + 300 + 5.
  e = EvaluateMaxLoad(p, {{2, 2, 2, 2}});
  EXPECT_EQ(e.violation, "");
  EXPECT_DOUBLE_EQ(e.loads[2], 605);
  EXPECT_DOUBLE_EQ(e.max_load, 605);
}

TEST(MaxLoadTest, KindsNotChargedForSendsOnlyReceive) {
  MaxLoadProblem p = Small();
  p.kinds[0].charges_sends = false;
  // As LoadsWorkedOutByHand: acc0 no longer pays for sending a (10, not
  // 11); acc1 still receives a (+1) but sends b and c for free: 51.
  const MaxLoadEvaluation e = EvaluateMaxLoad(p, {{0, 1, 1, 2}});
  EXPECT_EQ(e.violation, "");
  EXPECT_DOUBLE_EQ(e.loads[0], 10);
  EXPECT_DOUBLE_EQ(e.loads[1], 51);
  EXPECT_DOUBLE_EQ(e.loads[2], 5);
}

TEST(MaxLoadTest, EveryViolation) {
  MaxLoadProblem p = Small();
  EXPECT_THAT(EvaluateMaxLoad(p, {{0, 1, 1}}).violation,
              HasSubstr("3 devices for 4 nodes"));
  EXPECT_THAT(EvaluateMaxLoad(p, {{0, 1, 3, 2}}).violation,
              HasSubstr("node 30 on device 3, out of range [0, 3)"));
  EXPECT_THAT(EvaluateMaxLoad(p, {{0, -1, 1, 2}}).violation,
              HasSubstr("node 20 on device -1"));
  // Four nodes of 30 bytes on acc0: 120 > 100.
  EXPECT_THAT(EvaluateMaxLoad(p, {{0, 0, 0, 0}}).violation,
              HasSubstr("acc0 holds 120 bytes, over its 100"));

  MaxLoadProblem unsupported = p;
  unsupported.nodes[3].time[0] = kUnsupported;
  EXPECT_THAT(EvaluateMaxLoad(unsupported, {{0, 1, 1, 1}}).violation,
              HasSubstr("node 40 cannot run on acc devices but is on "
                        "acc1"));
  EXPECT_EQ(EvaluateMaxLoad(unsupported, {{0, 1, 1, 2}}).violation, "");

  MaxLoadProblem colored = p;
  colored.nodes[0].color = 7;
  colored.nodes[2].color = 7;
  EXPECT_THAT(EvaluateMaxLoad(colored, {{0, 1, 1, 2}}).violation,
              HasSubstr("nodes 10 (on acc0) and 30 (on acc1) share color "
                        "class 7"));
  EXPECT_EQ(EvaluateMaxLoad(colored, {{1, 0, 1, 2}}).violation, "");
}

TEST(MaxLoadTest, IsTarnawskiFormat) {
  EXPECT_TRUE(IsTarnawskiFormat(SmallJson()));
  Json j = SmallJson();
  j.erase("edges");
  EXPECT_FALSE(IsTarnawskiFormat(j));
  EXPECT_FALSE(IsTarnawskiFormat(Json::array()));
  EXPECT_FALSE(IsTarnawskiFormat(Json{{"nodes", 1}, {"edges", 2}}));
}

TEST(MaxLoadTest, ParseErrorsNameTheField) {
  struct Case {
    std::function<void(Json&)> change;
    std::string message;
  };
  const std::vector<Case> cases = {
      {[](Json& j) { j.erase("maxSizePerFPGA"); }, "maxSizePerFPGA: missing"},
      {[](Json& j) { j["maxSizePerFPGA"] = -1.0; }, "maxSizePerFPGA: must be"},
      {[](Json& j) { j["maxFPGAs"] = 2.5; }, "maxFPGAs: must be a whole"},
      {[](Json& j) { j["maxFPGAs"] = "2"; }, "maxFPGAs: must be a whole"},
      {[](Json& j) { j["maxCPUs"] = -1; }, "maxCPUs: must be a whole"},
      {[](Json& j) { j.erase("maxCPUs"); }, "maxCPUs: missing"},
      {[](Json& j) {
         j["maxFPGAs"] = 0;
         j["maxCPUs"] = 0;
       },
       "maxFPGAs, maxCPUs: at least one device"},
      {[](Json& j) { j["nodes"] = 3; }, "nodes: must be an array"},
      {[](Json& j) { j["nodes"][1] = 3; }, "nodes[1]: must be an object"},
      {[](Json& j) { j["nodes"][3]["fpgaLatency"] = -0.5; },
       "nodes[3].fpgaLatency: must be a number >= 0"},
      {[](Json& j) { j["nodes"][2]["cpuLatency"] = "fast"; },
       "nodes[2].cpuLatency: must be a number >= 0"},
      {[](Json& j) { j["nodes"][0].erase("cpuLatency"); },
       "nodes[0].cpuLatency: missing"},
      {[](Json& j) { j["nodes"][1]["supportedOnFpga"] = 2; },
       "nodes[1].supportedOnFpga: must be true/false or 1/0"},
      {[](Json& j) { j["nodes"][1]["isBackwardNode"] = "no"; },
       "nodes[1].isBackwardNode: must be true/false or 1/0"},
      {[](Json& j) { j["nodes"][2]["colorClass"] = 1.5; },
       "nodes[2].colorClass: must be a whole number >= -1 or null"},
      {[](Json& j) { j["nodes"][2]["size"] = -30.0; }, "nodes[2].size: must"},
      {[](Json& j) { j["nodes"][2]["id"] = 1.5; }, "nodes[2].id: must"},
      {[](Json& j) { j["nodes"][2]["id"] = 10; },
       "nodes[2].id: duplicate id 10 (also nodes[0])"},
      {[](Json& j) { j["edges"] = Json::object(); }, "edges: must be an array"},
      {[](Json& j) { j["edges"][4]["destId"] = 99; },
       "edges[4].destId: unknown node id 99"},
      {[](Json& j) { j["edges"][0]["sourceId"] = 5; },
       "edges[0].sourceId: unknown node id 5"},
      {[](Json& j) { j["edges"][1]["cost"] = -1; },
       "edges[1].cost: must be a number >= 0"},
      {[](Json& j) { j["edges"][1].erase("cost"); }, "edges[1].cost: missing"},
      {[](Json& j) { j["edges"][1]["destId"] = 10; },
       "edges[1]: self-loop on node 10"},
      // d -> a closes a -> d; 40 and 10 lie on the cycle, 20 and 30 too.
      {[](Json& j) {
         j["edges"].push_back(
             Json{{"sourceId", 40}, {"destId", 10}, {"cost", 1}});
       },
       "edges: a cycle through node "},
  };
  for (size_t i = 0; i < cases.size(); ++i) {
    Json j = SmallJson();
    cases[i].change(j);
    const Result<MaxLoadProblem> p = ParseTarnawski(j, "in.json");
    ASSERT_FALSE(p) << "case " << i;
    EXPECT_EQ(p.error().code, ErrorCode::kBadInput) << "case " << i;
    EXPECT_THAT(p.error().message, HasSubstr("in.json: " + cases[i].message))
        << "case " << i;
  }
  const Result<MaxLoadProblem> p = ParseTarnawski(Json::array(), "in.json");
  ASSERT_FALSE(p);
  EXPECT_THAT(p.error().message, HasSubstr("in.json: must be a JSON object"));
}

TEST(MaxLoadTest, CycleNamesANodeOnIt) {
  // a -> b -> c -> b: the cycle is b, c; a is not on it.
  Json j = SmallJson();
  j["edges"] = Json::array({{{"sourceId", 10}, {"destId", 20}, {"cost", 1}},
                            {{"sourceId", 20}, {"destId", 30}, {"cost", 1}},
                            {{"sourceId", 30}, {"destId", 20}, {"cost", 1}}});
  const Result<MaxLoadProblem> p = ParseTarnawski(j, "in.json");
  ASSERT_FALSE(p);
  EXPECT_THAT(p.error().message,
              ::testing::AnyOf(HasSubstr("cycle through node 20"),
                               HasSubstr("cycle through node 30")));
}

TEST(MaxLoadTest, TooManyNodesOrEdgesIsAClearError) {
  Json j = SmallJson();
  j["nodes"] = Json::array();
  j["edges"] = Json::array();
  // The count is checked before any node is read: nulls will do.
  j["nodes"].get_ref<Json::array_t&>().resize(1'000'001);
  Result<MaxLoadProblem> p = ParseTarnawski(j, "in.json");
  ASSERT_FALSE(p);
  EXPECT_THAT(p.error().message,
              HasSubstr("in.json: nodes: 1000001 nodes, at most 1000000"));
  j = SmallJson();
  j["edges"].get_ref<Json::array_t&>().resize(1'000'001);
  p = ParseTarnawski(j, "in.json");
  ASSERT_FALSE(p);
  EXPECT_THAT(p.error().message,
              HasSubstr("in.json: edges: 1000001 edges, at most 1000000"));
}

TEST(MaxLoadTest, ExpertSplitErrors) {
  const MaxLoadProblem p = Small();
  auto split = [](Json fpgas, Json cpus) {
    return Json{{"fpgas", std::move(fpgas)}, {"cpus", std::move(cpus)}};
  };
  auto nodes = [](std::vector<int> ids) { return Json{{"nodes", ids}}; };
  Result<MaxLoadPlacement> x =
      ParseExpertSplit(split({nodes({10}), nodes({20, 30})}, {nodes({40})}), p);
  ASSERT_TRUE(x) << x.error().message;
  EXPECT_EQ(x->device, (std::vector<int>{0, 1, 1, 2}));

  x = ParseExpertSplit(split({nodes({10, 77}), nodes({20, 30})}, {nodes({40})}),
                       p);
  ASSERT_FALSE(x);
  EXPECT_EQ(x.error().code, ErrorCode::kBadInput);
  EXPECT_THAT(x.error().message,
              HasSubstr("fpgas[0].nodes[1]: unknown node id 77"));

  x = ParseExpertSplit(split({nodes({10}), nodes({20})}, {nodes({40})}), p);
  ASSERT_FALSE(x);
  EXPECT_THAT(x.error().message, HasSubstr("node 30 of small.json is on no"));

  x = ParseExpertSplit(split({nodes({10}), nodes({20, 30})}, {nodes({40, 10})}),
                       p);
  ASSERT_FALSE(x);
  EXPECT_THAT(x.error().message,
              HasSubstr("cpus[0].nodes[1]: node 10 already on acc0"));

  x = ParseExpertSplit(
      split({nodes({10}), nodes({20}), nodes({30})}, {nodes({40})}), p);
  ASSERT_FALSE(x);
  EXPECT_THAT(x.error().message, HasSubstr("fpgas: 3 devices"));
}

// Every published input parses.
TEST(MaxLoadTest, EveryPublishedInputParses) {
  std::map<std::string, int> per_folder;
  for (const char* folder : {"throughput-inputs", "latency-inputs"}) {
    for (const auto& entry :
         std::filesystem::recursive_directory_iterator(kData + "/" + folder)) {
      if (entry.path().extension() != ".json") continue;
      const std::string path = entry.path().string();
      const Json j = ReadJson(path);
      EXPECT_TRUE(IsTarnawskiFormat(j)) << path;
      const Result<MaxLoadProblem> p = ParseTarnawski(j, path);
      ASSERT_TRUE(p) << p.error().message;
      EXPECT_EQ(p->nodes.size(), j["nodes"].size()) << path;
      EXPECT_EQ(p->edges.size(), j["edges"].size()) << path;
      EXPECT_GE(p->kinds[0].count, 1) << path;
      ++per_folder[folder];
    }
  }
  EXPECT_EQ(per_folder["throughput-inputs"], 16);
  EXPECT_EQ(per_folder["latency-inputs"], 8);
}

// The published inference expert splits on their throughput inputs are
// feasible. The max loads are golden values computed by this evaluator
// (EvaluateMaxLoad) when it was written, and agreed with an independent
// script of the same model; they are not numbers from the paper. They guard
// the evaluator against unintended changes.
TEST(MaxLoadTest, InferenceExpertSplitsAreFeasible) {
  const std::map<std::string, double> golden = {
      {"bert24", 20.083953125},
      {"gnmt", 46.208451171875},
      {"inceptionv3", 102.48207604980468},
      {"resnet50", 43.91825781250001},
  };
  for (const auto& [model, max_load] : golden) {
    const std::string input =
        kData + "/throughput-inputs/LayerGraphs/" + model + "_inference.json";
    const Result<MaxLoadProblem> p = ParseTarnawski(ReadJson(input), input);
    ASSERT_TRUE(p) << p.error().message;
    const Result<MaxLoadPlacement> x = ParseExpertSplit(
        ReadJson(kData + "/human-experts/" + model + "_inference_expert.json"),
        *p);
    ASSERT_TRUE(x) << x.error().message;
    const MaxLoadEvaluation e = EvaluateMaxLoad(*p, *x);
    EXPECT_EQ(e.violation, "") << model;
    EXPECT_NEAR(e.max_load, max_load, 1e-9 * max_load) << model;
  }
}

}  // namespace
}  // namespace tessera::placer
