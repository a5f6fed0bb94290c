// SolveContiguousMaxLoad against brute force on random small DAGs: its
// optimum equals the best contiguous placement found by trying every
// assignment (each device's nodes convex, the devices' quotient graph
// acyclic), is never below the best placement of all, and its own
// placement evaluates (EvaluateMaxLoad) to what it claims.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <csignal>
#include <fstream>
#include <functional>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "placer/maxload/max_load.h"
#include "placer/solver/mip.h"
#include "tests/placer/maxload/max_load_brute_force.h"
#include "tests/placer/test_problems.h"
#include "tests/testlib/repo_paths.h"
#include "tests/testlib/sanitized.h"

namespace tessera::placer {
namespace {

using ::testing::HasSubstr;

// A random DAG on `n` nodes (edges only from lower to higher index).
MaxLoadProblem RandomProblem(std::mt19937_64& rng, int n, int accelerators,
                             int cpus) {
  MaxLoadProblem p;
  p.source = "random";
  std::uniform_real_distribution<double> time(0.5, 10);
  std::uniform_int_distribution<int> size(1, 10);
  std::bernoulli_distribution edge(0.35), unsupported(0.1), colored(0.2);
  int64_t total = 0;
  for (int i = 0; i < n; ++i) {
    MaxLoadNode node;
    node.id = 100 + i;
    const double t = time(rng);
    node.time = {unsupported(rng) ? kUnsupported : t, t * 4};
    node.size = size(rng);
    node.color = colored(rng) ? 7 : -1;
    total += node.size;
    p.nodes.push_back(node);
  }
  std::vector<double> cost(n);
  for (double& c : cost) c = time(rng) / 3;
  for (int i = 0; i < n; ++i) {
    for (int j = i + 1; j < n; ++j) {
      if (edge(rng)) p.edges.push_back({i, j, cost[i]});
    }
  }
  p.kinds = TarnawskiKinds(total / 2 + 3, accelerators, cpus);
  return p;
}

// Whether every device's nodes form a convex set and the devices can be
// ordered so that every edge goes forward: a contiguous split.
bool Contiguous(const MaxLoadProblem& p, const std::vector<int>& device,
                int devices) {
  const int n = static_cast<int>(p.nodes.size());
  // reach[u][v]: a path from u to v (indices are topological here).
  std::vector<std::vector<char>> reach(n, std::vector<char>(n, 0));
  for (int u = n - 1; u >= 0; --u) {
    reach[u][u] = 1;
    for (const MaxLoadEdge& e : p.edges) {
      if (e.from != u) continue;
      for (int v = 0; v < n; ++v) reach[u][v] |= reach[e.to][v];
    }
  }
  for (int u = 0; u < n; ++u) {
    for (int w = 0; w < n; ++w) {
      if (u == w || device[u] != device[w] || !reach[u][w]) continue;
      for (int v = 0; v < n; ++v) {
        if (reach[u][v] && reach[v][w] && device[v] != device[u]) return false;
      }
    }
  }
  // The quotient graph of devices must be acyclic.
  std::vector<std::vector<char>> q(devices, std::vector<char>(devices, 0));
  for (const MaxLoadEdge& e : p.edges) {
    if (device[e.from] != device[e.to]) q[device[e.from]][device[e.to]] = 1;
  }
  for (int k = 0; k < devices; ++k) {
    for (int a = 0; a < devices; ++a) {
      for (int b = 0; b < devices; ++b) {
        if (q[a][k] && q[k][b]) q[a][b] = 1;
      }
    }
  }
  for (int a = 0; a < devices; ++a) {
    if (q[a][a]) return false;
  }
  return true;
}

struct Brute {
  double contiguous = INFINITY, any = INFINITY;
};

Brute BruteForce(const MaxLoadProblem& p) {
  Brute out;
  testing::ForEveryPlacement(p, [&](const MaxLoadPlacement& x) {
    const MaxLoadEvaluation e = EvaluateMaxLoad(p, x);
    if (!e.violation.empty()) return;
    out.any = std::min(out.any, e.max_load);
    if (Contiguous(p, x.device, p.Devices())) {
      out.contiguous = std::min(out.contiguous, e.max_load);
    }
  });
  return out;
}

TEST(MaxLoadDp, EqualsBruteForceOverContiguousSplits) {
  std::mt19937_64 rng(20201206);
  int compared = 0, strictly_better_non_contiguous = 0;
  const int trials = testlib::SweepSize(120, 3);  // tests/testlib/sanitized.h
  for (int trial = 0; trial < trials; ++trial) {
    const int n = 2 + trial % 6;  // 2..7 nodes
    const int accelerators = 1 + trial % 3;
    const int cpus = trial % 2;
    const MaxLoadProblem p = RandomProblem(rng, n, accelerators, cpus);
    const Brute brute = BruteForce(p);
    auto dp = SolveContiguousMaxLoad(p);
    ASSERT_TRUE(dp) << "trial " << trial << ": " << dp.error().message;
    if (std::isinf(brute.contiguous)) {
      EXPECT_EQ(dp->status, SolveStatus::kInfeasible) << "trial " << trial;
      continue;
    }
    ++compared;
    EXPECT_EQ(dp->status, SolveStatus::kOptimal);
    EXPECT_NEAR(dp->max_load, brute.contiguous, 1e-9) << "trial " << trial;
    EXPECT_GE(dp->max_load, brute.any - 1e-9) << "trial " << trial;
    if (brute.any < brute.contiguous - 1e-9) ++strictly_better_non_contiguous;
    // Its placement is contiguous, feasible and as good as claimed.
    const MaxLoadEvaluation e = EvaluateMaxLoad(p, dp->placement);
    EXPECT_EQ(e.violation, "") << "trial " << trial;
    EXPECT_NEAR(e.max_load, dp->max_load, 1e-9) << "trial " << trial;
    EXPECT_TRUE(Contiguous(p, dp->placement.device, accelerators + cpus));
  }
  EXPECT_GT(compared, trials * 2 / 3);
  // The brute force is not vacuous: some instances gain from a
  // non-contiguous split (the ILP's business).
  EXPECT_GT(strictly_better_non_contiguous, 0);
}

double Seconds(std::chrono::steady_clock::time_point since) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - since)
      .count();
}

