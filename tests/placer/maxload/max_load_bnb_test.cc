// SolveMaxLoadBnb against brute force on random small DAGs (every
// assignment of nodes to devices tried): its optimum equals the best
// placement, its lower bound is never above it, its placement is feasible
// and evaluates (EvaluateMaxLoad) to what it claims; the coarse question
// alone gives a bound within its gap; and the ILP with the branch and
// bound in front still equals brute force.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "placer/maxload/max_load.h"
#include "tests/placer/maxload/max_load_brute_force.h"
#include "tests/testlib/repo_paths.h"
#include "tests/testlib/sanitized.h"

namespace tessera::placer {
namespace {

// A random DAG on `n` nodes (edges from lower to higher index). `packing`:
// times of one size with a little noise and cheap edges, the inputs where
// the split of the work decides (the published layer graphs); else times
// and costs spread widely.
MaxLoadProblem RandomProblem(std::mt19937_64& rng, int n, int accelerators,
                             int cpus, bool packing) {
  MaxLoadProblem p;
  p.source = "random";
  std::uniform_real_distribution<double> time(packing ? 3.5 : 0.5,
                                              packing ? 3.7 : 10);
  std::uniform_real_distribution<double> cost(0, packing ? 0.05 : 3);
  std::uniform_int_distribution<int> size(1, 10);
  std::bernoulli_distribution edge(0.35), unsupported(0.1), colored(0.2),
      zero_time(0.1);
  int64_t total = 0;
  for (int i = 0; i < n; ++i) {
    MaxLoadNode node;
    node.id = 100 + i;
    const double t = zero_time(rng) ? 0 : time(rng);
    node.time = {unsupported(rng) ? kUnsupported : t, t * 4};
    node.size = size(rng);
    node.color = colored(rng) ? 7 : -1;
    total += node.size;
    p.nodes.push_back(node);
  }
  std::vector<double> out(n);
  for (double& c : out) c = cost(rng);
  for (int i = 0; i < n; ++i) {
    for (int j = i + 1; j < n; ++j) {
      if (edge(rng)) p.edges.push_back({i, j, out[i]});
    }
  }
  p.kinds = TarnawskiKinds(total / 2 + 3, accelerators, cpus);
  return p;
}

// The best max load over every assignment of nodes to devices (infinity
// when none is feasible).
double BruteForce(const MaxLoadProblem& p) {
  double best = INFINITY;
  testing::ForEveryPlacement(p, [&](const MaxLoadPlacement& x) {
    const MaxLoadEvaluation e = EvaluateMaxLoad(p, x);
    if (e.violation.empty()) best = std::min(best, e.max_load);
  });
  return best;
}

// The instances the tests below share: 2..8 nodes, 1..4 accelerators, 0..1
// CPU, half of them packing-like. The sweeps over them run a third of
// their trials under the sanitizers (tests/testlib/sanitized.h): brute
// force over up to 5^8 placements is most of their time.
MaxLoadProblem Instance(std::mt19937_64& rng, int trial) {
  return RandomProblem(rng, 2 + trial % 7, 1 + trial % 4, trial % 2,
                       trial % 3 != 0);
}

void ExpectPlacementAsClaimed(const MaxLoadProblem& p,
                              const MaxLoadBnbResult& r, int trial) {
  const MaxLoadEvaluation e = EvaluateMaxLoad(p, r.placement);
  EXPECT_EQ(e.violation, "") << "trial " << trial;
  EXPECT_NEAR(e.max_load, r.max_load, 1e-9) << "trial " << trial;
}

TEST(MaxLoadBnb, EqualsBruteForceAndItsBoundIsNeverAbove) {
  std::mt19937_64 rng(20201208);
  int compared = 0, infeasible = 0;
  const int trials = testlib::SweepSize(150, 3);
  for (int trial = 0; trial < trials; ++trial) {
    const MaxLoadProblem p = Instance(rng, trial);
    const double best = BruteForce(p);
    MaxLoadBnbOptions o;
    o.time_limit_s = 60;
    auto r = SolveMaxLoadBnb(p, o);
    ASSERT_TRUE(r) << "trial " << trial << ": " << r.error().message;
    if (std::isinf(best)) {
      EXPECT_EQ(r->status, SolveStatus::kInfeasible) << "trial " << trial;
      ++infeasible;
      continue;
    }
    ++compared;
    EXPECT_EQ(r->status, SolveStatus::kOptimal) << "trial " << trial;
    EXPECT_EQ(r->finished_gap, 0) << "trial " << trial;
    EXPECT_NEAR(r->max_load, best, 1e-9) << "trial " << trial;
    EXPECT_LE(r->lower_bound, best + 1e-9) << "trial " << trial;
    EXPECT_GE(r->lower_bound, best * (1 - 1e-6)) << "trial " << trial;
    ExpectPlacementAsClaimed(p, *r, trial);
  }
  EXPECT_GT(compared, trials * 3 / 5);
  EXPECT_GT(infeasible, 0);  // memory, kinds and colours do bind somewhere
}

// The coarse question alone (`exact` off), from a poor start: its bound is
// at most the optimum and within the gap of its placement.
TEST(MaxLoadBnb, TheCoarseBoundIsATrueBoundWithinItsGap) {
  std::mt19937_64 rng(20201209);
  int compared = 0, coarse_below = 0;
  const int trials = testlib::SweepSize(150, 3);
  for (int trial = 0; trial < trials; ++trial) {
    const MaxLoadProblem p = Instance(rng, trial);
    const double best = BruteForce(p);
    if (std::isinf(best)) continue;
    auto dp = SolveContiguousMaxLoad(p);
    ASSERT_TRUE(dp) << dp.error().message;
    MaxLoadBnbOptions o;
    o.gap = 0.05 + 0.1 * (trial % 4);
    o.exact = false;
    if (HasSolution(dp->status)) o.start = &dp->placement;
    auto r = SolveMaxLoadBnb(p, o);
    ASSERT_TRUE(r) << "trial " << trial << ": " << r.error().message;
    ++compared;
    ASSERT_TRUE(HasSolution(r->status)) << "trial " << trial;
    EXPECT_EQ(r->finished_gap, o.gap) << "trial " << trial;
    EXPECT_LE(r->lower_bound, best + 1e-9) << "trial " << trial;
    EXPECT_GE(r->lower_bound, (1 - o.gap) * r->max_load * (1 - 1e-6))
        << "trial " << trial;
    EXPECT_GE(r->max_load, best - 1e-9) << "trial " << trial;
    ExpectPlacementAsClaimed(p, *r, trial);
    if (r->lower_bound < best * (1 - 1e-6)) ++coarse_below;
  }
  EXPECT_GT(compared, trials * 17 / 30);
  EXPECT_GT(coarse_below, 0);  // the coarse bound is not the optimum itself
}

// Four units of 10 on three accelerators, nothing sent: the work divided
// is 13.3, but some device holds two units. The LP relaxation sees 13.3;
// the branch and bound proves 20 at its root.
TEST(MaxLoadBnb, ProvesAPackingBoundTheLpDoesNotSee) {
  MaxLoadProblem p;
  p.source = "four.json";
  p.kinds = TarnawskiKinds(100, 3, 0);
  for (int i = 0; i < 4; ++i) {
    MaxLoadNode node;
    node.id = i;
    node.time = {10, 100};
    p.nodes.push_back(node);
  }
  auto r = SolveMaxLoadBnb(p);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->status, SolveStatus::kOptimal);
  EXPECT_NEAR(r->max_load, 20, 1e-9);
  EXPECT_NEAR(r->lower_bound, 20, 1e-6);
  EXPECT_LE(r->nodes, 100);
  // Through the ILP: the branch and bound settles it, CBC is not needed.
  auto ilp = SolveMaxLoadIlp(p);
  ASSERT_TRUE(ilp) << ilp.error().message;
  EXPECT_EQ(ilp->status, SolveStatus::kOptimal);
  EXPECT_NEAR(ilp->lower_bound, 20, 1e-6);
  EXPECT_NEAR(ilp->bnb_lower_bound, 20, 1e-6);
}

// No time: the start stands, with no bound; without a start, no placement.
TEST(MaxLoadBnb, OutOfTimeKeepsTheStart) {
  std::mt19937_64 rng(7);
  const MaxLoadProblem p = RandomProblem(rng, 30, 4, 1, true);
  auto dp = SolveContiguousMaxLoad(p);
  ASSERT_TRUE(dp) << dp.error().message;
  ASSERT_TRUE(HasSolution(dp->status));
  MaxLoadBnbOptions o;
  o.time_limit_s = 0;
  o.start = &dp->placement;
  auto r = SolveMaxLoadBnb(p, o);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->status, SolveStatus::kFeasible);
  EXPECT_EQ(r->placement.device, dp->placement.device);
  EXPECT_LE(r->lower_bound, r->max_load);
  EXPECT_EQ(r->finished_gap, -1);
  o.start = nullptr;
  r = SolveMaxLoadBnb(p, o);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->status, SolveStatus::kNoSolution);
  MaxLoadProblem none = p;
  none.kinds.clear();
  EXPECT_FALSE(SolveMaxLoadBnb(none, o));
}

