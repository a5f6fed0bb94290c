// SolveMaxLoadBnb (placer/maxload/max_load.h): an exact branch and bound
// over all placements of the units (max_load_units.h), for the inputs where
// packing, not communication, makes the optimum (docs/placer_max_load.md,
// "The branch and bound").
//
// Units are assigned one at a time, the largest least time first. A
// device's load in a partial assignment counts its units' times and the
// communication already decided (a node is sent once a successor sits on
// another device; a device receives a node once it holds a successor and
// the node sits elsewhere); assigning more units never lowers it. The
// search asks "is there a placement with max load at most B?", B just
// below the incumbent (or (1 - gap) of it): a partial assignment is cut
// when a load passes B or the units left cannot fit in what the devices
// have left below B (a device of kind k holds at most share(k) (B - load)
// of least time, share(k) = the largest least time / time on k over the
// units left; for each c, no device holds more of the c largest units left
// than the smallest of them fit in). Devices of one kind are identical, so
// a unit opens only the first empty device of a kind. A finished search
// proves that no placement has max load at most B.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <limits>
#include <numeric>
#include <utility>
#include <vector>

#include "placer/maxload/max_load.h"
#include "placer/maxload/max_load_units.h"

namespace tessera::placer {
namespace {

using Clock = std::chrono::steady_clock;
constexpr double kInf = std::numeric_limits<double>::infinity();
// The clock is read once per this many search nodes.
constexpr int64_t kClockEvery = 1024;
// The share of the time limit for local search from the start.
constexpr double kLocalShare = 0.1;
// Finer questions between the coarse one and the exact one (gap / 2,
// gap / 4, ...): each settled one tightens the bound where the exact one
// is out of reach.
constexpr int kHalvings = 6;
// The share of the time limit for the star bound (MaxLoadStarBound).
constexpr double kStarShare = 0.2;
// Relative slack below the incumbent: a placement must beat it by more
// than rounding to count.
constexpr double kRelEps = 1e-9;

// What the search reads: units, their times and sizes, the communication
// each unit takes part in, and the order units are assigned in.
struct BnbModel {
  const MaxLoadProblem& p;
  MaxLoadUnits units;
  int m = 0, n = 0, devices = 0, kinds = 0;
  std::vector<int> kind_of;           // per device
  std::vector<double> time;           // [u * kinds + k]; kInf: cannot run
  std::vector<int64_t> size;          // per unit
  std::vector<double> least;          // per unit: least time on a kind present
  std::vector<double> cost;           // per node: its outgoing cost
  std::vector<double> send, receive;  // per device: 1 if charged, else 0
  // Per node that may send: the other units holding its successors.
  std::vector<std::vector<int>> succ_units;
  std::vector<std::vector<int>> out_nodes;  // per unit: its nodes that send
  std::vector<std::vector<int>> in_nodes;   // per unit: nodes sending to it
  std::vector<int> order;                   // units, largest least time first
  std::vector<double> prefix;  // prefix[i]: Σ least of order[0, i)
  std::vector<double> share;   // [i * kinds + k]: over order[i, m)

