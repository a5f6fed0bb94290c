// MaxLoadStarBound (placer/maxload/max_load.h): a lower bound from what
// each unit's device must pay, whoever shares it (docs/placer_max_load.md,
// "The star bound").
//
// A device of kind k holding the set S of units has load
//   time_k(S) + Σ_{a ∈ S, a successor outside S} cost(a)   (if k sends)
//             + Σ_{a ∉ S, a successor in S} cost(a)       (if k receives),
// so the device holding unit u has load at least
//   star_k(u) = min over S ∋ u of that,
// a minimum s-t cut: S is the source side, u is tied to the source, each
// unit v pays time_k(v) on an edge to the sink, and a node a that may send
// gets two gadget nodes: h_a (U(a) → h_a at cost(a), h_a → each successor
// unit at ∞: a sent when a successor is outside) and g_a (each successor
// unit → g_a at ∞, g_a → U(a) at cost(a): a received when a is outside).
// Then no placement has max load T unless every unit has a kind k with
// star_k(u) ≤ T, and the units with only one such kind fit in that kind's
// devices: Σ time_k ≤ count_k × T. The bound is the least such T (found by
// bisection; the test is monotone in T). On the published operator graphs
// the accelerators' communication is dear and the one CPU slow: a unit
// whose star on an accelerator exceeds T must go to the CPU, and the CPU
// cannot take them all.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <limits>
#include <vector>

#include "placer/maxload/max_load.h"
#include "placer/maxload/max_load_units.h"

namespace tessera::placer {
namespace {

using Clock = std::chrono::steady_clock;
constexpr double kInf = std::numeric_limits<double>::infinity();
// Capacities standing for ∞ (a unit that cannot run on the kind, the
// gadgets' ties): far above any sum of times and costs.
constexpr double kHuge = 1e30;
// Bisection steps: 2^-60 of the range.
constexpr int kBisections = 60;

// Dinic's maximum flow on doubles.
class MaxFlow {
 public:
  explicit MaxFlow(int nodes) : head_(nodes, -1), level_(nodes), next_(nodes) {}
  void Add(int from, int to, double cap) {
    edges_.push_back({to, head_[from], cap});
    head_[from] = static_cast<int>(edges_.size()) - 1;
    edges_.push_back({from, head_[to], 0});
    head_[to] = static_cast<int>(edges_.size()) - 1;
  }
  double Run(int s, int t, double eps) {
    double flow = 0;
    while (Levels(s, t, eps)) {
      next_ = head_;
      for (double f = Push(s, t, kHuge, eps); f > eps;
           f = Push(s, t, kHuge, eps)) {
        flow += f;
      }
    }
    return flow;
  }

