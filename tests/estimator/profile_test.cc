// ProfileModel on real zoo models: totals agree with the per-operator costs,
// training scales FLOPs by the backward factors, and unbound inputs are a
// clear error. Also the roofline of OpSeconds.
#include "estimator/profile.h"

#include <gtest/gtest.h>

#include "tests/testlib/onnx_model_builder.h"
#include "tests/testlib/repo_paths.h"

namespace tessera::estimator {
namespace {

graph::Model Load(const std::string& name, int64_t batch) {
  graph::LoadOptions options;
  options.batch = batch;
  auto m = graph::LoadModel(
      std::string(TESSERA_SOURCE_DIR) + "/models/zoo/" + name + ".onnx",
      options);
  EXPECT_TRUE(m) << m.error().message;
  return std::move(m).value();
}

const DeviceSpec& A100() {
  static const DeviceCatalog catalog = DeviceCatalog::BuiltIn();
  return *catalog.Find("a100-80gb");
}

TEST(ProfileModel, ResNet50Batch32MatchesPublishedMacsAndFits) {
  const graph::Model m = Load("resnet50", 32);
  auto p = ProfileModel(m, A100(), {});
  ASSERT_TRUE(p) << p.error().message;
  EXPECT_EQ(p->macs, 32 * int64_t{4'089'184'256});
  EXPECT_TRUE(p->fits);
  EXPECT_GT(p->seconds, 0.0);
  EXPECT_EQ(p->inexact_ops, 0);
  double sum = 0;
  for (const auto& op : p->ops) sum += op.seconds;
  EXPECT_DOUBLE_EQ(sum, p->seconds);
  EXPECT_EQ(p->memory.weights, m.weights.bytes);
  EXPECT_GT(p->memory.activations, 0);
  EXPECT_NE(p->memory.peak_at, graph::kNoNode);
}

TEST(ProfileModel, TrainingTriplesMatrixFlopsAndAddsOptimizerState) {
  const graph::Model m = Load("bert_base", 4);
  auto inference = ProfileModel(m, A100(), {});
  ProfileOptions train;
  train.training = true;
  auto training = ProfileModel(m, A100(), train);
  ASSERT_TRUE(inference && training);
  const auto& mi = inference->classes[static_cast<size_t>(OpClass::kMatrix)];
  const auto& mt = training->classes[static_cast<size_t>(OpClass::kMatrix)];
  EXPECT_EQ(mt.flops, 3 * mi.flops);
  EXPECT_EQ(training->macs, inference->macs);
  EXPECT_EQ(training->memory.optimizer_state, 8 * m.weights.elements);
  EXPECT_GT(training->memory.total(), inference->memory.total());
  EXPECT_GT(training->seconds, 2 * inference->seconds);
}

TEST(ProfileModel, GptTwoInFp32DoesNotFitATrainingStepOnAT4) {
  const graph::Model m = Load("gpt2", 8);
  static const DeviceCatalog catalog = DeviceCatalog::BuiltIn();
  ProfileOptions train;
  train.training = true;
  auto p = ProfileModel(m, *catalog.Find("t4"), train);
  ASSERT_TRUE(p) << p.error().message;
  EXPECT_FALSE(p->fits);
}

TEST(ProfileModel, UnboundInputNamesTheInputAndHowToBindIt) {
  testlib::TempDir dir;
  const std::string path = dir.Write("cnn.onnx", testlib::SmallCnn());
  auto m = graph::LoadModel(path, {});
  ASSERT_TRUE(m) << m.error().message;
  auto p = ProfileModel(*m, A100(), {});
  ASSERT_FALSE(p);
  EXPECT_EQ(p.error().code, ErrorCode::kBadInput);
  EXPECT_NE(p.error().message.find("input 'x'"), std::string::npos);
  EXPECT_NE(p.error().message.find("--batch"), std::string::npos);
}

TEST(OpSeconds, IsTheSlowerOfComputeAndMemoryPlusLaunch) {
  const DeviceSpec& d = A100();
  const TimeModel model = TimeModel::Defaults();
  OpCost gemm;
  gemm.op_class = OpClass::kMatrix;
  gemm.flops = int64_t{312'000'000'000'000};  // 1 s at peak fp16
  gemm.bytes_read = 1000;
  const double t = OpSeconds(gemm, graph::DataType::kFloat16, d, model);
  EXPECT_NEAR(t, 1.0 / model.of(OpClass::kMatrix).compute + d.launch_overhead_s,
              1e-9);
  OpCost copy;
  copy.op_class = OpClass::kDataMovement;
  copy.bytes_read = copy.bytes_written = 1'019'500'000'000 / 1000;
  const double c = OpSeconds(copy, graph::DataType::kFloat32, d, model);
  EXPECT_NEAR(
      c,
      2.0 * copy.bytes_read /
              (d.memory_bandwidth * model.of(OpClass::kDataMovement).memory) +
          d.launch_overhead_s,
      1e-12);
  EXPECT_EQ(OpSeconds(OpCost{}, graph::DataType::kFloat32, d, model), 0.0);
}

}  // namespace
}  // namespace tessera::estimator
