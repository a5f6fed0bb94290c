// What LoadModel reports without failing: unknown shapes and warnings.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "graph/graph.h"
#include "tests/testlib/onnx_model_builder.h"

namespace tessera::graph {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using testlib::Dim;
using testlib::kFloat;
using testlib::OnnxModelBuilder;
using testlib::TempDir;

const UnknownShape* FindUnknown(const Model& m, std::string_view tensor) {
  for (const UnknownShape& u : m.unknown_shapes) {
    if (u.tensor == tensor) return &u;
  }
  return nullptr;
}

// x[2,3] -com.example:Mystery-> m -Relu-> y: m's shape cannot be inferred.
OnnxModelBuilder CustomOpModel() {
  OnnxModelBuilder m("custom");
  m.SetOpset("com.example", 1);
  m.AddInput("x", kFloat, std::vector<Dim>{2, 3});
  m.AddNode("Mystery", {"x"}, {"m"}, "mystery", {}, "com.example");
  m.AddNode("Relu", {"m"}, {"y"}, "relu");
  m.AddOutput("y");
  return m;
}

TEST(LoadModel, ReportsUnknownShapeWithItsConsumers) {
  TempDir dir;
  auto model = LoadModel(dir.Write("custom.onnx", CustomOpModel()), {});
  ASSERT_TRUE(model) << model.error().message;
  const UnknownShape* u = FindUnknown(*model, "m");
  ASSERT_NE(u, nullptr);
  EXPECT_EQ(u->graph, "");
  EXPECT_THAT(u->consumers, ElementsAre("Relu relu"));
  const UnknownShape* y = FindUnknown(*model, "y");
  ASSERT_NE(y, nullptr);
  EXPECT_TRUE(y->consumers.empty());  // a graph output
  EXPECT_EQ(FindUnknown(*model, "x"), nullptr);
}

TEST(LoadModel, NeverCountsUnknownShapeAsZeroBytes) {
  TempDir dir;
  auto model = LoadModel(dir.Write("custom.onnx", CustomOpModel()), {});
  ASSERT_TRUE(model) << model.error().message;
  const OpGraph& g = *model->graph;
  for (const char* name : {"m", "y"}) {
    const TensorView v = g.tensor(*g.FindTensor(name));
    EXPECT_FALSE(v.shape_known()) << name;
    EXPECT_EQ(v.elements, -1) << name;
    EXPECT_EQ(v.bytes, -1) << name;
  }
}

TEST(LoadModel, ReportsSymbolicDimsAsUnknownUntilBound) {
  TempDir dir;
  const std::string path = dir.Write("cnn.onnx", testlib::SmallCnn("N"));
  auto model = LoadModel(path, {});
  ASSERT_TRUE(model) << model.error().message;
  const OpGraph& g = *model->graph;
  const TensorView x = g.tensor(*g.FindTensor("x"));
  ASSERT_TRUE(x.dims);
  EXPECT_EQ(g.symbol((*x.dims)[0]), "N");
  EXPECT_EQ(FormatShape(g, *g.FindTensor("x")), "Nx3x8x8");
  EXPECT_EQ(x.bytes, -1);
  const UnknownShape* u = FindUnknown(*model, "x");
  ASSERT_NE(u, nullptr);
  EXPECT_THAT(u->consumers, ElementsAre("Conv conv"));
  EXPECT_NE(FindUnknown(*model, "logits"), nullptr);
  // Weights keep their known shapes.
  EXPECT_EQ(FindUnknown(*model, "fc_w"), nullptr);
  EXPECT_EQ(model->weights.elements, 2682);

  LoadOptions options;
  options.batch = 1;
  auto bound = LoadModel(path, options);
  ASSERT_TRUE(bound) << bound.error().message;
  EXPECT_TRUE(bound->unknown_shapes.empty());
}

TEST(LoadModel, ReportsUnknownShapesInsideSubgraphsWithTheGraphName) {
  testlib::OnnxGraphBuilder branch("the_branch");
  branch.AddNode("Mystery", {"x"}, {"inner"}, "inner_node", {}, "com.example");
  branch.AddNode("Relu", {"inner"}, {"r"}, "inner_relu");
  branch.AddOutput("r");
  OnnxModelBuilder m;
  m.SetOpset("com.example", 1);
  m.AddInput("cond", testlib::kBool, std::vector<Dim>{});
  m.AddInput("x", kFloat, std::vector<Dim>{2});
  m.AddIf("cond", {"y"}, "if", branch.proto(), branch.proto());
  m.AddOutput("y");
  TempDir dir;
  auto model = LoadModel(dir.Write("sub.onnx", m), {});
  ASSERT_TRUE(model) << model.error().message;
  const UnknownShape* u = FindUnknown(*model, "inner");
  ASSERT_NE(u, nullptr);
  EXPECT_EQ(u->graph, "the_branch");
  EXPECT_THAT(u->consumers, ElementsAre("Relu inner_relu"));
  // The captured x is known in the main graph: not reported from the branch.
  EXPECT_EQ(FindUnknown(*model, "x"), nullptr);
}

TEST(LoadModel, WarnsAboutUnknownOperatorDomain) {
  TempDir dir;
  auto model = LoadModel(dir.Write("custom.onnx", CustomOpModel()), {});
  ASSERT_TRUE(model) << model.error().message;
  ASSERT_EQ(model->warnings.size(), 1u);
  EXPECT_THAT(model->warnings[0],
              HasSubstr("unknown operator domain 'com.example' (1 nodes)"));
  EXPECT_EQ(model->graph->node(*model->graph->FindNode("mystery")).domain,
            "com.example");
  EXPECT_THAT(OpHistogram(*model->graph),
              ::testing::Contains(
                  std::pair<std::string, int64_t>("com.example:Mystery", 1)));
}

TEST(LoadModel, WarnsAboutOpsetNewerThanKnown) {
  OnnxModelBuilder m = testlib::SmallCnn(1);
  m.SetOpset("", 99);
  TempDir dir;
  auto model = LoadModel(dir.Write("future.onnx", m), {});
  ASSERT_TRUE(model) << model.error().message;
  ASSERT_FALSE(model->warnings.empty());
  EXPECT_THAT(model->warnings[0], HasSubstr("opset ai.onnx 99 is newer"));
  EXPECT_EQ(model->graph->num_nodes(), 4u);
  EXPECT_EQ(model->opsets[0].version, 99);
}

TEST(LoadModel, AcceptsAiOnnxAsTheStandardDomainName) {
  OnnxModelBuilder m = testlib::SmallCnn(1);
  m.proto().mutable_node(1)->set_domain("ai.onnx");
  TempDir dir;
  auto model = LoadModel(dir.Write("aionnx.onnx", m), {});
  ASSERT_TRUE(model) << model.error().message;
  for (const std::string& w : model->warnings) {
    EXPECT_THAT(w, ::testing::Not(HasSubstr("unknown operator domain")));
  }
  EXPECT_EQ(OpHistogram(*model->graph).size(), 4u);
}

}  // namespace
}  // namespace tessera::graph