 private:
  struct Edge {
    int to, next;
    double cap;
  };
  bool Levels(int s, int t, double eps) {
    std::fill(level_.begin(), level_.end(), -1);
    std::vector<int> queue = {s};
    level_[s] = 0;
    for (size_t at = 0; at < queue.size(); ++at) {
      const int v = queue[at];
      for (int e = head_[v]; e >= 0; e = edges_[e].next) {
        if (edges_[e].cap > eps && level_[edges_[e].to] < 0) {
          level_[edges_[e].to] = level_[v] + 1;
          queue.push_back(edges_[e].to);
        }
      }
    }
    return level_[t] >= 0;
  }
  double Push(int v, int t, double limit, double eps) {
    if (v == t) return limit;
    for (int& e = next_[v]; e >= 0; e = edges_[e].next) {
      Edge& edge = edges_[e];
      if (edge.cap <= eps || level_[edge.to] != level_[v] + 1) continue;
      const double f = Push(edge.to, t, std::min(limit, edge.cap), eps);
      if (f > eps) {
        edge.cap -= f;
        edges_[e ^ 1].cap += f;
        return f;
      }
    }
    return 0;
  }
  std::vector<int> head_, level_, next_;
  std::vector<Edge> edges_;
};

// What the cuts read: per unit, its time per kind (kInf where it cannot
// run), and per node that may send, its cost and its successors' units.
struct StarInputs {
  MaxLoadUnits units;
  int m = 0, kinds = 0;
  std::vector<double> time;                  // [u * kinds + k]
  std::vector<int> senders;                  // nodes that may send
  std::vector<double> cost;                  // per node
  std::vector<std::vector<int>> succ_units;  // per node
};

StarInputs Inputs(const MaxLoadProblem& p) {
  StarInputs in;
  in.units = BuildMaxLoadUnits(p, /*order=*/false);
  in.m = static_cast<int>(in.units.members.size());
  in.kinds = static_cast<int>(p.kinds.size());
  in.time = UnitTimes(p, in.units);
  in.cost = p.OutCosts();
  in.succ_units.assign(p.nodes.size(), {});
  for (const MaxLoadEdge& e : p.edges) {
    const int to = in.units.unit_of[e.to];
    if (in.cost[e.from] > 0 && to != in.units.unit_of[e.from]) {
      in.succ_units[e.from].push_back(to);
    }
  }
  for (size_t a = 0; a < p.nodes.size(); ++a) {
    std::vector<int>& to = in.succ_units[a];
    std::sort(to.begin(), to.end());
    to.erase(std::unique(to.begin(), to.end()), to.end());
    if (!to.empty()) in.senders.push_back(static_cast<int>(a));
  }
  return in;
}

// star_k(u): the least load of a device of kind k holding u.
double Star(const MaxLoadKind& kind, int k, const StarInputs& in, int u) {
  const double own = in.time[u * in.kinds + k];
  if (own == kInf || !kind.charges_communication) return own;
  const int s = in.m, t = in.m + 1;
  const int gadgets = static_cast<int>(in.senders.size());
  MaxFlow flow(in.m + 2 + 2 * gadgets);
  double scale = 1;
  for (int v = 0; v < in.m; ++v) {
    const double c = in.time[v * in.kinds + k];
    flow.Add(v, t, c == kInf ? kHuge : c);
    if (c != kInf) scale += c;
  }
  for (int i = 0; i < gadgets; ++i) {
    const int a = in.senders[i];
    const int home = in.units.unit_of[a];
    const int h = in.m + 2 + 2 * i, g = h + 1;
    scale += in.cost[a];
    if (kind.charges_sends) {
      flow.Add(home, h, in.cost[a]);
      for (const int w : in.succ_units[a]) flow.Add(h, w, kHuge);
    }
    for (const int w : in.succ_units[a]) flow.Add(w, g, kHuge);
    flow.Add(g, home, in.cost[a]);
  }
  flow.Add(s, u, kHuge);
  return flow.Run(s, t, 1e-12 * scale);
}

// Whether max load T is possible as far as the stars tell.
bool Possible(const MaxLoadProblem& p, const StarInputs& in,
              const std::vector<double>& star, double t) {
  std::vector<double> forced(in.kinds, 0);
  for (int u = 0; u < in.m; ++u) {
    int only = -1, fits = 0;
    for (int k = 0; k < in.kinds; ++k) {
      if (p.kinds[k].count > 0 && star[u * in.kinds + k] <= t) {
        only = k;
        ++fits;
      }
    }
    if (fits == 0) return false;
    if (fits == 1) forced[only] += in.time[u * in.kinds + only];
  }
  for (int k = 0; k < in.kinds; ++k) {
    if (forced[k] > p.kinds[k].count * t) return false;
  }
  return true;
}

}  // namespace

double MaxLoadStarBound(const MaxLoadProblem& p, double time_limit_s) {
  const auto deadline =
      Clock::now() + std::chrono::duration_cast<Clock::duration>(
                         std::chrono::duration<double>(time_limit_s));
  const StarInputs in = Inputs(p);
  std::vector<double> star(in.time);  // time_k(u): a bound on star_k(u)
  double hi = 0;
  for (int u = 0; u < in.m; ++u) {
    for (int k = 0; k < in.kinds; ++k) {
      if (p.kinds[k].count <= 0) continue;
      double& at = star[u * in.kinds + k];
      if (Clock::now() < deadline) at = Star(p.kinds[k], k, in, u);
      if (at != kInf) hi = std::max(hi, at);
    }
  }
  if (in.m == 0 || !Possible(p, in, star, hi)) return 0;
  double lo = 0;
  for (int i = 0; i < kBisections; ++i) {
    const double mid = (lo + hi) / 2;
    (Possible(p, in, star, mid) ? hi : lo) = mid;
  }
  return lo;
}

}  // namespace tessera::placer
