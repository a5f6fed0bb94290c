// The model zoo (structure-only files: the weights' data file is absent)
// split under auto's plan on the crumbs cluster and under a random plan over
// four devices: every part passes ONNX's checker, the split is well formed,
// and the device map recovers PyTorch module paths. One test per model.
#include <gtest/gtest.h>

#include "tests/split/split_fixtures.h"
#include "tests/testlib/onnx_model_builder.h"
#include "tests/testlib/repo_paths.h"

namespace tessera::split {
namespace {

namespace fs = std::filesystem;
using testing::Json;

const std::string kRoot = TESSERA_SOURCE_DIR;

class ZooSplit : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    graph::LoadOptions options;
    options.keep_proto = true;
    auto model = graph::LoadModel(kRoot + "/models/zoo/" + GetParam() + ".onnx",
                                  options);
    ASSERT_TRUE(model) << model.error().message;
    model_ = std::move(model).value();
  }

  // Splits by `plan` and checks what every split must satisfy.
  SplitResult SplitAndCheck(const PlanAssignment& plan, const fs::path& dir) {
    SplitOptions options;
    options.out_dir = dir.string();
    auto result = SplitModel(model_, plan, options);
    EXPECT_TRUE(result) << result.error().message;
    if (!result) return {};
    testing::ExpectWellFormed(*model_.graph, result->partition);
    // Structure-only: the data file is missing, and split says so.
    EXPECT_FALSE(result->warnings.empty());
    for (const std::string& w : result->warnings) {
      EXPECT_NE(w.find(".onnx.data"), std::string::npos) << w;
    }
    // Every part file parses back; together they hold every weight.
    size_t initializers = 0;
    for (size_t i = 0; i < result->partition.parts.size(); ++i) {
      onnx::ModelProto part;
      std::ifstream in(dir / PartFileName(static_cast<int>(i)),
                       std::ios::binary);
      EXPECT_TRUE(part.ParseFromIstream(&in)) << i;
      initializers += static_cast<size_t>(part.graph().initializer_size());
    }
    EXPECT_GE(initializers,
              static_cast<size_t>(model_.proto->graph().initializer_size()));
    return std::move(result).value();
  }

  graph::Model model_;
};

TEST_P(ZooSplit, AutoPlanOnCrumbs) {
  const auto catalog = estimator::DeviceCatalog::BuiltIn();
  auto cluster =
      placer::LoadCluster(kRoot + "/models/clusters/crumbs.yaml", catalog, {});
  ASSERT_TRUE(cluster) << cluster.error().message;
  auto plan = testing::PlacerPlan(model_, *cluster, placer::Algorithm::kAuto);
  ASSERT_TRUE(plan) << plan.error().message;
  testlib::TempDir dir;
  const SplitResult r = SplitAndCheck(*plan, dir.path() / "parts");
  // No crumb holds these by itself (models/clusters/crumbs.yaml).
  if (GetParam() == "gpt2" || GetParam() == "bert_base" ||
      GetParam() == "vgg16") {
    EXPECT_GE(r.partition.devices_used, 2) << "crumbs forces a split";
  }
  // Exported by PyTorch: the node names carry module paths.
  EXPECT_GT(r.device_map["mapped_nodes"].get<int>(), 0);
  testing::ExpectDeviceMapConsistent(*model_.graph, r.partition, r.device_map);
}

TEST_P(ZooSplit, RandomPlanWithDeviceCycles) {
  testlib::TempDir dir;
  const SplitResult r = SplitAndCheck(testing::RandomPlan(*model_.graph, 4, 42),
                                      dir.path() / "parts");
  EXPECT_TRUE(r.partition.device_cycle());
  testing::ExpectDeviceMapConsistent(*model_.graph, r.partition, r.device_map);
}

TEST_P(ZooSplit, OneDeviceIsOnePartAndTheWholeModelInTheMap) {
  PlanAssignment plan = testing::RandomPlan(*model_.graph, 1, 1);
  testlib::TempDir dir;
  const SplitResult r = SplitAndCheck(plan, dir.path() / "parts");
  ASSERT_EQ(r.partition.parts.size(), 1u);
  EXPECT_TRUE(r.partition.transfers.empty());
  EXPECT_EQ(r.device_map["device_map"], Json({{"", 0}}));
}

INSTANTIATE_TEST_SUITE_P(Zoo, ZooSplit,
                         ::testing::Values("resnet50", "mobilenet_v2",
                                           "inception_v3", "vgg16", "vit_b_16",
                                           "gpt2", "bert_base"));

}  // namespace
}  // namespace tessera::split
