// PlaceIlp: the exact MIP (CBC) under the relaxed time model of
// RelaxedStepTime. Small problems with known optima, and the relaxation's
// consequences on random graphs: a reported-optimal objective is not beaten
// by any heuristic's placement under the same time model, and is never
// above the simulated step of its own plan.

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "placer/baechi/reductions_internal.h"
#include "placer/core/algorithms_internal.h"
#include "placer/core/ledger_internal.h"
#include "tests/placer/test_problems.h"

namespace tessera::placer {
namespace {

Budget IlpBudgets(const Cluster& c) {
  Budget b;
  for (const ClusterDevice& d : c.devices) b.push_back(d.memory_usable);
  return b;
}

PlaceOptions Exact(double time_limit_s = 5.0) {
  PlaceOptions o;
  o.coplace = false;
  o.ilp_time_limit_s = time_limit_s;
  return o;
}

// Ops given as (seconds, output bytes, weight bytes); edges by index pairs.
Problem Small(const std::vector<double>& seconds,
              const std::vector<int64_t>& out_bytes,
              const std::vector<int64_t>& weight_bytes,
              const std::vector<std::pair<int, int>>& edges, int devices) {
  ProblemBuilder b(1, std::vector<int>(devices, 0), false);
  std::vector<uint32_t> outs;
  for (size_t i = 0; i < seconds.size(); ++i) {
    outs.push_back(b.AddTensor("t" + std::to_string(i), out_bytes[i],
                               TensorRole::kActivation));
  }
  for (size_t i = 0; i < seconds.size(); ++i) {
    std::vector<uint32_t> ins;
    for (const auto& [from, to] : edges) {
      if (to == static_cast<int>(i)) ins.push_back(outs[from]);
    }
    if (weight_bytes[i] > 0) {
      ins.push_back(b.AddTensor("w" + std::to_string(i), weight_bytes[i],
                                TensorRole::kWeight));
    }
    const double f[] = {seconds[i]};
    const uint32_t o[] = {outs[i]};
    b.AddOp("op" + std::to_string(i), "Op", f, {}, ins, o);
  }
  return std::move(b).Build().value();
}

void ExpectMatchesRelaxedModel(const Problem& p, const Cluster& c,
                               const AlgoOutput& out) {
  ASSERT_TRUE(out.ilp_objective_s.has_value());
  const double relaxed = RelaxedStepTime(p, c, out.placement);
  EXPECT_NEAR(*out.ilp_objective_s, relaxed, 1e-6 * relaxed + 1e-12);
  const SimResult sim = Simulate(p, c, out.placement);
  EXPECT_LE(*out.ilp_objective_s, sim.step_s * (1 + 1e-6) + 1e-12);
}

TEST(IlpTest, IndependentOpsRunInParallel) {
  const Problem p = Small({1.0, 1.0}, {10, 10}, {0, 0}, {}, 2);
  const Cluster c = testing::UniformCluster(2, 1 << 20, 1e9, 1e-6);
  const auto r = PlaceIlp(p, c, IlpBudgets(c), Exact());
  ASSERT_TRUE(r.has_value()) << r.error().message;
  EXPECT_EQ(r->ilp_status, SolveStatus::kOptimal);
  EXPECT_NEAR(*r->ilp_objective_s, 1.0, 1e-9);
  EXPECT_NE(r->placement.device[0], r->placement.device[1]);
  EXPECT_NEAR(*r->ilp_gap, 0.0, 1e-9);
  ExpectMatchesRelaxedModel(p, c, *r);
}

TEST(IlpTest, ExpensiveLinkKeepsAChainOnOneDevice) {
  // a -> b, a -> c with 1000 bytes over a 500 B/s link: crossing costs
  // 2 s, more than running c in parallel could save.
  const Problem p =
      Small({1.0, 1.0, 0.5}, {1000, 1000, 10}, {0, 0, 0}, {{0, 1}, {0, 2}}, 2);
  const Cluster c = testing::UniformCluster(2, 1 << 20, 500.0, 0.0);
  const auto r = PlaceIlp(p, c, IlpBudgets(c), Exact());
  ASSERT_TRUE(r.has_value()) << r.error().message;
  EXPECT_EQ(r->ilp_status, SolveStatus::kOptimal);
  EXPECT_EQ(r->placement.device[0], r->placement.device[1]);
  EXPECT_EQ(r->placement.device[0], r->placement.device[2]);
  EXPECT_NEAR(*r->ilp_objective_s, 2.5, 1e-9);
  ExpectMatchesRelaxedModel(p, c, *r);
}

TEST(IlpTest, CheapLinkSplitsAFork) {
  // Same fork over a fast link: b and c run in parallel after a.
  const Problem p =
      Small({1.0, 1.0, 1.0}, {1000, 10, 10}, {0, 0, 0}, {{0, 1}, {0, 2}}, 2);
  const Cluster c = testing::UniformCluster(2, 1 << 20, 1e6, 0.0);
  const auto r = PlaceIlp(p, c, IlpBudgets(c), Exact());
  ASSERT_TRUE(r.has_value()) << r.error().message;
  EXPECT_EQ(r->ilp_status, SolveStatus::kOptimal);
  // Not all on one device (3 s): 1 + 0.001 transfer + 1 (the relaxed
  // model does not care which side b or c lands on).
  EXPECT_FALSE(r->placement.device[0] == r->placement.device[1] &&
               r->placement.device[0] == r->placement.device[2]);
  EXPECT_NEAR(*r->ilp_objective_s, 2.001, 1e-9);
  ExpectMatchesRelaxedModel(p, c, *r);
}

TEST(IlpTest, MemoryForcesASplit) {
  // A chain a -> b whose weights (600 each) do not fit one 1000-byte
  // device: b runs on the other device after the 100-byte transfer.
  const Problem p = Small({1.0, 1.0}, {100, 10}, {600, 600}, {{0, 1}}, 2);
  const Cluster c = testing::UniformCluster(2, 1000, 100.0, 0.5);
  const Budget budget = IlpBudgets(c);
  const auto r = PlaceIlp(p, c, budget, Exact());
  ASSERT_TRUE(r.has_value()) << r.error().message;
  EXPECT_EQ(r->ilp_status, SolveStatus::kOptimal);
  EXPECT_NE(r->placement.device[0], r->placement.device[1]);
  EXPECT_NEAR(*r->ilp_objective_s, 1.0 + 0.5 + 1.0 + 1.0, 1e-9);
  ExpectMatchesRelaxedModel(p, c, *r);
  MemoryLedger ledger(p, 2);
  for (OpId op : p.topo) ledger.Place(op, r->placement.device[op]);
  EXPECT_LE(ledger.used(0), budget[0]);
  EXPECT_LE(ledger.used(1), budget[1]);
}

TEST(IlpTest, NothingFitsIsInfeasible) {
  const Problem p = Small({1.0, 1.0}, {100, 10}, {600, 600}, {{0, 1}}, 2);
  const Cluster c = testing::UniformCluster(2, 500, 100.0, 0.5);
  const auto r = PlaceIlp(p, c, IlpBudgets(c), Exact());
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code, ErrorCode::kInfeasible);
}

TEST(IlpTest, TogetherTheyDoNotFitIsInfeasible) {
  // Each op fits alone, but three 600-byte weights never fit two devices.
  const Problem p =
      Small({1.0, 1.0, 1.0}, {10, 10, 10}, {600, 600, 600}, {}, 2);
  const Cluster c = testing::UniformCluster(2, 1000, 100.0, 0.5);
  const auto r = PlaceIlp(p, c, IlpBudgets(c), Exact());
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code, ErrorCode::kInfeasible);
}

