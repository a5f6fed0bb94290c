// SolveContiguousMaxLoad: the exact optimum of the max-load model over
// contiguous splits, by dynamic programming over the ideals of the units'
// order DAG (Tarnawski et al., NeurIPS 2020, section 4; units in
// placer/maxload/max_load_units.h): f(I, counts) is the least largest load
// placing the ideal I on devices, `counts` of each kind used, each device
// taking J \ I for a chain of ideals I ⊂ J.
//
// Made fast by branch and bound (docs/placer_max_load.md, "The DP"):
// - an upper bound first, from the best split of one topological order
//   into consecutive blocks (its prefixes are ideals);
// - blocks J \ I grown unit by unit from I, their load kept incrementally
//   (compute, sends and receives) so each costs the degree of what was
//   added; a block whose compute alone reaches the bound on every kind it
//   may go to is not grown further (compute only grows);
// - a state whose value, or whose remaining work spread over its remaining
//   devices, reaches the bound is not extended.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <limits>
#include <unordered_map>
#include <vector>

#include "placer/maxload/max_load.h"
#include "placer/maxload/max_load_units.h"

namespace tessera::placer {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
using Clock = std::chrono::steady_clock;

using Bits = std::vector<uint64_t>;

struct BitsHash {
  size_t operator()(const Bits& b) const {
    uint64_t h = 1469598103934665603ull;
    for (const uint64_t w : b) h = (h ^ w) * 1099511628211ull;
    return static_cast<size_t>(h);
  }
};

bool Has(const Bits& b, int i) { return (b[i / 64] >> (i % 64)) & 1; }
void Set(Bits& b, int i) { b[i / 64] |= uint64_t{1} << (i % 64); }

// One block's load on each kind, kept as units are added and removed.
class Block {
 public:
  explicit Block(const MaxLoadProblem& p, const MaxLoadUnits& u)
      : p_(p), u_(u) {
    const int n = static_cast<int>(p.nodes.size());
    preds_.resize(n);
    outdeg_.assign(n, 0);
    out_cost_ = p.OutCosts();
    for (const MaxLoadEdge& e : p.edges) {
      preds_[e.to].push_back(e.from);
      ++outdeg_[e.from];
    }
    in_.assign(n, 0);
    succ_in_.assign(n, 0);
    const size_t kinds = p.kinds.size();
    time_.assign(kinds, 0);
    unsupported_.assign(kinds, 0);
  }

  void Add(int unit) {
    for (const int v : u_.members[unit]) AddNode(v);
  }
  void Remove(int unit) {
    const auto& m = u_.members[unit];
    for (auto it = m.rbegin(); it != m.rend(); ++it) RemoveNode(*it);
  }

  // The load on `kind`, or kInf where the block cannot go.
  double Load(int kind) const {
    if (unsupported_[kind] > 0) return kInf;
    const int64_t limit = p_.kinds[kind].memory;
    if (limit >= 0 && size_ > limit) return kInf;
    const MaxLoadKind& k = p_.kinds[kind];
    if (!k.charges_communication) return time_[kind];
    return time_[kind] + receives_ + (k.charges_sends ? sends_ : 0);
  }
  // A lower bound on Load(kind) for every block grown from this one.
  double GrowsTo(int kind) const {
    if (unsupported_[kind] > 0) return kInf;
    const int64_t limit = p_.kinds[kind].memory;
    if (limit >= 0 && size_ > limit) return kInf;
    return time_[kind];
  }