MaxLoadNode Node(int64_t id, double acc, double cpu, int64_t size) {
  MaxLoadNode node;
  node.id = id;
  node.time = {acc, cpu};
  node.size = size;
  return node;
}

TEST(MaxLoadIlp, EqualsBruteForceOverAllPlacements) {
  std::mt19937_64 rng(20201207);
  int compared = 0, beat_the_dp = 0;
  const int trials = testlib::SweepSize(60, 3);
  for (int trial = 0; trial < trials; ++trial) {
    const int n = 2 + trial % 6;
    const MaxLoadProblem p = RandomProblem(rng, n, 1 + trial % 3, trial % 2);
    const Brute brute = BruteForce(p);
    auto dp = SolveContiguousMaxLoad(p);
    ASSERT_TRUE(dp) << "trial " << trial << ": " << dp.error().message;
    const bool contiguous = HasSolution(dp->status);
    MaxLoadIlpOptions o;
    o.time_limit_s = testing::kProofLimitS;
    o.bnb_share = 0;  // CBC alone (max_load_bnb_test.cc: with it in front)
    if (contiguous) o.warm = &dp->placement;
    auto ilp = SolveMaxLoadIlp(p, o);
    ASSERT_TRUE(ilp) << "trial " << trial << ": " << ilp.error().message;
    if (std::isinf(brute.any)) {
      EXPECT_EQ(ilp->status, SolveStatus::kInfeasible) << "trial " << trial;
      EXPECT_NE(ilp->why, "") << "trial " << trial;
      continue;
    }
    ++compared;
    EXPECT_EQ(ilp->status, SolveStatus::kOptimal)
        << "trial " << trial << " " << ilp->solver_failure;
    EXPECT_NEAR(ilp->max_load, brute.any, 1e-6) << "trial " << trial;
    EXPECT_NEAR(ilp->lower_bound, brute.any, 1e-6) << "trial " << trial;
    const MaxLoadEvaluation e = EvaluateMaxLoad(p, ilp->placement);
    EXPECT_EQ(e.violation, "");
    EXPECT_NEAR(e.max_load, ilp->max_load, 1e-9);
    if (contiguous && ilp->max_load < dp->max_load - 1e-9) ++beat_the_dp;
  }
  EXPECT_GT(compared, trials * 2 / 3);
  EXPECT_GT(beat_the_dp, 0);  // non-contiguous splits help somewhere
}