TEST(IlpTest, LargeGraphsAreCoarsenedFirst) {
  testing::RandomDagOptions ro;
  ro.ops = 300;
  ro.devices = 3;
  const Problem p = testing::RandomProblem(11, ro);
  const Cluster c = testing::UniformCluster(3, int64_t{1} << 30, 1e5, 1e-5);
  PlaceOptions o;
  o.ilp_max_groups = 12;
  o.ilp_time_limit_s = 2.0;
  const auto r = PlaceIlp(p, c, IlpBudgets(c), o);
  ASSERT_TRUE(r.has_value()) << r.error().message;
  ASSERT_EQ(r->placement.device.size(), p.num_ops());
  ASSERT_EQ(r->placement.priority.size(), p.num_ops());
  for (uint16_t d : r->placement.device) EXPECT_LT(d, 3);
  ASSERT_FALSE(r->notes.empty());
  EXPECT_NE(r->notes[0].find("12 groups"), std::string::npos) << r->notes[0];
  ASSERT_TRUE(r->ilp_gap.has_value());
  EXPECT_GE(*r->ilp_gap, 0.0);
  // The objective is the relaxed step of the contracted problem (the same
  // reductions), and no more than that problem's simulated step.
  const Grouping g =
      Coarsen(p, CoPlace(p, IdentityGrouping(p)), o.ilp_max_groups);
  const Problem q = Contract(p, g).value();
  Placement groups;
  groups.device.assign(q.num_ops(), 0);
  for (OpId op = 0; op < p.num_ops(); ++op) {
    groups.device[g.group_of[op]] = r->placement.device[op];
  }
  EXPECT_NEAR(*r->ilp_objective_s, RelaxedStepTime(q, c, groups),
              1e-6 * *r->ilp_objective_s);
  EXPECT_LE(*r->ilp_objective_s, Simulate(q, c, groups).step_s * (1 + 1e-6));
}

