// --batch and --input: ParseInputBinding and binding inside LoadModel.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "graph/graph.h"
#include "tests/testlib/onnx_model_builder.h"

namespace tessera::graph {
namespace {

using ::testing::HasSubstr;
using testlib::Dim;
using testlib::OnnxModelBuilder;
using testlib::TempDir;

std::vector<int64_t> DimsOf(const Model& m, std::string_view name) {
  const OpGraph& g = *m.graph;
  const auto t = g.FindTensor(name);
  if (!t || !g.tensor(*t).dims) return {};
  const auto dims = *g.tensor(*t).dims;
  return {dims.begin(), dims.end()};
}

LoadOptions Batch(int64_t batch) {
  LoadOptions options;
  options.batch = batch;
  return options;
}

LoadOptions Bind(std::string name, std::vector<int64_t> dims) {
  LoadOptions options;
  options.inputs.push_back({std::move(name), std::move(dims)});
  return options;
}

Result<Model> LoadWith(const OnnxModelBuilder& m, const LoadOptions& options,
                       const TempDir& dir) {
  return LoadModel(dir.Write("model.onnx", m), options);
}

// input_ids[batch, seq] -Gather(table[100,16])-> embedded[batch, seq, 16]
OnnxModelBuilder Embedding() {
  OnnxModelBuilder m("embedding");
  m.AddInput("input_ids", testlib::kInt64,
             std::vector<Dim>{std::string("batch"), std::string("seq")});
  m.AddInitializer("table", {100, 16});
  m.AddNode("Gather", {"table", "input_ids"}, {"embedded"}, "gather");
  m.AddOutput("embedded");
  return m;
}

TEST(ParseInputBinding, ParsesNameAndDims) {
  auto b = ParseInputBinding("input_ids=1x128");
  ASSERT_TRUE(b) << b.error().message;
  EXPECT_EQ(b->name, "input_ids");
  EXPECT_EQ(b->dims, (std::vector<int64_t>{1, 128}));
}

TEST(ParseInputBinding, SplitsAtTheLastEqualsSign) {
  auto b = ParseInputBinding("a=b=7");
  ASSERT_TRUE(b) << b.error().message;
  EXPECT_EQ(b->name, "a=b");
  EXPECT_EQ(b->dims, (std::vector<int64_t>{7}));
}

TEST(ParseInputBinding, RejectsMalformedText) {
  for (const char* text : {"x=1xa", "=1", "x", "x=", "x=1x", "x=0", "x=-1",
                           "x=1x2x", "x=99999999999999999999"}) {
    auto b = ParseInputBinding(text);
    ASSERT_FALSE(b) << text;
    EXPECT_EQ(b.error().code, ErrorCode::kBadInput) << text;
    EXPECT_THAT(b.error().message, HasSubstr(std::string("'") + text + "'"));
  }
}

TEST(ParseInputBinding, NamesTheBadDimension) {
  auto b = ParseInputBinding("x=1xa");
  ASSERT_FALSE(b);
  EXPECT_THAT(b.error().message, HasSubstr("dimension 'a'"));
}

TEST(BatchBinding, BindsSymbolicLeadingDimAndInfersThrough) {
  TempDir dir;
  auto model = LoadWith(testlib::SmallCnn(std::string("N")), Batch(8), dir);
  ASSERT_TRUE(model) << model.error().message;
  EXPECT_EQ(DimsOf(*model, "x"), (std::vector<int64_t>{8, 3, 8, 8}));
  EXPECT_EQ(DimsOf(*model, "conv_out"), (std::vector<int64_t>{8, 4, 8, 8}));
  EXPECT_EQ(DimsOf(*model, "flat"), (std::vector<int64_t>{8, 256}));
  EXPECT_EQ(DimsOf(*model, "logits"), (std::vector<int64_t>{8, 10}));
  EXPECT_TRUE(model->unknown_shapes.empty());
}

TEST(BatchBinding, RebindsFixedExportedBatch) {
  TempDir dir;
  auto model = LoadWith(testlib::SmallCnn(1), Batch(4), dir);
  ASSERT_TRUE(model) << model.error().message;
  EXPECT_EQ(DimsOf(*model, "x"), (std::vector<int64_t>{4, 3, 8, 8}));
  EXPECT_EQ(DimsOf(*model, "logits"), (std::vector<int64_t>{4, 10}));
  EXPECT_TRUE(model->unknown_shapes.empty());
}

TEST(BatchBinding, RecomputesOutputShapesStoredInTheFile) {
  OnnxModelBuilder m = testlib::SmallCnn(1);
  m.proto().clear_output();
  m.AddOutput("logits", testlib::kFloat, std::vector<Dim>{1, 10});
  TempDir dir;
  auto model = LoadWith(m, Batch(2), dir);
  ASSERT_TRUE(model) << model.error().message;
  EXPECT_EQ(DimsOf(*model, "logits"), (std::vector<int64_t>{2, 10}));
}

TEST(BatchBinding, BindsOnlyInputsSharingTheExportedBatch) {
  OnnxModelBuilder m("two_inputs");
  m.AddInput("a", testlib::kFloat, std::vector<Dim>{1, 4});
  m.AddInput("b", testlib::kFloat, std::vector<Dim>{4, 4});
  m.AddNode("MatMul", {"a", "b"}, {"y"}, "mm");
  m.AddOutput("y");
  TempDir dir;
  auto model = LoadWith(m, Batch(3), dir);
  ASSERT_TRUE(model) << model.error().message;
  EXPECT_EQ(DimsOf(*model, "a"), (std::vector<int64_t>{3, 4}));
  EXPECT_EQ(DimsOf(*model, "b"), (std::vector<int64_t>{4, 4}));
  EXPECT_EQ(DimsOf(*model, "y"), (std::vector<int64_t>{3, 4}));
}

TEST(BatchBinding, RejectsNonPositiveBatch) {
  TempDir dir;
  for (const int64_t batch : {0, -3}) {
    auto model = LoadWith(testlib::SmallCnn(), Batch(batch), dir);
    ASSERT_FALSE(model) << batch;
    EXPECT_EQ(model.error().code, ErrorCode::kBadInput);
    EXPECT_THAT(model.error().message,
                HasSubstr("batch: must be a positive integer, got " +
                          std::to_string(batch)));
    EXPECT_THAT(model.error().message, HasSubstr(dir.File("model.onnx")));
  }
}

TEST(BatchBinding, WarnsWhenNoInputHasALeadingDim) {
  OnnxModelBuilder m("scalar");
  m.AddInput("s", testlib::kFloat, std::vector<Dim>{});
  m.AddNode("Relu", {"s"}, {"y"}, "relu");
  m.AddOutput("y");
  TempDir dir;
  auto model = LoadWith(m, Batch(2), dir);
  ASSERT_TRUE(model) << model.error().message;
  ASSERT_EQ(model->warnings.size(), 1u);
  EXPECT_THAT(model->warnings[0], HasSubstr("no effect"));
}

TEST(InputBinding, BindsNamedInput) {
  TempDir dir;
  auto model = LoadWith(Embedding(), Bind("input_ids", {1, 128}), dir);
  ASSERT_TRUE(model) << model.error().message;
  EXPECT_EQ(DimsOf(*model, "input_ids"), (std::vector<int64_t>{1, 128}));
  EXPECT_EQ(DimsOf(*model, "embedded"), (std::vector<int64_t>{1, 128, 16}));
  const OpGraph& g = *model->graph;
  EXPECT_EQ(g.tensor(*g.FindTensor("embedded")).bytes, 128 * 16 * 4);
  EXPECT_TRUE(model->unknown_shapes.empty());
}

TEST(InputBinding, InputBindingWinsOverBatch) {
  TempDir dir;
  LoadOptions options = Bind("input_ids", {2, 64});
  options.batch = 8;
  auto model = LoadWith(Embedding(), options, dir);
  ASSERT_TRUE(model) << model.error().message;
  EXPECT_EQ(DimsOf(*model, "embedded"), (std::vector<int64_t>{2, 64, 16}));
}

TEST(InputBinding, RejectsUnknownInputAndListsTheInputs) {
  TempDir dir;
  auto model = LoadWith(testlib::SmallCnn(), Bind("y", {1, 2}), dir);
  ASSERT_FALSE(model);
  EXPECT_EQ(model.error().code, ErrorCode::kBadInput);
  EXPECT_THAT(model.error().message, HasSubstr(dir.File("model.onnx")));
  // The field it fills (LoadOptions::inputs); the CLI says --input 'y'.
  EXPECT_THAT(model.error().message, HasSubstr("inputs.y: "));
  EXPECT_THAT(model.error().message, HasSubstr("its inputs: x)"));
}

TEST(InputBinding, RejectsWrongRankNamingBothRanks) {
  TempDir dir;
  auto model = LoadWith(testlib::SmallCnn(), Bind("x", {1, 3, 8}), dir);
  ASSERT_FALSE(model);
  EXPECT_EQ(model.error().code, ErrorCode::kBadInput);
  EXPECT_THAT(model.error().message, HasSubstr("inputs.x: "));
  EXPECT_THAT(model.error().message, HasSubstr("3 dimensions given"));
  EXPECT_THAT(model.error().message, HasSubstr("rank 4 (Nx3x8x8)"));
}

TEST(InputBinding, GivesAShapeToAnInputWithoutOne) {
  OnnxModelBuilder m("unshaped");
  m.AddInput("x", testlib::kFloat, std::nullopt);
  m.AddNode("Relu", {"x"}, {"y"}, "relu");
  m.AddOutput("y");
  TempDir dir;
  auto model = LoadWith(m, Bind("x", {2, 5}), dir);
  ASSERT_TRUE(model) << model.error().message;
  EXPECT_EQ(DimsOf(*model, "y"), (std::vector<int64_t>{2, 5}));
}

TEST(InputBinding, WarnsWhenOverridingAFixedNonBatchDim) {
  OnnxModelBuilder m("fixed");
  m.AddInput("x", testlib::kFloat, std::vector<Dim>{1, 4});
  m.AddNode("Relu", {"x"}, {"y"}, "relu");
  m.AddOutput("y");
  TempDir dir;
  auto model = LoadWith(m, Bind("x", {2, 6}), dir);
  ASSERT_TRUE(model) << model.error().message;
  EXPECT_EQ(DimsOf(*model, "y"), (std::vector<int64_t>{2, 6}));
  // The leading (batch) dim is rebound silently, like --batch.
  ASSERT_EQ(model->warnings.size(), 1u);
  EXPECT_THAT(model->warnings[0],
              HasSubstr("dimension 1 overrides the model's 4 with 6"));
}

}  // namespace
}  // namespace tessera::graph
