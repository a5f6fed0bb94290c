// The read-only OpGraph API on a loaded model: lookups, consumers, the DAG,
// topological order and attributes.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "graph/graph.h"
#include "tests/testlib/onnx_model_builder.h"

namespace tessera::graph {
namespace {

using ::testing::ElementsAre;
using testlib::Dim;
using testlib::kFloat;
using testlib::OnnxModelBuilder;
using testlib::TempDir;

class OpGraphTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto loaded = LoadModel(dir_.Write("cnn.onnx", testlib::SmallCnn(1)), {});
    ASSERT_TRUE(loaded) << loaded.error().message;
    model_ = std::move(loaded).value();
  }
  const OpGraph& g() const { return *model_.graph; }
  NodeId Node(std::string_view name) const { return *g().FindNode(name); }
  TensorId Tensor(std::string_view name) const { return *g().FindTensor(name); }

  TempDir dir_;
  Model model_;
};

TEST_F(OpGraphTest, FindsTensorsAndNodesByName) {
  for (const char* name :
       {"x", "w", "b", "conv_out", "relu_out", "flat", "fc_w", "logits"}) {
    const auto t = g().FindTensor(name);
    ASSERT_TRUE(t) << name;
    EXPECT_EQ(g().tensor(*t).name, name);
  }
  EXPECT_FALSE(g().FindTensor("nope"));
  EXPECT_FALSE(g().FindTensor("conv"));  // a node, not a tensor
  const auto conv = g().FindNode("conv");
  ASSERT_TRUE(conv);
  EXPECT_EQ(g().node(*conv).op_type, "Conv");
  EXPECT_EQ(g().node(*conv).domain, "");
  EXPECT_FALSE(g().FindNode("x"));
}

TEST_F(OpGraphTest, NodesListTheirTensors) {
  const NodeView conv = g().node(Node("conv"));
  ASSERT_EQ(conv.inputs.size(), 3u);
  EXPECT_EQ(conv.inputs[0], Tensor("x"));
  EXPECT_EQ(conv.inputs[1], Tensor("w"));
  EXPECT_EQ(conv.inputs[2], Tensor("b"));
  EXPECT_THAT(conv.outputs, ElementsAre(Tensor("conv_out")));
  EXPECT_TRUE(conv.implicit_inputs.empty());
  EXPECT_TRUE(conv.subgraphs.empty());
  EXPECT_EQ(g().tensor(Tensor("conv_out")).producer, Node("conv"));
  EXPECT_EQ(g().tensor(Tensor("conv_out")).kind, TensorKind::kActivation);
  EXPECT_EQ(g().tensor(Tensor("x")).kind, TensorKind::kInput);
}

TEST_F(OpGraphTest, ListsConsumers) {
  EXPECT_THAT(g().consumers(Tensor("x")), ElementsAre(Node("conv")));
  EXPECT_THAT(g().consumers(Tensor("w")), ElementsAre(Node("conv")));
  EXPECT_THAT(g().consumers(Tensor("flat")), ElementsAre(Node("fc")));
  EXPECT_TRUE(g().consumers(Tensor("logits")).empty());
}

TEST_F(OpGraphTest, DagEdgesCarryTheTensorFromProducerToConsumer) {
  const Dag& dag = g().dag();
  EXPECT_EQ(boost::num_vertices(dag), g().num_nodes());
  EXPECT_EQ(boost::num_edges(dag), g().num_edges());
  size_t edges = 0;
  for (auto [it, end] = boost::edges(dag); it != end; ++it, ++edges) {
    const TensorId t = dag[*it].tensor;
    ASSERT_LT(t, g().num_tensors());
    EXPECT_EQ(g().tensor(t).producer, boost::source(*it, dag));
    EXPECT_THAT(g().consumers(t), ::testing::Contains(boost::target(*it, dag)));
  }
  EXPECT_EQ(edges, 3u);
  EXPECT_EQ(boost::in_degree(Node("conv"), dag), 0u);
  EXPECT_EQ(boost::out_degree(Node("fc"), dag), 0u);
}

TEST_F(OpGraphTest, TopologicalOrderSendsEveryEdgeForward) {
  const auto order = g().topological_order();
  ASSERT_EQ(order.size(), g().num_nodes());
  std::vector<size_t> position(g().num_nodes(), SIZE_MAX);
  for (size_t i = 0; i < order.size(); ++i) position[order[i]] = i;
  for (const size_t p : position) EXPECT_NE(p, SIZE_MAX);
  const Dag& dag = g().dag();
  for (auto [it, end] = boost::edges(dag); it != end; ++it) {
    EXPECT_LT(position[boost::source(*it, dag)],
              position[boost::target(*it, dag)]);
  }
}

