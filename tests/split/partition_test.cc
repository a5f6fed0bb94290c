// PartitionGraph on small models built in code: parts by (level, device),
// what flows between them, Constant copies, and the errors for plans that do
// not match the model; then a property test over random DAGs and placements.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>
#include <set>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "graph/graph.h"
#include "split/split.h"
#include "tests/split/kept_models.h"
#include "tests/testlib/onnx_model_builder.h"

namespace tessera::split {
namespace {

using graph::NodeId;
using graph::TensorId;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;
using testlib::Dim;
using testlib::kFloat;
using testlib::OnnxModelBuilder;
using testlib::TempDir;

using testing::Load;

// A plan over `num_devices` devices "d0", "d1", ... placing nodes by name.
PlanAssignment MakeDevicePlan(
    int num_devices, std::vector<std::pair<std::string, int>> placement) {
  PlanAssignment plan;
  plan.source = "plan.json";
  plan.algorithm = "test";
  for (int d = 0; d < num_devices; ++d) {
    plan.devices.push_back("d" + std::to_string(d));
  }
  plan.placement = std::move(placement);
  return plan;
}

Result<Partition> TryCut(const graph::Model& model,
                         const PlanAssignment& plan) {
  const std::vector<std::string> names = graph::UniqueNodeNames(*model.graph);
  return PartitionGraph(*model.graph, names, plan);
}

TensorId T(const graph::Model& model, std::string_view name) {
  const auto t = model.graph->FindTensor(name);
  if (!t) throw std::runtime_error("no tensor " + std::string(name));
  return *t;
}

NodeId N(const graph::Model& model, std::string_view name) {
  const auto n = model.graph->FindNode(name);
  if (!n) throw std::runtime_error("no node " + std::string(name));
  return *n;
}

// x[2,3] -a-> ta -b-> tb -c-> tc -d-> y, all Relu, nodes named a..d.
OnnxModelBuilder Chain() {
  OnnxModelBuilder m("chain");
  m.AddInput("x", kFloat, std::vector<Dim>{2, 3});
  m.AddNode("Relu", {"x"}, {"ta"}, "a");
  m.AddNode("Relu", {"ta"}, {"tb"}, "b");
  m.AddNode("Relu", {"tb"}, {"tc"}, "c");
  m.AddNode("Relu", {"tc"}, {"y"}, "d");
  m.AddOutput("y");
  return m;
}

TEST(PartitionGraph, OneDeviceIsOnePart) {
  const graph::Model model = Load(Chain());
  auto p = TryCut(model,
                  MakeDevicePlan(2, {{"a", 1}, {"b", 1}, {"c", 1}, {"d", 1}}));
  ASSERT_TRUE(p) << p.error().message;
  ASSERT_EQ(p->parts.size(), 1u);
  EXPECT_EQ(p->devices_used, 1);
  EXPECT_FALSE(p->device_cycle());
  const Part& part = p->parts[0];
  EXPECT_EQ(part.device, 1);
  EXPECT_EQ(part.level, 0);
  EXPECT_EQ(part.ops, 4);
  EXPECT_THAT(part.nodes, ElementsAre(0, 1, 2, 3));
  EXPECT_THAT(part.inputs, ElementsAre(T(model, "x")));
  EXPECT_THAT(part.outputs, ElementsAre(T(model, "y")));
  EXPECT_TRUE(part.initializers.empty());
  EXPECT_TRUE(p->transfers.empty());
  EXPECT_THAT(p->node_device, ElementsAre(1, 1, 1, 1));
  EXPECT_THAT(p->node_part, ElementsAre(0, 0, 0, 0));
}

// a, b on d0 and c, d on d1: the cut tensor tb is sent once, from part 0 to
// part 1.
TEST(PartitionGraph, TwoDevicesMakeTwoPartsAndOneTransfer) {
  const graph::Model model = Load(Chain());
  auto p = TryCut(model,
                  MakeDevicePlan(2, {{"a", 0}, {"b", 0}, {"c", 1}, {"d", 1}}));
  ASSERT_TRUE(p) << p.error().message;
  ASSERT_EQ(p->parts.size(), 2u);
  EXPECT_EQ(p->devices_used, 2);
  EXPECT_FALSE(p->device_cycle());
  EXPECT_EQ(p->parts[0].device, 0);
  EXPECT_EQ(p->parts[0].level, 0);
  EXPECT_EQ(p->parts[0].ops, 2);
  EXPECT_THAT(p->parts[0].inputs, ElementsAre(T(model, "x")));
  EXPECT_THAT(p->parts[0].outputs, ElementsAre(T(model, "tb")));
  EXPECT_EQ(p->parts[1].device, 1);
  EXPECT_EQ(p->parts[1].level, 1);
  EXPECT_THAT(p->parts[1].inputs, ElementsAre(T(model, "tb")));
  EXPECT_THAT(p->parts[1].outputs, ElementsAre(T(model, "y")));
  ASSERT_EQ(p->transfers.size(), 1u);
  EXPECT_EQ(p->transfers[0].tensor, T(model, "tb"));
  EXPECT_EQ(p->transfers[0].from_part, 0);
  EXPECT_EQ(p->transfers[0].to_part, 1);
}

// d0 -> d1 -> d0: the device graph has a cycle, so d0 gets two parts, at
// levels 0 and 2, and the three parts still run in index order.
TEST(PartitionGraph, DeviceCycleGivesMorePartsThanDevices) {
  const graph::Model model = Load(Chain());
  auto p = TryCut(model,
                  MakeDevicePlan(2, {{"a", 0}, {"b", 1}, {"c", 0}, {"d", 0}}));
  ASSERT_TRUE(p) << p.error().message;
  ASSERT_EQ(p->parts.size(), 3u);
  EXPECT_EQ(p->devices_used, 2);
  EXPECT_TRUE(p->device_cycle());
  EXPECT_EQ(p->parts[0].level, 0);
  EXPECT_EQ(p->parts[1].level, 1);
  EXPECT_EQ(p->parts[2].level, 2);
  EXPECT_EQ(p->parts[0].device, 0);
  EXPECT_EQ(p->parts[1].device, 1);
  EXPECT_EQ(p->parts[2].device, 0);
  EXPECT_THAT(p->parts[0].nodes, ElementsAre(N(model, "a")));
  EXPECT_THAT(p->parts[1].nodes, ElementsAre(N(model, "b")));
  EXPECT_THAT(p->parts[2].nodes, ElementsAre(N(model, "c"), N(model, "d")));
  EXPECT_THAT(p->node_part, ElementsAre(0, 1, 2, 2));
  ASSERT_EQ(p->transfers.size(), 2u);
  for (const Transfer& t : p->transfers) EXPECT_LT(t.from_part, t.to_part);
  EXPECT_EQ(p->transfers[0].tensor, T(model, "ta"));
  EXPECT_EQ(p->transfers[0].from_part, 0);
  EXPECT_EQ(p->transfers[0].to_part, 1);
  EXPECT_EQ(p->transfers[1].tensor, T(model, "tb"));
  EXPECT_EQ(p->transfers[1].from_part, 1);
  EXPECT_EQ(p->transfers[1].to_part, 2);
}

// a on d0 feeds b (d1) and c (d0); d (d0) joins them. d waits for b, so it
// is a level later than b, in a part of its own apart from a and c, and it
// receives from two parts (its inputs sorted by tensor).
TEST(PartitionGraph, JoinAfterAnotherDeviceIsALaterPart) {
  OnnxModelBuilder m("diamond");
  m.AddInput("x", kFloat, std::vector<Dim>{2, 3});
  m.AddNode("Relu", {"x"}, {"ta"}, "a");
  m.AddNode("Relu", {"ta"}, {"tb"}, "b");
  m.AddNode("Relu", {"ta"}, {"tc"}, "c");
  m.AddNode("Add", {"tb", "tc"}, {"y"}, "d");
  m.AddOutput("y");
  const graph::Model model = Load(m);
  auto p = TryCut(model,
                  MakeDevicePlan(2, {{"a", 0}, {"b", 1}, {"c", 0}, {"d", 0}}));
  ASSERT_TRUE(p) << p.error().message;
  ASSERT_EQ(p->parts.size(), 3u);
  EXPECT_THAT(p->parts[0].nodes, ElementsAre(N(model, "a"), N(model, "c")));
  EXPECT_THAT(p->parts[1].nodes, ElementsAre(N(model, "b")));
  EXPECT_THAT(p->parts[2].nodes, ElementsAre(N(model, "d")));
  EXPECT_EQ(p->parts[2].level, 2);
  const TensorId tb = T(model, "tb"), tc = T(model, "tc");
  EXPECT_THAT(p->parts[2].inputs,
              ElementsAre(std::min(tb, tc), std::max(tb, tc)));
  // What it sends, by TensorId.
  EXPECT_THAT(p->parts[0].outputs,
              ::testing::UnorderedElementsAre(T(model, "ta"), tc));
  EXPECT_TRUE(
      std::is_sorted(p->parts[0].outputs.begin(), p->parts[0].outputs.end()));
  EXPECT_EQ(p->transfers.size(), 3u);
  for (const Transfer& t : p->transfers) EXPECT_LT(t.from_part, t.to_part);
}

// Two branches of x on two devices: both at level 0, ordered by device
// index (not by node order); x is an input of both; each part returns the
// graph output it produces.
TEST(PartitionGraph, IndependentBranchesShareALevel) {
  OnnxModelBuilder m("branches");
  m.AddInput("x", kFloat, std::vector<Dim>{2, 3});
  m.AddNode("Relu", {"x"}, {"ya"}, "a");
  m.AddNode("Sigmoid", {"x"}, {"yb"}, "b");
  m.AddOutput("ya");
  m.AddOutput("yb");
  const graph::Model model = Load(m);
  auto p = TryCut(model, MakeDevicePlan(2, {{"a", 1}, {"b", 0}}));
  ASSERT_TRUE(p) << p.error().message;
  ASSERT_EQ(p->parts.size(), 2u);
  EXPECT_FALSE(p->device_cycle());
  EXPECT_EQ(p->parts[0].level, 0);
  EXPECT_EQ(p->parts[1].level, 0);
  EXPECT_EQ(p->parts[0].device, 0);
  EXPECT_EQ(p->parts[1].device, 1);
  EXPECT_THAT(p->parts[0].nodes, ElementsAre(N(model, "b")));
  EXPECT_THAT(p->parts[1].nodes, ElementsAre(N(model, "a")));
  EXPECT_THAT(p->parts[0].inputs, ElementsAre(T(model, "x")));
  EXPECT_THAT(p->parts[1].inputs, ElementsAre(T(model, "x")));
  EXPECT_THAT(p->parts[0].outputs, ElementsAre(T(model, "yb")));
  EXPECT_THAT(p->parts[1].outputs, ElementsAre(T(model, "ya")));
  EXPECT_TRUE(p->transfers.empty());
}

// Outputs list the original outputs first (in the graph's order), then what
// later parts read; a tensor that is both is listed once.
TEST(PartitionGraph, OutputsAreGraphOutputsThenSentTensors) {
  OnnxModelBuilder m = Chain();
  m.AddOutput("ta");
  m.AddOutput("tb");
  const graph::Model model = Load(m);
  auto p = TryCut(model,
                  MakeDevicePlan(2, {{"a", 0}, {"b", 0}, {"c", 1}, {"d", 1}}));
  ASSERT_TRUE(p) << p.error().message;
  ASSERT_EQ(p->parts.size(), 2u);
  EXPECT_THAT(p->parts[0].outputs, ElementsAre(T(model, "ta"), T(model, "tb")));
  EXPECT_THAT(p->parts[1].outputs, ElementsAre(T(model, "y")));
  ASSERT_EQ(p->transfers.size(), 1u);
  EXPECT_EQ(p->transfers[0].tensor, T(model, "tb"));
}

// Graph inputs come in the graph's order, whatever order the nodes read them.
TEST(PartitionGraph, GraphInputsKeepTheGraphsOrder) {
  OnnxModelBuilder m("inputs");
  m.AddInput("x0", kFloat, std::vector<Dim>{2, 3});
  m.AddInput("x1", kFloat, std::vector<Dim>{2, 3});
  m.AddInput("x2", kFloat, std::vector<Dim>{2, 3});
  m.AddNode("Add", {"x2", "x0"}, {"s"}, "a");
  m.AddNode("Mul", {"s", "x1"}, {"y"}, "b");
  m.AddOutput("y");
  const graph::Model model = Load(m);
  auto p = TryCut(model, MakeDevicePlan(1, {{"a", 0}, {"b", 0}}));
  ASSERT_TRUE(p) << p.error().message;
  ASSERT_EQ(p->parts.size(), 1u);
  EXPECT_THAT(p->parts[0].inputs,
              ElementsAre(T(model, "x0"), T(model, "x1"), T(model, "x2")));
}

// A Constant read on two devices is copied into both parts, not
// transferred, and does not count as an op; the plan's device for it does
// not make its readers wait a level.
TEST(PartitionGraph, ConstantsAreCopiedIntoEachReadingPart) {
  OnnxModelBuilder m("constants");
  m.AddInput("x", kFloat, std::vector<Dim>{2, 3});
  m.AddConstant("k", {3});  // node "k_node"
  m.AddNode("Add", {"x", "k"}, {"yp"}, "p");
  m.AddNode("Mul", {"x", "k"}, {"yq"}, "q");
  m.AddOutput("yp");
  m.AddOutput("yq");
  const graph::Model model = Load(m);
  auto p =
      TryCut(model, MakeDevicePlan(2, {{"k_node", 1}, {"p", 0}, {"q", 1}}));
  ASSERT_TRUE(p) << p.error().message;
  const NodeId k = N(model, "k_node");
  ASSERT_EQ(p->parts.size(), 2u);
  EXPECT_EQ(p->node_part[k], -1);
  EXPECT_EQ(p->node_device[k], 1);
  EXPECT_EQ(p->parts[0].level, 0);
  EXPECT_EQ(p->parts[1].level, 0);
  EXPECT_THAT(p->parts[0].nodes, ElementsAre(k, N(model, "p")));
  EXPECT_THAT(p->parts[1].nodes, ElementsAre(k, N(model, "q")));
  EXPECT_EQ(p->parts[0].ops, 1);
  EXPECT_EQ(p->parts[1].ops, 1);
  EXPECT_TRUE(p->transfers.empty());
  for (const Part& part : p->parts) {
    EXPECT_THAT(part.inputs, ElementsAre(T(model, "x")));
  }
}

// Computations on weights alone (like an exported model's shape arithmetic)
// are constants too: copied, with the constants they read, into each part
// that reads them. One whose value only the caller reads is an ordinary
// node.
TEST(PartitionGraph, WeightOnlyComputationsAreCopiedToo) {
  OnnxModelBuilder m("weight_math");
  m.AddInput("x", kFloat, std::vector<Dim>{2, 3});
  m.AddInitializer("w", {3});
  m.AddConstant("k", {3});
  m.AddNode("Relu", {"w"}, {"wr"}, "wr");
  m.AddNode("Add", {"wr", "k"}, {"wk"}, "wk");
  m.AddNode("Add", {"x", "wk"}, {"yp"}, "p");
  m.AddNode("Mul", {"x", "wk"}, {"yq"}, "q");
  m.AddNode("Sigmoid", {"w"}, {"ws"}, "ws");
  m.AddOutput("yp");
  m.AddOutput("yq");
  m.AddOutput("ws");
  const graph::Model model = Load(m);
  auto p = TryCut(model, MakeDevicePlan(2, {{"k_node", 1},
                                            {"wr", 1},
                                            {"wk", 1},
                                            {"p", 0},
                                            {"q", 1},
                                            {"ws", 1}}));
  ASSERT_TRUE(p) << p.error().message;
  for (const char* copied : {"k_node", "wr", "wk"}) {
    EXPECT_EQ(p->node_part[N(model, copied)], -1) << copied;
  }
  EXPECT_EQ(p->node_part[N(model, "ws")], 1);
  ASSERT_EQ(p->parts.size(), 2u);
  EXPECT_EQ(p->parts[1].level, 0);
  EXPECT_THAT(p->parts[0].nodes, ElementsAre(N(model, "k_node"), N(model, "wr"),
                                             N(model, "wk"), N(model, "p")));
  EXPECT_THAT(p->parts[1].nodes,
              ElementsAre(N(model, "k_node"), N(model, "wr"), N(model, "wk"),
                          N(model, "q"), N(model, "ws")));
  EXPECT_EQ(p->parts[0].ops, 1);
  EXPECT_EQ(p->parts[1].ops, 2);
  EXPECT_THAT(p->parts[0].initializers, ElementsAre(T(model, "w")));
  EXPECT_THAT(p->parts[1].initializers, ElementsAre(T(model, "w")));
  EXPECT_THAT(p->parts[1].outputs, ElementsAre(T(model, "yq"), T(model, "ws")));
  EXPECT_TRUE(p->transfers.empty());
}

// A Constant nobody reads is an ordinary node: it has a part (on the plan's
// device) and returns its value there.
TEST(PartitionGraph, AnUnreadConstantIsAnOrdinaryNode) {
  OnnxModelBuilder m("unread_constant");
  m.AddInput("x", kFloat, std::vector<Dim>{2, 3});
  m.AddNode("Relu", {"x"}, {"y"}, "a");
  m.AddConstant("k", {3});
  m.AddOutput("y");
  m.AddOutput("k");
  const graph::Model model = Load(m);
  auto p = TryCut(model, MakeDevicePlan(2, {{"a", 0}, {"k_node", 1}}));
  ASSERT_TRUE(p) << p.error().message;
  ASSERT_EQ(p->parts.size(), 2u);
  EXPECT_EQ(p->node_part[N(model, "k_node")], 1);
  EXPECT_EQ(p->parts[1].ops, 1);
  EXPECT_THAT(p->parts[1].outputs, ElementsAre(T(model, "k")));
}

// Each part lists the initializers its nodes read (by TensorId, sorted); a
// weight read on two devices is in both.
TEST(PartitionGraph, ListsTheInitializersEachPartReads) {
  OnnxModelBuilder m("weights");
  m.AddInput("x", kFloat, std::vector<Dim>{2, 3});
  m.AddInitializer("w3", {3});
  m.AddInitializer("w1", {3});
  m.AddInitializer("w2", {3});
  m.AddNode("Add", {"x", "w1"}, {"t1"}, "a");
  m.AddNode("Mul", {"t1", "w3"}, {"t2"}, "b");
  m.AddNode("Add", {"t2", "w2"}, {"t3"}, "c");
  m.AddNode("Mul", {"t3", "w3"}, {"y"}, "d");
  m.AddOutput("y");
  const graph::Model model = Load(m);
  auto p = TryCut(model,
                  MakeDevicePlan(2, {{"a", 0}, {"b", 0}, {"c", 1}, {"d", 1}}));
  ASSERT_TRUE(p) << p.error().message;
  ASSERT_EQ(p->parts.size(), 2u);
  auto sorted = [](std::vector<TensorId> v) {
    std::sort(v.begin(), v.end());
    return v;
  };
  EXPECT_EQ(p->parts[0].initializers, sorted({T(model, "w1"), T(model, "w3")}));
  EXPECT_EQ(p->parts[1].initializers, sorted({T(model, "w2"), T(model, "w3")}));
  // Weights are neither inputs nor transfers.
  EXPECT_THAT(p->parts[0].inputs, ElementsAre(T(model, "x")));
  EXPECT_THAT(p->parts[1].inputs, ElementsAre(T(model, "t2")));
  EXPECT_EQ(p->transfers.size(), 1u);
}

// b's branch is dead code in the original (z is neither read nor an
// output): its part returns z so that it is a valid model. A part that has
// real outputs does not also return its dead ends.
TEST(PartitionGraph, ADeadEndPartReturnsItsUnreadValues) {
  OnnxModelBuilder m("dead_end");
  m.AddInput("x", kFloat, std::vector<Dim>{2, 3});
  m.AddNode("Relu", {"x"}, {"y"}, "a");
  m.AddNode("Sigmoid", {"x"}, {"unused"}, "a2");
  m.AddNode("Relu", {"x"}, {"z"}, "b");
  m.AddOutput("y");
  const graph::Model model = Load(m);
  auto p = TryCut(model, MakeDevicePlan(2, {{"a", 0}, {"a2", 0}, {"b", 1}}));
  ASSERT_TRUE(p) << p.error().message;
  ASSERT_EQ(p->parts.size(), 2u);
  EXPECT_THAT(p->parts[0].outputs, ElementsAre(T(model, "y")));
  EXPECT_THAT(p->parts[1].outputs, ElementsAre(T(model, "z")));
}

// What an If's branches capture from the main graph counts as read by the
// If: a cut tensor is received, a captured initializer is copied in, and the
// part passes ONNX's checker (which resolves the branches' outer names).
TEST(PartitionGraph, SubgraphCapturesAreReadByTheirNode) {
  OnnxModelBuilder m("if");
  m.AddInput("x", kFloat, std::vector<Dim>{2, 3});
  m.AddInput("cond", testlib::kBool, std::vector<Dim>{});
  m.AddInitializer("w", {3});
  m.AddNode("Relu", {"x"}, {"t"}, "a");
  testlib::OnnxGraphBuilder then_branch("then");
  then_branch.AddNode("Identity", {"t"}, {"then_out"}, "then_id");
  then_branch.AddOutput("then_out", kFloat, std::vector<Dim>{2, 3});
  testlib::OnnxGraphBuilder else_branch("else");
  else_branch.AddNode("Add", {"t", "w"}, {"else_out"}, "else_add");
  else_branch.AddOutput("else_out", kFloat, std::vector<Dim>{2, 3});
  m.AddIf("cond", {"y"}, "branch", then_branch.proto(), else_branch.proto());
  m.AddOutput("y");
  const graph::Model model = Load(m);
  auto p = TryCut(model, MakeDevicePlan(2, {{"a", 0}, {"branch", 1}}));
  ASSERT_TRUE(p) << p.error().message;
  ASSERT_EQ(p->parts.size(), 2u);
  EXPECT_THAT(p->parts[1].inputs, ElementsAre(T(model, "cond"), T(model, "t")));
  EXPECT_THAT(p->parts[1].initializers, ElementsAre(T(model, "w")));
  EXPECT_TRUE(p->parts[0].initializers.empty());
  ASSERT_EQ(p->transfers.size(), 1u);
  EXPECT_EQ(p->transfers[0].tensor, T(model, "t"));
  TempDir dir;
  PartLocation where;
  where.model_dir = where.out_dir = dir.path().string();
  auto part = BuildPart(model, *p, 1, where);
  ASSERT_TRUE(part) << part.error().message;
  auto checked = CheckPart(*part, 1, dir.path().string());
  EXPECT_TRUE(checked) << checked.error().message;
}

TEST(PartitionGraph, RejectsNodesTheModelLacks) {
  const graph::Model model = Load(Chain());
  auto p = TryCut(model, MakeDevicePlan(2, {{"a", 0},
                                            {"b", 0},
                                            {"ghost", 1},
                                            {"c", 1},
                                            {"d", 1},
                                            {"phantom", 0}}));
  ASSERT_FALSE(p);
  EXPECT_EQ(p.error().code, ErrorCode::kBadInput);
  EXPECT_THAT(p.error().message, HasSubstr("plan.json"));
  EXPECT_THAT(p.error().message, HasSubstr("2 node(s)"));
  EXPECT_THAT(p.error().message, HasSubstr("'ghost'"));
  EXPECT_THAT(p.error().message, HasSubstr("'phantom'"));
}

TEST(PartitionGraph, RejectsAPlanThatLeavesNodesOut) {
  const graph::Model model = Load(Chain());
  auto p = TryCut(model, MakeDevicePlan(2, {{"a", 0}, {"b", 0}}));
  ASSERT_FALSE(p);
  EXPECT_EQ(p.error().code, ErrorCode::kBadInput);
  EXPECT_THAT(p.error().message, HasSubstr("plan.json"));
  EXPECT_THAT(p.error().message, HasSubstr("leaves out 2 of the model's 4"));
  EXPECT_THAT(p.error().message, HasSubstr("'c'"));
  EXPECT_THAT(p.error().message, HasSubstr("'d'"));
  EXPECT_THAT(p.error().message, Not(HasSubstr("'a'")));
}

// Long lists are cut short: five names, then how many more.
TEST(PartitionGraph, MissingNodeListIsShortened) {
  OnnxModelBuilder m("wide");
  m.AddInput("x", kFloat, std::vector<Dim>{2, 3});
  for (int i = 0; i < 8; ++i) {
    const std::string name = "n" + std::to_string(i);
    m.AddNode("Relu", {"x"}, {name + "_out"}, name);
    m.AddOutput(name + "_out");
  }
  const graph::Model model = Load(m);
  auto p = TryCut(model, MakeDevicePlan(1, {{"n0", 0}}));
  ASSERT_FALSE(p);
  EXPECT_THAT(p.error().message, HasSubstr("leaves out 7 of the model's 8"));
  EXPECT_THAT(p.error().message, HasSubstr("'n5'"));
  EXPECT_THAT(p.error().message, Not(HasSubstr("'n6'")));
  EXPECT_THAT(p.error().message, HasSubstr("and 2 more"));
}

// Unnamed nodes are addressed as "<OpType>_<NodeId>"; a generated name that
// a real node already has gets "_1".
TEST(PartitionGraph, UnnamedNodesAreAddressedByOpTypeAndIndex) {
  OnnxModelBuilder m("unnamed");
  m.AddInput("x", kFloat, std::vector<Dim>{2, 3});
  m.AddNode("Relu", {"x"}, {"t0"}, "Relu_1");
  m.AddNode("Relu", {"t0"}, {"t1"});
  m.AddNode("Sigmoid", {"t1"}, {"y"});
  m.AddOutput("y");
  const graph::Model model = Load(m);
  const std::vector<std::string> names = graph::UniqueNodeNames(*model.graph);
  EXPECT_THAT(names, ElementsAre("Relu_1", "Relu_1_1", "Sigmoid_2"));
  auto p = PartitionGraph(
      *model.graph, names,
      MakeDevicePlan(2, {{"Relu_1", 0}, {"Relu_1_1", 0}, {"Sigmoid_2", 1}}));
  ASSERT_TRUE(p) << p.error().message;
  EXPECT_THAT(p->node_device, ElementsAre(0, 0, 1));
  ASSERT_EQ(p->parts.size(), 2u);
  EXPECT_THAT(p->parts[1].nodes, ElementsAre(2));

  auto wrong = PartitionGraph(
      *model.graph, names,
      MakeDevicePlan(2, {{"Relu_1", 0}, {"Relu_1", 0}, {"Sigmoid_2", 1}}));
  ASSERT_FALSE(wrong);
  EXPECT_THAT(wrong.error().message, HasSubstr("'Relu_1_1'"));
}

// ---------------------------------------------------------------------------
// Property test: random DAGs of Add/Mul/Relu over earlier tensors, with a few
// Constants (some unread) and initializers, placed at random on 2-4 devices.

struct RandomCase {
  OnnxModelBuilder model{"random"};
  int devices = 2;
};

RandomCase RandomModel(std::mt19937& rng) {
  auto uniform = [&](int lo, int hi) {
    return std::uniform_int_distribution<int>(lo, hi)(rng);
  };
  RandomCase c;
  OnnxModelBuilder& m = c.model;
  c.devices = uniform(2, 4);
  std::vector<std::string> pool;
  const int inputs = uniform(1, 3);
  for (int i = 0; i < inputs; ++i) {
    pool.push_back("in" + std::to_string(i));
    m.AddInput(pool.back(), kFloat, std::vector<Dim>{2, 3});
  }
  const int weights = uniform(0, 3);
  for (int i = 0; i < weights; ++i) {
    pool.push_back("w" + std::to_string(i));
    // Broadcastable to [2,3]: w0 is [3], the others [2,3].
    m.AddInitializer(pool.back(), i == 0 ? std::vector<int64_t>{3}
                                         : std::vector<int64_t>{2, 3});
  }
  std::vector<std::string> produced;
  const int ops = uniform(3, 14);
  for (int i = 0; i < ops; ++i) {
    if (uniform(0, 9) == 0) {
      const std::string k = "k" + std::to_string(i);
      m.AddConstant(k, {3});
      pool.push_back(k);
      produced.push_back(k);
    }
    const std::string out = "t" + std::to_string(i);
    const std::string name = uniform(0, 4) == 0 ? "" : "n" + std::to_string(i);
    // Read mostly recent tensors, so that chains get long.
    auto pick = [&]() -> const std::string& {
      const int size = static_cast<int>(pool.size());
      return pool[uniform(0, 2) ? uniform(std::max(0, size - 4), size - 1)
                                : uniform(0, size - 1)];
    };
    switch (uniform(0, 2)) {
      case 0:
        m.AddNode("Relu", {pick()}, {out}, name);
        break;
      case 1:
        m.AddNode("Add", {pick(), pick()}, {out}, name);
        break;
      default:
        m.AddNode("Mul", {pick(), pick()}, {out}, name);
        break;
    }
    pool.push_back(out);
    produced.push_back(out);
  }
  // The last value is an output, so are some others (possibly Constants').
  m.AddOutput(produced.back());
  for (size_t i = 0; i + 1 < produced.size(); ++i) {
    if (uniform(0, 4) == 0) m.AddOutput(produced[i]);
  }
  return c;
}

// Which nodes a split copies (an oracle written from the definition, for
// the ops the random models use): a node is constant when it is a Constant
// or reads only initializers and constant nodes' outputs; it is copied when
// it is constant and some reader is not constant or is copied.
std::vector<char> ExpectedCopies(const graph::OpGraph& g) {
  std::vector<char> constant(g.num_nodes(), 0), copied(g.num_nodes(), 0);
  for (NodeId n = 0; n < g.num_nodes(); ++n) {  // nodes are sorted
    const graph::NodeView v = g.node(n);
    bool only_weights = true;
    for (const TensorId t : v.inputs) {
      const graph::TensorView tv = g.tensor(t);
      only_weights &= tv.kind == graph::TensorKind::kInitializer ||
                      (tv.producer != graph::kNoNode && constant[tv.producer]);
    }
    constant[n] =
        v.op_type == "Constant" || (!v.inputs.empty() && only_weights);
  }
  for (NodeId n = static_cast<NodeId>(g.num_nodes()); n-- > 0;) {
    if (!constant[n]) continue;
    for (const NodeId c : g.consumers(g.node(n).outputs[0])) {
      if (!constant[c] || copied[c]) copied[n] = 1;
    }
  }
  return copied;
}

// Checks the invariants of `p` for `model`; adds failures with `where`.
void CheckInvariants(const graph::Model& model, const PlanAssignment& plan,
                     const Partition& p, const std::string& where) {
  SCOPED_TRACE(where);
  const graph::OpGraph& g = *model.graph;
  const int num_parts = static_cast<int>(p.parts.size());
  ASSERT_EQ(p.node_part.size(), g.num_nodes());
  ASSERT_EQ(p.node_device.size(), g.num_nodes());
  const std::vector<std::string> names = graph::UniqueNodeNames(g);
  std::map<std::string, int> planned(plan.placement.begin(),
                                     plan.placement.end());
  const std::vector<char> copied = ExpectedCopies(g);
  std::set<int> devices_used;
  std::vector<int> copies_of(g.num_nodes(), 0);
  for (NodeId n = 0; n < g.num_nodes(); ++n) {
    EXPECT_EQ(p.node_device[n], planned.at(names[n])) << names[n];
    const int part = p.node_part[n];
    EXPECT_EQ(part < 0, copied[n] != 0) << names[n];
    if (part < 0) continue;
    ASSERT_LT(part, num_parts);
    devices_used.insert(p.node_device[n]);
    EXPECT_EQ(p.parts[part].device, p.node_device[n]) << names[n];
  }
  EXPECT_EQ(p.devices_used, static_cast<int>(devices_used.size()));
  EXPECT_GE(num_parts, p.devices_used);

  std::set<std::pair<int, TensorId>> transfer_keys;  // (to_part, tensor)
  for (const Transfer& t : p.transfers) {
    EXPECT_LT(t.from_part, t.to_part) << g.tensor(t.tensor).name;
    ASSERT_GE(t.from_part, 0);
    ASSERT_LT(t.to_part, num_parts);
    // Parts of one level are independent.
    EXPECT_LT(p.parts[t.from_part].level, p.parts[t.to_part].level);
    EXPECT_TRUE(transfer_keys.insert({t.to_part, t.tensor}).second)
        << "tensor sent twice to one part: " << g.tensor(t.tensor).name;
    const NodeId prod = g.tensor(t.tensor).producer;
    ASSERT_NE(prod, graph::kNoNode);
    EXPECT_EQ(p.node_part[prod], t.from_part);
    EXPECT_THAT(p.parts[t.from_part].outputs, ::testing::Contains(t.tensor));
    EXPECT_THAT(p.parts[t.to_part].inputs, ::testing::Contains(t.tensor));
  }

  const std::set<TensorId> graph_outputs(g.outputs().begin(),
                                         g.outputs().end());
  std::set<TensorId> outputs_returned;
  std::set<std::pair<int, int>> keys;
  for (int i = 0; i < num_parts; ++i) {
    SCOPED_TRACE("part " + std::to_string(i));
    const Part& part = p.parts[i];
    EXPECT_TRUE(keys.insert({part.level, part.device}).second);
    if (i > 0) {
      EXPECT_LT(std::pair(p.parts[i - 1].level, p.parts[i - 1].device),
                std::pair(part.level, part.device));
    }
    EXPECT_FALSE(part.nodes.empty());
    EXPECT_TRUE(std::is_sorted(part.nodes.begin(), part.nodes.end()));
    EXPECT_EQ(std::adjacent_find(part.nodes.begin(), part.nodes.end()),
              part.nodes.end());
    int ops = 0;
    std::set<TensorId> produced_here, read_here;
    for (const NodeId n : part.nodes) {
      if (p.node_part[n] == i) {
        ++ops;
      } else {
        EXPECT_EQ(p.node_part[n], -1) << "node " << names[n] << " in two parts";
        ++copies_of[n];
      }
      for (const TensorId t : g.node(n).outputs) produced_here.insert(t);
      for (const TensorId t : g.node(n).inputs) read_here.insert(t);
    }
    EXPECT_EQ(part.ops, ops);
    // A copied node is here iff a node here reads it (copies read copies).
    for (NodeId n = 0; n < g.num_nodes(); ++n) {
      if (p.node_part[n] != -1) continue;
      const bool here =
          std::binary_search(part.nodes.begin(), part.nodes.end(), n);
      const bool read = read_here.count(g.node(n).outputs[0]) > 0;
      EXPECT_EQ(here, read) << names[n];
    }
    // Nodes listed here are all that are placed here.
    EXPECT_EQ(ops, std::count(p.node_part.begin(), p.node_part.end(), i));
    // Inputs: graph inputs first, then what earlier parts send.
    bool received = false;
    std::set<TensorId> inputs;
    for (const TensorId t : part.inputs) {
      EXPECT_TRUE(inputs.insert(t).second) << g.tensor(t).name;
      const graph::TensorView v = g.tensor(t);
      if (v.kind == graph::TensorKind::kInput) {
        EXPECT_FALSE(received) << "graph input after a received tensor";
        EXPECT_TRUE(read_here.count(t)) << v.name;
        continue;
      }
      received = true;
      ASSERT_NE(v.producer, graph::kNoNode) << v.name;
      EXPECT_GE(p.node_part[v.producer], 0) << v.name;
      EXPECT_LT(p.node_part[v.producer], i) << v.name;
      EXPECT_TRUE(transfer_keys.count({i, t})) << v.name;
    }
    // Everything read here is an input, a weight, or produced here.
    for (const TensorId t : read_here) {
      const graph::TensorView v = g.tensor(t);
      if (v.kind == graph::TensorKind::kInitializer) {
        EXPECT_THAT(part.initializers, ::testing::Contains(t)) << v.name;
      } else if (!produced_here.count(t)) {
        EXPECT_TRUE(inputs.count(t)) << v.name << " is read but not received";
      }
    }
    for (const TensorId t : part.initializers) {
      EXPECT_TRUE(read_here.count(t)) << g.tensor(t).name;
    }
    EXPECT_FALSE(part.outputs.empty());
    for (const TensorId t : part.outputs) {
      EXPECT_TRUE(produced_here.count(t)) << g.tensor(t).name;
      if (graph_outputs.count(t)) outputs_returned.insert(t);
    }
    for (const NodeId n : part.nodes) {
      if (p.node_part[n] != i) continue;
      for (const TensorId t : g.node(n).outputs) {
        if (graph_outputs.count(t)) {
          EXPECT_THAT(part.outputs, ::testing::Contains(t)) << g.tensor(t).name;
        }
      }
    }
  }
  // Every graph output is returned by some part, copied Constants' too.
  EXPECT_EQ(outputs_returned, graph_outputs);
  for (NodeId n = 0; n < g.num_nodes(); ++n) {
    if (p.node_part[n] == -1) {
      EXPECT_GE(copies_of[n], 1) << names[n];
    }
  }
}

TEST(PartitionGraph, RandomDagsSatisfyThePartitionInvariants) {
  std::mt19937 rng(20240611);
  int cycles = 0, multi_part = 0, copied = 0;
  for (int round = 0; round < 50; ++round) {
    RandomCase c = RandomModel(rng);
    const graph::Model model = Load(c.model);
    const std::vector<std::string> names = graph::UniqueNodeNames(*model.graph);
    std::vector<std::pair<std::string, int>> placement;
    for (const std::string& name : names) {
      placement.emplace_back(
          name, std::uniform_int_distribution<int>(0, c.devices - 1)(rng));
    }
    const PlanAssignment plan = MakeDevicePlan(c.devices, placement);
    auto p = PartitionGraph(*model.graph, names, plan);
    ASSERT_TRUE(p) << p.error().message;
    CheckInvariants(model, plan, *p, "round " + std::to_string(round));
    cycles += p->device_cycle();
    copied += static_cast<int>(
        std::count(p->node_part.begin(), p->node_part.end(), -1));
    multi_part += p->parts.size() > 1;
    // Every part is a model ONNX's checker accepts.
    TempDir dir;
    for (size_t i = 0; i < p->parts.size(); ++i) {
      PartLocation where;
      where.model_dir = where.out_dir = dir.path().string();
      auto part = BuildPart(model, *p, static_cast<int>(i), where);
      ASSERT_TRUE(part) << "round " << round << " part " << i << ": "
                        << part.error().message;
      auto checked = CheckPart(*part, static_cast<int>(i), dir.path().string());
      EXPECT_TRUE(checked) << "round " << round << ": "
                           << checked.error().message;
    }
    if (HasFailure()) {
      ADD_FAILURE() << "round " << round << " model:\n"
                    << c.model.Build().graph().DebugString();
      return;
    }
  }
  // The generator exercises what it is meant to.
  EXPECT_GT(cycles, 5);
  EXPECT_GT(multi_part, 30);
  EXPECT_GT(copied, 10);
}

}  // namespace
}  // namespace tessera::split
