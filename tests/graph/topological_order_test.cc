// Files whose nodes are out of order: LoadModel sorts them before shape
// inference, so shapes are inferred as for a sorted file.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "graph/graph.h"
#include "tests/testlib/onnx_model_builder.h"

namespace tessera::graph {
namespace {

using testlib::Dim;
using testlib::OnnxModelBuilder;
using testlib::TempDir;

std::vector<std::string> OpsInOrder(const OpGraph& g) {
  std::vector<std::string> ops;
  for (const NodeId n : g.topological_order()) {
    ops.emplace_back(g.node(n).op_type);
  }
  return ops;
}

TEST(LoadModel, SortsReversedGraphAndStillInfersShapes) {
  OnnxModelBuilder m = testlib::SmallCnn(1);
  auto* nodes = m.proto().mutable_node();
  std::reverse(nodes->begin(), nodes->end());
  TempDir dir;
  auto model = LoadModel(dir.Write("reversed.onnx", m), {});
  ASSERT_TRUE(model) << model.error().message;
  const OpGraph& g = *model->graph;
  EXPECT_EQ(g.num_nodes(), 4u);
  EXPECT_THAT(OpsInOrder(g),
              ::testing::ElementsAre("Conv", "Relu", "Flatten", "Gemm"));
  // The sorted graph is stored in topological order.
  for (NodeId i = 0; i < g.num_nodes(); ++i) {
    EXPECT_EQ(g.topological_order()[i], i);
  }
  EXPECT_EQ(FormatShape(g, *g.FindTensor("logits")), "1x10");
  EXPECT_EQ(FormatShape(g, *g.FindTensor("flat")), "1x256");
  EXPECT_TRUE(model->unknown_shapes.empty());
}

TEST(LoadModel, SortsBranchNodesToo) {
  testlib::OnnxGraphBuilder branch("branch");
  branch.AddNode("Neg", {"r"}, {"out"}, "second");
  branch.AddNode("Relu", {"x"}, {"r"}, "first");
  branch.AddOutput("out");
  OnnxModelBuilder m;
  m.AddInput("cond", testlib::kBool, std::vector<Dim>{});
  m.AddInput("x", testlib::kFloat, std::vector<Dim>{5});
  m.AddIf("cond", {"y"}, "if", branch.proto(), branch.proto());
  m.AddOutput("y");
  TempDir dir;
  auto model = LoadModel(dir.Write("branch.onnx", m), {});
  ASSERT_TRUE(model) << model.error().message;
  const OpGraph& sub = model->graph->subgraph(0);
  EXPECT_THAT(OpsInOrder(sub), ::testing::ElementsAre("Relu", "Neg"));
  EXPECT_EQ(sub.node(0).name, "first");
  EXPECT_EQ(FormatShape(sub, *sub.FindTensor("out")), "5");
  EXPECT_EQ(FormatShape(*model->graph, *model->graph->FindTensor("y")), "5");
  EXPECT_TRUE(model->unknown_shapes.empty());
}

TEST(LoadModel, KeepsFileOrderAmongIndependentNodes) {
  OnnxModelBuilder m;
  m.AddInput("x", testlib::kFloat, std::vector<Dim>{2});
  for (const char* name : {"c", "a", "d", "b"}) {
    m.AddNode("Relu", {"x"}, {std::string(name) + "_out"}, name);
  }
  TempDir dir;
  auto model = LoadModel(dir.Write("parallel.onnx", m), {});
  ASSERT_TRUE(model) << model.error().message;
  const OpGraph& g = *model->graph;
  std::vector<std::string_view> names;
  for (const NodeId n : g.topological_order()) names.push_back(g.node(n).name);
  EXPECT_THAT(names, ::testing::ElementsAre("c", "a", "d", "b"));
}

}  // namespace
}  // namespace tessera::graph
