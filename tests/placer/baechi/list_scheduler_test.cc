// Baechi's algorithms (m-TOPO, m-ETF, m-SCT) and the list-scheduling engine
// on small hand-made problems with known answers, and their invariants on
// random DAGs.

#include "placer/baechi/list_scheduler_internal.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <functional>
#include <future>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "placer/core/algorithms_internal.h"
#include "placer/core/ledger_internal.h"
#include "tests/placer/test_problems.h"

namespace tessera::placer {
namespace {

using testing::RandomDagOptions;
using testing::RandomProblem;
using testing::UniformCluster;

constexpr int64_t kGiB = int64_t{1} << 30;

using AlgoFn = std::function<Result<AlgoOutput>(
    const Problem&, const Cluster&, const Budget&, const PlaceOptions&)>;

struct Named {
  std::string name;
  AlgoFn fn;
};

std::vector<Named> Algorithms() {
  return {{"m-topo", PlaceMTopo}, {"m-etf", PlaceMEtf}, {"m-sct", PlaceMSct}};
}

PlaceOptions NoReductions() {
  PlaceOptions o;
  o.coplace = false;
  o.fuse = false;
  return o;
}

Budget BudgetOf(const Cluster& c) {
  Budget b;
  for (const ClusterDevice& d : c.devices) b.push_back(d.memory_usable);
  return b;
}

// Builds problems by hand; one profile unless given.
class ListGraph {
 public:
  explicit ListGraph(int profiles = 1, std::vector<int> device_profile = {0, 0},
                     bool training = false)
      : profiles_(profiles),
        b_(profiles, std::move(device_profile), training) {}
  uint32_t Tensor(int64_t bytes, TensorRole role = TensorRole::kActivation) {
    return b_.AddTensor("t" + std::to_string(tensors_++), bytes, role);
  }
  uint32_t Input() { return Tensor(8, TensorRole::kInput); }
  // An op taking `seconds` on every profile (or the given per-profile
  // times).
  OpId Op(std::vector<uint32_t> ins, std::vector<uint32_t> outs,
          std::vector<double> seconds) {
    if (seconds.size() == 1) seconds.assign(profiles_, seconds[0]);
    return b_.AddOp("op" + std::to_string(ops_++), "Op", seconds, seconds, ins,
                    outs);
  }
  Problem Build() && {
    auto p = std::move(b_).Build();
    EXPECT_TRUE(p) << p.error().message;
    return std::move(p).value();
  }