// a (`a_time`) -> b (1) at cost 0.5, 4 bytes each, on two accelerators of
// 5 bytes: they cannot share one.
MaxLoadProblem TwoApart(double a_time) {
  MaxLoadProblem p;
  p.source = "tiny.json";
  p.kinds = TarnawskiKinds(5, 2, 0);
  p.nodes = {Node(1, a_time, a_time, 4), Node(2, 1, 1, 4)};
  p.edges = {{0, 1, 0.5}};
  return p;
}

TEST(MaxLoadIlp, WithoutAWarmStartAndWhenNothingFits) {
  MaxLoadProblem p = TwoApart(1);
  auto ilp = SolveMaxLoadIlp(p);
  ASSERT_TRUE(ilp) << ilp.error().message;
  // Together they pass the 5 bytes: apart, each pays the transfer once.
  EXPECT_NEAR(ilp->max_load, 1.5, 1e-9);
  EXPECT_EQ(ilp->status, SolveStatus::kOptimal);
  // Nothing fits: the call worked, the model is infeasible.
  p.kinds[0].count = 1;
  ilp = SolveMaxLoadIlp(p);
  ASSERT_TRUE(ilp) << ilp.error().message;
  EXPECT_EQ(ilp->status, SolveStatus::kInfeasible);
  EXPECT_EQ(ilp->why,
            "tiny.json: no placement fits (memory, color classes, or where "
            "nodes can run)");
  const Error e = NoSolutionError(ilp->status, ilp->why);
  EXPECT_EQ(e.code, ErrorCode::kInfeasible);
}

// CBC crashing in its child (Mip::Solve): the warm start stands, with the
// failure said; without one the failure is the error.
TEST(MaxLoadIlp, ASolverCrashKeepsTheWarmStart) {
  MaxLoadProblem p = TwoApart(1);
  auto dp = SolveContiguousMaxLoad(p);
  ASSERT_TRUE(dp) << dp.error().message;
  SetMipChildFaultForTesting(SIGSEGV);
  MaxLoadIlpOptions o;
  o.bnb_share = 0;  // CBC alone: the branch and bound would prove it first
  o.warm = &dp->placement;
  auto kept = SolveMaxLoadIlp(p, o);
  o.warm = nullptr;
  auto alone = SolveMaxLoadIlp(p, o);
  SetMipChildFaultForTesting(0);
  ASSERT_TRUE(kept) << kept.error().message;
  EXPECT_EQ(kept->placement.device, dp->placement.device);
  EXPECT_NEAR(kept->max_load, dp->max_load, 1e-12);
  EXPECT_EQ(kept->status, SolveStatus::kFeasible);
  EXPECT_EQ(kept->lower_bound, 0);
  EXPECT_THAT(kept->solver_failure,
              HasSubstr("CBC's MIP solve crashed (Segmentation fault)"));
  ASSERT_FALSE(alone);
  EXPECT_EQ(alone.error().code, ErrorCode::kInternal);
  EXPECT_THAT(alone.error().message, HasSubstr("tiny.json: CBC's MIP solve"));
}

TEST(MaxLoadIlp, KindsNotChargedForSendsOnlyReceive) {
  // Apart, a (2) pays the 0.5 of sending too when charged (2.5), only b
  // for receiving when not (max(2, 1 + 0.5) = 2). The DP and the ILP agree.
  MaxLoadProblem p = TwoApart(2);
  for (const bool sends : {true, false}) {
    p.kinds[0].charges_sends = sends;
    const double expected = sends ? 2.5 : 2.0;
    auto dp = SolveContiguousMaxLoad(p);
    ASSERT_TRUE(dp) << dp.error().message;
    EXPECT_NEAR(dp->max_load, expected, 1e-9);
    auto ilp = SolveMaxLoadIlp(p);
    ASSERT_TRUE(ilp) << ilp.error().message;
    EXPECT_NEAR(ilp->max_load, expected, 1e-9);
    EXPECT_NEAR(ilp->lower_bound, expected, 1e-6);
  }
}

