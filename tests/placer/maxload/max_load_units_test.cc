// BuildMaxLoadUnits: color classes, free nodes joined to their neighbour,
// the order of a contiguous split for forward and backward nodes; and the
// DP over that order against brute force on training graphs.
#include "placer/maxload/max_load_units.h"

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <random>
#include <vector>

#include "placer/maxload/max_load.h"

namespace tessera::placer {
namespace {

MaxLoadNode UnitNode(int64_t id, double time, int64_t size = 1,
                     int64_t color = -1, bool backward = false) {
  MaxLoadNode n;
  n.id = id;
  n.time = {time, time * 3};
  n.size = size;
  n.color = color;
  n.backward = backward;
  return n;
}

bool Before(const MaxLoadUnits& u, int a, int b) {
  // Whether unit a precedes unit b in the order (a path a -> b).
  std::function<bool(int)> reaches = [&](int x) {
    if (x == a) return true;
    for (const int q : u.preds[x]) {
      if (reaches(q)) return true;
    }
    return false;
  };
  return a != b && reaches(b);
}

TEST(MaxLoadUnits, ColorClassesAndFreeNodes) {
  MaxLoadProblem p;
  p.kinds = TarnawskiKinds(1 << 20, 2, 1);
  // 0 -> 1 -> 2, 1 -> 3 (a free sink: no time, sends nothing),
  // 4 (a free source) -> 2, 5 (free, two predecessors) from 0 and 2;
  // 0 and 2 share a color.
  p.nodes = {UnitNode(0, 1, 1, 9), UnitNode(1, 1), UnitNode(2, 1, 1, 9),
             UnitNode(3, 0),       UnitNode(4, 0), UnitNode(5, 0)};
  p.edges = {{0, 1, 1}, {1, 2, 1}, {1, 3, 1}, {4, 2, 1}, {0, 5, 1}, {2, 5, 1}};
  const MaxLoadUnits u = BuildMaxLoadUnits(p, /*order=*/false);
  EXPECT_EQ(u.unit_of[0], u.unit_of[2]);  // one color
  EXPECT_EQ(u.unit_of[3], u.unit_of[1]);  // the free sink with its producer
  EXPECT_EQ(u.unit_of[4], u.unit_of[2]);  // the free source with its consumer
  EXPECT_EQ(u.unit_of[5], u.unit_of[0]);  // both producers are one unit
  EXPECT_EQ(u.free_nodes_joined, 3);

  // A free node of nonzero size stays alone when memory could bind.
  MaxLoadProblem tight = p;
  tight.kinds[0].memory = 3;
  const MaxLoadUnits t = BuildMaxLoadUnits(tight, false);
  EXPECT_NE(t.unit_of[3], t.unit_of[1]);
  tight.nodes[3].size = 0;
  EXPECT_EQ(BuildMaxLoadUnits(tight, false).unit_of[3],
            BuildMaxLoadUnits(tight, false).unit_of[1]);

  // A node with time is never joined.
  MaxLoadProblem busy = p;
  busy.nodes[3].time = {0.5, 0};
  EXPECT_NE(BuildMaxLoadUnits(busy, false).unit_of[3],
            BuildMaxLoadUnits(busy, false).unit_of[1]);
}

// A forward chain f0 -> f1 -> f2 and its backward twins b_i (color i),
// the backward edges copying the forward direction (the published layer
// graphs) or mirroring it (the operator graphs): either way the order is
// the forward one.
TEST(MaxLoadUnits, BackwardNodesFollowTheirForwardTwins) {
  for (const bool mirrored : {false, true}) {
    MaxLoadProblem p;
    p.kinds = TarnawskiKinds(1 << 20, 2, 0);
    for (int i = 0; i < 3; ++i) p.nodes.push_back(UnitNode(i, 1, 1, i));
    for (int i = 0; i < 3; ++i)
      p.nodes.push_back(UnitNode(10 + i, 2, 1, i, true));
    p.edges = {{0, 1, 1}, {1, 2, 1}};
    if (mirrored) {
      p.edges.push_back({5, 4, 1});
      p.edges.push_back({4, 3, 1});
      p.edges.push_back({2, 5, 1});  // forward to backward: orders nothing
    } else {
      p.edges.push_back({3, 4, 1});
      p.edges.push_back({4, 5, 1});
    }
    const MaxLoadUnits u = BuildMaxLoadUnits(p, /*order=*/true);
    EXPECT_EQ(u.backward_mirrored, mirrored);
    ASSERT_EQ(u.members.size(), 3u) << mirrored;
    EXPECT_TRUE(Before(u, u.unit_of[0], u.unit_of[1])) << mirrored;
    EXPECT_TRUE(Before(u, u.unit_of[1], u.unit_of[2])) << mirrored;
    EXPECT_EQ(u.topological.size(), 3u);
  }
}

TEST(MaxLoadUnits, UnitsOnACycleOfTheOrderAreMerged) {
  // Colors make a cycle: a -> b (forward) and b' -> a' where a' has a's
  // color... here two forward nodes of one color around a third node.
  MaxLoadProblem p;
  p.kinds = TarnawskiKinds(1 << 20, 2, 0);
  p.nodes = {UnitNode(0, 1, 1, 5), UnitNode(1, 1), UnitNode(2, 1, 1, 5)};
  p.edges = {{0, 1, 1}, {1, 2, 1}};
  const MaxLoadUnits u = BuildMaxLoadUnits(p, true);
  EXPECT_EQ(u.members.size(), 1u);  // 1 lies between two halves of color 5
  EXPECT_EQ(u.unit_of[1], u.unit_of[0]);
}

// A random training graph: a forward DAG on f nodes (edges from lower to
// higher index), backward twins sharing their colors, backward edges
// mirrored, and some forward-to-backward edges (activations kept for the
// gradient).
MaxLoadProblem RandomTraining(std::mt19937_64& rng, int f, int accelerators) {
  std::uniform_real_distribution<double> time(0.5, 10);
  std::bernoulli_distribution edge(0.5), keep(0.3);
  MaxLoadProblem p;
  p.source = "training";
  for (int i = 0; i < f; ++i) p.nodes.push_back(UnitNode(i, time(rng), 1, i));
  for (int i = 0; i < f; ++i) {
    p.nodes.push_back(UnitNode(100 + i, time(rng), 1, i, true));
  }
  for (int i = 0; i < f; ++i) {
    for (int j = i + 1; j < f; ++j) {
      if (j == i + 1 || edge(rng)) {
        const double c = time(rng) / 4;
        p.edges.push_back({i, j, c});
        p.edges.push_back({f + j, f + i, c});
      }
    }
    if (keep(rng) && i + 1 < f) p.edges.push_back({i, f + i + 1, 0.3});
  }
  p.kinds = TarnawskiKinds(1 << 20, accelerators, 1);
  return p;
}

// The best placement among those whose units form a chain of ideals of
// the units' order: each device's units convex, the quotient acyclic.
double BruteOverUnitChains(const MaxLoadProblem& p) {
  const MaxLoadUnits u = BuildMaxLoadUnits(p, true);
  const int m = static_cast<int>(u.members.size());
  const int devices = p.Devices();
  std::vector<std::vector<bool>> reach(m, std::vector<bool>(m, false));
  for (const int a : u.topological) {
    for (const int q : u.preds[a]) {
      reach[q][a] = true;
      for (int x = 0; x < m; ++x) {
        if (reach[x][q]) reach[x][a] = true;
      }
    }
  }
  std::vector<int> device(m, 0);
  double best = INFINITY;
  std::function<void(int)> go = [&](int i) {
    if (i == m) {
      // Convex: no path a -> c -> b with a, b on one device, c elsewhere;
      // acyclic quotient: no paths both ways between two devices.
      for (int a = 0; a < m; ++a) {
        for (int b = 0; b < m; ++b) {
          if (!reach[a][b] || device[a] == device[b]) continue;
          for (int c = 0; c < m; ++c) {
            if (reach[b][c] && device[c] == device[a]) return;
          }
        }
      }
      MaxLoadPlacement x;
      x.device.resize(p.nodes.size());
      for (size_t v = 0; v < p.nodes.size(); ++v) {
        x.device[v] = device[u.unit_of[v]];
      }
      const MaxLoadEvaluation e = EvaluateMaxLoad(p, x);
      if (e.violation.empty()) best = std::min(best, e.max_load);
      return;
    }
    for (int d = 0; d < devices; ++d) {
      device[i] = d;
      go(i + 1);
    }
  };
  go(0);
  return best;
}

TEST(MaxLoadUnits, DpIsExactOnTrainingGraphs) {
  std::mt19937_64 rng(2020);
  for (int trial = 0; trial < 40; ++trial) {
    const MaxLoadProblem p = RandomTraining(rng, 2 + trial % 4, 1 + trial % 3);
    const double brute = BruteOverUnitChains(p);
    auto dp = SolveContiguousMaxLoad(p);
    ASSERT_TRUE(dp) << dp.error().message;
    EXPECT_EQ(dp->status, SolveStatus::kOptimal);
    EXPECT_NEAR(dp->max_load, brute, 1e-9) << "trial " << trial;
    // Every backward node is with its forward twin.
    for (size_t v = 0; v < p.nodes.size() / 2; ++v) {
      EXPECT_EQ(dp->placement.device[v],
                dp->placement.device[v + p.nodes.size() / 2]);
    }
  }
}

}  // namespace
}  // namespace tessera::placer