  explicit BnbModel(const MaxLoadProblem& problem);
  double Time(int u, int d) const { return time[u * kinds + kind_of[d]]; }
};

void BuildTimes(BnbModel& b) {
  b.time = UnitTimes(b.p, b.units);
  b.size.assign(b.m, 0);
  for (int v = 0; v < b.n; ++v) b.size[b.units.unit_of[v]] += b.p.nodes[v].size;
  b.least.assign(b.m, kInf);
  for (int u = 0; u < b.m; ++u) {
    for (int k = 0; k < b.kinds; ++k) {
      if (b.p.kinds[k].count > 0) {
        b.least[u] = std::min(b.least[u], b.time[u * b.kinds + k]);
      }
    }
  }
}

void BuildCommunication(BnbModel& b) {
  b.cost = b.p.OutCosts();
  b.succ_units.assign(b.n, {});
  for (const MaxLoadEdge& e : b.p.edges) {
    const int to = b.units.unit_of[e.to];
    if (b.cost[e.from] > 0 && b.units.unit_of[e.from] != to) {
      b.succ_units[e.from].push_back(to);
    }
  }
  b.out_nodes.assign(b.m, {});
  b.in_nodes.assign(b.m, {});
  for (int a = 0; a < b.n; ++a) {
    std::vector<int>& to = b.succ_units[a];
    if (to.empty()) continue;
    std::sort(to.begin(), to.end());
    to.erase(std::unique(to.begin(), to.end()), to.end());
    b.out_nodes[b.units.unit_of[a]].push_back(a);
    for (const int w : to) b.in_nodes[w].push_back(a);
  }
  b.send.assign(b.devices, 0);
  b.receive.assign(b.devices, 0);
  for (int d = 0; d < b.devices; ++d) {
    const MaxLoadKind& k = b.p.kinds[b.kind_of[d]];
    b.receive[d] = k.charges_communication ? 1 : 0;
    b.send[d] = k.charges_communication && k.charges_sends ? 1 : 0;
  }
}

void BuildOrder(BnbModel& b) {
  b.order.resize(b.m);
  std::iota(b.order.begin(), b.order.end(), 0);
  std::stable_sort(b.order.begin(), b.order.end(),
                   [&](int x, int y) { return b.least[x] > b.least[y]; });
  b.prefix.assign(b.m + 1, 0);
  for (int i = 0; i < b.m; ++i) {
    b.prefix[i + 1] = b.prefix[i] + b.least[b.order[i]];
  }
  b.share.assign(static_cast<size_t>(b.m + 1) * b.kinds, 0);
  for (int i = b.m - 1; i >= 0; --i) {
    const int u = b.order[i];
    for (int k = 0; k < b.kinds; ++k) {
      const double t = b.time[u * b.kinds + k];
      const double r = t == kInf || b.least[u] <= 0 ? 0 : b.least[u] / t;
      b.share[i * b.kinds + k] = std::max(b.share[(i + 1) * b.kinds + k], r);
    }
  }
}

BnbModel::BnbModel(const MaxLoadProblem& problem)
    : p(problem),
      units(BuildMaxLoadUnits(problem, /*order=*/false)),
      m(static_cast<int>(units.members.size())),
      n(static_cast<int>(problem.nodes.size())),
      devices(problem.Devices()),
      kinds(static_cast<int>(problem.kinds.size())) {
  kind_of.resize(devices);
  for (int d = 0; d < devices; ++d) kind_of[d] = p.KindOf(d);
  BuildTimes(*this);
  BuildCommunication(*this);
  BuildOrder(*this);
}

// B for the incumbent `inc` and `gap`: the search asks for a max load at
// most B.
double QuestionBound(double inc, double gap) {
  return inc == kInf ? kInf : inc * (1 - gap) - kRelEps * std::max(1.0, inc);
}

// The best placement so far.
struct Incumbent {
  MaxLoadPlacement placement;  // empty: none
  double max_load = kInf;
};

// One depth-first search for a placement with max load at most B, B set
// from the incumbent and `gap`; improves the incumbent as it goes.
class Search {
 public:
  Search(const BnbModel& b, double gap, Clock::time_point deadline,
         Incumbent& best)
      : b_(b), gap_(gap), deadline_(deadline), best_(best) {
    load_.assign(b.devices, 0);
    memory_.assign(b.devices, 0);
    used_.assign(b.devices, 0);
    device_.assign(b.m, -1);
    sent_.assign(b.n, 0);
    received_.assign(static_cast<size_t>(b.n) * b.devices, 0);
    SetBound();
  }
  // True when the search finished: then no placement has max load at most
  // Bound().
  bool Run() { return Dfs(0); }
  double Bound() const { return bound_; }
  int64_t nodes() const { return nodes_; }

 private:
  void SetBound() { bound_ = QuestionBound(best_.max_load, gap_); }
  bool Dfs(int i);
  bool RoomForRest(int i) const;
  void Candidates(int u, std::vector<int>& out);
  void Place(int u, int d);
  void Unplace(int u, int d, size_t mark, const std::vector<double>& loads);
  void Charge(int d, double c) { load_[d] += c; }
  void Record();

