// The placement scorers as the published simulator defines them (formulas
// checked by hand), tessera's stranding term, the node tie order, CPU-only
// requests, GPU kinds, and the admission cache (same answers as without).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "scheduler/admission.h"
#include "tests/testlib/test_topology.h"

namespace tessera::scheduler {
namespace {

using testing::kGiB;

PlacementRequest Fraction(int milli, int64_t cpu = 1000) {
  return PlacementRequest{Resources{0, milli, 0, cpu, kGiB}, {}};
}
PlacementRequest Whole(int gpus, int64_t cpu = 1000) {
  return PlacementRequest{Resources{gpus, 0, 0, cpu, kGiB}, {}};
}

void Use(ClusterState& s, JobId job, int gpu, int milli, int64_t cpu = 0) {
  const int node = s.topology().gpus[gpu].node;
  ASSERT_TRUE(
      s.Reserve(job, Allocation{node, {{gpu, milli, 0}}, cpu, 0, false}));
}

// The scorer's verdict on one node: its score and the GPUs it takes.
struct Verdict {
  double score;
  std::vector<int> gpus;
};
Verdict ScoreOn(const GpuScorer& scorer, const ClusterState& s, int node,
                const PlacementRequest& r) {
  std::vector<int> fitting;
  const bool cpu_only = r.demand.gpus == 0 && r.demand.gpu_milli == 0;
  for (const int g : s.topology().nodes[node].gpus) {
    if (cpu_only) break;
    const bool fits = r.demand.gpus > 0 ? s.holders_on(g) == 0
                                        : s.free_milli(g) >= r.demand.gpu_milli;
    if (fits) fitting.push_back(g);
  }
  Verdict v{0, {}};
  v.score = scorer.Score(s, r, NodeFit{node, fitting}, v.gpus);
  return v;
}

std::unique_ptr<GpuScorer> Make(const std::string& name,
                                const Workload* w = nullptr) {
  ScorerOptions o;
  o.workload = w;
  auto scorer = MakeScorer(name, o);
  EXPECT_TRUE(scorer) << name;
  return std::move(scorer).value();
}

// Two nodes, 16 CPUs each: node0 two GPUs, node1 four (the largest node:
// 16,000 CPU milli and 4,000 GPU milli normalise best-fit and dot-product).
ClusterState TwoNodes() {
  return ClusterState(testing::MakeTopology({{40, 40}, {40, 40, 40, 40}}));
}

TEST(Scorers, BestFitIsThePapersFormula) {
  ClusterState s = TwoNodes();
  Use(s, 1, 0, 500, 4000);  // node0: 12,000 CPU and 1,500 GPU milli free
  auto best_fit = Make("best-fit");
  // node0: left = 0.5 (12000-2000)/16000 + 0.5 (1500-300)/4000 = 0.4625.
  const Verdict v0 = ScoreOn(*best_fit, s, 0, Fraction(300, 2000));
  EXPECT_EQ(v0.score, 53);                  // int(100 (1 - 0.4625))
  EXPECT_EQ(v0.gpus, std::vector<int>{0});  // the tightest GPU
  // node1: left = 0.5 (14000/16000) + 0.5 (3700/4000) = 0.9.
  EXPECT_EQ(ScoreOn(*best_fit, s, 1, Fraction(300, 2000)).score, 9);
  auto a = FindAllocation(s, "", Fraction(300, 2000), *best_fit);
  ASSERT_TRUE(a);
  EXPECT_EQ(a->node, 0);
  EXPECT_EQ(a->gpus[0].gpu, 0);
  // worst-fit mirrors it: int(100 left), the loosest GPU.
  auto worst_fit = Make("worst-fit");
  EXPECT_EQ(ScoreOn(*worst_fit, s, 0, Fraction(300, 2000)).score, 46);
  EXPECT_EQ(ScoreOn(*worst_fit, s, 0, Fraction(300, 2000)).gpus,
            std::vector<int>{1});
}

TEST(Scorers, DotProductPrefersTheLeastAlignedNode) {
  ClusterState s = TwoNodes();
  Use(s, 1, 0, 500, 8000);  // node0: 8,000 CPU, 1,500 GPU milli free
  auto dot = Make("dot-product");
  // node0: (8000/16000)(4000/16000) + (1500/4000)(500/4000) = 0.171875;
  // int(100 (1 - 0.171875 / 2)) = 91.
  EXPECT_EQ(ScoreOn(*dot, s, 0, Fraction(500, 4000)).score, 91);
  // node1: (1)(0.25) + (1)(0.125) = 0.375 -> int(81.25) = 81.
  EXPECT_EQ(ScoreOn(*dot, s, 1, Fraction(500, 4000)).score, 81);
}

TEST(Scorers, GpuPackingPrefersUsedGpusThenUsedNodes) {
  ClusterState s = TwoNodes();
  auto packing = Make("gpu-packing");
  // Every GPU free: max(33 - free GPUs, free GPUs).
  EXPECT_EQ(ScoreOn(*packing, s, 0, Fraction(300)).score, 31);
  EXPECT_EQ(ScoreOn(*packing, s, 1, Fraction(300)).score, 29);
  Use(s, 1, 0, 400);  // node0's GPU 0 has 600 free
  // A used GPU: 100 - (600 * 100 / 1000) / 10 = 94.
  const Verdict shared = ScoreOn(*packing, s, 0, Fraction(300));
  EXPECT_EQ(shared.score, 94);
  EXPECT_EQ(shared.gpus, std::vector<int>{0});
  // It does not fit the used GPU: a free GPU of a used node, 50 - 1.
  EXPECT_EQ(ScoreOn(*packing, s, 0, Fraction(700)).score, 49);
  EXPECT_EQ(ScoreOn(*packing, s, 0, Whole(1)).score, 49);
  // CPU-only requests score 0 everywhere (the tie order decides).
  PlacementRequest cpu_only{Resources{0, 0, 0, 1000, kGiB}, {}};
  EXPECT_EQ(ScoreOn(*packing, s, 0, cpu_only).score, 0);
}

TEST(Scorers, GpuClusteringGroupsAlikeJobs) {
  ClusterState s = TwoNodes();
  auto clustering = Make("gpu-clustering");
  // Empty nodes: tier 25, plus 25 (4000 - free) / 4000.
  EXPECT_EQ(ScoreOn(*clustering, s, 0, Fraction(300)).score, 25 + 12);
  EXPECT_EQ(ScoreOn(*clustering, s, 1, Fraction(300)).score, 25 + 0);
  Use(s, 1, 0, 400);  // node0 holds one fraction: 1600 free
  // Only fractions there: 75 + 25 * 2400 / 4000 = 90.
  EXPECT_EQ(ScoreOn(*clustering, s, 0, Fraction(300)).score, 90);
  // A whole-GPU job there: other kinds only, no tier.
  EXPECT_EQ(ScoreOn(*clustering, s, 0, Whole(1)).score, 15);
  ASSERT_TRUE(s.Reserve(2, Allocation{0, {{1, 1000, 40 * kGiB}}, 0, 0, true}));
  // Fractions among whole-GPU jobs: 50 + 25 * 3400 / 4000 = 71.
  EXPECT_EQ(ScoreOn(*clustering, s, 0, Fraction(100)).score, 71);
}

TEST(Scorers, RandomIsSeededAndReachesEveryNode) {
  ClusterState s(testing::MakeTopology({{40}, {40}, {40}, {40}}));
  std::map<uint64_t, std::vector<int>> picks;
  for (const uint64_t seed : {1, 1, 2}) {
    ScorerOptions o;
    o.seed = seed;
    auto random = std::move(MakeScorer("random", o).value());
    EXPECT_FALSE(random->deterministic());
    std::vector<int> nodes;
    for (int i = 0; i < 200; ++i) {
      nodes.push_back(FindAllocation(s, "", Fraction(100), *random)->node);
    }
    if (picks.count(seed)) {
      EXPECT_EQ(picks[seed], nodes);  // the same seed, the same draws
    }
    picks[seed] = nodes;
    EXPECT_EQ(std::set<int>(nodes.begin(), nodes.end()).size(), 4u);
  }
  EXPECT_NE(picks[1], picks[2]);
}

TEST(Scorers, FgdIsTheIntegerSigmoidOfTheFragmentationDrop) {
  Workload w;
  w.tasks = {TypicalTask{0, 1, 1000, {}, 0.5}, TypicalTask{0, 1, 500, {}, 0.5}};
  ClusterState s(testing::MakeTopology({{40, 40}}));
  Use(s, 1, 0, 300);  // free: 700, 1000
  auto fgd = Make("fgd", &w);
  // Before: the 1000-task cannot use the 700: F = 0.5 * 700 = 350.
  // 400 on GPU 0 (300 left): F = 0.5 * 300 + 0.5 * 300 = 300, drop 50:
  // int(100 sigmoid(0.05)) = 51. On GPU 1 (600 left): 0.5 * 1300 = 650,
  // drop -300: int(100 sigmoid(-0.3)) = 42.
  const Verdict v = ScoreOn(*fgd, s, 0, Fraction(400));
  EXPECT_EQ(v.score, 51);
  EXPECT_EQ(v.gpus, std::vector<int>{0});
}

TEST(Scorers, TesseraAlsoCountsCapacityTheCpuCannotFeed) {
  Workload w;
  w.tasks = {TypicalTask{1000, 1, 1000, {}, 1}};
  w.cpu_per_milli = 4;  // 4 CPU milli per GPU milli: 4,000 per GPU
  // Two nodes alike but for CPU: node0 has 16,000 for its two GPUs, node1
  // 16,000 for four. A CPU-heavy task on node1 strands GPU capacity.
  ClusterState s = TwoNodes();
  auto fgd = Make("fgd", &w);
  auto tessera = Make("tessera", &w);
  const PlacementRequest heavy = Whole(1, 8000);
  // fgd sees no change in either node's fragmentation: a tie.
  EXPECT_EQ(ScoreOn(*fgd, s, 0, heavy).score, 50);
  EXPECT_EQ(ScoreOn(*fgd, s, 1, heavy).score, 50);
  // tessera: node0 keeps 8,000 CPU for its last 1,000 milli (nothing
  // stranded); node1 keeps 8,000 for 3,000: 1,000 stranded, from 0.
  EXPECT_EQ(ScoreOn(*tessera, s, 0, heavy).score, 50);
  EXPECT_EQ(ScoreOn(*tessera, s, 1, heavy).score, 26);  // sigmoid(-1)
  const std::vector<int> order = {1, 0};
  AdmissionOptions o;
  o.node_order = order;
  EXPECT_EQ(FindAllocation(s, "", heavy, *fgd, o)->node, 1);
  EXPECT_EQ(FindAllocation(s, "", heavy, *tessera, o)->node, 0);
}

// A hole no mix of typical tasks fills is idle for good: tessera does not
// leave one where fgd, counting it for the next task only, does.
TEST(Scorers, TesseraAvoidsHolesNoMixOfTasksFills) {
  Workload w;
  w.tasks = {TypicalTask{0, 1, 500, {}, 0.5}, TypicalTask{0, 1, 300, {}, 0.5}};
  ClusterState s(testing::MakeTopology({{40}, {40}}));
  Use(s, 1, 0, 700);  // free: 300 on node0, 700 on node1
  Use(s, 2, 1, 300);
  auto fgd = Make("fgd", &w);
  auto tessera = Make("tessera", &w);
  const PlacementRequest r = Fraction(200);
  // fgd: node0 goes from 300 (the 500-task cannot use it: F = 150) to 100
  // (F = 100), drop 50: 51; node1 from 700 to 500, F 0 both: 50.
  EXPECT_EQ(ScoreOn(*fgd, s, 0, r).score, 51);
  EXPECT_EQ(ScoreOn(*fgd, s, 1, r).score, 50);
  EXPECT_EQ(FindAllocation(s, "", r, *fgd)->node, 0);
  // tessera adds twice the unfillable milli: node0's 300 fills (300), its
  // 100 never: 150 -> 100 + 2 * 100, drop -150: 46. Of node1's 700 at most
  // 600 fills (300 + 300), its 500 all: 2 * 100 -> 0, drop 200: 54.
  EXPECT_EQ(ScoreOn(*tessera, s, 0, r).score, 46);
  EXPECT_EQ(ScoreOn(*tessera, s, 1, r).score, 54);
  EXPECT_EQ(FindAllocation(s, "", r, *tessera)->node, 1);
}

// Tasks bound to a GPU kind that the cluster has little of: tessera keeps
// that kind's free capacity for them (a reserve value on top of what fgd's
// fragmentation already charges) and puts an unbound task elsewhere.
TEST(Scorers, TesseraKeepsScarceKindsForTheTasksBoundToThem) {
  Topology t = testing::MakeTopology({{40, 40}, {40, 40}, {40, 40}});
  t.gpus[0].kind = t.gpus[1].kind = "T4";  // node0: the only T4s
  for (size_t g = 2; g < t.gpus.size(); ++g) t.gpus[g].kind = "G2";
  const ClusterState s(t);
  // Half the GPU work may only run on a T4, a third of the cluster.
  const Workload w = TypicalWorkload({TypicalTask{1000, 1, 1000, {"T4"}, 1},
                                      TypicalTask{1000, 1, 1000, {}, 1}},
                                     1.0);
  ASSERT_EQ(w.kind_bound.size(), 1u);
  EXPECT_EQ(w.kind_bound[0].first, "T4");
  EXPECT_DOUBLE_EQ(w.kind_bound[0].second, 0.5);
  auto fgd = Make("fgd", &w);
  auto tessera = Make("tessera", &w);
  const PlacementRequest unbound = Fraction(500);
  // fgd: the half GPU left on node0 fragments the T4 tasks (drop -500).
  EXPECT_EQ(ScoreOn(*fgd, s, 0, unbound).score, 37);  // sigmoid(-0.5)
  EXPECT_EQ(ScoreOn(*fgd, s, 1, unbound).score, 50);
  // tessera: T4 scarcity 0.5 / (1/3) = 1.5, so the 500 milli taken also
  // lose 750 of reserve value: drop -1,250. And on either node the half GPU
  // left is one no typical task (all whole-GPU) fills: 2 x 500 more.
  EXPECT_EQ(ScoreOn(*tessera, s, 0, unbound).score, 9);   // sigmoid(-2.25)
  EXPECT_EQ(ScoreOn(*tessera, s, 1, unbound).score, 26);  // sigmoid(-1)
  EXPECT_EQ(FindAllocation(s, "", unbound, *tessera)->node, 1);
  // A task bound to the T4s still goes there.
  PlacementRequest bound = Fraction(500);
  bound.gpu_kinds = {"T4"};
  EXPECT_EQ(FindAllocation(s, "", bound, *tessera)->node, 0);
}

TEST(FindAllocation, TiesGoToTheFirstNodeInTheTieOrder) {
  ClusterState s(testing::MakeTopology({{40}, {40}, {40}}));
  auto first_fit = Make("first-fit");
  EXPECT_EQ(FindAllocation(s, "", Fraction(100), *first_fit)->node, 0);
  const std::vector<int> order = {2, 0, 1};
  AdmissionOptions o;
  o.node_order = order;
  EXPECT_EQ(FindAllocation(s, "", Fraction(100), *first_fit, o)->node, 2);
}

TEST(FindAllocation, CpuOnlyRequestsTakeNoGpu) {
  ClusterState s(testing::MakeTopology({{40}}));
  Use(s, 1, 0, 1000);
  PlacementRequest cpu_only{Resources{0, 0, 0, 8000, kGiB}, {}};
  for (const std::string& name : ScorerNames()) {
    auto a = FindAllocation(s, "", cpu_only, *Make(name));
    ASSERT_TRUE(a) << name;
    EXPECT_TRUE(a->gpus.empty()) << name;
    EXPECT_EQ(a->cpu_milli, 8000);
    EXPECT_TRUE(s.Fits(*a));
  }
  cpu_only.demand.cpu_milli = 17000;  // more than the node has
  EXPECT_FALSE(FindAllocation(s, "", cpu_only, *Make("fgd")));
}

TEST(FindAllocation, KeepsToTheGpuKindsAsked) {
  Topology t = testing::MakeTopology({{40}, {40}});
  t.gpus[1].kind = "other";
  ClusterState s(t);
  PlacementRequest r = Fraction(100);
  r.gpu_kinds = {"other"};
  for (const std::string& name : ScorerNames()) {
    auto a = FindAllocation(s, "", r, *Make(name));
    ASSERT_TRUE(a) << name;
    EXPECT_EQ(a->gpus[0].gpu, 1) << name;
  }
  r.gpu_kinds = {"none"};
  EXPECT_FALSE(FindAllocation(s, "", r, *Make("best-fit")));
  EXPECT_FALSE(CouldEverFit(s.topology(), "", r));
  r.gpu_kinds = {"test", "other"};
  EXPECT_TRUE(CouldEverFit(s.topology(), "", r));
}

// The cache changes nothing: for each deterministic scorer, random reserves
// and releases on a random cluster, FindAllocation with and without the
// cache (and across copies of the state) answer alike.
TEST(AdmissionCache, AnswersAsWithoutIt) {
  std::mt19937 rng(7);
  for (const std::string& name : ScorerNames()) {
    auto scorer = Make(name);
    if (!scorer->deterministic()) continue;
    AdmissionCache cache;
    for (int trial = 0; trial < 5; ++trial) {
      std::vector<std::vector<int>> nodes;
      for (int n = 0; n < 6; ++n) {
        nodes.push_back(std::vector<int>(1 + rng() % 8, 40));
      }
      ClusterState s(testing::MakeTopology(nodes));
      std::vector<int> order(nodes.size());
      for (size_t i = 0; i < order.size(); ++i) order[i] = int(i);
      std::shuffle(order.begin(), order.end(), rng);
      AdmissionOptions cached, plain;
      cached.cache = &cache;
      cached.node_order = plain.node_order = order;
      JobId next = 1;
      for (int step = 0; step < 300; ++step) {
        PlacementRequest r =
            rng() % 4 == 0
                ? Whole(1 + int(rng() % 2), 1000 * int(rng() % 6))
                : Fraction(100 * (1 + int(rng() % 9)), 1000 * int(rng() % 6));
        const ClusterState copy = s;  // caches survive copies
        auto a = FindAllocation(copy, "", r, *scorer, cached);
        auto b = FindAllocation(s, "", r, *scorer, plain);
        ASSERT_EQ(a.has_value(), b.has_value()) << name << " step " << step;
        if (a) {
          ASSERT_EQ(a->node, b->node) << name;
          ASSERT_EQ(a->gpus, b->gpus) << name;
          ASSERT_TRUE(s.Reserve(next++, *a));
        }
        if (rng() % 3 == 0 && next > 1) s.Release(1 + JobId(rng() % next));
      }
      EXPECT_EQ(s.CheckInvariants(), "");
    }
  }
}

TEST(MakeScorer, NamesTheKnownOnesForAnUnknownOne) {
  auto bad = MakeScorer("tightest");
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().code, ErrorCode::kBadInput);
  EXPECT_THAT(bad.error().message, ::testing::HasSubstr("gpu-clustering"));
  EXPECT_THAT(bad.error().message, ::testing::HasSubstr("tessera"));
}

}  // namespace
}  // namespace tessera::scheduler