TEST(MaxLoadDp, RefusesWhatCannotBePlaced) {
  MaxLoadProblem p;
  p.source = "tiny.json";
  p.kinds = TarnawskiKinds(5, 1, 0);
  p.nodes = {Node(1, 1, 1, 10)};
  auto dp = SolveContiguousMaxLoad(p);
  ASSERT_TRUE(dp) << dp.error().message;
  EXPECT_EQ(dp->status, SolveStatus::kInfeasible);
  EXPECT_THAT(dp->why, HasSubstr("tiny.json: no contiguous split"));
  EXPECT_TRUE(dp->placement.device.empty());
  p.kinds[1].count = 1;  // the CPU holds it (no memory limit there)
  dp = SolveContiguousMaxLoad(p);
  ASSERT_TRUE(dp) << dp.error().message;
  EXPECT_EQ(dp->placement.device[0], 1);
  EXPECT_DOUBLE_EQ(dp->max_load, 1);
}

TEST(MaxLoadDp, StopsAtItsCapsWithTheBestSplitFound) {
  // 30 independent nodes have 2^30 ideals: the cap stops the search, and
  // the split of one topological order is returned, not proven optimal.
  MaxLoadProblem wide;
  wide.source = "wide.json";
  wide.kinds = TarnawskiKinds(1 << 20, 2, 0);
  for (int i = 0; i < 30; ++i) wide.nodes.push_back(Node(i, 1, 1, 1));
  MaxLoadDpOptions small;
  small.max_states = 1000;
  auto dp = SolveContiguousMaxLoad(wide, small);
  ASSERT_TRUE(dp) << dp.error().message;
  EXPECT_EQ(dp->status, SolveStatus::kFeasible);
  EXPECT_THAT(dp->why, HasSubstr("more than 1000 ideals"));
  EXPECT_DOUBLE_EQ(dp->max_load, 15);  // 30 unit nodes on 2 devices
  EXPECT_EQ(EvaluateMaxLoad(wide, dp->placement).violation, "");

  // The time limit stops the enumeration of ideals too (after the first
  // split), and the first split itself.
  MaxLoadDpOptions brief;
  brief.time_limit_s = 0.05;
  auto start = std::chrono::steady_clock::now();
  dp = SolveContiguousMaxLoad(wide, brief);
  ASSERT_TRUE(dp) << dp.error().message;
  EXPECT_EQ(dp->status, SolveStatus::kFeasible);
  EXPECT_THAT(dp->why, HasSubstr("time limit while enumerating"));
  EXPECT_LT(Seconds(start), 5.0);
  MaxLoadProblem chain;
  chain.source = "chain.json";
  chain.kinds = TarnawskiKinds(1 << 20, 2, 0);
  for (int i = 0; i < 40'000; ++i) {
    chain.nodes.push_back(Node(i, 1, 1, 1));
    if (i > 0) chain.edges.push_back({i - 1, i, 0.5});
  }
  brief.time_limit_s = 1e-3;
  start = std::chrono::steady_clock::now();
  dp = SolveContiguousMaxLoad(chain, brief);
  ASSERT_TRUE(dp) << dp.error().message;
  EXPECT_EQ(dp->status, SolveStatus::kNoSolution);
  EXPECT_THAT(dp->why, HasSubstr("before its first split"));
  EXPECT_LT(Seconds(start), 5.0);
}

TEST(MaxLoadLocal, NeverWorseAlwaysFeasibleAndReachesTheOptimumOften) {
  std::mt19937_64 rng(20201208);
  int improved = 0, optimal = 0, compared = 0;
  for (int trial = 0; trial < 60; ++trial) {
    const int n = 3 + trial % 5;
    const MaxLoadProblem p = RandomProblem(rng, n, 2 + trial % 2, trial % 2);
    auto dp = SolveContiguousMaxLoad(p);
    if (!dp || !HasSolution(dp->status)) continue;
    const Brute brute = BruteForce(p);
    const MaxLoadLocalResult l = ImproveMaxLoadLocally(p, dp->placement, 5);
    ++compared;
    EXPECT_EQ(l.status, SolveStatus::kFeasible) << "trial " << trial;
    const MaxLoadEvaluation e = EvaluateMaxLoad(p, l.placement);
    EXPECT_EQ(e.violation, "") << "trial " << trial;
    EXPECT_NEAR(e.max_load, l.max_load, 1e-12);
    EXPECT_LE(l.max_load, dp->max_load + 1e-9) << "trial " << trial;
    EXPECT_GE(l.max_load, brute.any - 1e-9) << "trial " << trial;
    if (l.max_load < dp->max_load - 1e-9) ++improved;
    if (l.max_load < brute.any + 1e-9) ++optimal;
  }
  EXPECT_GT(compared, 40);
  EXPECT_GT(improved, 0);            // it moves where moving helps
  EXPECT_GT(optimal, compared / 2);  // and is not a no-op
}

