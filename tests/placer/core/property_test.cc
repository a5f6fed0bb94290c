// Invariants of every algorithm on many random DAGs and clusters: each op
// placed exactly once on a real device, no device over its memory in the
// simulator, step time >= the lower bound, and the ILP's relaxed time model
// never above the simulator's step.

#include <gtest/gtest.h>

#include <random>

#include "placer/core/place.h"
#include "placer/core/simulator.h"
#include "tests/placer/test_problems.h"

namespace tessera::placer {
namespace {

using testing::RandomDagOptions;
using testing::RandomProblem;
using testing::UniformCluster;

struct Case {
  Problem problem;
  Cluster cluster;
};

// Seeded: a random DAG and a cluster with random shares, memory between
// tight and loose, links with latency.
Case RandomCase(uint64_t seed, int ops) {
  std::mt19937_64 rng(seed * 7919 + 1);
  RandomDagOptions o;
  o.ops = ops;
  o.devices = 2 + static_cast<int>(seed % 3);
  o.profiles = seed % 2 == 0 ? 1 : 2;
  o.training = seed % 4 == 3;
  o.window = 2 + static_cast<int>(seed % 7);
  Problem p = RandomProblem(seed, o);
  std::uniform_real_distribution<double> share(0.2, 1.0);
  std::vector<double> shares;
  for (int d = 0; d < o.devices; ++d) shares.push_back(share(rng));
  // Room for the whole model on about 1 to 2 devices in total.
  const int64_t memory = (o.training ? 3 : 1) * o.ops * 1500 / o.devices *
                         (1 + static_cast<int64_t>(seed % 3));
  Cluster c = UniformCluster(o.devices, memory, 2000.0, 0.02, shares);
  return {std::move(p), std::move(c)};
}

void CheckPlan(const Case& k, const Plan& plan, const std::string& where) {
  const Problem& p = k.problem;
  ASSERT_EQ(plan.placement.device.size(), p.num_ops()) << where;
  for (uint16_t d : plan.placement.device) ASSERT_LT(d, k.cluster.size());
  if (!plan.placement.priority.empty()) {
    ASSERT_EQ(plan.placement.priority.size(), p.num_ops()) << where;
  }
  // Re-simulate independently: the plan's numbers are the simulator's.
  SimOptions so;
  so.microbatches = plan.microbatches;
  const SimResult r = Simulate(p, k.cluster, plan.placement, so);
  EXPECT_TRUE(r.fits) << where;
  EXPECT_DOUBLE_EQ(r.step_s, plan.sim.step_s) << where;
  for (size_t d = 0; d < k.cluster.size(); ++d) {
    EXPECT_LE(r.devices[d].peak_bytes, k.cluster.devices[d].memory_usable)
        << where << " device " << d;
  }
  const double lb = LowerBound(p, k.cluster, plan.microbatches);
  EXPECT_GE(r.step_s, lb * (1 - 1e-9)) << where;
  EXPECT_DOUBLE_EQ(plan.lower_bound_s, lb) << where;
  if (plan.microbatches == 1) {
    EXPECT_LE(RelaxedStepTime(p, k.cluster, plan.placement),
              r.step_s * (1 + 1e-9))
        << where;
  }
}

TEST(PlacerPropertyTest, EveryAlgorithmKeepsTheInvariants) {
  int placed = 0, infeasible = 0;
  for (uint64_t seed = 0; seed < 60; ++seed) {
    const Case k = RandomCase(seed, 20 + static_cast<int>(seed % 5) * 15);
    for (Algorithm a : ConcreteAlgorithms()) {
      PlaceOptions o;
      o.ilp_time_limit_s = 0.5;
      o.ilp_max_groups = 12;
      o.microbatches = a == Algorithm::kPipeline && seed % 5 == 0 ? 4 : 1;
      const std::string where =
          "seed " + std::to_string(seed) + " " + std::string(AlgorithmName(a));
      auto plan = Place(k.problem, k.cluster, a, o);
      if (!plan) {
        EXPECT_EQ(plan.error().code, ErrorCode::kInfeasible)
            << where << ": " << plan.error().message;
        ++infeasible;
        continue;
      }
      ++placed;
      CheckPlan(k, *plan, where);
    }
  }
  // The generator must exercise both outcomes, mostly feasible.
  EXPECT_GT(placed, 3 * infeasible);
}

TEST(PlacerPropertyTest, RelaxedTimeNeverExceedsTheSimulatorOnAnyPlacement) {
  for (uint64_t seed = 0; seed < 200; ++seed) {
    const Case k = RandomCase(seed, 25);
    std::mt19937_64 rng(seed);
    Placement pl;
    for (size_t op = 0; op < k.problem.num_ops(); ++op) {
      pl.device.push_back(static_cast<uint16_t>(rng() % k.cluster.size()));
    }
    const SimResult r = Simulate(k.problem, k.cluster, pl);
    EXPECT_LE(RelaxedStepTime(k.problem, k.cluster, pl), r.step_s * (1 + 1e-9))
        << seed;
    EXPECT_GE(r.step_s, LowerBound(k.problem, k.cluster) * (1 - 1e-9)) << seed;
  }
}

}  // namespace
}  // namespace tessera::placer
