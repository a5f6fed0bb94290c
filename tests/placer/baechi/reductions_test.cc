#include "placer/baechi/reductions_internal.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <numeric>
#include <queue>
#include <string>
#include <utility>
#include <vector>

#include "tests/placer/test_problems.h"

namespace tessera::placer {
namespace {

using testing::RandomDagOptions;
using testing::RandomProblem;

constexpr int64_t kBigWeight = int64_t{4} << 20;  // fused (>= 1 MiB)

// A topological order of the groups from the op edges alone (independent
// of the code under test); shorter than num_groups when they have a cycle.
std::vector<uint32_t> GroupOrder(const Problem& p, const Grouping& g) {
  std::vector<std::vector<uint32_t>> succ(g.num_groups);
  std::vector<uint32_t> indeg(g.num_groups, 0);
  for (OpId u = 0; u < p.num_ops(); ++u) {
    for (uint32_t v : p.successors(u)) {
      if (g.group_of[u] == g.group_of[v]) continue;
      succ[g.group_of[u]].push_back(g.group_of[v]);
      ++indeg[g.group_of[v]];
    }
  }
  std::queue<uint32_t> ready;
  for (uint32_t i = 0; i < g.num_groups; ++i) {
    if (indeg[i] == 0) ready.push(i);
  }
  std::vector<uint32_t> order;
  while (!ready.empty()) {
    const uint32_t i = ready.front();
    ready.pop();
    order.push_back(i);
    for (uint32_t j : succ[i]) {
      if (--indeg[j] == 0) ready.push(j);
    }
  }
  return order;
}

struct Totals {
  std::vector<double> forward, backward;           // per profile
  int64_t weight_bytes = 0, activation_bytes = 0;  // extra counted as act.
};

Totals Sum(const Problem& p) {
  Totals t;
  t.forward.assign(p.num_profiles, 0.0);
  t.backward.assign(p.num_profiles, 0.0);
  for (OpId op = 0; op < p.num_ops(); ++op) {
    for (int k = 0; k < p.num_profiles; ++k) {
      t.forward[k] += p.forward_s[op * p.num_profiles + k];
      if (p.training) t.backward[k] += p.backward_s[op * p.num_profiles + k];
    }
    t.activation_bytes += p.extra_bytes[op];
  }
  for (const ProblemTensor& tensor : p.tensors) {
    if (tensor.role == TensorRole::kWeight) t.weight_bytes += tensor.bytes;
    if (tensor.role == TensorRole::kActivation) {
      t.activation_bytes += tensor.bytes;
    }
  }
  return t;
}

// Everything the reductions promise about a grouping of `p`.
void CheckGrouping(const Problem& p, const Grouping& g,
                   const std::string& what) {
  SCOPED_TRACE(what);
  ASSERT_EQ(g.group_of.size(), p.num_ops());
  std::vector<int> size(g.num_groups, 0);
  for (uint32_t grp : g.group_of) {
    ASSERT_LT(grp, g.num_groups);
    ++size[grp];
  }
  for (uint32_t i = 0; i < g.num_groups; ++i) EXPECT_GT(size[i], 0);
  EXPECT_EQ(GroupOrder(p, g).size(), g.num_groups) << "groups have a cycle";

  auto q = Contract(p, g);
  ASSERT_TRUE(q) << q.error().message;
  ASSERT_EQ(q->num_ops(), g.num_groups);
  EXPECT_EQ(q->training, p.training);
  EXPECT_EQ(q->num_profiles, p.num_profiles);
  EXPECT_EQ(q->device_profile, p.device_profile);
  EXPECT_EQ(q->weight_state_factor, p.weight_state_factor);
  const Totals a = Sum(p), b = Sum(*q);
  for (int k = 0; k < p.num_profiles; ++k) {
    EXPECT_NEAR(a.forward[k], b.forward[k], 1e-9 * (1 + a.forward[k]));
    EXPECT_NEAR(a.backward[k], b.backward[k], 1e-9 * (1 + a.backward[k]));
  }
  EXPECT_EQ(a.weight_bytes, b.weight_bytes);
  EXPECT_EQ(a.activation_bytes, b.activation_bytes);
  // Workspace: the largest member's.
  std::vector<int64_t> workspace(g.num_groups, 0);
  for (OpId op = 0; op < p.num_ops(); ++op) {
    workspace[g.group_of[op]] =
        std::max(workspace[g.group_of[op]], p.workspace_bytes[op]);
  }
  for (uint32_t i = 0; i < g.num_groups; ++i) {
    EXPECT_EQ(q->workspace_bytes[i], workspace[i]);
    EXPECT_EQ(q->names[i], "group" + std::to_string(i));
  }

  // Expand a placement of the groups (device = index mod 3, priority =
  // position in q's topological order).
  Placement gp;
  gp.device.resize(g.num_groups);
  gp.priority.resize(g.num_groups);
  for (uint32_t i = 0; i < g.num_groups; ++i) gp.device[i] = i % 3;
  for (uint32_t i = 0; i < q->topo.size(); ++i) gp.priority[q->topo[i]] = i;
  for (const Placement& group_placement : {gp, Placement{gp.device, {}}}) {
    const Placement pl = Expand(p, g, group_placement);
    ASSERT_EQ(pl.device.size(), p.num_ops());
    ASSERT_EQ(pl.priority.size(), p.num_ops());
    std::vector<bool> seen(p.num_ops(), false);
    for (OpId op = 0; op < p.num_ops(); ++op) {
      EXPECT_EQ(pl.device[op], g.group_of[op] % 3);
      ASSERT_LT(pl.priority[op], p.num_ops());
      EXPECT_FALSE(seen[pl.priority[op]]) << "priority used twice";
      seen[pl.priority[op]] = true;
      for (uint32_t v : p.successors(op)) {
        EXPECT_LT(pl.priority[op], pl.priority[v]) << "not topological";
      }
    }
  }
}

std::vector<RandomDagOptions> Shapes() {
  std::vector<RandomDagOptions> shapes;
  RandomDagOptions base;
  base.ops = 60;
  base.max_weight_bytes = kBigWeight * 2;  // about half the weights fuse
  shapes.push_back(base);
  RandomDagOptions wide = base;  // many parallel branches
  wide.window = 40;
  wide.edge_probability = 0.04;
  wide.ops = 120;
  shapes.push_back(wide);
  RandomDagOptions deep = base;  // long chains
  deep.window = 2;
  deep.edge_probability = 0.3;
  shapes.push_back(deep);
  RandomDagOptions dense = base;
  dense.edge_probability = 0.5;
  dense.training = true;
  dense.profiles = 2;
  shapes.push_back(dense);
  return shapes;
}

TEST(Reductions, EveryGroupingOfRandomDagsContractsWithoutCycles) {
  int shape_index = 0;
  for (const RandomDagOptions& shape : Shapes()) {
    for (uint64_t seed = 1; seed <= 25; ++seed) {
      const Problem p = RandomProblem(seed * 7919 + shape_index, shape);
      const std::string tag = "shape " + std::to_string(shape_index) +
                              " seed " + std::to_string(seed);
      const Grouping id = IdentityGrouping(p);
      CheckGrouping(p, id, tag + " identity");
      const Grouping co = CoPlace(p, id);
      CheckGrouping(p, co, tag + " coplace");
      const Grouping fu = FuseSharedWeights(p, id);
      CheckGrouping(p, fu, tag + " fuse");
      CheckGrouping(p, FuseSharedWeights(p, co), tag + " coplace+fuse");
      CheckGrouping(p, CoPlace(p, fu), tag + " fuse+coplace");
      for (uint32_t k : {1U, 2U, 5U, 17U}) {
        const Grouping cs = Coarsen(p, co, k);
        EXPECT_LE(cs.num_groups, std::min(k, co.num_groups));
        CheckGrouping(p, cs, tag + " coarsen " + std::to_string(k));
        CheckGrouping(p, Coarsen(p, FuseSharedWeights(p, co), k),
                      tag + " coarsen(fuse) " + std::to_string(k));
      }
    }
    ++shape_index;
  }
}

TEST(Reductions, FusionFindsSomethingToFuseOnRandomDags) {
  // Guards the property test above against testing nothing.
  int fused = 0, coplaced = 0;
  for (uint64_t seed = 1; seed <= 20; ++seed) {
    RandomDagOptions o = Shapes()[1];
    const Problem p = RandomProblem(seed, o);
    const Grouping id = IdentityGrouping(p);
    fused += FuseSharedWeights(p, id).num_groups < p.num_ops();
    coplaced += CoPlace(p, id).num_groups < p.num_ops();
  }
  EXPECT_GT(fused, 5);
  EXPECT_GT(coplaced, 5);
}

// The textbook rules, written plainly, for CoPlace and Coarsen to equal.
// Groups of `start` whose only successor group is H join H's group; the
// result numbered by first appearance along p.topo.
Grouping ReferenceCoPlace(const Problem& p, const Grouping& start) {
  std::vector<std::vector<uint32_t>> succ(start.num_groups);
  for (OpId u = 0; u < p.num_ops(); ++u) {
    for (uint32_t v : p.successors(u)) {
      const uint32_t a = start.group_of[u], b = start.group_of[v];
      if (a != b &&
          std::find(succ[a].begin(), succ[a].end(), b) == succ[a].end()) {
        succ[a].push_back(b);
      }
    }
  }
  std::vector<uint32_t> root(start.num_groups);
  std::iota(root.begin(), root.end(), 0);
  auto find = [&root](uint32_t x) {
    while (root[x] != x) x = root[x];
    return x;
  };
  for (uint32_t a = 0; a < start.num_groups; ++a) {
    if (succ[a].size() == 1 && find(a) != find(succ[a][0])) {
      root[find(a)] = find(succ[a][0]);
    }
  }
  Grouping out;
  out.group_of.resize(p.num_ops());
  std::vector<uint32_t> label(start.num_groups, UINT32_MAX);
  for (OpId op : p.topo) {
    const uint32_t r = find(start.group_of[op]);
    if (label[r] == UINT32_MAX) label[r] = out.num_groups++;
    out.group_of[op] = label[r];
  }
  return out;
}

// Kahn's order of `start`'s groups, the ready group whose first op comes
// first along p.topo taken first (empty groups, never here, would be last);
// then contiguous runs of it balanced by mean work.
Grouping ReferenceCoarsen(const Problem& p, const Grouping& start,
                          uint32_t max_groups) {
  if (start.num_groups <= max_groups) return start;
  const uint32_t n = start.num_groups;
  std::vector<uint32_t> first(n, UINT32_MAX);
  for (uint32_t i = 0; i < p.topo.size(); ++i) {
    first[start.group_of[p.topo[i]]] =
        std::min(first[start.group_of[p.topo[i]]], i);
  }
  std::vector<std::vector<uint32_t>> succ(n);
  std::vector<uint32_t> indeg(n, 0);
  for (OpId u = 0; u < p.num_ops(); ++u) {
    for (uint32_t v : p.successors(u)) {
      const uint32_t a = start.group_of[u], b = start.group_of[v];
      if (a == b ||
          std::find(succ[a].begin(), succ[a].end(), b) != succ[a].end()) {
        continue;
      }
      succ[a].push_back(b);
      ++indeg[b];
    }
  }
  using Entry = std::pair<uint32_t, uint32_t>;
  std::priority_queue<Entry, std::vector<Entry>, std::greater<>> ready;
  for (uint32_t a = 0; a < n; ++a) {
    if (indeg[a] == 0) ready.emplace(first[a], a);
  }
  std::vector<uint32_t> order;
  while (!ready.empty()) {
    const uint32_t a = ready.top().second;
    ready.pop();
    order.push_back(a);
    for (uint32_t b : succ[a]) {
      if (--indeg[b] == 0) ready.emplace(first[b], b);
    }
  }
  if (order.size() != n) return start;
  std::vector<double> work(n, 0.0);
  double total = 0.0;
  for (OpId op = 0; op < p.num_ops(); ++op) {
    double w = 0.0;
    for (int k = 0; k < p.num_profiles; ++k) {
      w += p.forward_s[op * p.num_profiles + k];
      if (!p.backward_s.empty()) w += p.backward_s[op * p.num_profiles + k];
    }
    w /= std::max(1, p.num_profiles);
    work[start.group_of[op]] += w;
    total += w;
  }
  if (!(total > 0.0)) {
    std::fill(work.begin(), work.end(), 1.0);
    total = n;
  }
  const double target = total / max_groups;
  std::vector<uint32_t> run(n);
  double before = 0.0;
  uint32_t last = 0, label = 0;
  for (size_t i = 0; i < order.size(); ++i) {
    const auto r = std::min<uint32_t>(
        max_groups - 1,
        static_cast<uint32_t>((before + work[order[i]] / 2) / target));
    if (i > 0 && r != last) ++label;
    last = r;
    run[order[i]] = label;
    before += work[order[i]];
  }
  Grouping out;
  out.num_groups = label + 1;
  out.group_of.resize(p.num_ops());
  for (OpId op = 0; op < p.num_ops(); ++op) {
    out.group_of[op] = run[start.group_of[op]];
  }
  return out;
}

// Whether ordering `g`'s groups by their first op along p.topo respects
// every edge between groups (else Kahn's heap must reorder them).
bool FirstOrderIsTopological(const Problem& p, const Grouping& g) {
  std::vector<uint32_t> first(g.num_groups, UINT32_MAX);
  for (uint32_t i = 0; i < p.topo.size(); ++i) {
    first[g.group_of[p.topo[i]]] = std::min(first[g.group_of[p.topo[i]]], i);
  }
  for (OpId u = 0; u < p.num_ops(); ++u) {
    for (uint32_t v : p.successors(u)) {
      const uint32_t a = g.group_of[u], b = g.group_of[v];
      if (a != b && first[a] > first[b]) return false;
    }
  }
  return true;
}

TEST(Reductions, CoPlaceAndCoarsenFollowTheirRulesExactly) {
  int in_order = 0, reordered = 0, shape_index = 0;
  for (const RandomDagOptions& shape : Shapes()) {
    for (uint64_t seed = 1; seed <= 25; ++seed) {
      const Problem p = RandomProblem(seed * 104729 + shape_index, shape);
      const std::string tag = "shape " + std::to_string(shape_index) +
                              " seed " + std::to_string(seed);
      const Grouping id = IdentityGrouping(p);
      // The same groups numbered otherwise (CoPlace's general path).
      Grouping shuffled = id;
      std::reverse(shuffled.group_of.begin(), shuffled.group_of.end());
      const Grouping co = CoPlace(p, id);
      EXPECT_EQ(co.group_of, ReferenceCoPlace(p, id).group_of) << tag;
      EXPECT_EQ(co.num_groups, ReferenceCoPlace(p, id).num_groups) << tag;
      EXPECT_EQ(CoPlace(p, shuffled).group_of, co.group_of) << tag;
      const Grouping fu = FuseSharedWeights(p, id);
      EXPECT_EQ(CoPlace(p, fu).group_of, ReferenceCoPlace(p, fu).group_of)
          << tag;
      // Groups not numbered in the order of their first ops (Coarsen then
      // orders them by their first op's position, not by number).
      Grouping co_renumbered = co;
      for (uint32_t& grp : co_renumbered.group_of) {
        grp = co.num_groups - 1 - grp;
      }
      const std::vector<const Grouping*> starts = {&id, &co, &fu, &shuffled,
                                                   &co_renumbered};
      for (const Grouping* start : starts) {
        (FirstOrderIsTopological(p, *start) ? in_order : reordered) += 1;
        for (uint32_t k : {1U, 3U, 8U, 20U}) {
          const Grouping got = Coarsen(p, *start, k);
          const Grouping want = ReferenceCoarsen(p, *start, k);
          EXPECT_EQ(got.num_groups, want.num_groups) << tag << " k " << k;
          EXPECT_EQ(got.group_of, want.group_of) << tag << " k " << k;
        }
      }
    }
    ++shape_index;
  }
  // Groupings of both kinds were coarsened.
  EXPECT_GT(in_order, 20);
  EXPECT_GT(reordered, 20);
}

// Builds small graphs by hand: ops named by their index.
class ReductionGraph {
 public:
  explicit ReductionGraph(bool training = false) : b_(1, {0, 0}, training) {}
  uint32_t Tensor(int64_t bytes, TensorRole role = TensorRole::kActivation) {
    return b_.AddTensor("t" + std::to_string(next_tensor_++), bytes, role);
  }
  OpId Op(std::vector<uint32_t> ins, std::vector<uint32_t> outs,
          double seconds = 1.0, int64_t workspace = 0) {
    const double f[] = {seconds};
    const double bw[] = {2 * seconds};
    return b_.AddOp("op" + std::to_string(next_op_++), "Op", f, bw, ins, outs,
                    workspace);
  }
  Problem Build() && {
    auto p = std::move(b_).Build();
    EXPECT_TRUE(p) << p.error().message;
    return std::move(p).value();
  }

