// tessera's cost-graph format (placer/maxload/cost_graph.h): reading a small
// graph with every field, round trips through the writer (a hand-made problem,
// published inputs, the estimator's export) that keep the problem and its
// loads, every error naming its field, and the export's rules worked out
// by hand.
#include "placer/maxload/cost_graph.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <functional>
#include <random>
#include <string>
#include <unordered_map>
#include <vector>

#include "tests/placer/test_problems.h"
#include "tests/testlib/repo_paths.h"

namespace tessera::placer {
namespace {

using ::testing::HasSubstr;
using Json = nlohmann::json;

const std::string kData =
    std::string(TESSERA_SOURCE_DIR) + "/data/dnn-partitioning";

// Two H100 of 100 bytes and a CPU that pays no communication; a link of 1000
// bytes/s with 0.5 s latency. Operators a(10) b(20) c(30) d(40): a -> b,
// a -> c (100 bytes each), b -> d (time 2), c -> d (time 4). c cannot run
// on the CPU; d has no H100 time (runs on the CPU only).
Json SmallJson() {
  return Json::parse(R"({
    "format": "tessera-cost-graph", "version": 1, "model": "small.onnx",
    "devices": [{"kind": "H100", "count": 2, "memory_bytes": 100},
                {"kind": "cpu", "count": 1, "charges_communication": false}],
    "link": {"bytes_per_s": 1000, "latency_s": 0.5},
    "operators": [
      {"id": 10, "name": "a", "op_type": "Conv", "time_s": {"H100": 1, "cpu": 10},
       "memory_bytes": 30},
      {"id": 20, "name": "b", "time_s": {"H100": 2, "cpu": 20}, "memory_bytes": 30},
      {"id": 30, "time_s": {"H100": 3, "cpu": null}, "memory_bytes": 30},
      {"id": 40, "time_s": {"cpu": 5}, "x-note": "measured"}],
    "edges": [{"from": 10, "to": 20, "bytes": 100},
              {"from": 10, "to": 30, "bytes": 100},
              {"from": 20, "to": 40, "time_s": 2},
              {"from": 30, "to": 40, "time_s": 4}]})");
}

MaxLoadProblem Parse(const Json& j) {
  Result<MaxLoadProblem> p = ParseCostGraph(j, "g.json");
  EXPECT_TRUE(p) << p.error().message;
  return p ? *p : MaxLoadProblem{};
}

Json ReadJson(const std::string& path) {
  std::ifstream in(path);
  EXPECT_TRUE(in) << path;
  return Json::parse(in);
}

// Whether two color assignments put the same nodes together.
bool SamePartition(const MaxLoadProblem& a, const MaxLoadProblem& b) {
  std::unordered_map<int64_t, int64_t> ab, ba;
  for (size_t v = 0; v < a.nodes.size(); ++v) {
    const int64_t x = a.nodes[v].color, y = b.nodes[v].color;
    if ((x == -1) != (y == -1)) return false;
    if (x == -1) continue;
    if (ab.emplace(x, y).first->second != y) return false;
    if (ba.emplace(y, x).first->second != x) return false;
  }
  return true;
}

// The problems are equal but for how colors are numbered.
void ExpectSameProblem(const MaxLoadProblem& a, const MaxLoadProblem& b) {
  ASSERT_EQ(a.kinds.size(), b.kinds.size());
  for (size_t k = 0; k < a.kinds.size(); ++k) {
    EXPECT_EQ(a.kinds[k].name, b.kinds[k].name);
    EXPECT_EQ(a.kinds[k].count, b.kinds[k].count);
    EXPECT_EQ(a.kinds[k].memory, b.kinds[k].memory);
    EXPECT_EQ(a.kinds[k].charges_communication,
              b.kinds[k].charges_communication);
  }
  ASSERT_EQ(a.nodes.size(), b.nodes.size());
  for (size_t v = 0; v < a.nodes.size(); ++v) {
    EXPECT_EQ(a.nodes[v].id, b.nodes[v].id) << v;
    EXPECT_EQ(a.nodes[v].name, b.nodes[v].name) << v;
    EXPECT_EQ(a.nodes[v].time, b.nodes[v].time) << v;  // exactly
    EXPECT_EQ(a.nodes[v].backward, b.nodes[v].backward) << v;
    EXPECT_EQ(a.nodes[v].size, b.nodes[v].size) << v;
  }
  EXPECT_TRUE(SamePartition(a, b));
  ASSERT_EQ(a.edges.size(), b.edges.size());
  for (size_t i = 0; i < a.edges.size(); ++i) {
    EXPECT_EQ(a.edges[i].from, b.edges[i].from) << i;
    EXPECT_EQ(a.edges[i].to, b.edges[i].to) << i;
    EXPECT_EQ(a.edges[i].cost, b.edges[i].cost) << i;  // exactly
  }
}

// Loads of `count` seeded random placements agree exactly.
void ExpectSameLoads(const MaxLoadProblem& a, const MaxLoadProblem& b,
                     int count) {
  std::mt19937 rng(7);
  std::uniform_int_distribution<int> device(0, a.Devices() - 1);
  for (int i = 0; i < count; ++i) {
    MaxLoadPlacement x;
    for (size_t v = 0; v < a.nodes.size(); ++v) x.device.push_back(device(rng));
    const MaxLoadEvaluation ea = EvaluateMaxLoad(a, x);
    const MaxLoadEvaluation eb = EvaluateMaxLoad(b, x);
    EXPECT_EQ(ea.loads, eb.loads);
    EXPECT_EQ(ea.max_load, eb.max_load);
    EXPECT_EQ(ea.violation.empty(), eb.violation.empty());
  }
}

TEST(CostGraph, ReadsEveryField) {
  const MaxLoadProblem p = Parse(SmallJson());
  EXPECT_EQ(p.source, "g.json");
  ASSERT_EQ(p.kinds.size(), 2u);
  EXPECT_EQ(p.kinds[0].name, "H100");
  EXPECT_EQ(p.kinds[0].count, 2);
  EXPECT_EQ(p.kinds[0].memory, 100);
  EXPECT_TRUE(p.kinds[0].charges_communication);
  EXPECT_EQ(p.kinds[1].memory, -1);  // not given: unlimited
  EXPECT_FALSE(p.kinds[1].charges_communication);
  ASSERT_EQ(p.nodes.size(), 4u);
  EXPECT_EQ(p.nodes[0].name, "a");
  EXPECT_EQ(p.nodes[2].name, "");
  EXPECT_EQ(p.nodes[1].time, (std::vector<double>{2, 20}));
  EXPECT_FALSE(p.nodes[2].RunsOn(1));  // null
  EXPECT_FALSE(p.nodes[3].RunsOn(0));  // left out
  EXPECT_EQ(p.nodes[3].size, 0);       // default
  EXPECT_EQ(p.nodes[0].color, -1);
  EXPECT_FALSE(p.nodes[0].backward);
  ASSERT_EQ(p.edges.size(), 4u);
  EXPECT_EQ(p.edges[0].from, 0);  // indices, not ids
  EXPECT_EQ(p.edges[0].to, 1);
  EXPECT_DOUBLE_EQ(p.edges[0].cost, 0.5 + 100.0 / 1000);  // latency + bytes/bw
  EXPECT_DOUBLE_EQ(p.edges[3].cost, 4);
  EXPECT_EQ(MaxLoadDeviceName(p, 1), "H100_1");
  EXPECT_EQ(MaxLoadDeviceName(p, 2), "cpu0");
}

TEST(CostGraph, LoadsWorkedOutByHand) {
  const MaxLoadProblem p = Parse(SmallJson());
  // a on H100_0; b, c on H100_1; d on cpu0.
  const MaxLoadEvaluation e = EvaluateMaxLoad(p, {{0, 1, 1, 2}});
  EXPECT_EQ(e.violation, "");
  // H100_0: a's 1 + sending a once (0.6) although b and c both read it.
  EXPECT_DOUBLE_EQ(e.loads[0], 1.6);
  // H100_1: 2 + 3, receiving a once (0.6), sending b (2) and c (4).
  EXPECT_DOUBLE_EQ(e.loads[1], 11.6);
  // cpu0: d's 5; the CPU pays nothing for receiving.
  EXPECT_DOUBLE_EQ(e.loads[2], 5);
}

TEST(CostGraph, TimeAsOneNumberIsTheTimeOnEveryKind) {
  Json j = SmallJson();
  j["operators"][3]["time_s"] = 0.25;
  const MaxLoadProblem p = Parse(j);
  EXPECT_EQ(p.nodes[3].time, (std::vector<double>{0.25, 0.25}));
}

TEST(CostGraph, ColocateAndBackwardOfBecomeColorClasses) {
  Json j = SmallJson();
  j["operators"][0]["colocate"] = "stage-a";
  j["operators"][2]["colocate"] = "stage-a";
  j["operators"][1]["colocate"] = 7;
  j["operators"][3]["backward_of"] = 20;
  const MaxLoadProblem p = Parse(j);
  // Numbered in the order of their first operator: {a, c} 0, {b, d} 1.
  EXPECT_EQ(p.nodes[0].color, 0);
  EXPECT_EQ(p.nodes[1].color, 1);
  EXPECT_EQ(p.nodes[2].color, 0);
  EXPECT_EQ(p.nodes[3].color, 1);
  EXPECT_TRUE(p.nodes[3].backward);
  EXPECT_FALSE(p.nodes[1].backward);
  // A string and a number with the same digits are different groups.
  j["operators"][2]["colocate"] = "7";
  const MaxLoadProblem q = Parse(j);
  EXPECT_EQ(q.nodes[2].color, 2);
  EXPECT_EQ(q.nodes[0].color, 0);
  // Only backward: marked, co-located with nothing.
  j = SmallJson();
  j["operators"][3]["backward"] = true;
  const MaxLoadProblem r = Parse(j);
  EXPECT_TRUE(r.nodes[3].backward);
  EXPECT_EQ(r.nodes[3].color, -1);
}

TEST(CostGraph, IsTesseraCostGraph) {
  EXPECT_TRUE(IsTesseraCostGraph(SmallJson()));
  EXPECT_FALSE(IsTesseraCostGraph(Json::array()));
  EXPECT_FALSE(IsTesseraCostGraph(Json{{"format", "tarnawski"}}));
  EXPECT_FALSE(IsTesseraCostGraph(Json{{"format", 1}}));
  EXPECT_FALSE(IsTesseraCostGraph(ReadJson(
      kData + "/throughput-inputs/LayerGraphs/resnet50_inference.json")));
}

TEST(CostGraph, ErrorsNameTheField) {
  struct Case {
    std::function<void(Json&)> change;
    std::string message;
  };
  const std::vector<Case> cases = {
      {[](Json& j) { j["format"] = "onnx"; },
       "format: must be \"tessera-cost-graph\""},
      {[](Json& j) { j.erase("version"); }, "version: missing"},
      {[](Json& j) { j["version"] = 2; },
       "version: 2 is not supported: this tessera reads version 1"},
      {[](Json& j) { j["version"] = "1"; }, "version: must be a whole number"},
      {[](Json& j) { j["nodes"] = Json::array(); },
       "nodes: unknown key (known: format, version, model, devices, link, "
       "operators, edges; keys starting with x- are ignored)"},
      {[](Json& j) { j["model"] = 3; }, "model: must be a string"},
      {[](Json& j) { j.erase("devices"); }, "devices: missing"},
      {[](Json& j) { j["devices"] = Json::array(); },
       "devices: must list 1 to 1024 device kinds"},
      {[](Json& j) { j["devices"][1] = 1; }, "devices[1]: must be an object"},
      {[](Json& j) { j["devices"][0]["kind"] = ""; },
       "devices[0].kind: must be a non-empty string"},
      {[](Json& j) { j["devices"][1]["kind"] = "H100"; },
       "devices[1].kind: duplicate kind \"H100\" (also devices[0])"},
      {[](Json& j) { j["devices"][0]["count"] = -1; },
       "devices[0].count: must be a whole number in [0, 1000000]"},
      {[](Json& j) { j["devices"][0].erase("count"); },
       "devices[0].count: missing"},
      {[](Json& j) { j["devices"][0]["memory_bytes"] = 1.5; },
       "devices[0].memory_bytes: must be a whole number"},
      {[](Json& j) { j["devices"][1]["charges_communication"] = "no"; },
       "devices[1].charges_communication: must be true/false or 1/0"},
      {[](Json& j) { j["devices"][0]["memory"] = 1; },
       "devices[0].memory: unknown key (known: kind, count, memory_bytes, "
       "charges_communication"},
      {[](Json& j) {
         j["devices"][0]["count"] = 0;
         j["devices"][1]["count"] = 0;
       },
       "devices: the counts add up to 0: must be 1 to 1000000"},
      {[](Json& j) { j["link"] = 5; }, "link: must be an object"},
      {[](Json& j) { j["link"]["bytes_per_s"] = 0; },
       "link.bytes_per_s: must be > 0"},
      {[](Json& j) { j["link"].erase("bytes_per_s"); },
       "link.bytes_per_s: missing"},
      {[](Json& j) { j["link"]["latency_s"] = -1; },
       "link.latency_s: must be a number >= 0"},
      {[](Json& j) { j["link"]["bandwidth"] = 1; },
       "link.bandwidth: unknown key"},
      {[](Json& j) { j.erase("link"); },
       "edges[0].bytes: needs link.bytes_per_s to become a time"},
      {[](Json& j) { j["operators"] = Json::object(); },
       "operators: must be an array"},
      {[](Json& j) { j["operators"][2] = "c"; },
       "operators[2]: must be an object"},
      {[](Json& j) { j["operators"][1].erase("id"); },
       "operators[1].id: missing"},
      {[](Json& j) { j["operators"][2]["id"] = 10; },
       "operators[2].id: duplicate id 10 (also operators[0])"},
      {[](Json& j) { j["operators"][1]["name"] = 5; },
       "operators[1].name: must be a string"},
      {[](Json& j) { j["operators"][1]["op_type"] = false; },
       "operators[1].op_type: must be a string"},
      {[](Json& j) { j["operators"][3]["time_s"]["cpu"] = -1; },
       "operators[3].time_s.cpu: must be a number >= 0 or null"},
      {[](Json& j) { j["operators"][3]["time_s"]["TPU"] = 1; },
       "operators[3].time_s.TPU: unknown device kind (devices has H100, "
       "cpu)"},
      {[](Json& j) { j["operators"][3]["time_s"] = Json::object(); },
       "operators[3].time_s: gives no device kind"},
      {[](Json& j) { j["operators"][3]["time_s"] = "fast"; },
       "operators[3].time_s: must be an object of device kind -> seconds"},
      {[](Json& j) { j["operators"][3]["time_s"] = -2; },
       "operators[3].time_s: must be a number >= 0"},
      {[](Json& j) { j["operators"][3].erase("time_s"); },
       "operators[3].time_s: missing"},
      {[](Json& j) { j["operators"][0]["memory_bytes"] = -30; },
       "operators[0].memory_bytes: must be a whole number"},
      {[](Json& j) { j["operators"][0]["colocate"] = 1.5; },
       "operators[0].colocate: must be a non-empty string, a whole number "
       "or null"},
      {[](Json& j) { j["operators"][0]["colocate"] = ""; },
       "operators[0].colocate: must be a non-empty string"},
      {[](Json& j) { j["operators"][0]["backward"] = "yes"; },
       "operators[0].backward: must be true/false or 1/0"},
      {[](Json& j) { j["operators"][3]["backward_of"] = 99; },
       "operators[3].backward_of: no operator has id 99"},
      {[](Json& j) { j["operators"][3]["backward_of"] = 40; },
       "operators[3].backward_of: names the operator itself"},
      {[](Json& j) { j["operators"][3]["backward_of"] = "a"; },
       "operators[3].backward_of: must be a whole number"},
      {[](Json& j) {
         j["operators"][3]["backward_of"] = 10;
         j["operators"][3]["backward"] = false;
       },
       "operators[3].backward: false, but backward_of makes it a backward "
       "operator"},
      {[](Json& j) {
         j["operators"][2]["backward"] = true;
         j["operators"][3]["backward_of"] = 30;
       },
       "operators[3].backward_of: operator 30 is itself a backward operator"},
      {[](Json& j) { j["operators"][1]["memory"] = 1; },
       "operators[1].memory: unknown key"},
      {[](Json& j) { j.erase("edges"); }, "edges: missing"},
      {[](Json& j) { j["edges"][1] = 0; }, "edges[1]: must be an object"},
      {[](Json& j) { j["edges"][2]["to"] = 99; },
       "edges[2].to: unknown node id 99"},
      {[](Json& j) { j["edges"][0].erase("from"); }, "edges[0].from: missing"},
      {[](Json& j) { j["edges"][2]["to"] = 20; },
       "edges[2]: self-loop on node 20"},
      {[](Json& j) { j["edges"][2]["bytes"] = 8; },
       "edges[2]: gives both bytes and time_s: give one"},
      {[](Json& j) { j["edges"][0].erase("bytes"); },
       "edges[0]: gives neither bytes nor time_s: give one"},
      {[](Json& j) { j["edges"][0]["bytes"] = 1.5; },
       "edges[0].bytes: must be a whole number"},
      {[](Json& j) { j["edges"][3]["time_s"] = -4; },
       "edges[3].time_s: must be a number >= 0"},
      {[](Json& j) { j["edges"][3]["cost"] = 4; },
       "edges[3].cost: unknown key (known: from, to, bytes, time_s"},
      {[](Json& j) {
         j["edges"].push_back(Json{{"from", 40}, {"to", 10}, {"time_s", 1}});
       },
       "edges: a cycle through operator "},
  };
  for (size_t i = 0; i < cases.size(); ++i) {
    Json j = SmallJson();
    cases[i].change(j);
    const Result<MaxLoadProblem> p = ParseCostGraph(j, "in.json");
    ASSERT_FALSE(p) << "case " << i << ": " << cases[i].message;
    EXPECT_EQ(p.error().code, ErrorCode::kBadInput) << "case " << i;
    EXPECT_THAT(p.error().message, HasSubstr("in.json: " + cases[i].message))
        << "case " << i;
  }
  const Result<MaxLoadProblem> p = ParseCostGraph(Json::array(), "in.json");
  ASSERT_FALSE(p);
  EXPECT_THAT(p.error().message, HasSubstr("in.json: must be a JSON object"));
}

TEST(CostGraph, AnnotationsAreIgnoredEverywhere) {
  Json j = SmallJson();
  j["x-measured-on"] = "dgx-3";
  j["devices"][0]["x-note"] = 1;
  j["link"]["x-kind"] = "nvlink";
  j["edges"][0]["x-tensor"] = "conv1_out";
  ExpectSameProblem(Parse(j), Parse(SmallJson()));
}

TEST(CostGraph, TooManyOperatorsOrEdgesIsAClearError) {
  Json j = SmallJson();
  j["edges"] = Json::array();
  // The count is checked before any operator is read: nulls will do.
  j["operators"].get_ref<Json::array_t&>().resize(1'000'001);
  Result<MaxLoadProblem> p = ParseCostGraph(j, "in.json");
  ASSERT_FALSE(p);
  EXPECT_THAT(p.error().message,
              HasSubstr("in.json: operators: 1000001 operators, at most "
                        "1000000"));
  j = SmallJson();
  j["edges"].get_ref<Json::array_t&>().resize(1'000'001);
  p = ParseCostGraph(j, "in.json");
  ASSERT_FALSE(p);
  EXPECT_THAT(p.error().message,
              HasSubstr("in.json: edges: 1000001 edges, at most 1000000"));
  // A time per operator and kind: at most 100,000,000 of them.
  j = SmallJson();
  j["devices"] = Json::array();
  for (int k = 0; k < 1024; ++k) {
    j["devices"].push_back({{"kind", "k" + std::to_string(k)}, {"count", 1}});
  }
  j["operators"].get_ref<Json::array_t&>().resize(100'000);
  p = ParseCostGraph(j, "in.json");
  ASSERT_FALSE(p);
  EXPECT_THAT(p.error().message,
              HasSubstr("in.json: operators: 100000 operators x 1024 device "
                        "kinds: more than 100000000 times"));
}

TEST(CostGraph, RoundTripKeepsTheProblemAndItsLoads) {
  Json j = SmallJson();
  j["operators"][0]["colocate"] = "s";
  j["operators"][2]["colocate"] = "s";
  j["operators"][1]["backward"] = true;
  const MaxLoadProblem p = Parse(j);
  const nlohmann::ordered_json written = CostGraphJson(p);
  EXPECT_EQ(written["format"], "tessera-cost-graph");
  EXPECT_EQ(written["version"], 1);
  EXPECT_FALSE(written.contains("link"));  // edges as times: no link
  EXPECT_EQ(written["operators"][0]["colocate"], 0);
  EXPECT_EQ(written["operators"][1]["backward"], true);
  EXPECT_FALSE(written["operators"][3]["time_s"].contains("H100"));
  const MaxLoadProblem q = Parse(Json::parse(written.dump()));
  ExpectSameProblem(p, q);
  ExpectSameLoads(p, q, 50);
}

TEST(CostGraph, PublishedInputsSurviveTheRoundTrip) {
  for (const char* name : {"LayerGraphs/resnet50_training.json",
                           "OperatorGraphs/bert_l-3_inference.json"}) {
    SCOPED_TRACE(name);
    Result<MaxLoadProblem> p =
        ParseTarnawski(ReadJson(kData + "/throughput-inputs/" + name), name);
    ASSERT_TRUE(p) << p.error().message;
    CostGraphExtras extras;
    extras.model = name;
    const MaxLoadProblem q =
        Parse(Json::parse(CostGraphJson(*p, extras).dump()));
    ExpectSameProblem(*p, q);
    ExpectSameLoads(*p, q, 20);
  }
}

// Ops A, B, K (a Constant), C, for `devices` devices of one kind: A reads the
// input x (100 B) and the weight w (1000 B) and writes t1 (10 B); B reads t1,
// writes t2 (20 B); K writes the weight kw (500 B); C reads t1, t2 and kw and
// writes the output y (30 B).
Problem HandProblem(bool training, int devices = 2) {
  ProblemBuilder b(1, std::vector<int>(devices, 0), training);
  const uint32_t x = b.AddTensor("x", 100, TensorRole::kInput);
  const uint32_t w = b.AddTensor("w", 1000, TensorRole::kWeight);
  const uint32_t t1 = b.AddTensor("t1", 10, TensorRole::kActivation);
  const uint32_t t2 = b.AddTensor("t2", 20, TensorRole::kActivation);
  const uint32_t kw = b.AddTensor("kw", 500, TensorRole::kWeight);
  const uint32_t y = b.AddTensor("y", 30, TensorRole::kActivation, true);
  const auto add = [&](const char* name, const char* type, double s,
                       std::vector<uint32_t> in, std::vector<uint32_t> out) {
    const double f[] = {s};
    const double g[] = {2 * s};
    b.AddOp(name, type, f, g, in, out);
  };
  add("A", "Conv", 1.0, {x, w}, {t1});
  add("B", "Relu", 2.0, {t1}, {t2});
  add("K", "Constant", 0.0, {}, {kw});
  add("C", "Add", 3.0, {t1, t2, kw}, {y});
  if (training) b.set_weight_state_factor(4);
  Result<Problem> p = std::move(b).Build();
  EXPECT_TRUE(p) << p.error().message;
  return std::move(p).value();
}

// Two test-gpus, the second with half its compute.
TEST(CostGraph, FromProblemWorkedOutByHand) {
  const Problem problem = HandProblem(false);
  const Cluster cluster =
      testing::UniformCluster(2, 1 << 20, 1e9, 1e-6, {1.0, 0.5});
  Result<CostGraph> g = CostGraphFromProblem(problem, cluster, "hand.onnx");
  ASSERT_TRUE(g) << g.error().message;
  const MaxLoadProblem& p = g->problem;
  // Different compute shares: two kinds of one device each.
  ASSERT_EQ(p.kinds.size(), 2u);
  EXPECT_EQ(p.kinds[0].name, "test-gpu");
  EXPECT_EQ(p.kinds[1].name, "test-gpu-2");
  EXPECT_EQ(p.kinds[1].count, 1);
  EXPECT_EQ(p.kinds[1].memory, 1 << 20);
  ASSERT_EQ(p.nodes.size(), 4u);
  EXPECT_EQ(p.nodes[0].time, (std::vector<double>{1.0, 2.0}));  // / share
  // A: input 100 + weight 1000 + t1 10; B: t2; K: nothing (its output is a
  // weight, counted where it is read); C: kw 500 + y 30.
  EXPECT_EQ(p.nodes[0].size, 1110);
  EXPECT_EQ(p.nodes[1].size, 20);
  EXPECT_EQ(p.nodes[2].size, 0);
  EXPECT_EQ(p.nodes[3].size, 530);
  EXPECT_EQ(g->extras.op_types[2], "Constant");
  // A -> B, A -> C (t1), B -> C (t2), K -> C (a weight: never sent).
  ASSERT_EQ(p.edges.size(), 4u);
  EXPECT_EQ(g->extras.edge_bytes, (std::vector<int64_t>{10, 10, 20, -1}));
  EXPECT_DOUBLE_EQ(p.edges[0].cost, 1e-6 + 10 / 1e9);
  EXPECT_EQ(p.edges[3].cost, 0);
  EXPECT_EQ(g->extras.link_bytes_per_s, 1e9);
  EXPECT_EQ(g->extras.link_latency_s, 1e-6);

  const nlohmann::ordered_json j = CostGraphJson(p, g->extras);
  EXPECT_EQ(j["model"], "hand.onnx");
  EXPECT_EQ(j["link"]["bytes_per_s"], 1e9);
  EXPECT_EQ(j["edges"][0]["bytes"], 10);
  EXPECT_EQ(j["edges"][3]["time_s"], 0);
  EXPECT_EQ(j["operators"][0]["op_type"], "Conv");
  const MaxLoadProblem q = Parse(Json::parse(j.dump()));
  ExpectSameProblem(p, q);
  ExpectSameLoads(p, q, 20);
}

TEST(CostGraph, FromProblemInTrainingPairsBackwardOperators) {
  const Problem problem = HandProblem(true, 3);
  const Cluster cluster = testing::UniformCluster(3, 1 << 20, 1e9, 0);
  Result<CostGraph> g = CostGraphFromProblem(problem, cluster, "hand.onnx");
  ASSERT_TRUE(g) << g.error().message;
  const MaxLoadProblem& p = g->problem;
  ASSERT_EQ(p.kinds.size(), 1u);
  EXPECT_EQ(p.kinds[0].count, 3);
  ASSERT_EQ(p.nodes.size(), 8u);
  // Weights with their gradients and optimizer state: x 4.
  EXPECT_EQ(p.nodes[0].size, 100 + 4000 + 10);
  EXPECT_EQ(p.nodes[4].name, "A/backward");
  EXPECT_EQ(p.nodes[4].id, 4);
  EXPECT_TRUE(p.nodes[4].backward);
  EXPECT_EQ(p.nodes[4].time, (std::vector<double>{2.0}));
  EXPECT_EQ(p.nodes[4].size, 0);
  EXPECT_EQ(p.nodes[4].color, p.nodes[0].color);
  EXPECT_NE(p.nodes[5].color, p.nodes[0].color);
  EXPECT_EQ(g->extras.forward_of[4], 0);
  // Per forward edge u -> v: it, the mirrored backward edge, and per op
  // u -> u's backward (time 0).
  ASSERT_EQ(p.edges.size(), 4u * 2 + 4);
  EXPECT_EQ(p.edges[0].from, 0);  // A -> B
  EXPECT_EQ(p.edges[0].to, 1);
  EXPECT_EQ(p.edges[1].from, 5);  // B/backward -> A/backward
  EXPECT_EQ(p.edges[1].to, 4);
  EXPECT_EQ(p.edges[1].cost, p.edges[0].cost);

  const nlohmann::ordered_json j = CostGraphJson(p, g->extras);
  // backward_of says the pairs: no colocate, no backward.
  EXPECT_EQ(j["operators"][4]["backward_of"], 0);
  EXPECT_FALSE(j["operators"][4].contains("colocate"));
  EXPECT_FALSE(j["operators"][4].contains("backward"));
  EXPECT_FALSE(j["operators"][0].contains("colocate"));
  const MaxLoadProblem q = Parse(Json::parse(j.dump()));
  ExpectSameProblem(p, q);
  for (size_t v = 0; v < p.nodes.size(); ++v) {
    EXPECT_EQ(q.nodes[v].color, p.nodes[v].color);  // even the numbers
  }
  ExpectSameLoads(p, q, 20);
}

TEST(CostGraph, FromRandomProblemsRoundTrips) {
  for (uint64_t seed = 1; seed <= 5; ++seed) {
    testing::RandomDagOptions o;
    o.ops = 20;  // the DP stays under a second
    o.devices = 4;
    o.profiles = 2;
    o.training = seed % 2 == 0;
    const Problem problem = testing::RandomProblem(seed, o);
    const Cluster cluster =
        testing::UniformCluster(4, int64_t{1} << 30, 1e3, 0.01);
    Result<CostGraph> g = CostGraphFromProblem(problem, cluster, "r");
    ASSERT_TRUE(g) << g.error().message;
    EXPECT_EQ(g->problem.kinds.size(), 2u);  // one per profile
    const MaxLoadProblem q =
        Parse(Json::parse(CostGraphJson(g->problem, g->extras).dump()));
    ExpectSameProblem(g->problem, q);
    ExpectSameLoads(g->problem, q, 10);
    auto dp = SolveContiguousMaxLoad(q);
    ASSERT_TRUE(dp) << seed << ": " << dp.error().message;
    EXPECT_TRUE(HasSolution(dp->status)) << seed << ": " << dp->why;
  }
}

TEST(CostGraph, OneDeviceHasNoLinkAndSendsNothing) {
  const Problem problem = HandProblem(false, 1);
  const Cluster cluster = testing::UniformCluster(1, 1 << 20);
  Result<CostGraph> g = CostGraphFromProblem(problem, cluster, "hand.onnx");
  ASSERT_TRUE(g) << g.error().message;
  const nlohmann::ordered_json j = CostGraphJson(g->problem, g->extras);
  EXPECT_FALSE(j.contains("link"));
  for (const auto& e : j["edges"]) EXPECT_EQ(e["time_s"], 0);
  ExpectSameProblem(g->problem, Parse(Json::parse(j.dump())));
}

}  // namespace
}  // namespace tessera::placer
