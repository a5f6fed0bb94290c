// LoadModel on small models built in code: structure, shapes and weights.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "graph/graph.h"
#include "tests/testlib/onnx_model_builder.h"

namespace tessera::graph {
namespace {

using testlib::Dim;
using testlib::kFloat;
using testlib::OnnxGraphBuilder;
using testlib::OnnxModelBuilder;
using testlib::TempDir;

std::vector<int64_t> DimsOf(const OpGraph& g, std::string_view name) {
  const auto t = g.FindTensor(name);
  if (!t) return {-100};
  const TensorView v = g.tensor(*t);
  if (!v.dims) return {-200};
  return {v.dims->begin(), v.dims->end()};
}

TEST(LoadModel, LoadsSmallCnn) {
  TempDir dir;
  const std::string path = dir.Write("cnn.onnx", testlib::SmallCnn(1));
  auto model = LoadModel(path, {});
  ASSERT_TRUE(model) << model.error().message;
  const OpGraph& g = *model->graph;
  EXPECT_EQ(model->path, path);
  EXPECT_EQ(model->graph_name, "small_cnn");
  EXPECT_EQ(model->producer_name, "tessera_testlib");
  EXPECT_EQ(model->ir_version, 8);
  ASSERT_EQ(model->opsets.size(), 1u);
  EXPECT_EQ(model->opsets[0].version, 13);
  EXPECT_EQ(g.num_nodes(), 4u);
  EXPECT_EQ(g.num_nodes_with_subgraphs(), 4u);
  EXPECT_EQ(g.num_edges(), 3u);  // conv->relu->flatten->fc
  ASSERT_EQ(g.inputs().size(), 1u);
  EXPECT_EQ(g.tensor(g.inputs()[0]).name, "x");
  EXPECT_EQ(g.tensor(g.inputs()[0]).dtype, DataType::kFloat32);
  ASSERT_EQ(g.outputs().size(), 1u);
  EXPECT_EQ(g.tensor(g.outputs()[0]).name, "logits");
  EXPECT_EQ(DimsOf(g, "x"), (std::vector<int64_t>{1, 3, 8, 8}));
  EXPECT_EQ(DimsOf(g, "conv_out"), (std::vector<int64_t>{1, 4, 8, 8}));
  EXPECT_EQ(DimsOf(g, "flat"), (std::vector<int64_t>{1, 256}));
  EXPECT_EQ(DimsOf(g, "logits"), (std::vector<int64_t>{1, 10}));
  EXPECT_EQ(g.tensor(*g.FindTensor("conv_out")).bytes, 4 * 8 * 8 * 4);
  EXPECT_TRUE(model->unknown_shapes.empty());
  EXPECT_TRUE(model->warnings.empty());
}

TEST(LoadModel, RetypesFloatTensorsForWhatIfPrecision) {
  TempDir dir;
  const std::string path = dir.Write("cnn.onnx", testlib::SmallCnn(1));
  auto fp32 = LoadModel(path, {});
  ASSERT_TRUE(fp32) << fp32.error().message;
  LoadOptions half;
  half.float_type = DataType::kBfloat16;
  auto bf16 = LoadModel(path, half);
  ASSERT_TRUE(bf16) << bf16.error().message;
  EXPECT_EQ(bf16->weights.elements, fp32->weights.elements);
  EXPECT_EQ(2 * bf16->weights.bytes, fp32->weights.bytes);
  const OpGraph& g = *bf16->graph;
  EXPECT_EQ(g.tensor(*g.FindTensor("conv_out")).dtype, DataType::kBfloat16);
  EXPECT_EQ(g.tensor(*g.FindTensor("conv_out")).bytes, 4 * 8 * 8 * 2);
}

TEST(ParseFloatType, AcceptsShortAndLongNames) {
  EXPECT_EQ(*ParseFloatType("fp16"), DataType::kFloat16);
  EXPECT_EQ(*ParseFloatType("bfloat16"), DataType::kBfloat16);
  EXPECT_EQ(*ParseFloatType("fp32"), DataType::kFloat32);
  auto bad = ParseFloatType("int8");
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().code, ErrorCode::kBadInput);
  // The field it fills (LoadOptions::float_type), not a command's flag.
  EXPECT_EQ(bad.error().message,
            "float_type 'int8': expected fp32, fp16 or bf16");
}

TEST(LoadModel, ReportsProgressStages) {
  TempDir dir;
  std::vector<std::string> stages;
  LoadOptions options;
  options.progress = [&](std::string_view s) { stages.emplace_back(s); };
  auto model = LoadModel(dir.Write("cnn.onnx", testlib::SmallCnn(1)), options);
  ASSERT_TRUE(model) << model.error().message;
  ASSERT_FALSE(stages.empty());
  EXPECT_EQ(stages.front(), "reading");
  EXPECT_NE(std::find(stages.begin(), stages.end(), "inferring shapes"),
            stages.end());
}

TEST(LoadModel, CountsInitializerWeights) {
  TempDir dir;
  auto model = LoadModel(dir.Write("cnn.onnx", testlib::SmallCnn(1)), {});
  ASSERT_TRUE(model) << model.error().message;
  EXPECT_EQ(model->weights.tensors, 4);
  EXPECT_EQ(model->weights.elements, 108 + 4 + 2560 + 10);
  EXPECT_EQ(model->weights.bytes, 4 * model->weights.elements);
  const OpGraph& g = *model->graph;
  EXPECT_EQ(g.weights().size(), 4u);
  for (const TensorId t : g.weights()) {
    EXPECT_EQ(g.tensor(t).kind, TensorKind::kInitializer);
    EXPECT_EQ(g.tensor(t).producer, kNoNode);
  }
  EXPECT_EQ(g.inputs().size(), 1u);  // weights are not inputs
}

TEST(LoadModel, InitializersListedAsInputsAreWeightsNotInputs) {
  OnnxModelBuilder m = testlib::SmallCnn(1);
  m.SetIrVersion(3);
  m.AddInput("w", kFloat, std::vector<Dim>{4, 3, 3, 3});
  TempDir dir;
  auto model = LoadModel(dir.Write("ir3.onnx", m), {});
  ASSERT_TRUE(model) << model.error().message;
  ASSERT_EQ(model->graph->inputs().size(), 1u);
  EXPECT_EQ(model->graph->tensor(model->graph->inputs()[0]).name, "x");
  EXPECT_EQ(model->weights.tensors, 4);
}

TEST(LoadModel, CountsConstantNodesAsWeights) {
  OnnxModelBuilder m;
  m.AddInput("x", kFloat, std::vector<Dim>{2, 3});
  m.AddConstant("c", {2, 3});
  m.AddNode("Add", {"x", "c"}, {"y"}, "add");
  m.AddOutput("y");
  TempDir dir;
  auto model = LoadModel(dir.Write("const.onnx", m), {});
  ASSERT_TRUE(model) << model.error().message;
  EXPECT_EQ(model->graph->num_nodes(), 2u);
  EXPECT_EQ(model->weights.tensors, 1);
  EXPECT_EQ(model->weights.elements, 6);
  EXPECT_EQ(model->weights.bytes, 24);
  const TensorView c = model->graph->tensor(*model->graph->FindTensor("c"));
  EXPECT_EQ(c.kind, TensorKind::kConstant);
  EXPECT_EQ(c.producer, *model->graph->FindNode("c_node"));
}

TEST(LoadModel, CountsWeightSharedByTwoNodesOnce) {
  OnnxModelBuilder m;
  m.AddInput("x", kFloat, std::vector<Dim>{2, 16});
  m.AddInitializer("shared", {16, 16});
  m.AddNode("MatMul", {"x", "shared"}, {"h"}, "mm1");
  m.AddNode("MatMul", {"h", "shared"}, {"y"}, "mm2");
  m.AddOutput("y");
  TempDir dir;
  auto model = LoadModel(dir.Write("shared.onnx", m), {});
  ASSERT_TRUE(model) << model.error().message;
  EXPECT_EQ(model->weights.tensors, 1);
  EXPECT_EQ(model->weights.elements, 256);
  const OpGraph& g = *model->graph;
  EXPECT_EQ(g.consumers(*g.FindTensor("shared")).size(), 2u);
}

// Main graph: x -Relu-> outer; If(cond) whose branches each add a Constant
// to `outer`, captured from the main graph.
OnnxModelBuilder IfModel() {
  OnnxGraphBuilder then_branch("then_graph");
  then_branch.AddConstant("c_then", {2, 3});
  then_branch.AddNode("Add", {"outer", "c_then"}, {"then_out"}, "then_add");
  then_branch.AddOutput("then_out");
  OnnxGraphBuilder else_branch("else_graph");
  else_branch.AddConstant("c_else", {3});
  else_branch.AddNode("Mul", {"outer", "c_else"}, {"else_out"}, "else_mul");
  else_branch.AddOutput("else_out");

  OnnxModelBuilder m("with_if");
  m.AddInput("cond", testlib::kBool, std::vector<Dim>{});
  m.AddInput("x", kFloat, std::vector<Dim>{2, 3});
  m.AddInitializer("main_w", {2, 3});
  m.AddNode("Add", {"x", "main_w"}, {"outer"}, "pre");
  m.AddIf("cond", {"y"}, "branch", then_branch.proto(), else_branch.proto());
  m.AddOutput("y");
  return m;
}

TEST(LoadModel, IfNodeIsOneNodeOwningItsBranches) {
  TempDir dir;
  auto model = LoadModel(dir.Write("if.onnx", IfModel()), {});
  ASSERT_TRUE(model) << model.error().message;
  const OpGraph& g = *model->graph;
  EXPECT_EQ(g.num_nodes(), 2u);
  EXPECT_EQ(g.num_nodes_with_subgraphs(), 6u);
  const auto if_node = g.FindNode("branch");
  ASSERT_TRUE(if_node);
  const NodeView v = g.node(*if_node);
  EXPECT_EQ(v.op_type, "If");
  ASSERT_EQ(v.subgraphs.size(), 2u);
  EXPECT_EQ(g.subgraph(v.subgraphs[0]).name(), "then_graph");
  EXPECT_EQ(g.subgraph(v.subgraphs[1]).name(), "else_graph");
  EXPECT_EQ(g.subgraph(v.subgraphs[0]).num_nodes(), 2u);
  // Branch nodes are not visible in the main graph.
  EXPECT_FALSE(g.FindNode("then_add"));
}

TEST(LoadModel, OuterScopeTensorBecomesImplicitInputAndEdge) {
  TempDir dir;
  auto model = LoadModel(dir.Write("if.onnx", IfModel()), {});
  ASSERT_TRUE(model) << model.error().message;
  const OpGraph& g = *model->graph;
  const NodeId pre = *g.FindNode("pre");
  const NodeId branch = *g.FindNode("branch");
  const TensorId outer = *g.FindTensor("outer");
  const NodeView v = g.node(branch);
  ASSERT_EQ(v.implicit_inputs.size(), 1u);
  EXPECT_EQ(v.implicit_inputs[0], outer);
  ASSERT_EQ(v.inputs.size(), 1u);
  EXPECT_EQ(g.tensor(v.inputs[0]).name, "cond");
  const auto consumers = g.consumers(outer);
  EXPECT_NE(std::find(consumers.begin(), consumers.end(), branch),
            consumers.end());
  ASSERT_EQ(g.num_edges(), 1u);
  const Dag& dag = g.dag();
  const auto [it, end] = boost::edges(dag);
  ASSERT_NE(it, end);
  EXPECT_EQ(boost::source(*it, dag), pre);
  EXPECT_EQ(boost::target(*it, dag), branch);
  EXPECT_EQ(dag[*it].tensor, outer);
  // Inside the branch, the captured tensor is an outer-scope tensor.
  const OpGraph& then_graph = g.subgraph(v.subgraphs[0]);
  const TensorView captured =
      then_graph.tensor(*then_graph.FindTensor("outer"));
  EXPECT_EQ(captured.kind, TensorKind::kOuterScope);
  EXPECT_EQ(captured.producer, kNoNode);
}

TEST(LoadModel, CountsConstantsInsideIfBranches) {
  TempDir dir;
  auto model = LoadModel(dir.Write("if.onnx", IfModel()), {});
  ASSERT_TRUE(model) << model.error().message;
  // main_w (6) + c_then (6) + c_else (3).
  EXPECT_EQ(model->weights.tensors, 3);
  EXPECT_EQ(model->weights.elements, 15);
  EXPECT_EQ(model->weights.bytes, 60);
  std::set<std::string> names;
  int64_t elements = 0;
  std::vector<const OpGraph*> graphs = {model->graph.get()};
  for (size_t i = 0; i < graphs.size(); ++i) {
    const OpGraph& g = *graphs[i];
    for (const TensorId t : g.weights()) {
      names.insert(std::string(g.tensor(t).name));
      elements += g.tensor(t).elements;
    }
    for (uint32_t s = 0; s < g.num_subgraphs(); ++s) {
      graphs.push_back(&g.subgraph(s));
    }
  }
  EXPECT_EQ(names, (std::set<std::string>{"main_w", "c_then", "c_else"}));
  EXPECT_EQ(model->weights.elements, elements);
}

TEST(LoadModel, ExternalDataFileMayBeAbsent) {
  OnnxModelBuilder m;
  m.AddInput("x", kFloat, std::vector<Dim>{2, 32});
  m.AddInitializer("big", {32, 64}, testlib::kFloat16,
                   testlib::ExternalData{"does_not_exist.bin", 0, 4096});
  m.AddNode("Cast", {"x"}, {"xh"}, "cast",
            {testlib::IntAttr("to", testlib::kFloat16)});
  m.AddNode("MatMul", {"xh", "big"}, {"y"}, "mm");
  m.AddOutput("y", testlib::kFloat16);
  TempDir dir;
  const std::string path = dir.Write("external.onnx", m);
  ASSERT_FALSE(std::filesystem::exists(dir.File("does_not_exist.bin")));
  auto model = LoadModel(path, {});
  ASSERT_TRUE(model) << model.error().message;
  const OpGraph& g = *model->graph;
  const TensorView big = g.tensor(*g.FindTensor("big"));
  EXPECT_EQ(big.kind, TensorKind::kInitializer);
  EXPECT_EQ(big.dtype, DataType::kFloat16);
  EXPECT_EQ(big.elements, 32 * 64);
  EXPECT_EQ(big.bytes, 32 * 64 * 2);
  EXPECT_EQ(model->weights.bytes, 4096);
  EXPECT_EQ(DimsOf(g, "y"), (std::vector<int64_t>{2, 64}));
}

}  // namespace
}  // namespace tessera::graph