// The property: when the ILP reports optimal, no heuristic's
// placement is better under the same (relaxed) time model, and its own
// plan's simulated step is no shorter than its objective. When it proves
// that nothing fits, no heuristic finds a plan within the budgets.
TEST(IlpTest, OptimalIsNotBeatenByAnyHeuristicUnderItsTimeModel) {
  using Algo = Result<AlgoOutput> (*)(const Problem&, const Cluster&,
                                      const Budget&, const PlaceOptions&);
  const std::pair<const char*, Algo> heuristics[] = {
      {"single", PlaceSingle},
      {"m-topo", PlaceMTopo},
      {"m-etf", PlaceMEtf},
      {"m-sct", PlaceMSct},
      {"pipeline", PlacePipeline}};
  int optimal = 0, infeasible = 0;
  for (uint64_t seed = 0; seed < 24; ++seed) {
    testing::RandomDagOptions ro;
    ro.ops = 8 + static_cast<int>(seed % 5);
    ro.devices = 2 + static_cast<int>(seed % 2);
    ro.profiles = 1 + static_cast<int>(seed % 3 == 2);
    ro.training = seed % 4 == 3;
    ro.window = 4;
    ro.edge_probability = 0.3;
    const Problem p = testing::RandomProblem(seed, ro);
    // Tight memory for some seeds (inference: the MIP counts exactly what
    // the ledger counts, so every heuristic's plan is feasible for it).
    const int64_t whole = WholeModelBytes(p);
    const bool tight = !ro.training && seed % 2 == 0;
    const int64_t memory = tight ? whole * 7 / 10 : whole * 2;
    std::vector<double> shares;
    for (int d = 0; d < ro.devices; ++d) {
      shares.push_back(d == 0 && seed % 3 == 1 ? 0.5 : 1.0);
    }
    const Cluster c = testing::UniformCluster(ro.devices, memory, 2e3,
                                              1e-3 * (seed % 3), shares);
    const Budget budget = IlpBudgets(c);
    // The counts below must not hinge on how busy the machine is.
    PlaceOptions o = Exact(testing::kProofLimitS);
    o.ilp_max_groups = 64;
    const auto ilp = PlaceIlp(p, c, budget, o);
    if (!ilp.has_value()) {
      ASSERT_EQ(ilp.error().code, ErrorCode::kInfeasible)
          << "seed " << seed << ": " << ilp.error().message;
      ASSERT_TRUE(tight) << "seed " << seed;
      ++infeasible;
    } else {
      ExpectMatchesRelaxedModel(p, c, *ilp);
      optimal += ilp->ilp_status == SolveStatus::kOptimal;
    }
    for (const auto& [name, algo] : heuristics) {
      PlaceOptions ho;
      ho.coplace = false;
      ho.fuse = false;
      const auto h = algo(p, c, budget, ho);
      if (!h.has_value()) continue;  // e.g. single: nothing fits one device
      // The MIP's feasible set: plans within the budgets under the
      // conservative count (the list schedulers plan with liveness
      // accounting, which admits more plans in inference).
      MemoryLedger ledger(p, ro.devices);
      for (OpId op : p.topo) ledger.Place(op, h->placement.device[op]);
      bool over = false;
      for (int d = 0; d < ro.devices; ++d) {
        over = over || ledger.used(d) > budget[d];
      }
      if (!ilp.has_value()) {
        EXPECT_TRUE(over) << "seed " << seed << ": " << name
                          << " fits where the ILP proved nothing does";
        continue;
      }
      if (ilp->ilp_status != SolveStatus::kOptimal || over) continue;
      EXPECT_LE(*ilp->ilp_objective_s,
                RelaxedStepTime(p, c, h->placement) * (1 + 1e-6) + 1e-12)
          << "seed " << seed << ": " << name << " beats the optimum";
    }
  }
  EXPECT_GE(optimal + infeasible, 20);
  EXPECT_GE(optimal, 12);
}

}  // namespace
}  // namespace tessera::placer
