// ModelSummaryJson and WriteDot on a loaded model.
#include "graph/export.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "tests/testlib/onnx_model_builder.h"

namespace tessera::graph {
namespace {

using ::testing::HasSubstr;

Model LoadCnn(const testlib::TempDir& dir, const testlib::Dim& batch) {
  auto model = LoadModel(dir.Write("cnn.onnx", testlib::SmallCnn(batch)), {});
  EXPECT_TRUE(model) << model.error().message;
  return std::move(model).value();
}

TEST(ModelSummaryJson, HasTheDocumentedKeys) {
  testlib::TempDir dir;
  const Model model = LoadCnn(dir, 1);
  const auto j = nlohmann::json::parse(ModelSummaryJson(model));
  EXPECT_EQ(j["nodes"], 4);
  EXPECT_EQ(j["nodes_with_subgraphs"], 4);
  EXPECT_EQ(j["edges"], 3);
  EXPECT_EQ(j["op_histogram"]["Conv"], 1);
  EXPECT_EQ(j["weights"]["tensors"], 4);
  EXPECT_EQ(j["weights"]["elements"], 2682);
  EXPECT_EQ(j["weights"]["bytes"], 2682 * 4);
  ASSERT_EQ(j["inputs"].size(), 1u);
  EXPECT_EQ(j["inputs"][0]["name"], "x");
  EXPECT_EQ(j["inputs"][0]["dtype"], "float32");
  EXPECT_EQ(j["inputs"][0]["shape"], nlohmann::json({1, 3, 8, 8}));
  EXPECT_EQ(j["outputs"][0]["shape"], nlohmann::json({1, 10}));
  EXPECT_EQ(j["unknown_shapes"], 0);
  EXPECT_EQ(j["model"]["path"], dir.File("cnn.onnx"));
  EXPECT_EQ(j["model"]["opsets"]["ai.onnx"], 13);
}

TEST(ModelSummaryJson, WritesSymbolsByNameAndListsUnknownTensors) {
  testlib::TempDir dir;
  const Model model = LoadCnn(dir, std::string("batch"));
  const auto j = nlohmann::json::parse(ModelSummaryJson(model));
  EXPECT_EQ(j["inputs"][0]["shape"], nlohmann::json({"batch", 3, 8, 8}));
  EXPECT_EQ(j["unknown_shapes"], model.unknown_shapes.size());
  EXPECT_GT(j["unknown_shapes"].get<int>(), 0);
  EXPECT_EQ(j["unknown_shape_tensors"][0]["tensor"], "x");
  EXPECT_EQ(j["unknown_shape_tensors"][0]["consumers"][0], "Conv conv");
}

TEST(WriteDot, DrawsNodesEdgesInputsAndOutputs) {
  testlib::TempDir dir;
  const Model model = LoadCnn(dir, 1);
  std::ostringstream out;
  WriteDot(*model.graph, out);
  const std::string dot = out.str();
  EXPECT_THAT(dot, ::testing::StartsWith("digraph \"small_cnn\" {"));
  EXPECT_THAT(dot, HasSubstr("\"in:x\" -> n0;"));
  EXPECT_THAT(dot, HasSubstr("n0 -> n1 [label=\"1x4x8x8\"];"));
  EXPECT_THAT(dot, HasSubstr("n3 -> \"out:logits\";"));
  EXPECT_THAT(dot, ::testing::EndsWith("}\n"));
}

}  // namespace
}  // namespace tessera::graph