// The ILP with the branch and bound in front of CBC, against brute force:
// optimal, its bound the optimum, its placement as claimed.
TEST(MaxLoadBnb, TheIlpWithItInFrontEqualsBruteForce) {
  std::mt19937_64 rng(20201210);
  int compared = 0;
  const int trials = testlib::SweepSize(60, 3);
  for (int trial = 0; trial < trials; ++trial) {
    const MaxLoadProblem p = Instance(rng, trial);
    const double best = BruteForce(p);
    if (std::isinf(best)) continue;
    MaxLoadIlpOptions o;
    o.time_limit_s = 60;
    auto ilp = SolveMaxLoadIlp(p, o);
    ASSERT_TRUE(ilp) << "trial " << trial << ": " << ilp.error().message;
    ++compared;
    EXPECT_EQ(ilp->status, SolveStatus::kOptimal) << "trial " << trial;
    EXPECT_NEAR(ilp->max_load, best, 1e-6) << "trial " << trial;
    EXPECT_NEAR(ilp->lower_bound, best, 1e-6) << "trial " << trial;
    const MaxLoadEvaluation e = EvaluateMaxLoad(p, ilp->placement);
    EXPECT_EQ(e.violation, "") << "trial " << trial;
    EXPECT_NEAR(e.max_load, ilp->max_load, 1e-9) << "trial " << trial;
  }
  EXPECT_GT(compared, trials * 7 / 12);
}