TEST(MaxLoadLocal, ItsMoveOnAHandMadeCase) {
  // Three independent nodes of time 4, 3, 3 on two accelerators, all
  // started on acc0 (10): the best single move sends the 4 away (6 | 4;
  // a 3 would give 7 | 3), and from there no single move helps.
  MaxLoadProblem p;
  p.kinds = TarnawskiKinds(1 << 20, 2, 0);
  p.nodes = {Node(1, 4, 4, 1), Node(2, 3, 3, 1), Node(3, 3, 3, 1)};
  const MaxLoadLocalResult l = ImproveMaxLoadLocally(p, {{0, 0, 0}});
  EXPECT_DOUBLE_EQ(l.max_load, 6);
  EXPECT_EQ(l.moves, 1);
  EXPECT_EQ(l.placement.device[0], 1);
  // A start that is not feasible is returned as it is.
  MaxLoadProblem tight = p;
  tight.kinds[0].memory = 2;
  const MaxLoadLocalResult same = ImproveMaxLoadLocally(tight, {{0, 0, 0}});
  EXPECT_EQ(same.moves, 0);
  // Nothing fits anywhere: no feasible placement to report.
  MaxLoadProblem none = p;
  none.kinds[0].memory = 0;
  const MaxLoadLocalResult nothing = ImproveMaxLoadLocally(none, {{0, 0, 0}});
  EXPECT_EQ(nothing.status, SolveStatus::kNoSolution);
  EXPECT_EQ(l.status, SolveStatus::kFeasible);
}

// The contiguous optimum on the published inputs that solve in well under
// a second, against the publishers' own DP (msr-fiddle/dnn-partitioning,
// throughput-dp/dp.cpp at b207b6a, built and run outside this repository
// on the same files; docs/placer_max_load.md): two implementations of one
// definition, written apart, agree to every printed digit.
TEST(MaxLoadDp, EqualsThePublishersDpOnThePublishedInputs) {
  const std::string root = std::string(TESSERA_SOURCE_DIR) +
                           "/data/dnn-partitioning/throughput-inputs/";
  const std::pair<const char*, double> expected[] = {
      {"LayerGraphs/bert24_inference.json", 17.7899},
      {"LayerGraphs/bert24_training.json", 41.7458},
      {"LayerGraphs/gnmt_inference.json", 32.9107},
      {"LayerGraphs/gnmt_training.json", 107.004},
      {"LayerGraphs/resnet50_inference.json", 33.7747},
      {"LayerGraphs/resnet50_training.json", 78.6318},
      {"OperatorGraphs/bert_l-3_inference.json", 27.9186},
      {"OperatorGraphs/bert_l-3_training.json", 65.3031},
      {"OperatorGraphs/bert_l-6_inference.json", 29.5795},
      {"OperatorGraphs/resnet50_inference.json", 124.349},
      {"OperatorGraphs/resnet50_training.json", 255.194},
  };
  for (const auto& [file, load] : expected) {
    std::ifstream in(root + file);
    const auto j = nlohmann::json::parse(in, nullptr, false);
    auto p = ParseTarnawski(j, file);
    ASSERT_TRUE(p) << p.error().message;
    auto dp = SolveContiguousMaxLoad(*p);
    ASSERT_TRUE(dp) << file << ": " << dp.error().message;
    EXPECT_EQ(dp->status, SolveStatus::kOptimal) << file;
    // The publishers print 6 significant digits.
    EXPECT_NEAR(dp->max_load, load, 5e-6 * load) << file;
    EXPECT_EQ(EvaluateMaxLoad(*p, dp->placement).violation, "") << file;
  }
}

}  // namespace
}  // namespace tessera::placer