 private:
  int profiles_;
  ProblemBuilder b_;
  int tensors_ = 0, ops_ = 0;
};

// Every op on a valid device, no device over its budget as the ledger
// counts it, priorities (if any) a topological permutation.
void CheckPlacement(const Problem& p, const Cluster& c, const Budget& budget,
                    const Placement& pl, const std::string& what) {
  SCOPED_TRACE(what);
  ASSERT_EQ(pl.device.size(), p.num_ops());
  MemoryLedger ledger(p, static_cast<int>(c.size()), Accounting::kLiveness);
  // Replay in the order the algorithm placed the ops (its priority), which
  // liveness accounting depends on.
  std::vector<OpId> order = p.topo;
  if (pl.priority.size() == p.num_ops()) {
    std::sort(order.begin(), order.end(),
              [&](OpId a, OpId b) { return pl.priority[a] < pl.priority[b]; });
  }
  for (OpId op : order) {
    ASSERT_LT(pl.device[op], c.size());
    ledger.Place(op, pl.device[op]);
  }
  for (size_t d = 0; d < c.size(); ++d) {
    EXPECT_LE(ledger.used(static_cast<int>(d)), budget[d]) << "device " << d;
  }
  if (pl.priority.empty()) return;
  ASSERT_EQ(pl.priority.size(), p.num_ops());
  std::vector<bool> seen(p.num_ops(), false);
  for (OpId op = 0; op < p.num_ops(); ++op) {
    ASSERT_LT(pl.priority[op], p.num_ops());
    EXPECT_FALSE(seen[pl.priority[op]]);
    seen[pl.priority[op]] = true;
    for (uint32_t v : p.successors(op)) {
      EXPECT_LT(pl.priority[op], pl.priority[v]) << p.names[op];
    }
  }
}

// Two chains of three 1 s ops, tiny tensors.
Problem TwoChains() {
  ListGraph g;
  for (int chain = 0; chain < 2; ++chain) {
    uint32_t t = g.Input();
    for (int i = 0; i < 3; ++i) {
      const uint32_t out = g.Tensor(16);
      g.Op({t}, {out}, {1.0});
      t = out;
    }
  }
  return std::move(g).Build();
}

TEST(MEtf, SplitsTwoIndependentChains) {
  const Problem p = TwoChains();
  const Cluster c = UniformCluster(2, kGiB, 1e9);
  for (const PlaceOptions& o : {PlaceOptions{}, NoReductions()}) {
    for (const Named& a : {Algorithms()[1], Algorithms()[2]}) {
      auto out = a.fn(p, c, BudgetOf(c), o);
      ASSERT_TRUE(out) << out.error().message;
      const auto& dev = out->placement.device;
      EXPECT_EQ(dev[0], dev[1]);
      EXPECT_EQ(dev[1], dev[2]);
      EXPECT_EQ(dev[3], dev[4]);
      EXPECT_EQ(dev[4], dev[5]);
      EXPECT_NE(dev[0], dev[3]) << a.name;
      CheckPlacement(p, c, BudgetOf(c), out->placement, a.name);
    }
  }
}

TEST(MEtf, KeepsAForkOnOneDeviceWhenTensorsAreHugeAndTheLinkSlow) {
  // a -> {b, c} -> d, 2 GB tensors over 1 GB/s: a transfer costs 2 s,
  // more than running b and c one after the other.
  ListGraph g;
  const uint32_t in = g.Input();
  const uint32_t ta = g.Tensor(2'000'000'000), tb = g.Tensor(2'000'000'000),
                 tc = g.Tensor(2'000'000'000), td = g.Tensor(8);
  g.Op({in}, {ta}, {1.0});
  g.Op({ta}, {tb}, {1.0});
  g.Op({ta}, {tc}, {1.0});
  g.Op({tb, tc}, {td}, {1.0});
  const Problem p = std::move(g).Build();
  const Cluster c = UniformCluster(2, 100 * kGiB, 1e9);
  for (const Named& a : {Algorithms()[1], Algorithms()[2]}) {
    auto out = a.fn(p, c, BudgetOf(c), NoReductions());
    ASSERT_TRUE(out) << out.error().message;
    const auto& dev = out->placement.device;
    EXPECT_TRUE(std::all_of(dev.begin(), dev.end(), [&](uint16_t d) {
      return d == dev[0];
    })) << a.name;
  }
  // With a fast link the branches run in parallel.
  const Cluster fast = UniformCluster(2, 100 * kGiB, 1e12);
  auto out = PlaceMEtf(p, fast, BudgetOf(fast), NoReductions());
  ASSERT_TRUE(out);
  EXPECT_NE(out->placement.device[1], out->placement.device[2]);
}

// A chain of six ops, each reading its own 1000-byte weight.
Problem WeightChain() {
  ListGraph g;
  uint32_t t = g.Input();
  for (int i = 0; i < 6; ++i) {
    const uint32_t w = g.Tensor(1000, TensorRole::kWeight);
    const uint32_t out = g.Tensor(1);
    g.Op({t, w}, {out}, {1.0});
    t = out;
  }
  return std::move(g).Build();
}

TEST(BaechiAlgorithms, SplitWhenTheBudgetForcesIt) {
  const Problem p = WeightChain();
  const Cluster c = UniformCluster(2, 3500, 1e9);
  for (const PlaceOptions& o : {PlaceOptions{}, NoReductions()}) {
    for (const Named& a : Algorithms()) {
      auto out = a.fn(p, c, BudgetOf(c), o);
      ASSERT_TRUE(out) << a.name << ": " << out.error().message;
      const auto& dev = out->placement.device;
      EXPECT_NE(std::count(dev.begin(), dev.end(), 0), 0) << a.name;
      EXPECT_NE(std::count(dev.begin(), dev.end(), 1), 0) << a.name;
      CheckPlacement(p, c, BudgetOf(c), out->placement, a.name);
    }
  }
  // Room for everything on one device: a chain is not split.
  const Cluster big = UniformCluster(2, 1 << 20, 1e9);
  for (const Named& a : {Algorithms()[1], Algorithms()[2]}) {
    auto out = a.fn(p, big, BudgetOf(big), NoReductions());
    ASSERT_TRUE(out);
    const auto& dev = out->placement.device;
    EXPECT_EQ(std::count(dev.begin(), dev.end(), dev[0]), 6) << a.name;
  }
}

TEST(BaechiAlgorithms, InfeasibleWhenAnOpFitsNoDevice) {
  ListGraph g(1, {0, 0, 0});
  const uint32_t in = g.Input();
  const uint32_t w = g.Tensor(10'000, TensorRole::kWeight);
  const uint32_t t0 = g.Tensor(1), t1 = g.Tensor(1);
  g.Op({in}, {t0}, {1.0});
  g.Op({t0, w}, {t1}, {1.0});
  const Problem p = std::move(g).Build();
  const Cluster c = UniformCluster(3, 5000, 1e9);
  for (const PlaceOptions& o : {PlaceOptions{}, NoReductions()}) {
    for (const Named& a : Algorithms()) {
      auto out = a.fn(p, c, BudgetOf(c), o);
      ASSERT_FALSE(out) << a.name;
      EXPECT_EQ(out.error().code, ErrorCode::kInfeasible) << a.name;
    }
  }
  // Also when the pieces fit but not all of them: six 1000-byte weights on
  // two devices of 2500.
  const Problem chain = WeightChain();
  const Cluster small = UniformCluster(2, 2500, 1e9);
  for (const Named& a : Algorithms()) {
    auto out = a.fn(chain, small, BudgetOf(small), NoReductions());
    ASSERT_FALSE(out) << a.name;
    EXPECT_EQ(out.error().code, ErrorCode::kInfeasible) << a.name;
  }
}

// Twelve independent 1 s ops after one source.
Problem Fan(int profiles, std::vector<int> device_profile,
            const std::vector<double>& seconds) {
  ListGraph g(profiles, std::move(device_profile));
  const uint32_t in = g.Input();
  const uint32_t src = g.Tensor(8);
  g.Op({in}, {src}, {0.0});
  for (int i = 0; i < 12; ++i) g.Op({src}, {g.Tensor(8)}, seconds);
  return std::move(g).Build();
}

int CountOn(const Placement& pl, int d) {
  return static_cast<int>(std::count(pl.device.begin() + 1, pl.device.end(),
                                     static_cast<uint16_t>(d)));
}

TEST(BaechiAlgorithms, TheFasterDeviceGetsMoreWork) {
  // Device 1 has half the compute share of device 0.
  const Problem p = Fan(1, {0, 0}, {1.0});
  const Cluster shares = UniformCluster(2, kGiB, 1e12, 0.0, {1.0, 0.5});
  // Device 1 is a kind twice as slow (own profile).
  const Problem slow_kind = Fan(2, {0, 1}, {1.0, 2.0});
  const Cluster same = UniformCluster(2, kGiB, 1e12);
  for (const Named& a : Algorithms()) {
    for (const auto& [problem, cluster] :
         {std::pair{&p, &shares}, std::pair{&slow_kind, &same}}) {
      auto out = a.fn(*problem, *cluster, BudgetOf(*cluster), PlaceOptions{});
      ASSERT_TRUE(out) << out.error().message;
      // Balanced by speed: 8 of the 12 ops on device 0 (m-topo exactly;
      // the list schedulers finish at 8 s either way).
      EXPECT_EQ(CountOn(out->placement, 0), 8) << a.name;
      EXPECT_EQ(CountOn(out->placement, 1), 4) << a.name;
    }
  }
}

TEST(ListSchedule, AWeightMadeByAnOpIsNeverSent) {
  // k (a Constant) makes 1 MB that x and y read (1 s each); at 1,000 B/s
  // sending it would take 1,000 s. As a weight each device holds its own
  // copy, so x and y run side by side at k's finish; as an activation it
  // would be sent, and y waits for x on k's device instead.
  for (const TensorRole role : {TensorRole::kWeight, TensorRole::kActivation}) {
    ListGraph g;
    const uint32_t w = g.Tensor(1'000'000, role);
    const OpId k = g.Op({}, {w}, {0.5});
    const OpId x = g.Op({w}, {g.Tensor(8)}, {1.0});
    const OpId y = g.Op({w}, {g.Tensor(8)}, {1.0});
    const Problem p = std::move(g).Build();
    ASSERT_EQ(p.tensors[w].producer, k);
    const Cluster cluster = UniformCluster(2, kGiB, 1e3);
    auto etf = PlaceMEtf(p, cluster, BudgetOf(cluster), NoReductions());
    ASSERT_TRUE(etf) << etf.error().message;
    EXPECT_EQ(etf->placement.device[x] != etf->placement.device[y],
              role == TensorRole::kWeight);
  }
}

TEST(MSct, KeepsTheFavouriteChildWithItsParent) {
  // a -> b (a large tensor: 0.5 s to send) and a -> c (tiny); b and c take
  // 1 s. c comes first in the graph, so plain ETF runs c after a and sends
  // the large tensor to b elsewhere (done at 2.5 s); the LP makes b a's
  // favourite child, which keeps b with a (done at 2 s).
  ListGraph g;
  const uint32_t in = g.Input();
  const uint32_t ta_big = g.Tensor(500'000'000), ta_small = g.Tensor(8);
  const OpId a = g.Op({in}, {ta_big, ta_small}, {1.0});
  const OpId c = g.Op({ta_small}, {g.Tensor(8)}, {1.0});
  const OpId b = g.Op({ta_big}, {g.Tensor(8)}, {1.0});
  const Problem p = std::move(g).Build();
  const Cluster cluster = UniformCluster(2, kGiB, 1e9);

  auto etf = PlaceMEtf(p, cluster, BudgetOf(cluster), NoReductions());
  ASSERT_TRUE(etf);
  EXPECT_EQ(etf->placement.device[c], etf->placement.device[a]);
  EXPECT_NE(etf->placement.device[b], etf->placement.device[a]);

  auto sct = PlaceMSct(p, cluster, BudgetOf(cluster), NoReductions());
  ASSERT_TRUE(sct) << sct.error().message;
  EXPECT_EQ(sct->placement.device[b], sct->placement.device[a]);
  EXPECT_NE(sct->placement.device[c], sct->placement.device[a]);
  ASSERT_FALSE(sct->notes.empty());
  EXPECT_NE(sct->notes.back().find("1 favourite child"), std::string::npos)
      << sct->notes.back();
}

TEST(BaechiAlgorithms, MSctFindsTheFavouritesOfALargeGraphBesideTheEngine) {
  // From 50,000 ops the LP's graph and the LP run on a thread of their own
  // while the engine prepares (the sanitizers' build checks that thread's
  // GLPK environment is released).
  RandomDagOptions o;
  o.ops = 60'000;
  o.devices = 4;
  o.window = 4;
  o.edge_probability = 0.3;
  const Problem p = RandomProblem(7, o);
  const Cluster c = UniformCluster(4, kGiB, 1e9);
  auto sct = PlaceMSct(p, c, BudgetOf(c), NoReductions());
  ASSERT_TRUE(sct) << sct.error().message;
  ASSERT_EQ(sct->placement.device.size(), p.num_ops());
  ASSERT_FALSE(sct->notes.empty());
  const std::string& note = sct->notes.back();
  EXPECT_NE(note.find("m-sct: LP over"), std::string::npos) << note;
  EXPECT_EQ(note.find(" 0 favourite children"), std::string::npos) << note;
  // Beside the engine the LP runs in a spawned child (common/isolated.h),
  // not in a fork of this process: a fork would have said so.
  EXPECT_EQ(note.find("ran in a fork"), std::string::npos) << note;
}

TEST(ListSchedule, TheFavouritesHooksComeInOrderOnTheEngineThread) {
  // m-SCT's LP may fork a child (when it cannot spawn one, common/
  // isolated.h); under AddressSanitizer it waits for
  // `joining`, the word that the engine's thread allocates no more. So
  // `joining` comes on the engine's thread, after `tables_built`, while the
  // favourites still run beside it, and only when they run beside it.
  const Problem p = TwoChains();
  const Cluster c = UniformCluster(2, kGiB, 1e9);
  for (const bool beside : {true, false}) {
    const std::thread::id engine = std::this_thread::get_id();
    std::mutex mu;
    std::vector<std::string> events;
    auto log = [&](const std::string& e) {
      const std::lock_guard<std::mutex> lock(mu);
      events.push_back(e);
    };
    std::promise<void> joined;
    std::shared_future<void> joined_seen = joined.get_future().share();
    ListScheduleOptions o;
    o.second_thread_from_ops = beside ? 0 : size_t{1} << 30;
    o.tables_built = [&] {
      log(std::this_thread::get_id() == engine ? "tables" : "tables elsewhere");
    };
    o.joining = [&] {
      log(std::this_thread::get_id() == engine ? "joining"
                                               : "joining elsewhere");
      joined.set_value();
    };
    o.favourites = [&](std::vector<OpId>& child, std::vector<OpId>& parent) {
      const bool other = std::this_thread::get_id() != engine;
      // Beside the engine, the favourites can wait for `joining`: it comes
      // before the engine waits for them.
      if (other && joined_seen.wait_for(std::chrono::seconds(60)) !=
                       std::future_status::ready) {
        log("no joining");
      }
      log(other ? "favourites beside" : "favourites here");
      child.assign(p.num_ops(), kNoOp);
      parent.assign(p.num_ops(), kNoOp);
    };
    auto out = ListSchedule(p, c, BudgetOf(c), o);
    ASSERT_TRUE(out) << out.error().message;
    const std::vector<std::string> want =
        beside
            ? std::vector<std::string>{"tables", "joining", "favourites beside"}
            : std::vector<std::string>{"tables", "favourites here"};
    EXPECT_EQ(events, want) << (beside ? "beside" : "on the engine's thread");
  }
}

TEST(BaechiAlgorithms, PlaceAnEmptyGraph) {
  ListGraph g;
  const Problem p = std::move(g).Build();
  const Cluster c = UniformCluster(2, kGiB);
  for (const Named& a : Algorithms()) {
    auto out = a.fn(p, c, BudgetOf(c), PlaceOptions{});
    ASSERT_TRUE(out) << a.name << ": " << out.error().message;
    EXPECT_TRUE(out->placement.device.empty());
  }
}

TEST(ListSchedule, PrioritiesFollowTheScheduleOrder) {
  const Problem p = TwoChains();
  const Cluster c = UniformCluster(2, kGiB, 1e9);
  auto out = ListSchedule(p, c, BudgetOf(c), ListScheduleOptions{});
  ASSERT_TRUE(out);
  // a1 and b1 start at 0, a2 and b2 at 1, a3 and b3 at 2.
  const auto& pr = out->placement.priority;
  EXPECT_LT(std::max(pr[0], pr[3]), std::min(pr[1], pr[4]));
  EXPECT_LT(std::max(pr[1], pr[4]), std::min(pr[2], pr[5]));
}

TEST(BaechiAlgorithms, RandomDagsArePlacedWithinBudgets) {
  int feasible = 0, runs = 0;
  for (uint64_t seed = 1; seed <= 30; ++seed) {
    RandomDagOptions o;
    o.ops = 40 + static_cast<int>(seed % 4) * 30;
    o.devices = 2 + static_cast<int>(seed % 4);
    o.profiles = seed % 3 == 0 ? 2 : 1;
    o.training = seed % 2 == 0;
    o.window = seed % 5 == 0 ? 30 : 6;
    o.max_weight_bytes = seed % 3 == 1 ? int64_t{4} << 20 : 1000;
    const Problem p = RandomProblem(seed, o);
    // Budgets: the whole model's count split over the devices, with some
    // slack, so that memory binds.
    const int64_t one = WholeModelBytes(p);
    std::vector<double> shares(o.devices, 1.0);
    for (int d = 1; d < o.devices; d += 2) shares[d] = 0.5;
    const int64_t each = one * 3 / (int64_t{2} * o.devices);
    const Cluster c = UniformCluster(o.devices, each, 1e3, 1e-3, shares);
    for (const Named& a : Algorithms()) {
      for (const PlaceOptions& po : {PlaceOptions{}, NoReductions()}) {
        ++runs;
        auto out = a.fn(p, c, BudgetOf(c), po);
        if (!out) {
          EXPECT_EQ(out.error().code, ErrorCode::kInfeasible)
              << out.error().message;
          continue;
        }
        ++feasible;
        CheckPlacement(p, c, BudgetOf(c), out->placement,
                       a.name + " seed " + std::to_string(seed));
      }
    }
  }
  EXPECT_GT(feasible, runs / 2);
}

}  // namespace
}  // namespace tessera::placer