  const BnbModel& b_;
  const double gap_;
  const Clock::time_point deadline_;
  Incumbent& best_;
  double bound_ = kInf;
  int64_t nodes_ = 0;
  std::vector<double> load_;
  std::vector<int64_t> memory_;
  std::vector<int> used_;       // units per device
  std::vector<int> device_;     // per unit, -1 unassigned
  std::vector<char> sent_;      // per node
  std::vector<char> received_;  // [node * devices + d]
  std::vector<int> trail_;  // flags set: node (sent) or -1 - index (received)
};

// How many of order[from, to) — the smallest first, from the back — fit in
// `cap` of least time.
int FitCount(const BnbModel& b, double cap, int from, int to) {
  const double slack = 1e-12 * std::max(1.0, b.prefix[b.m]);
  int lo = 0, hi = to - from;
  while (lo < hi) {
    const int c = (lo + hi + 1) / 2;
    if (b.prefix[to] - b.prefix[to - c] <= cap + slack) {
      lo = c;
    } else {
      hi = c - 1;
    }
  }
  return lo;
}

bool Search::RoomForRest(int i) const {
  std::vector<double> cap(b_.devices);
  double total = 0;
  for (int d = 0; d < b_.devices; ++d) {
    if (load_[d] > bound_) return false;
    if (bound_ == kInf) return true;  // no incumbent yet
    cap[d] = (bound_ - load_[d]) * b_.share[i * b_.kinds + b_.kind_of[d]];
    total += cap[d];
  }
  const double slack = 1e-12 * std::max(1.0, b_.prefix[b_.m]);
  if (b_.prefix[b_.m] - b_.prefix[i] > total + slack) return false;
  // The j - i largest units left, order[i, j): a device holds at most c of
  // them, c = how many of the smallest of them fit in its room, and at most
  // the least of its room and the c largest.
  for (int j = i + 1; j <= b_.m; ++j) {
    if (b_.least[b_.order[j - 1]] <= 0) break;
    int count = 0;
    double fill = 0;
    for (int d = 0; d < b_.devices; ++d) {
      const int c = FitCount(b_, cap[d], i, j);
      count += c;
      fill += std::min(cap[d], b_.prefix[i + c] - b_.prefix[i]);
    }
    if (count < j - i || fill + slack < b_.prefix[j] - b_.prefix[i]) {
      return false;
    }
  }
  return true;
}

// The devices unit u may go to: those it runs on, with room in memory and
// time, and of the empty devices of a kind only the first; by the largest
// load placing u there gives (communication included), then by that
// device's load.
void Search::Candidates(int u, std::vector<int>& out) {
  std::vector<std::pair<std::pair<double, double>, int>> keyed;
  const std::vector<double> loads = load_;
  for (int d = 0; d < b_.devices; ++d) {
    const double t = b_.Time(u, d);
    if (t == kInf || load_[d] + t > bound_) continue;
    const int64_t limit = b_.p.kinds[b_.kind_of[d]].memory;
    if (limit >= 0 && memory_[d] + b_.size[u] > limit) continue;
    if (used_[d] == 0 && d > 0 && b_.kind_of[d - 1] == b_.kind_of[d] &&
        used_[d - 1] == 0) {
      continue;  // an earlier empty device of the same kind
    }
    const size_t mark = trail_.size();
    Place(u, d);
    const double top = *std::max_element(load_.begin(), load_.end());
    const double own = load_[d];
    Unplace(u, d, mark, loads);
    if (top <= bound_) keyed.push_back({{top, own}, d});
  }
  std::stable_sort(
      keyed.begin(), keyed.end(),
      [](const auto& x, const auto& y) { return x.first < y.first; });
  out.clear();
  for (const auto& k : keyed) out.push_back(k.second);
}

// Takes u off d: the flags set since `mark` and the loads before.
void Search::Unplace(int u, int d, size_t mark,
                     const std::vector<double>& loads) {
  while (trail_.size() > mark) {
    const int f = trail_.back();
    trail_.pop_back();
    if (f >= 0) {
      sent_[f] = 0;
    } else {
      received_[-1 - f] = 0;
    }
  }
  load_ = loads;
  memory_[d] -= b_.size[u];
  --used_[d];
  device_[u] = -1;
}

// Puts u on d: its time, and the communication now decided with the units
// already placed. The flags it sets go on the trail.
void Search::Place(int u, int d) {
  device_[u] = d;
  ++used_[d];
  memory_[d] += b_.size[u];
  Charge(d, b_.Time(u, d));
  const int devices = b_.devices;
  const auto apart = [&](int a, int from, int to) {
    // Node a on `from` has a successor on `to` != from.
    if (!sent_[a]) {
      sent_[a] = 1;
      trail_.push_back(a);
      Charge(from, b_.send[from] * b_.cost[a]);
    }
    const size_t at = static_cast<size_t>(a) * devices + to;
    if (!received_[at]) {
      received_[at] = 1;
      trail_.push_back(-1 - static_cast<int>(at));
      Charge(to, b_.receive[to] * b_.cost[a]);
    }
  };
  for (const int a : b_.out_nodes[u]) {
    for (const int w : b_.succ_units[a]) {
      const int dw = device_[w];
      if (dw >= 0 && dw != d) apart(a, d, dw);
    }
  }
  for (const int a : b_.in_nodes[u]) {
    const int da = device_[b_.units.unit_of[a]];
    if (da >= 0 && da != d) apart(a, da, d);
  }
}

void Search::Record() {
  MaxLoadPlacement x;
  x.device.resize(b_.n);
  for (int v = 0; v < b_.n; ++v) x.device[v] = device_[b_.units.unit_of[v]];
  const MaxLoadEvaluation e = EvaluateMaxLoad(b_.p, x);
  if (!e.violation.empty() || e.max_load >= best_.max_load) return;
  best_.placement = std::move(x);
  best_.max_load = e.max_load;
  SetBound();
}

bool Search::Dfs(int i) {
  if (i == b_.m) {
    Record();
    return true;
  }
  if (++nodes_ % kClockEvery == 1 && Clock::now() >= deadline_) return false;
  if (!RoomForRest(i)) return true;
  const int u = b_.order[i];
  std::vector<int> candidates;
  Candidates(u, candidates);
  const std::vector<double> loads = load_;
  for (const int d : candidates) {
    if (load_[d] + b_.Time(u, d) > bound_) continue;  // the bound fell
    const size_t mark = trail_.size();
    Place(u, d);
    bool over = false;
    for (int e = 0; e < b_.devices; ++e) over = over || load_[e] > bound_;
    const bool go_on = over || Dfs(i + 1);
    Unplace(u, d, mark, loads);
    if (!go_on) return false;
  }
  return true;
}

// The incumbent from a feasible `start`: local search from it for
// `seconds` first (a close incumbent makes B tight from the start).
Incumbent FromStart(const BnbModel& b, const MaxLoadPlacement& start,
                    double seconds) {
  const MaxLoadLocalResult local = ImproveMaxLoadLocally(b.p, start, seconds);
  Incumbent best;
  best.max_load = EvaluateMaxLoad(b.p, local.placement).max_load;
  best.placement = local.placement;
  return best;
}

}  // namespace

Result<MaxLoadBnbResult> SolveMaxLoadBnb(const MaxLoadProblem& p,
                                         const MaxLoadBnbOptions& o) {
  const auto started = Clock::now();
  if (p.Devices() <= 0) return BadInput(p.source + ": no device to place on");
  const auto deadline =
      started +
      std::chrono::duration_cast<Clock::duration>(
          std::chrono::duration<double>(std::max(0.0, o.time_limit_s)));
  const BnbModel b(p);
  Incumbent best;
  MaxLoadBnbResult out;
  if (o.start != nullptr && EvaluateMaxLoad(p, *o.start).violation.empty()) {
    best = FromStart(b, *o.start, kLocalShare * std::max(0.0, o.time_limit_s));
  }
  out.star_bound =
      MaxLoadStarBound(p, kStarShare * std::max(0.0, o.time_limit_s));
  out.lower_bound = out.star_bound;
  // First the coarse question (within `gap`), then, while time lasts, the
  // gap halved a few times and the exact one; each settled question raises
  // the bound. A question below the star bound is answered already.
  std::vector<double> gaps = {o.gap};
  if (o.gap > 0 && o.exact) {
    for (int i = 0; i < kHalvings; ++i) gaps.push_back(gaps.back() / 2);
    gaps.push_back(0);
  }
  for (const double gap : gaps) {
    if (QuestionBound(best.max_load, gap) < out.star_bound) {
      out.finished_gap = gap;
      continue;
    }
    Search search(b, gap, deadline, best);
    const bool finished = search.Run();
    out.nodes += search.nodes();
    if (!finished) break;
    out.lower_bound = std::max(out.lower_bound, search.Bound());
    out.finished_gap = gap;
  }
  out.placement = std::move(best.placement);
  out.max_load = best.max_load == kInf ? 0 : best.max_load;
  if (best.max_load == kInf) {
    // Finished with nothing found: no placement at all (B was infinite).
    out.status = out.finished_gap >= 0 ? SolveStatus::kInfeasible
                                       : SolveStatus::kNoSolution;
    out.lower_bound = 0;
  } else {
    out.lower_bound = std::min(out.lower_bound, out.max_load);
    const bool met =
        out.max_load - out.lower_bound <= 1e-6 * std::max(1.0, out.max_load);
    out.status = met ? SolveStatus::kOptimal : SolveStatus::kFeasible;
  }
  out.units = b.m;
  out.seconds = std::chrono::duration<double>(Clock::now() - started).count();
  return out;
}

}  // namespace tessera::placer
