// Golden MACs for the model zoo (models/zoo/): one instance per model, so a
// changed formula shows up as a named model. The MACs over Conv,
// ConvTranspose, Gemm and MatMul at batch 1 must equal the exact integer in
// models/zoo/figures.json (computed in Python from the same files) and the
// published GMACs (torchvision's "GFLOPS" column) to their precision.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "estimator/op_cost.h"
#include "graph/graph.h"
#include "tests/testlib/repo_paths.h"

namespace tessera::estimator {
namespace {

struct ZooMacs {
  std::string name;
  int64_t macs;                     // batch 1, from figures.json
  std::optional<double> published;  // GMACs as published
  int decimals = 3;                 // the precision of `published`
};

// Names the model in test output instead of dumping the struct's bytes.
void PrintTo(const ZooMacs& z, std::ostream* os) { *os << z.name; }

const ZooMacs kZoo[] = {
    {"resnet50", 4'089'184'256, 4.089, 3},
    {"mobilenet_v2", 300'774'272, 0.301, 3},
    {"inception_v3", 5'713'216'096, 5.713, 3},
    {"vgg16", 15'470'264'320, 15.47, 2},
    {"vit_b_16", 17'563'828'224, 17.56, 2},
    {"gpt2", 145'824'153'600, std::nullopt},
    {"bert_base", 11'174'215'680, std::nullopt},
};

std::string ZooDir() { return std::string(TESSERA_SOURCE_DIR) + "/models/zoo"; }

bool IsMatrixOrConv(std::string_view op_type) {
  return op_type == "Conv" || op_type == "ConvTranspose" || op_type == "Gemm" ||
         op_type == "MatMul";
}

class OpCostZoo : public ::testing::TestWithParam<ZooMacs> {
 protected:
  // Loads the model at `batch` and costs every node.
  void Load(int64_t batch) {
    graph::LoadOptions options;
    if (batch != 1) options.batch = batch;
    auto model =
        graph::LoadModel(ZooDir() + "/" + GetParam().name + ".onnx", options);
    ASSERT_TRUE(model) << model.error().message;
    model_ = std::move(model).value();
    costs_ = CostAll(*model_.graph);
    ASSERT_EQ(costs_.size(), model_.graph->num_nodes());
  }

  int64_t MatrixAndConvMacs() const {
    int64_t macs = 0;
    for (graph::NodeId n = 0; n < costs_.size(); ++n) {
      if (IsMatrixOrConv(model_.graph->node(n).op_type)) macs += costs_[n].macs;
    }
    return macs;
  }

  graph::Model model_;
  std::vector<OpCost> costs_;
};

TEST_P(OpCostZoo, MacsMatchFiguresJsonAtBatch1) {
  Load(1);
  EXPECT_EQ(MatrixAndConvMacs(), GetParam().macs);
}

// The models with published GMACs (torchvision's tables).
class OpCostZooPublished : public OpCostZoo {};

TEST_P(OpCostZooPublished, MacsMatchPublishedGmacs) {
  const ZooMacs& z = GetParam();
  ASSERT_TRUE(z.published);
  Load(1);
  const double scale = std::pow(10.0, z.decimals);
  const double gmacs = static_cast<double>(MatrixAndConvMacs()) / 1e9;
  EXPECT_EQ(std::round(gmacs * scale), std::round(*z.published * scale))
      << gmacs << " GMACs";
}

TEST_P(OpCostZoo, LiteralAgreesWithFiguresJson) {
  std::ifstream in(ZooDir() + "/figures.json");
  ASSERT_TRUE(in) << ZooDir() << "/figures.json is missing";
  const auto figures = nlohmann::json::parse(in);
  ASSERT_TRUE(figures.contains(GetParam().name));
  EXPECT_EQ(figures[GetParam().name]["macs"].get<int64_t>(), GetParam().macs);
}

TEST_P(OpCostZoo, MacsScaleLinearlyWithBatch) {
  Load(8);
  EXPECT_EQ(MatrixAndConvMacs(), 8 * GetParam().macs);
}

TEST_P(OpCostZoo, EveryOperatorIsExactAndNonNegative) {
  Load(1);
  for (graph::NodeId n = 0; n < costs_.size(); ++n) {
    const OpCost& c = costs_[n];
    const std::string what = graph::DescribeNode(*model_.graph, n);
    EXPECT_TRUE(c.exact) << what << ": " << c.note;
    EXPECT_GE(c.macs, 0) << what;
    EXPECT_GE(c.flops, 2 * c.macs) << what;
    EXPECT_GE(c.bytes_read, c.weight_bytes) << what;
    EXPECT_GE(c.bytes_written, 0) << what;
    EXPECT_GE(c.output_bytes, 0) << what;
  }
}

std::string ModelName(const ::testing::TestParamInfo<ZooMacs>& info) {
  return info.param.name;
}

std::vector<ZooMacs> Published() {
  std::vector<ZooMacs> out;
  for (const ZooMacs& z : kZoo) {
    if (z.published) out.push_back(z);
  }
  return out;
}

INSTANTIATE_TEST_SUITE_P(Zoo, OpCostZoo, ::testing::ValuesIn(kZoo), ModelName);
INSTANTIATE_TEST_SUITE_P(Zoo, OpCostZooPublished,
                         ::testing::ValuesIn(Published()), ModelName);

}  // namespace
}  // namespace tessera::estimator