 private:
  void AddNode(int v) {
    if (succ_in_[v] > 0) receives_ -= out_cost_[v];
    in_[v] = 1;
    if (outdeg_[v] > succ_in_[v]) sends_ += out_cost_[v];
    for (const int q : preds_[v]) {
      const int before = succ_in_[q]++;
      if (in_[q]) {
        if (outdeg_[q] - before == 1) sends_ -= out_cost_[q];
      } else if (before == 0) {
        receives_ += out_cost_[q];
      }
    }
    Count(v, +1);
  }
  void RemoveNode(int v) {
    Count(v, -1);
    const auto& pr = preds_[v];
    for (auto it = pr.rbegin(); it != pr.rend(); ++it) {
      const int q = *it;
      const int after = --succ_in_[q];
      if (in_[q]) {
        if (outdeg_[q] - after == 1) sends_ += out_cost_[q];
      } else if (after == 0) {
        receives_ -= out_cost_[q];
      }
    }
    if (outdeg_[v] > succ_in_[v]) sends_ -= out_cost_[v];
    in_[v] = 0;
    if (succ_in_[v] > 0) receives_ += out_cost_[v];
  }
  void Count(int v, int sign) {
    const MaxLoadNode& node = p_.nodes[v];
    for (size_t k = 0; k < node.time.size(); ++k) {
      if (node.time[k] < 0) {
        unsupported_[k] += sign;
      } else {
        time_[k] += sign * node.time[k];
      }
    }
    size_ += sign * node.size;
  }

  const MaxLoadProblem& p_;
  const MaxLoadUnits& u_;
  std::vector<std::vector<int>> preds_;
  std::vector<int> outdeg_, succ_in_;
  std::vector<double> out_cost_;
  std::vector<char> in_;
  std::vector<double> time_;
  std::vector<int> unsupported_;
  int64_t size_ = 0;
  double sends_ = 0, receives_ = 0;
};

class Dp {
 public:
  Dp(const MaxLoadProblem& p, const MaxLoadDpOptions& o)
      : p_(p), o_(o), units_(BuildMaxLoadUnits(p, /*order=*/true)) {
    m_ = static_cast<int>(units_.members.size());
    words_ = (m_ + 63) / 64;
    kinds_ = static_cast<int>(p.kinds.size());
    stride_.assign(kinds_, 1);
    states_ = 1;
    for (int k = kinds_ - 1; k >= 0; --k) {
      stride_[k] = states_;
      states_ *= p.kinds[k].count + 1;
    }
    // Each unit's least time on any kind it runs on (for the bound on the
    // work left).
    least_.assign(m_, 0);
    for (int u = 0; u < m_; ++u) {
      for (const int v : units_.members[u]) {
        double best = kInf;
        for (int k = 0; k < kinds_; ++k) {
          if (p.kinds[k].count > 0 && p.nodes[v].RunsOn(k)) {
            best = std::min(best, p.nodes[v].time[k]);
          }
        }
        least_[u] += best == kInf ? 0 : best;
      }
    }
    // A device of kind k whose load stays below a bound B holds units of
    // least time below share_[k] × B: share_[k] = max over units of least
    // time / time on k (the CPU of the published inputs, ten times slower,
    // holds a tenth of an accelerator's work).
    share_.assign(kinds_, 0);
    for (int k = 0; k < kinds_; ++k) {
      for (int u = 0; u < m_; ++u) {
        double t = 0;
        bool runs = true;
        for (const int v : units_.members[u]) {
          runs = runs && p.nodes[v].RunsOn(k);
          t += std::max(p.nodes[v].time[k], 0.0);
        }
        if (!runs || least_[u] == 0) continue;
        share_[k] = std::max(share_[k], t > 0 ? least_[u] / t : 1.0);
      }
      share_[k] = std::min(share_[k], 1.0);
    }
  }