 private:
  ProblemBuilder b_;
  int next_tensor_ = 0, next_op_ = 0;
};

TEST(CoPlace, CollapsesAChainToOneGroup) {
  ReductionGraph g;
  uint32_t t = g.Tensor(10, TensorRole::kInput);
  for (int i = 0; i < 6; ++i) {
    const uint32_t out = g.Tensor(100 + i);
    g.Op({t}, {out});
    t = out;
  }
  const Problem p = std::move(g).Build();
  const Grouping co = CoPlace(p, IdentityGrouping(p));
  EXPECT_EQ(co.num_groups, 1U);
  CheckGrouping(p, co, "chain");
}

TEST(CoPlace, JoinsOpsWithOneSuccessorOnly) {
  // a -> b, a -> c, b -> d, c -> d: b and c join d; a, with two
  // successors, stays apart (merged groups are not looked at again, or
  // every graph with one sink would become one group).
  ReductionGraph g;
  const uint32_t in = g.Tensor(10, TensorRole::kInput);
  const uint32_t ta = g.Tensor(1), tb = g.Tensor(2), tc = g.Tensor(3),
                 td = g.Tensor(4);
  const OpId a = g.Op({in}, {ta});
  const OpId b = g.Op({ta}, {tb});
  const OpId c = g.Op({ta}, {tc});
  const OpId d = g.Op({tb, tc}, {td});
  const Problem p = std::move(g).Build();
  const Grouping co = CoPlace(p, IdentityGrouping(p));
  EXPECT_EQ(co.num_groups, 2U);
  EXPECT_EQ(co.group_of[b], co.group_of[d]);
  EXPECT_EQ(co.group_of[c], co.group_of[d]);
  EXPECT_NE(co.group_of[a], co.group_of[d]);
}

TEST(CoPlace, KeepsAForkIntoTwoSinksApart) {
  ReductionGraph g;
  const uint32_t in = g.Tensor(10, TensorRole::kInput);
  const uint32_t ta = g.Tensor(1), tb = g.Tensor(2), tc = g.Tensor(3);
  g.Op({in}, {ta});
  g.Op({ta}, {tb});
  g.Op({ta}, {tc});
  const Problem p = std::move(g).Build();
  const Grouping co = CoPlace(p, IdentityGrouping(p));
  EXPECT_EQ(co.num_groups, 3U);
}

TEST(FuseSharedWeights, JoinsParallelOpsReadingOneWeight) {
  // a feeds b and c; b and c read the same large weight.
  ReductionGraph g;
  const uint32_t in = g.Tensor(10, TensorRole::kInput);
  const uint32_t w = g.Tensor(kBigWeight, TensorRole::kWeight);
  const uint32_t ta = g.Tensor(1), tb = g.Tensor(2), tc = g.Tensor(3);
  g.Op({in}, {ta});
  const OpId b = g.Op({ta, w}, {tb});
  const OpId c = g.Op({ta, w}, {tc});
  const Problem p = std::move(g).Build();
  const Grouping fu = FuseSharedWeights(p, IdentityGrouping(p));
  EXPECT_EQ(fu.num_groups, 2U);
  EXPECT_EQ(fu.group_of[b], fu.group_of[c]);
  CheckGrouping(p, fu, "parallel");
  // The contracted weight is read by one group only.
  auto q = Contract(p, fu);
  ASSERT_TRUE(q);
  for (uint32_t t = 0; t < q->num_tensors(); ++t) {
    if (q->tensors[t].role == TensorRole::kWeight) {
      EXPECT_EQ(q->consumers(t).size(), 1U);
    }
  }
}

TEST(FuseSharedWeights, NeverCreatesACycle) {
  // a -> b -> c with a and c sharing a weight: fusing a and c would put b
  // both before and after their group.
  ReductionGraph g;
  const uint32_t in = g.Tensor(10, TensorRole::kInput);
  const uint32_t w = g.Tensor(kBigWeight, TensorRole::kWeight);
  const uint32_t ta = g.Tensor(1), tb = g.Tensor(2), tc = g.Tensor(3);
  const OpId a = g.Op({in, w}, {ta});
  const OpId b = g.Op({ta}, {tb});
  const OpId c = g.Op({tb, w, ta}, {tc});
  const Problem p = std::move(g).Build();
  const Grouping fu = FuseSharedWeights(p, IdentityGrouping(p));
  EXPECT_EQ(fu.num_groups, 3U);
  EXPECT_NE(fu.group_of[a], fu.group_of[c]);
  EXPECT_NE(fu.group_of[b], fu.group_of[c]);
  CheckGrouping(p, fu, "a->b->c");
}

TEST(FuseSharedWeights, ContractsADirectEdge) {
  // a -> c directly, both reading the weight: one group is fine.
  ReductionGraph g;
  const uint32_t in = g.Tensor(10, TensorRole::kInput);
  const uint32_t w = g.Tensor(kBigWeight, TensorRole::kWeight);
  const uint32_t ta = g.Tensor(1), tc = g.Tensor(3);
  g.Op({in, w}, {ta});
  g.Op({ta, w}, {tc});
  const Problem p = std::move(g).Build();
  EXPECT_EQ(FuseSharedWeights(p, IdentityGrouping(p)).num_groups, 1U);
}

TEST(FuseSharedWeights, LeavesSmallWeightsAlone) {
  ReductionGraph g;
  const uint32_t in = g.Tensor(10, TensorRole::kInput);
  const uint32_t w = g.Tensor(64, TensorRole::kWeight);  // a shape constant
  const uint32_t ta = g.Tensor(1), tb = g.Tensor(2), tc = g.Tensor(3);
  g.Op({in}, {ta});
  g.Op({ta, w}, {tb});
  g.Op({ta, w}, {tc});
  const Problem p = std::move(g).Build();
  EXPECT_EQ(FuseSharedWeights(p, IdentityGrouping(p)).num_groups, 3U);
}

TEST(FuseSharedWeights, KeepsLaterMergesConsistentWithEarlierOnes) {
  // Two weights: W1 shared by x1 and y2, W2 shared by y1 and x2, on two
  // chains x1 -> x2 and y1 -> y2. Fusing {x1, y2} is fine alone, and so is
  // {y1, x2}, but not both: x1 -> x2 = y1 -> y2 = x1.
  ReductionGraph g;
  const uint32_t in = g.Tensor(10, TensorRole::kInput);
  const uint32_t w1 = g.Tensor(kBigWeight, TensorRole::kWeight);
  const uint32_t w2 = g.Tensor(kBigWeight, TensorRole::kWeight);
  const uint32_t tx1 = g.Tensor(1), tx2 = g.Tensor(2), ty1 = g.Tensor(3),
                 ty2 = g.Tensor(4);
  g.Op({in, w1}, {tx1});
  g.Op({tx1, w2}, {tx2});
  g.Op({in, w2}, {ty1});
  g.Op({ty1, w1}, {ty2});
  const Problem p = std::move(g).Build();
  const Grouping fu = FuseSharedWeights(p, IdentityGrouping(p));
  EXPECT_EQ(fu.num_groups, 3U);
  CheckGrouping(p, fu, "crossed chains");
}

TEST(Coarsen, CutsATopologicalOrderIntoBalancedRuns) {
  ReductionGraph g;
  uint32_t t = g.Tensor(10, TensorRole::kInput);
  for (int i = 0; i < 12; ++i) {
    const uint32_t out = g.Tensor(1);
    g.Op({t}, {out}, 1.0);
    t = out;
  }
  const Problem p = std::move(g).Build();
  const Grouping cs = Coarsen(p, IdentityGrouping(p), 4);
  ASSERT_EQ(cs.num_groups, 4U);
  std::vector<int> count(4, 0);
  for (uint32_t grp : cs.group_of) ++count[grp];
  EXPECT_EQ(count, (std::vector<int>{3, 3, 3, 3}));
  // Already small enough: unchanged.
  EXPECT_EQ(Coarsen(p, cs, 10).group_of, cs.group_of);
}

TEST(Contract, KeepsTensorsBetweenGroupsAndCountsInternalOnesAsExtra) {
  // a -> b -> c, a -> c; group {a, b}, group {c}.
  ReductionGraph g(/*training=*/true);
  const uint32_t in = g.Tensor(10, TensorRole::kInput);
  const uint32_t w = g.Tensor(7, TensorRole::kWeight);
  const uint32_t ta = g.Tensor(100), tb = g.Tensor(200), tc = g.Tensor(300);
  g.Op({in, w}, {ta}, 1.0, 50);
  g.Op({ta}, {tb}, 2.0, 80);
  g.Op({ta, tb, w}, {tc}, 4.0, 10);
  Problem p = std::move(g).Build();
  p.tensors[tc].output = true;
  Grouping grouping{{0, 0, 1}, 2};
  auto q = Contract(p, grouping);
  ASSERT_TRUE(q) << q.error().message;
  ASSERT_EQ(q->num_ops(), 2U);
  EXPECT_DOUBLE_EQ(q->forward_s[0], 3.0);
  EXPECT_DOUBLE_EQ(q->backward_s[0], 6.0);
  EXPECT_DOUBLE_EQ(q->forward_s[1], 4.0);
  EXPECT_EQ(q->workspace_bytes[0], 80);
  EXPECT_EQ(q->extra_bytes[0], 0);  // ta and tb both leave the group
  ASSERT_EQ(q->successors(0).size(), 1U);
  EXPECT_EQ(q->successors(0)[0], 1U);
  // The weight is read by both groups; tensors keep their names.
  uint32_t wq = UINT32_MAX;
  for (uint32_t t = 0; t < q->num_tensors(); ++t) {
    if (q->tensors[t].name == p.tensors[w].name) wq = t;
  }
  ASSERT_NE(wq, UINT32_MAX);
  EXPECT_EQ(q->consumers(wq).size(), 2U);

  // Group {b, c}: ta crosses, tb stays inside, tc is an output. Training
  // keeps the largest tensor made inside a group (tc) as a tensor.
  Grouping g2{{0, 1, 1}, 2};
  auto q2 = Contract(p, g2);
  ASSERT_TRUE(q2);
  EXPECT_EQ(q2->extra_bytes[1], 200);
  EXPECT_EQ(q2->extra_bytes[0], 0);
  int64_t out_bytes = 0;
  for (uint32_t t : q2->outputs(1)) out_bytes += q2->tensors[t].bytes;
  EXPECT_EQ(out_bytes, 300);
}

TEST(Contract, TrainingKeepsTheLargestInternalTensorOfAGroup) {
  // a -> b -> c -> d, all one group: tb (the largest) stays a tensor.
  for (bool training : {false, true}) {
    ReductionGraph g(training);
    const uint32_t in = g.Tensor(10, TensorRole::kInput);
    const uint32_t ta = g.Tensor(100), tb = g.Tensor(500), tc = g.Tensor(300);
    const uint32_t td = g.Tensor(1);
    g.Op({in}, {ta});
    g.Op({ta}, {tb});
    g.Op({tb}, {tc});
    g.Op({tc}, {td});
    Problem p = std::move(g).Build();
    p.tensors[td].output = true;
    auto q = Contract(p, Grouping{{0, 0, 0, 0}, 1});
    ASSERT_TRUE(q);
    int64_t out_bytes = 0, largest = 0;
    for (uint32_t t : q->outputs(0)) {
      out_bytes += q->tensors[t].bytes;
      largest = std::max(largest, q->tensors[t].bytes);
    }
    EXPECT_EQ(largest, training ? 500 : 1);
    EXPECT_EQ(q->extra_bytes[0] + out_bytes, 901);
  }
}

TEST(Contract, AConstantInsideItsConsumersGroupBecomesAPlainWeight) {
  ReductionGraph g;
  const uint32_t in = g.Tensor(10, TensorRole::kInput);
  const uint32_t w = g.Tensor(1000, TensorRole::kWeight);
  const uint32_t ta = g.Tensor(100), tb = g.Tensor(100);
  const OpId k = g.Op({}, {w}, 0.0);  // a Constant node
  g.Op({in, w}, {ta});
  g.Op({ta, w}, {tb});
  const Problem p = std::move(g).Build();
  ASSERT_EQ(p.tensors[w].producer, k);
  // Constant and first consumer together, second consumer apart.
  auto q = Contract(p, Grouping{{0, 0, 1}, 2});
  ASSERT_TRUE(q) << q.error().message;
  EXPECT_EQ(q->extra_bytes[0], 1000);  // its copy where it is made and read
  // All together: the weight has no producer any more.
  auto q1 = Contract(p, Grouping{{0, 0, 0}, 1});
  ASSERT_TRUE(q1) << q1.error().message;
  for (const ProblemTensor& t : q1->tensors) {
    if (t.role == TensorRole::kWeight) {
      EXPECT_EQ(t.producer, kNoOp);
    }
  }
  CheckGrouping(p, CoPlace(p, IdentityGrouping(p)), "constant");
}

}  // namespace
}  // namespace tessera::placer
