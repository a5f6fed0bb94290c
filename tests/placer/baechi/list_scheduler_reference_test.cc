// The list-scheduling engine against a plain reference: m-ETF written the
// obvious way (every step scans every ready op on every device, O(n^2 D)),
// with the same rules (list_scheduler_internal.h), on random DAGs whose
// budgets bind. The engine's sets, its shared `global` set, its evictions
// and its shortcut past the ledger must give the same plan, op for op. And
// the pieces: RankSet against std::set; the ledger's GrowthBound never
// below what placing an op adds.

#include <gtest/gtest.h>

#include <algorithm>
#include <limits>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "placer/baechi/list_scheduler_internal.h"
#include "placer/baechi/rank_set_internal.h"
#include "placer/core/ledger_internal.h"
#include "tests/placer/test_problems.h"

namespace tessera::placer {
namespace {

using testing::RandomDagOptions;
using testing::RandomProblem;
using testing::UniformCluster;

// m-ETF, plainly, and with favourites m-SCT's rules (list_scheduler.cc):
// a device whose last op's favourite child is ready, starts there no
// later than anywhere and fits is reserved for it; and an op goes to its
// favourite parent's device when it finishes there no later than at the
// chosen one plus the transfer that saves. Returns device and order per
// op, or nothing when an op fits no device.
struct Plan {
  bool ok = false;
  std::vector<uint16_t> device;
  std::vector<uint32_t> order;
};

Plan Reference(const Problem& p, const Cluster& c, const Budget& budget,
               const ListScheduleOptions& favourites = {}) {
  const bool sct = !favourites.favourite_child.empty();
  const int nd = static_cast<int>(c.size());
  const size_t n = p.num_ops();
  const std::vector<double> priority = BottomLevels(p, ComputeMeanCosts(p, c));
  MemoryLedger ledger(p, nd, Accounting::kLiveness);
  auto comm = [&](int64_t bytes, int a, int b) {
    if (a == b) return 0.0;
    const Link& l = c.link(a, b);
    return l.latency +
           (l.bandwidth > 0 ? static_cast<double>(bytes) / l.bandwidth : 0.0);
  };
  std::vector<double> free(nd, 0.0), finish(n, 0.0);
  std::vector<std::vector<double>> arrival(n, std::vector<double>(nd, 0.0));
  std::vector<std::vector<char>> dropped(n, std::vector<char>(nd, 0));
  std::vector<int> waiting(n);
  std::vector<char> ready(n, 0), placed(n, 0);
  std::vector<OpId> last(nd, kNoOp);
  Plan plan;
  plan.device.assign(n, 0);
  plan.order.assign(n, 0);
  auto make_ready = [&](OpId op) {
    ready[op] = 1;
    for (uint32_t t : p.inputs(op)) {
      const ProblemTensor& tensor = p.tensors[t];
      if (tensor.producer == kNoOp) continue;
      const int pd = plan.device[tensor.producer];
      for (int d = 0; d < nd; ++d) {
        const double a =
            tensor.role == TensorRole::kWeight
                ? finish[tensor.producer]
                : finish[tensor.producer] + comm(tensor.bytes, pd, d);
        arrival[op][d] = std::max(arrival[op][d], a);
      }
    }
  };
  for (OpId op = 0; op < n; ++op) {
    waiting[op] = static_cast<int>(p.predecessors(op).size());
    if (waiting[op] == 0) make_ready(op);
  }
  auto start_on = [&](OpId x, int d) {
    return std::max(free[d], arrival[x][d]);
  };
  auto duration = [&](OpId x, int d) { return PlanSeconds(p, c, x, d); };
  auto reserved_for = [&](int d) -> OpId {
    if (!sct || last[d] == kNoOp) return kNoOp;
    const OpId child = favourites.favourite_child[last[d]];
    if (child == kNoOp || placed[child] || !ready[child]) return kNoOp;
    for (int e = 0; e < nd; ++e) {
      if (start_on(child, e) < start_on(child, d)) return kNoOp;
    }
    return ledger.Fits(child, d, budget[d]) ? child : kNoOp;
  };
  for (size_t step = 0; step < n; ++step) {
    OpId best = kNoOp;
    int best_d = -1;
    double best_start = 0;
    bool best_reserved = false;
    for (int d = 0; d < nd; ++d) {
      OpId cand = kNoOp;
      for (;;) {  // the device's best fitting op: least start, then priority
        cand = kNoOp;
        for (OpId x = 0; x < n; ++x) {
          if (!ready[x] || placed[x] || dropped[x][d]) continue;
          if (cand == kNoOp || start_on(x, d) < start_on(cand, d) ||
              (start_on(x, d) == start_on(cand, d) &&
               priority[x] > priority[cand])) {
            cand = x;
          }
        }
        if (cand == kNoOp || ledger.Fits(cand, d, budget[d])) break;
        dropped[cand][d] = 1;
      }
      if (cand == kNoOp) continue;
      double cand_start = start_on(cand, d);
      bool reserved = false;
      if (const OpId child = reserved_for(d);
          child != kNoOp && child != cand &&
          cand_start + duration(cand, d) > start_on(child, d)) {
        cand = child;  // another op would delay the child: it goes first
        cand_start = start_on(child, d);
        reserved = true;
      }
      if (best == kNoOp || cand_start < best_start ||
          (start_on(cand, d) == best_start &&
           priority[cand] > priority[best])) {
        best = cand;
        best_d = d;
        best_start = cand_start;
        best_reserved = reserved;
      }
    }
    if (best == kNoOp) return plan;  // infeasible
    // Where it finishes first (ties: earlier start, lower index) among the
    // devices it fits, looking no further than where it was found.
    std::vector<int> order(nd);
    for (int d = 0; d < nd; ++d) order[d] = d;
    std::sort(order.begin(), order.end(), [&](int a, int b) {
      const double fa = start_on(best, a) + duration(best, a);
      const double fb = start_on(best, b) + duration(best, b);
      if (fa != fb) return fa < fb;
      if (start_on(best, a) != start_on(best, b)) {
        return start_on(best, a) < start_on(best, b);
      }
      return a < b;
    });
    int chosen = best_d;
    double chosen_finish = start_on(best, best_d) + duration(best, best_d);
    for (int d : order) {
      if (best_reserved || d == best_d) break;
      const double finish_there = start_on(best, d) + duration(best, d);
      if (const OpId child = reserved_for(d);
          child != kNoOp && child != best &&
          finish_there > start_on(child, d)) {
        continue;  // it would delay the child d waits for
      }
      if (ledger.Fits(best, d, budget[d])) {
        chosen = d;
        chosen_finish = finish_there;
        break;
      }
    }
    if (sct && !best_reserved && favourites.favourite_parent[best] != kNoOp) {
      const OpId parent = favourites.favourite_parent[best];
      const int pd = plan.device[parent];
      const OpId other = pd != chosen ? reserved_for(pd) : kNoOp;
      const double there = start_on(best, pd) + duration(best, pd);
      const bool delays_other =
          other != kNoOp && other != best && there > start_on(other, pd);
      if (pd != chosen && !delays_other) {
        int64_t bytes = 0;
        for (uint32_t t : p.inputs(best)) {
          if (p.tensors[t].producer == parent &&
              p.tensors[t].role == TensorRole::kActivation) {
            bytes += p.tensors[t].bytes;
          }
        }
        if (there <= chosen_finish + comm(bytes, pd, chosen) &&
            ledger.Fits(best, pd, budget[pd])) {
          chosen = pd;
        }
      }
    }
    const double s = start_on(best, chosen);
    finish[best] = s + duration(best, chosen);
    free[chosen] = finish[best];
    plan.device[best] = static_cast<uint16_t>(chosen);
    plan.order[best] = static_cast<uint32_t>(step);
    placed[best] = 1;
    last[chosen] = best;
    ledger.Place(best, chosen);
    for (uint32_t v : p.successors(best)) {
      if (--waiting[v] == 0) make_ready(v);
    }
  }
  plan.ok = true;
  return plan;
}

TEST(ListScheduleReference, TheEngineMakesTheReferencePlan) {
  int compared = 0, feasible = 0, infeasible = 0;
  for (uint64_t seed = 1; seed <= 120; ++seed) {
    RandomDagOptions o;
    o.ops = 20 + static_cast<int>(seed % 7) * 25;
    o.devices = 1 + static_cast<int>(seed % 5);
    o.profiles = seed % 3 == 0 ? 2 : 1;
    o.training = seed % 4 == 0;
    o.window = seed % 5 == 0 ? 30 : 5;
    o.edge_probability = seed % 2 ? 0.1 : 0.3;
    o.max_weight_bytes = seed % 3 == 1 ? int64_t{1} << 16 : 1000;
    const Problem p = RandomProblem(seed, o);
    std::vector<double> shares(o.devices, 1.0);
    for (int d = 1; d < o.devices; d += 2) shares[d] = 0.5;
    // From roomy (nothing binds: the engine's shortcut past the ledger
    // answers) to tight (ops are dropped and leave `global`).
    const int64_t whole = WholeModelBytes(p);
    for (const double slack : {4.0, 1.3, 0.9, 0.6}) {
      const auto each =
          static_cast<int64_t>(slack * static_cast<double>(whole) / o.devices);
      const Cluster c = UniformCluster(o.devices, each, 1e3, 1e-3, shares);
      Budget budget;
      for (const ClusterDevice& d : c.devices)
        budget.push_back(d.memory_usable);
      // m-ETF, and m-SCT with random favourites (mutual, along edges).
      ListScheduleOptions fav;
      if (seed % 2 == 0) {
        std::mt19937 frng(static_cast<uint32_t>(seed));
        fav.favourite_child.assign(p.num_ops(), kNoOp);
        fav.favourite_parent.assign(p.num_ops(), kNoOp);
        for (const OpId u : p.topo) {
          for (uint32_t v : p.successors(u)) {
            if (fav.favourite_parent[v] == kNoOp && frng() % 3 != 0) {
              fav.favourite_child[u] = v;
              fav.favourite_parent[v] = u;
              break;
            }
          }
        }
      }
      const Plan want = Reference(p, c, budget, fav);
      // On one thread, and with the ledger's second thread that large
      // graphs get; m-SCT's favourites given, and found while the engine
      // prepares (as m-SCT finds them: beside it on the second thread).
      const int ways = seed % 2 == 0 ? 4 : 2;
      for (int way = 0; way < ways; ++way) {
        const size_t threads_from = way % 2 == 0 ? size_t{1} << 30 : 0;
        ListScheduleOptions lo = fav;
        lo.second_thread_from_ops = threads_from;
        if (way >= 2) {
          lo.favourite_child.clear();
          lo.favourite_parent.clear();
          lo.favourites = [&fav](std::vector<OpId>& child,
                                 std::vector<OpId>& parent) {
            child = fav.favourite_child;
            parent = fav.favourite_parent;
          };
        }
        auto got = ListSchedule(p, c, budget, lo);
        const std::string what =
            std::string(seed % 2 == 0 ? "m-sct" : "m-etf") + ", seed " +
            std::to_string(seed) + ", slack " + std::to_string(slack) +
            (threads_from == 0 ? ", second thread" : ", one thread") +
            (way >= 2 ? ", favourites found beside" : "");
        ++compared;
        ASSERT_EQ(static_cast<bool>(got), want.ok) << what;
        if (!want.ok) {
          ++infeasible;
          EXPECT_EQ(got.error().code, ErrorCode::kInfeasible) << what;
          continue;
        }
        ++feasible;
        ASSERT_EQ(got->placement.device, want.device) << what;
        ASSERT_EQ(got->placement.priority, want.order) << what;
      }
    }
  }
  // Both kinds of case were exercised.
  EXPECT_GT(feasible, compared / 4);
  EXPECT_GT(infeasible, 0);
}

TEST(RankSet, ByPriorityOrdersHighestFirstAndTiesByLowerId) {
  std::mt19937 rng(3);
  for (const size_t n : {size_t{0}, size_t{1}, size_t{7}, size_t{5000}}) {
    std::vector<double> priority(n);
    for (double& x : priority) {
      // Few distinct values (ties), zeros, negatives, tiny and huge ones.
      const double values[] = {0.0, -0.0, 1e-300, 2.5, 2.5, 1e300, -3.0};
      x = values[rng() % 7] * (rng() % 2 ? 1.0 : 1.0 + (rng() % 3));
    }
    std::vector<uint32_t> want(n);
    for (uint32_t i = 0; i < n; ++i) want[i] = i;
    std::stable_sort(want.begin(), want.end(), [&](uint32_t a, uint32_t b) {
      return priority[a] > priority[b];
    });
    const std::vector<uint32_t> got = ByPriority(priority);
    ASSERT_EQ(got.size(), n);
    for (size_t i = 0; i < n; ++i) {
      // Equal priorities (0.0 and -0.0 too) in id order.
      ASSERT_EQ(priority[got[i]], priority[want[i]]) << "rank " << i;
    }
    for (size_t i = 1; i < n; ++i) {
      if (priority[got[i - 1]] == priority[got[i]]) {
        ASSERT_LT(got[i - 1], got[i]) << "rank " << i;
      }
    }
  }
}

TEST(RankSet, BehavesAsAnOrderedSet) {
  std::mt19937 rng(7);
  for (const uint32_t n : {1u, 63u, 64u, 65u, 4096u, 4097u, 300000u}) {
    RankSet set(n);
    std::set<uint32_t> want;
    for (int i = 0; i < 20000; ++i) {
      const uint32_t r = rng() % n;
      switch (rng() % 3) {
        case 0:
          set.Insert(r);
          want.insert(r);
          break;
        case 1:
          set.Erase(r);
          want.erase(r);
          break;
        default:
          if (!want.empty()) {  // take the least, as the scheduler does
            ASSERT_EQ(set.Min(), *want.begin()) << "n=" << n;
            set.Erase(set.Min());
            want.erase(want.begin());
          }
      }
      ASSERT_EQ(set.size(), want.size());
      ASSERT_EQ(set.empty(), want.empty());
      ASSERT_EQ(set.Contains(r), want.count(r) == 1);
      // Asked now and then: changes pile up between the asks.
      if (rng() % 4 == 0) {
        ASSERT_EQ(set.Min(), want.empty() ? RankSet::kNone : *want.begin());
      }
    }
  }
}

// GrowthBound(op) >= UsedIfPlaced(op, d) - used(d) on every device at
// every point of random placements, in both accountings and in training.
TEST(LedgerGrowthBound, NeverBelowWhatPlacingAdds) {
  int checked = 0;
  for (uint64_t seed = 1; seed <= 40; ++seed) {
    RandomDagOptions o;
    o.ops = 60;
    o.devices = 1 + static_cast<int>(seed % 4);
    o.training = seed % 3 == 0;
    o.window = seed % 2 ? 4 : 20;
    o.max_weight_bytes = seed % 2 ? int64_t{1} << 14 : 500;
    const Problem p = RandomProblem(seed, o);
    for (const Accounting a :
         {Accounting::kConservative, Accounting::kLiveness}) {
      MemoryLedger ledger(p, o.devices, a);
      std::mt19937 rng(static_cast<uint32_t>(seed));
      for (const OpId op : p.topo) {
        for (int d = 0; d < o.devices; ++d) {
          ASSERT_LE(ledger.UsedIfPlaced(op, d) - ledger.used(d),
                    ledger.GrowthBound(op))
              << "seed " << seed << " op " << op << " device " << d;
          ++checked;
        }
        ledger.Place(op, static_cast<int>(rng() % o.devices));
      }
    }
  }
  EXPECT_GT(checked, 1000);
}

}  // namespace
}  // namespace tessera::placer