  Result<MaxLoadDpResult> Run() {
    started_ = Clock::now();
    MaxLoadDpResult out;
    out.units = m_;
    out.free_nodes_joined = units_.free_nodes_joined;
    std::string stopped;
    if (!SeedFromTopologicalOrder()) {
      stopped = p_.source +
                ": the exact search passed its time limit before its first "
                "split";
    }
    out.seed_max_load = bound_;
    if (stopped.empty()) stopped = Enumerate();
    if (stopped.empty()) stopped = Search();
    out.ideals = static_cast<int64_t>(ideals_.size());
    out.blocks = blocks_;
    if (bound_ == kInf) {
      out.status =
          stopped.empty() ? SolveStatus::kInfeasible : SolveStatus::kNoSolution;
      out.why = !stopped.empty()
                    ? stopped
                    : p_.source +
                          ": no contiguous split fits (memory, color "
                          "classes or nodes that run only on some kinds, on " +
                          DeviceCounts() + ")";
      out.seconds = Elapsed();
      return out;
    }
    out.placement.device = best_placement_;
    out.max_load = EvaluateMaxLoad(p_, out.placement).max_load;
    out.status =
        stopped.empty() ? SolveStatus::kOptimal : SolveStatus::kFeasible;
    out.why = stopped;
    out.seconds = Elapsed();
    return out;
  }

 private:
  double Elapsed() const {
    return std::chrono::duration<double>(Clock::now() - started_).count();
  }

  std::string DeviceCounts() const {
    std::string s;
    for (const MaxLoadKind& k : p_.kinds) {
      if (!s.empty()) s += ", ";
      s += std::to_string(k.count) + " " + k.name;
    }
    return s;
  }

  int CountOf(size_t state, int kind) const {
    return static_cast<int>(state / stride_[kind]) % (p_.kinds[kind].count + 1);
  }
  // Whether the devices `state` leaves could take `rest` (least time)
  // with every load below `bound`.
  bool RoomFor(size_t state, double rest, double bound) const {
    if (rest <= 0 || bound == kInf) return true;
    double room = 0;
    for (int k = 0; k < kinds_; ++k) {
      room += (p_.kinds[k].count - CountOf(state, k)) * share_[k] * bound;
    }
    return rest < room;
  }

  // The best split of one topological order of the units into
  // consecutive blocks: a feasible contiguous split, the first bound.
  // False when the time limit stopped it (quadratic in the units: seconds
  // from about 20,000).
  bool SeedFromTopologicalOrder() {
    const std::vector<int>& order = units_.topological;
    const int m = static_cast<int>(order.size());
    std::vector<double> f(static_cast<size_t>(m + 1) * states_, kInf);
    std::vector<std::pair<int, int>> from(f.size(), {-1, -1});
    std::vector<int> kind_of(f.size(), -1);
    f[0] = 0;
    Block block(p_, units_);
    std::vector<double> rest(m + 1, 0);
    for (int i = m - 1; i >= 0; --i) rest[i] = rest[i + 1] + least_[order[i]];
    double bound = kInf;
    for (int i = 0; i < m; ++i) {
      if (o_.time_limit_s > 0 && i % 64 == 0 && Elapsed() > o_.time_limit_s) {
        return false;
      }
      bool any = false;
      for (size_t s = 0; s < states_; ++s) {
        any = any || (f[i * states_ + s] < bound && RoomFor(s, rest[i], bound));
      }
      if (!any) continue;
      for (int j = i; j < m; ++j) {
        block.Add(order[j]);
        bool grows = false;
        for (int k = 0; k < kinds_; ++k) {
          if (p_.kinds[k].count > 0 && block.GrowsTo(k) < bound) grows = true;
        }
        if (!grows) {
          for (int r = j; r >= i; --r) block.Remove(order[r]);
          break;
        }
        for (int k = 0; k < kinds_; ++k) {
          const double load = block.Load(k);
          if (load >= bound) continue;
          for (size_t s = 0; s < states_; ++s) {
            const double v = std::max(f[i * states_ + s], load);
            if (v >= bound || CountOf(s, k) == p_.kinds[k].count) continue;
            const size_t t = (j + 1) * states_ + s + stride_[k];
            if (v < f[t]) {
              f[t] = v;
              from[t] = {i, static_cast<int>(s)};
              kind_of[t] = k;
              if (j + 1 == m) bound = std::min(bound, v);
            }
          }
        }
        if (j + 1 == m) {
          for (int r = j; r >= i; --r) block.Remove(order[r]);
        }
      }
    }
    size_t at = 0;
    for (size_t s = 0; s < states_; ++s) {
      if (f[m * states_ + s] < f[m * states_ + at]) at = s;
    }
    if (f[m * states_ + at] == kInf) return true;
    best_placement_.assign(p_.nodes.size(), -1);
    int pos = m;
    size_t state = at;
    while (pos > 0) {
      const size_t t = pos * states_ + state;
      const auto [prev, prev_state] = from[t];
      const int k = kind_of[t];
      const int device = p_.FirstDevice(k) + CountOf(prev_state, k);
      for (int r = prev; r < pos; ++r) {
        for (const int v : units_.members[order[r]]) {
          best_placement_[v] = device;
        }
      }
      pos = prev;
      state = static_cast<size_t>(prev_state);
    }
    bound_ = f[m * states_ + at];
    return true;
  }