TEST_F(OpGraphTest, ReadsAttributesByNameAndType) {
  const NodeId conv = Node("conv");
  EXPECT_THAT(g().GetInts(conv, "pads"), ElementsAre(1, 1, 1, 1));
  EXPECT_THAT(g().GetInts(conv, "kernel_shape"), ElementsAre(3, 3));
  EXPECT_EQ(g().GetInt(conv, "group"), 1);
  EXPECT_EQ(g().GetString(conv, "auto_pad"), "NOTSET");
  const NodeId fc = Node("fc");
  EXPECT_EQ(g().GetInt(fc, "transB"), 1);
  EXPECT_EQ(g().GetFloat(fc, "alpha"), 1.0);
  EXPECT_EQ(g().GetInt(Node("flatten"), "axis"), 1);
}

TEST_F(OpGraphTest, MissingOrMistypedAttributesAreEmpty) {
  const NodeId conv = Node("conv");
  EXPECT_FALSE(g().GetInt(conv, "pads"));           // ints, not int
  EXPECT_TRUE(g().GetInts(conv, "group").empty());  // int, not ints
  EXPECT_FALSE(g().GetString(conv, "group"));
  EXPECT_FALSE(g().GetFloat(conv, "group"));
  EXPECT_FALSE(g().GetInt(conv, "dilations"));
  EXPECT_TRUE(g().GetInts(conv, "dilations").empty());
  EXPECT_TRUE(g().GetFloats(conv, "dilations").empty());
  EXPECT_FALSE(g().GetInt(Node("relu"), "group"));
}

TEST_F(OpGraphTest, DescribesNodesShapesAndOperators) {
  EXPECT_EQ(DescribeNode(g(), Node("conv")), "'conv' (Conv)");
  EXPECT_EQ(FormatShape(g(), Tensor("x")), "1x3x8x8");
  EXPECT_EQ(FormatShape(g(), Tensor("logits")), "1x10");
  const auto hist = OpHistogram(g());
  ASSERT_EQ(hist.size(), 4u);
  EXPECT_EQ(hist[0], (std::pair<std::string, int64_t>("Conv", 1)));
  EXPECT_EQ(hist[3], (std::pair<std::string, int64_t>("Relu", 1)));
}

TEST(OpGraph, OmittedOptionalInputIsNoTensor) {
  OnnxModelBuilder m;
  m.AddInput("x", kFloat, std::vector<Dim>{4});
  m.AddInitializer("hi", {});
  m.AddNode("Clip", {"x", "", "hi"}, {"y"}, "clip");
  m.AddOutput("y");
  TempDir dir;
  auto model = LoadModel(dir.Write("clip.onnx", m), {});
  ASSERT_TRUE(model) << model.error().message;
  const OpGraph& g = *model->graph;
  const NodeView clip = g.node(*g.FindNode("clip"));
  ASSERT_EQ(clip.inputs.size(), 3u);
  EXPECT_EQ(clip.inputs[1], kNoTensor);
  EXPECT_EQ(g.tensor(clip.inputs[2]).name, "hi");
  EXPECT_EQ(g.tensor(clip.inputs[2]).elements, 1);  // a scalar
  EXPECT_EQ(FormatShape(g, clip.inputs[2]), "scalar");
}

TEST(OpGraph, TensorReadTwiceByOneNodeIsOneEdge) {
  OnnxModelBuilder m;
  m.AddInput("x", kFloat, std::vector<Dim>{4});
  m.AddNode("Relu", {"x"}, {"r"}, "relu");
  m.AddNode("Add", {"r", "r"}, {"y"}, "double");
  m.AddOutput("y");
  TempDir dir;
  auto model = LoadModel(dir.Write("twice.onnx", m), {});
  ASSERT_TRUE(model) << model.error().message;
  const OpGraph& g = *model->graph;
  EXPECT_EQ(g.num_edges(), 1u);
  EXPECT_EQ(g.consumers(*g.FindTensor("r")).size(), 1u);
  EXPECT_EQ(g.node(*g.FindNode("double")).inputs.size(), 2u);
}

TEST(OpGraph, UnnamedNodesAreDescribedByIndex) {
  OnnxModelBuilder m;
  m.AddInput("x", kFloat, std::vector<Dim>{4});
  m.AddNode("Relu", {"x"}, {"r"});
  m.AddNode("Neg", {"r"}, {"y"});
  m.AddOutput("y");
  TempDir dir;
  auto model = LoadModel(dir.Write("unnamed.onnx", m), {});
  ASSERT_TRUE(model) << model.error().message;
  EXPECT_EQ(DescribeNode(*model->graph, 1), "#1 (Neg)");
  EXPECT_EQ(model->graph->node(0).name, "");
}

}  // namespace
}  // namespace tessera::graph