// The star bound alone: never above the optimum, and on some instances
// (dear communication) the optimum itself.
TEST(MaxLoadStarBound, NeverAboveTheOptimumAndSometimesTight) {
  std::mt19937_64 rng(20201211);
  int compared = 0, tight = 0;
  const int trials = testlib::SweepSize(150, 3);
  for (int trial = 0; trial < trials; ++trial) {
    const MaxLoadProblem p = Instance(rng, trial);
    const double best = BruteForce(p);
    const double star = MaxLoadStarBound(p);
    EXPECT_GE(star, 0) << "trial " << trial;
    if (std::isinf(best)) continue;
    ++compared;
    EXPECT_LE(star, best + 1e-9) << "trial " << trial;
    if (star >= best - 1e-6) ++tight;
  }
  EXPECT_GT(compared, trials * 3 / 5);
  EXPECT_GT(tight, 0);
}

// On the published operator graph of ResNet-50 (inference) the star bound
// meets the contiguous optimum: two units cost more than it on any
// accelerator, whatever shares it, and the one CPU cannot take both.
TEST(MaxLoadStarBound, ProvesTheOperatorResNet50Optimum) {
  const std::string path = std::string(TESSERA_SOURCE_DIR) +
                           "/data/dnn-partitioning/throughput-inputs/"
                           "OperatorGraphs/resnet50_inference.json";
  std::ifstream in(path);
  ASSERT_TRUE(in) << path;
  auto p = ParseTarnawski(nlohmann::json::parse(in), path);
  ASSERT_TRUE(p) << p.error().message;
  auto dp = SolveContiguousMaxLoad(*p);
  ASSERT_TRUE(dp) << dp.error().message;
  const double star = MaxLoadStarBound(*p, 60);
  EXPECT_NEAR(star, dp->max_load, 1e-6 * dp->max_load);
  EXPECT_LE(star, dp->max_load);
  MaxLoadBnbOptions o;
  o.start = &dp->placement;
  auto r = SolveMaxLoadBnb(*p, o);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->status, SolveStatus::kOptimal);
  EXPECT_NEAR(r->max_load, dp->max_load, 1e-9);
}

}  // namespace
}  // namespace tessera::placer