  // Every ideal of the units' order, in order of size, with the lattice's
  // edges (ideal + one unit); "" when it got them all, else why it stopped.
  std::string Enumerate() {
    Bits empty(words_, 0);
    index_.emplace(empty, 0);
    ideals_.push_back(empty);
    rest_.push_back(0);
    for (const double l : least_) rest_[0] += l;
    children_.emplace_back();
    std::vector<int> missing(m_);
    for (size_t i = 0; i < ideals_.size(); ++i) {
      if (o_.time_limit_s > 0 && i % 1024 == 0 && Elapsed() > o_.time_limit_s) {
        return p_.source +
               ": the exact search passed its time limit while enumerating "
               "ideals (" +
               std::to_string(ideals_.size()) + " so far)";
      }
      for (int u = 0; u < m_; ++u) {
        if (Has(ideals_[i], u)) continue;
        bool ready = true;
        for (const int q : units_.preds[u]) {
          if (!Has(ideals_[i], q)) {
            ready = false;
            break;
          }
        }
        if (!ready) continue;
        Bits next = ideals_[i];
        Set(next, u);
        auto it = index_.find(next);
        if (it == index_.end()) {
          if (static_cast<int64_t>(ideals_.size()) >= o_.max_states) {
            return p_.source + ": more than " + std::to_string(o_.max_states) +
                   " ideals (contiguous sets) to explore; the exact search "
                   "stops there";
          }
          it = index_.emplace(next, static_cast<int>(ideals_.size())).first;
          ideals_.push_back(std::move(next));
          rest_.push_back(rest_[i] - least_[u]);
          children_.emplace_back();
        }
        children_[i].push_back({it->second, u});
      }
    }
    return "";
  }

  // The DP proper; "" when it ran to the end, else why it stopped.
  std::string Search() {
    const size_t ideals = ideals_.size();
    value_.assign(ideals * states_, kInf);
    from_.assign(ideals * states_, {-1, -1});
    value_[0] = 0;
    stamp_.assign(ideals, -1);
    const int full = static_cast<int>(ideals) - 1;
    Block block(p_, units_);
    struct Frame {
      int ideal;
      size_t next_child;
    };
    std::vector<Frame> stack;
    std::vector<size_t> live;
    for (int i = 0; i < full; ++i) {
      live.clear();
      for (size_t s = 0; s < states_; ++s) {
        const double f = value_[i * states_ + s];
        if (f >= bound_ || !RoomFor(s, rest_[i], bound_)) continue;
        live.push_back(s);
      }
      if (live.empty()) continue;
      if (o_.time_limit_s > 0 && Elapsed() > o_.time_limit_s) {
        return p_.source + ": the exact search passed its time limit";
      }
      stack.push_back({i, 0});
      while (!stack.empty()) {
        Frame& top = stack.back();
        if (top.next_child == children_[top.ideal].size()) {
          if (stack.size() > 1) {
            block.Remove(children_[stack[stack.size() - 2].ideal]
                                  [stack[stack.size() - 2].next_child - 1]
                                      .second);
          }
          stack.pop_back();
          continue;
        }
        const auto [j, unit] = children_[top.ideal][top.next_child++];
        if (stamp_[j] == i) continue;
        stamp_[j] = i;
        block.Add(unit);
        if (++blocks_ > o_.max_blocks) {
          return p_.source + ": more than " + std::to_string(o_.max_blocks) +
                 " blocks (pairs of ideals) to try over " +
                 std::to_string(ideals) + " ideals; the exact search stops " +
                 "there";
        }
        bool grows = false;
        for (int k = 0; k < kinds_; ++k) {
          if (p_.kinds[k].count > 0 && block.GrowsTo(k) < bound_) grows = true;
        }
        if (!grows) {
          block.Remove(unit);
          continue;
        }
        Relax(i, j, block, live);
        stack.push_back({j, 0});
      }
    }
    return "";
  }

