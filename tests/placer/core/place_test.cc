// The placement driver: algorithm names, the verify-and-tighten loop,
// `single`, `auto`, and the infeasible error's numbers.

#include "placer/core/place.h"

#include <gtest/gtest.h>

#include <csignal>
#include <string>

#include "placer/solver/mip.h"
#include "tests/placer/test_problems.h"

namespace tessera::placer {
namespace {

using testing::RandomDagOptions;
using testing::RandomProblem;
using testing::UniformCluster;

TEST(PlaceTest, AlgorithmNamesRoundTrip) {
  for (Algorithm a : ConcreteAlgorithms()) {
    auto parsed = ParseAlgorithm(AlgorithmName(a));
    ASSERT_TRUE(parsed);
    EXPECT_EQ(*parsed, a);
  }
  EXPECT_EQ(*ParseAlgorithm("auto"), Algorithm::kAuto);
  auto bad = ParseAlgorithm("m-eft");
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().code, ErrorCode::kBadInput);
  EXPECT_NE(bad.error().message.find("m-etf"), std::string::npos);
}

// Two independent heavy ops: on one device 2 s, split 1 s.
Problem TwoIndependentOps(int devices) {
  ProblemBuilder b(1, std::vector<int>(devices, 0), false);
  const double f[] = {1.0};
  for (const char* name : {"a", "b"}) {
    const uint32_t w =
        b.AddTensor(std::string("w_") + name, 600, TensorRole::kWeight);
    const uint32_t t = b.AddTensor(std::string("t_") + name, 10,
                                   TensorRole::kActivation, true);
    const uint32_t in[] = {w}, out[] = {t};
    b.AddOp(name, "Op", f, {}, in, out);
  }
  return std::move(b).Build().value();
}

TEST(PlaceTest, SinglePicksTheFastestDeviceThatFits) {
  const Problem p = TwoIndependentOps(2);
  Cluster c = UniformCluster(2, 10'000, 1e9, 0.0, {0.5, 1.0});
  auto plan = Place(p, c, Algorithm::kSingle, {});
  ASSERT_TRUE(plan) << plan.error().message;
  EXPECT_EQ(plan->placement.device, (std::vector<uint16_t>{1, 1}));
  EXPECT_DOUBLE_EQ(plan->sim.step_s, 2.0);
  c.devices[1].memory_usable = 1000;  // no longer holds both weights
  plan = Place(p, c, Algorithm::kSingle, {});
  ASSERT_TRUE(plan);
  EXPECT_EQ(plan->placement.device, (std::vector<uint16_t>{0, 0}));
}

TEST(PlaceTest, AutoSplitsWhenNothingElseFitsAndReportsTheChoice) {
  const Problem p = TwoIndependentOps(2);
  const Cluster c = UniformCluster(2, 700);
  auto plan = Place(p, c, Algorithm::kAuto, {});
  ASSERT_TRUE(plan) << plan.error().message;
  EXPECT_NE(plan->placement.device[0], plan->placement.device[1]);
  EXPECT_DOUBLE_EQ(plan->sim.step_s, 1.0);
  EXPECT_DOUBLE_EQ(plan->lower_bound_s, 1.0);
  EXPECT_TRUE(plan->sim.fits);
  ASSERT_FALSE(plan->notes.empty());
  EXPECT_NE(plan->notes.back().find("auto chose"), std::string::npos);
  EXPECT_NE(plan->notes.back().find("single infeasible"), std::string::npos);
}

TEST(PlaceTest, InfeasibleNamesMissingBytesAndTheLargestOp) {
  const Problem p = TwoIndependentOps(2);
  // Each op needs 610 bytes; the devices have 500.
  auto plan = Place(p, UniformCluster(2, 500), Algorithm::kAuto, {});
  ASSERT_FALSE(plan);
  EXPECT_EQ(plan.error().code, ErrorCode::kInfeasible);
  EXPECT_NE(plan.error().message.find("'a' (Op) needs 610 B"),
            std::string::npos)
      << plan.error().message;
  EXPECT_NE(plan.error().message.find("110 bytes) missing"), std::string::npos)
      << plan.error().message;
  // Each op fits one device, both together (1220 bytes) do not.
  plan = Place(TwoIndependentOps(1), UniformCluster(1, 1000), Algorithm::kMEtf,
               {});
  ASSERT_FALSE(plan);
  EXPECT_NE(plan.error().message.find("220 bytes) missing"), std::string::npos)
      << plan.error().message;
  EXPECT_NE(plan.error().message.find("m-etf found no placement"),
            std::string::npos);
}

TEST(PlaceTest, RejectsBadOptions) {
  const Problem p = TwoIndependentOps(2);
  PlaceOptions o;
  o.microbatches = 0;
  auto plan = Place(p, UniformCluster(2, 1000), Algorithm::kPipeline, o);
  ASSERT_FALSE(plan);
  EXPECT_EQ(plan.error().code, ErrorCode::kBadInput);
}

TEST(PlaceTest, AutoIsNeverWorseThanTheBaechiAlgorithms) {
  for (uint64_t seed = 0; seed < 12; ++seed) {
    RandomDagOptions o;
    o.ops = 80;
    o.devices = 4;
    o.profiles = seed % 3 == 0 ? 2 : 1;
    const Problem p = RandomProblem(seed, o);
    const Cluster c =
        UniformCluster(4, 40'000, 2000.0, 0.01, {1.0, 0.5, 1.0, 0.25});
    auto best = Place(p, c, Algorithm::kAuto, {});
    ASSERT_TRUE(best) << best.error().message;
    for (Algorithm a :
         {Algorithm::kMTopo, Algorithm::kMEtf, Algorithm::kMSct}) {
      auto plan = Place(p, c, a, {});
      if (!plan) continue;
      EXPECT_LE(best->sim.step_s, plan->sim.step_s + 1e-12)
          << "seed " << seed << " " << AlgorithmName(a);
    }
  }
}

// auto keeps going when a candidate fails for another reason than
// infeasibility: the ILP with no time to find an incumbent.
TEST(PlaceTest, AutoSurvivesAnIlpWithoutIncumbent) {
  const Problem p = TwoIndependentOps(2);
  PlaceOptions o;
  o.ilp_time_limit_s = 1e-9;
  auto ilp = Place(p, UniformCluster(2, 700), Algorithm::kIlp, o);
  auto plan = Place(p, UniformCluster(2, 700), Algorithm::kAuto, o);
  ASSERT_TRUE(plan) << plan.error().message;
  EXPECT_DOUBLE_EQ(plan->sim.step_s, 1.0);
  if (!ilp) {
    EXPECT_NE(plan->notes.back().find("ilp "), std::string::npos);
  }
}

// The ILP's solver crashing or killed in its child (Mip::Solve): `ilp`
// alone is an error naming what happened; `auto` keeps the other
// algorithms' plans and says why the ILP is missing from them.
TEST(PlaceTest, ASolverCrashIsAnErrorAndAutoKeepsTheOthers) {
  const Problem p = TwoIndependentOps(2);
  const Cluster c = UniformCluster(2, 700);
  for (const int sig : {SIGSEGV, SIGABRT, SIGKILL}) {
    SetMipChildFaultForTesting(sig);
    auto ilp = Place(p, c, Algorithm::kIlp, {});
    auto plan = Place(p, c, Algorithm::kAuto, {});
    SetMipChildFaultForTesting(0);
    ASSERT_FALSE(ilp);
    EXPECT_EQ(ilp.error().code, ErrorCode::kInternal);
    EXPECT_NE(ilp.error().message.find("ilp: CBC's MIP solve crashed ("),
              std::string::npos)
        << ilp.error().message;
    ASSERT_TRUE(plan) << plan.error().message;
    EXPECT_NE(plan->algorithm, Algorithm::kIlp);
    EXPECT_DOUBLE_EQ(plan->sim.step_s, 1.0);
    std::string notes;
    for (const std::string& n : plan->notes) notes += n + "\n";
    EXPECT_NE(notes.find("ilp failed"), std::string::npos) << notes;
    EXPECT_NE(notes.find("ilp failed: ilp: CBC's MIP solve crashed"),
              std::string::npos)
        << notes;
  }
  // And the next solve, without the fault, works.
  auto again = Place(p, c, Algorithm::kIlp, {});
  ASSERT_TRUE(again) << again.error().message;
  EXPECT_EQ(again->ilp_status, SolveStatus::kOptimal);
}

}  // namespace
}  // namespace tessera::placer
