// The placer priced by the runtime model (ProblemOptions::runtime): each
// op's time is its kernels' GPU time under PyTorch eager, never less than
// its host dispatch; one GPU's simulated step is the runtime model's step;
// a CPU device stays on the roofline; the default stays the roofline.

#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "estimator/estimator.h"
#include "estimator/runtime/runtime.h"
#include "placer/core/problem.h"
#include "placer/core/simulator.h"
#include "tests/placer/test_problems.h"
#include "tests/testlib/repo_paths.h"

namespace tessera::placer {
namespace {

graph::Model Zoo(const std::string& name, int64_t batch) {
  graph::LoadOptions o;
  o.batch = batch;
  auto m = graph::LoadModel(
      std::string(TESSERA_SOURCE_DIR) + "/models/zoo/" + name + ".onnx", o);
  EXPECT_TRUE(m) << m.error().message;
  return std::move(m).value();
}

Cluster OneGpu(const char* kind) {
  Cluster c = testing::UniformCluster(1, int64_t{80} << 30);
  c.devices[0].spec = *estimator::DeviceCatalog::BuiltIn().Find(kind);
  return c;
}

double StepOnOne(const Problem& p, const Cluster& c) {
  Placement all;
  all.device.assign(p.num_ops(), 0);
  return Simulate(p, c, all).step_s;
}

estimator::RuntimeEstimate Runtime(const graph::Model& m,
                                   const estimator::DeviceSpec& d, bool train,
                                   estimator::Amp amp) {
  estimator::RuntimeOptions o;
  o.training = train;
  o.amp = amp;
  auto e = estimator::EstimateRuntime(m, estimator::CostAll(*m.graph), d, o);
  EXPECT_TRUE(e) << e.error().message;
  return std::move(e).value();
}

TEST(RuntimePricing, DefaultIsTheRoofline) {
  EXPECT_EQ(ProblemOptions{}.runtime, estimator::Runtime::kRoofline);
}

// Each op costs its GPU time and, on a host-bound step, nearly its
// dispatch.
TEST(RuntimePricing, OpsCostTheirKernelsAndTheDispatchLeftBare) {
  const graph::Model m = Zoo("resnet50", 1);
  const Cluster c = OneGpu("h100-sxm");
  ProblemOptions o;
  o.runtime = estimator::Runtime::kPyTorch;
  auto p = BuildProblem(m, c, o);
  ASSERT_TRUE(p) << p.error().message;
  const auto e = Runtime(m, c.devices[0].spec, false, estimator::Amp::kNone);
  double sum = 0, host = 0;
  for (OpId op = 0; op < p->num_ops(); ++op) {
    const double t = p->Forward(op, 0, 1.0);
    EXPECT_GE(t, e.node_forward_seconds[op] - 1e-15) << p->names[op];
    EXPECT_LE(t, e.node_forward_seconds[op] + e.node_host_seconds[op] + 1e-15)
        << p->names[op];
    sum += t;
    host += e.node_host_seconds[op];
  }
  // Batch 1 is host-bound: the ops add up to the step, more than the GPU
  // works.
  EXPECT_GT(e.host_s, e.gpu_busy_s);
  EXPECT_NEAR(sum / e.step_s, 1.0, 0.02);
  EXPECT_GT(host, 0);
}

// On one GPU the placer's step is the runtime model's, within what the
// per-op bound loses against the runtime's overlap of host and GPU (and
// the loss and optimizer, which no op carries).
TEST(RuntimePricing, OneGpuStepIsTheRuntimeStep) {
  struct Case {
    const char* model;
    int64_t batch;
    bool train;
    estimator::Amp amp;
  };
  for (const Case& k : {Case{"resnet50", 32, false, estimator::Amp::kNone},
                        Case{"resnet50", 32, true, estimator::Amp::kNone},
                        Case{"vit_b_16", 32, false, estimator::Amp::kBf16},
                        Case{"gpt2", 8, true, estimator::Amp::kBf16}}) {
    const graph::Model m = Zoo(k.model, k.batch);
    const Cluster c = OneGpu("a100-80gb");
    ProblemOptions o;
    o.runtime = estimator::Runtime::kPyTorch;
    o.training = k.train;
    o.amp = k.amp;
    auto p = BuildProblem(m, c, o);
    ASSERT_TRUE(p) << p.error().message;
    const double placer = StepOnOne(*p, c);
    const double runtime = Runtime(m, c.devices[0].spec, k.train, k.amp).step_s;
    EXPECT_NEAR(placer / runtime, 1.0, 0.2) << k.model << " b" << k.batch;
    // And the roofline's step is another figure (why the option matters).
    auto roofline = BuildProblem(m, c, {.training = k.train});
    ASSERT_TRUE(roofline);
    EXPECT_GT(std::abs(StepOnOne(*roofline, c) / placer - 1), 0.05) << k.model;
  }
}

// A sliver runs what the runtime model says a share of the GPU's threads
// buys (host dispatch unchanged, small kernels losing less than the
// share), not the whole GPU's time / share: at batch 1, host-bound, a
// quarter of the GPU is barely slower.
TEST(RuntimePricing, ASliverIsPricedByTheRuntimeModelAtItsShare) {
  for (const int64_t batch : {int64_t{1}, int64_t{32}}) {
    const graph::Model m = Zoo("resnet50", batch);
    Cluster c = OneGpu("a100-80gb");
    c.devices[0].compute_share = 0.25;
    ProblemOptions o;
    o.runtime = estimator::Runtime::kPyTorch;
    auto p = BuildProblem(m, c, o);
    ASSERT_TRUE(p) << p.error().message;
    estimator::RuntimeOptions ro;
    ro.compute_share = 0.25;
    auto quarter = estimator::EstimateRuntime(m, estimator::CostAll(*m.graph),
                                              c.devices[0].spec, ro);
    ASSERT_TRUE(quarter);
    const double whole =
        Runtime(m, c.devices[0].spec, false, estimator::Amp::kNone).step_s;
    EXPECT_NEAR(StepOnOne(*p, c) / quarter->step_s, 1.0, 0.2) << batch;
    EXPECT_LT(StepOnOne(*p, c), 4 * whole * 0.9) << batch;
  }
}

TEST(RuntimePricing, ACpuStaysOnTheRoofline) {
  const graph::Model m = Zoo("mobilenet_v2", 1);
  Cluster c = testing::UniformCluster(2, int64_t{16} << 30);
  const auto catalog = estimator::DeviceCatalog::BuiltIn();
  c.devices[0].spec = *catalog.Find("a100-80gb");
  c.devices[1].spec = *catalog.Find("cpu");
  ProblemOptions runtime;
  runtime.runtime = estimator::Runtime::kPyTorch;
  auto a = BuildProblem(m, c, runtime);
  auto b = BuildProblem(m, c, {});
  ASSERT_TRUE(a && b);
  for (OpId op = 0; op < a->num_ops(); ++op) {
    EXPECT_DOUBLE_EQ(a->Forward(op, 1, 1.0), b->Forward(op, 1, 1.0));
  }
}

TEST(RuntimePricing, OnnxRuntimeTrainingIsRefused) {
  const graph::Model m = Zoo("mobilenet_v2", 1);
  ProblemOptions o;
  o.runtime = estimator::Runtime::kOnnxRuntime;
  o.training = true;
  auto p = BuildProblem(m, OneGpu("a100-80gb"), o);
  ASSERT_FALSE(p);
  EXPECT_EQ(p.error().code, ErrorCode::kBadInput);
}

}  // namespace
}  // namespace tessera::placer