  void Relax(int i, int j, const Block& block,
             const std::vector<size_t>& live) {
    const int full = static_cast<int>(ideals_.size()) - 1;
    for (int k = 0; k < kinds_; ++k) {
      if (p_.kinds[k].count == 0) continue;
      const double load = block.Load(k);
      if (load >= bound_) continue;
      for (const size_t s : live) {
        if (CountOf(s, k) == p_.kinds[k].count) continue;
        const double v = std::max(value_[i * states_ + s], load);
        if (v >= bound_) continue;
        const size_t t = j * states_ + s + stride_[k];
        if (v < value_[t]) {
          value_[t] = v;
          from_[t] = {i, static_cast<int>(s)};
          if (j == full) Improve(t);
        }
      }
    }
  }

  // A complete split better than the bound: it becomes the bound.
  void Improve(size_t t) {
    const int full = static_cast<int>(ideals_.size()) - 1;
    bound_ = value_[t];
    best_placement_.assign(p_.nodes.size(), -1);
    int ideal = full;
    size_t state = t - static_cast<size_t>(full) * states_;
    while (ideal != 0) {
      const auto [prev, prev_state] = from_[ideal * states_ + state];
      int k = 0;
      while (CountOf(state, k) == CountOf(prev_state, k)) ++k;
      const int device = p_.FirstDevice(k) + CountOf(prev_state, k);
      for (int u = 0; u < m_; ++u) {
        if (Has(ideals_[ideal], u) && !Has(ideals_[prev], u)) {
          for (const int v : units_.members[u]) best_placement_[v] = device;
        }
      }
      ideal = prev;
      state = static_cast<size_t>(prev_state);
    }
  }

  const MaxLoadProblem& p_;
  const MaxLoadDpOptions& o_;
  MaxLoadUnits units_;
  int m_ = 0, words_ = 0, kinds_ = 0;
  size_t states_ = 1;
  std::vector<size_t> stride_;
  std::vector<double> least_;
  std::vector<double> share_;  // per kind
  Clock::time_point started_;
  double bound_ = kInf;
  std::vector<int> best_placement_;
  int64_t blocks_ = 0;
  std::vector<Bits> ideals_;
  std::vector<double> rest_;  // least work outside each ideal
  std::vector<std::vector<std::pair<int, int>>> children_;
  std::unordered_map<Bits, int, BitsHash> index_;
  std::vector<double> value_;
  std::vector<std::pair<int, int>> from_;
  std::vector<int> stamp_;
};

}  // namespace

Result<MaxLoadDpResult> SolveContiguousMaxLoad(const MaxLoadProblem& p,
                                               const MaxLoadDpOptions& o) {
  if (p.Devices() <= 0) return BadInput(p.source + ": no device to place on");
  return Dp(p, o).Run();
}

}  // namespace tessera::placer
