// The list-scheduling engine of m-ETF and m-SCT (list_scheduler_internal.h).
//
// Each device keeps two heaps of the ready ops that may still go there:
// `pending` keyed by the time the op's inputs would arrive there, and
// `avail` (ops whose inputs are there by the time the device is free) keyed
// by priority. The best op of a device is the top of `avail` (it starts
// when the device is free), else the top of `pending`; the best (op,
// device) overall is the least start over the devices, so one step costs
// O(D log n). An op that does not fit a device's budget leaves that
// device's heaps for good (what a device holds only grows); ops placed
// elsewhere are dropped lazily.

#include "placer/baechi/list_scheduler_internal.h"

#include <algorithm>
#include <limits>
#include <string>
#include <utility>

#include "placer/baechi/reductions_internal.h"
#include "placer/core/ledger_internal.h"

namespace tessera::placer {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

struct PendingEntry {
  double arrival;
  double priority;
  OpId op;
  // std heaps are max-heaps: "less" means "later".
  bool operator<(const PendingEntry& o) const {
    if (arrival != o.arrival) return arrival > o.arrival;
    if (priority != o.priority) return priority < o.priority;
    return op > o.op;
  }
};

struct AvailEntry {
  double priority;
  OpId op;
  bool operator<(const AvailEntry& o) const {
    if (priority != o.priority) return priority < o.priority;
    return op > o.op;
  }
};

// A device `op` could go to, as ChooseDevice ranks them.
struct Option {
  double finish, start;
  int d;
};

class Engine {
 public:
  Engine(const Problem& p, const Cluster& c, const Budget& budget,
         const ListScheduleOptions& o)
      : p_(p),
        c_(c),
        budget_(budget),
        nd_(static_cast<int>(c.size())),
        n_(p.num_ops()),
        sct_(o.favourite_child.size() == p.num_ops() &&
             o.favourite_parent.size() == p.num_ops()),
        fav_child_(o.favourite_child),
        fav_parent_(o.favourite_parent),
        ledger_(p, nd_, Accounting::kLiveness) {
    const MeanCosts mean = ComputeMeanCosts(p, c);
    priority_ = BottomLevels(p, mean);
    latency_.resize(static_cast<size_t>(nd_) * nd_);
    inv_bw_.resize(latency_.size());
    for (int a = 0; a < nd_; ++a) {
      for (int b = 0; b < nd_; ++b) {
        const Link& l = c.link(a, b);
        const size_t i = static_cast<size_t>(a) * nd_ + b;
        latency_[i] = a == b ? 0.0 : l.latency;
        inv_bw_[i] = a == b || !(l.bandwidth > 0.0) ? 0.0 : 1.0 / l.bandwidth;
      }
    }
    free_.assign(nd_, 0.0);
    last_.assign(nd_, kNoOp);
    version_.assign(nd_, 0);
    checked_op_.assign(nd_, kNoOp);
    checked_version_.assign(nd_, 0);
    pending_.resize(nd_);
    avail_.resize(nd_);
    finish_.assign(n_, 0.0);
    device_.assign(n_, 0);
    placed_.assign(n_, 0);
    dropped_.assign(n_, 0);
    waiting_.resize(n_);
    arrival_.assign(n_ * nd_, 0.0);
    order_.reserve(n_);
  }

  Result<AlgoOutput> Run() {
    for (OpId op = 0; op < n_; ++op) {
      waiting_[op] = static_cast<uint32_t>(p_.predecessors(op).size());
      if (waiting_[op] == 0) MakeReady(op);
    }
    while (order_.size() < n_) {
      OpId best_op = kNoOp;
      int best_d = -1;
      double best_start = kInf;
      bool best_reserved = false;
      for (int d = 0; d < nd_; ++d) {
        OpId op;
        double start;
        bool reserved;
        if (!Candidate(d, op, start, reserved)) continue;
        if (best_op == kNoOp || start < best_start ||
            (start == best_start && priority_[op] > priority_[best_op])) {
          best_op = op;
          best_d = d;
          best_start = start;
          best_reserved = reserved;
        }
      }
      if (best_op == kNoOp) return Stuck();
      Place(best_op, best_reserved ? best_d : ChooseDevice(best_op, best_d));
    }
    AlgoOutput out;
    out.placement.device = std::move(device_);
    out.placement.priority.resize(n_);
    for (size_t i = 0; i < order_.size(); ++i) {
      out.placement.priority[order_[i]] = static_cast<uint32_t>(i);
    }
    return out;
  }

 private:
  double Duration(OpId op, int d) const { return PlanSeconds(p_, c_, op, d); }
  double Start(OpId op, int d) const {
    return std::max(free_[d], arrival_[static_cast<size_t>(op) * nd_ + d]);
  }
  double Comm(int64_t bytes, int from, int to) const {
    const size_t i = static_cast<size_t>(from) * nd_ + to;
    return latency_[i] + static_cast<double>(bytes) * inv_bw_[i];
  }

  // Whether `op` fits device `d`, remembering the answer for the top of
  // d's heaps until d changes.
  bool FitsTop(OpId op, int d) {
    if (checked_op_[d] == op && checked_version_[d] == version_[d]) {
      return true;
    }
    if (!ledger_.Fits(op, d, budget_[d])) return false;
    checked_op_[d] = op;
    checked_version_[d] = version_[d];
    return true;
  }

  void Drop(OpId op) {
    if (++dropped_[op] == static_cast<uint32_t>(nd_) && stuck_op_ == kNoOp) {
      stuck_op_ = op;
    }
  }

  // The op device `d` would run next and when it would start. With
  // favourites, a device whose last op's favourite child is ready and
  // starts there no later than anywhere else is reserved for that child:
  // another op may go first only if it finishes before the child can start.
  bool Candidate(int d, OpId& op, double& start, bool& reserved) {
    auto& pend = pending_[d];
    auto& avail = avail_[d];
    reserved = false;
    for (;;) {
      while (!pend.empty() && pend.front().arrival <= free_[d]) {
        const PendingEntry e = pend.front();
        std::pop_heap(pend.begin(), pend.end());
        pend.pop_back();
        if (placed_[e.op]) continue;
        avail.push_back({e.priority, e.op});
        std::push_heap(avail.begin(), avail.end());
      }
      if (!avail.empty()) {
        const OpId x = avail.front().op;
        if (placed_[x] || !FitsTop(x, d)) {
          if (!placed_[x]) Drop(x);
          std::pop_heap(avail.begin(), avail.end());
          avail.pop_back();
          continue;
        }
        op = x;
        start = free_[d];
        break;
      }
      if (pend.empty()) return false;
      const OpId x = pend.front().op;
      if (placed_[x] || !FitsTop(x, d)) {
        if (!placed_[x]) Drop(x);
        std::pop_heap(pend.begin(), pend.end());
        pend.pop_back();
        continue;
      }
      op = x;
      start = pend.front().arrival;
      break;
    }
    if (sct_) {
      const OpId child = ReservedFor(d);
      if (child != kNoOp && child != op &&
          start + Duration(op, d) > Start(child, d)) {
        op = child;
        start = Start(child, d);
        reserved = true;
      }
    }
    return true;
  }

  // m-SCT: the favourite child device `d` waits for, or kNoOp.
  OpId ReservedFor(int d) {
    const OpId parent = last_[d];
    if (parent == kNoOp) return kNoOp;
    const OpId child = fav_child_[parent];
    if (child == kNoOp || placed_[child] || waiting_[child] != 0) {
      return kNoOp;
    }
    const double here = Start(child, d);
    for (int e = 0; e < nd_; ++e) {
      if (e != d && Start(child, e) < here) return kNoOp;
    }
    return ledger_.Fits(child, d, budget_[d]) ? child : kNoOp;
  }

  // Where `op` (the earliest ready op, found on device `from`) goes: the
  // device where it finishes earliest among those it fits (ties: earlier
  // start, then lower index). With favourites: not a device reserved for
  // another child that `op` would delay; and the favourite parent's device
  // when `op` finishes there no later than at the best other device plus
  // the transfer from its parent that staying saves.
  int ChooseDevice(OpId op, int from) {
    options_.clear();
    for (int d = 0; d < nd_; ++d) {
      const double s = Start(op, d);
      options_.push_back({s + Duration(op, d), s, d});
    }
    std::sort(options_.begin(), options_.end(),
              [](const Option& a, const Option& b) {
                if (a.finish != b.finish) return a.finish < b.finish;
                if (a.start != b.start) return a.start < b.start;
                return a.d < b.d;
              });
    int chosen = from;
    double chosen_finish = Start(op, from) + Duration(op, from);
    for (const Option& o : options_) {
      if (o.d == from) break;  // nothing better than where it was found
      if (sct_) {
        const OpId child = ReservedFor(o.d);
        if (child != kNoOp && child != op && o.finish > Start(child, o.d)) {
          continue;
        }
      }
      if (ledger_.Fits(op, o.d, budget_[o.d])) {
        chosen = o.d;
        chosen_finish = o.finish;
        break;
      }
    }
    if (sct_ && fav_parent_[op] != kNoOp) {
      const OpId parent = fav_parent_[op];
      const int pd = device_[parent];
      const OpId waiting_for = pd != chosen ? ReservedFor(pd) : kNoOp;
      const double there = Start(op, pd) + Duration(op, pd);
      const bool delays_other = waiting_for != kNoOp && waiting_for != op &&
                                there > Start(waiting_for, pd);
      if (pd != chosen && !delays_other) {
        const double saved = Comm(EdgeBytes(p_, parent, op), pd, chosen);
        if (there <= chosen_finish + saved &&
            ledger_.Fits(op, pd, budget_[pd])) {
          chosen = pd;
        }
      }
    }
    return chosen;
  }

  void Place(OpId op, int d) {
    const double s = Start(op, d);
    const double f = s + Duration(op, d);
    finish_[op] = f;
    free_[d] = f;
    device_[op] = static_cast<uint16_t>(d);
    placed_[op] = 1;
    last_[d] = op;
    ledger_.Place(op, d);
    ++version_[d];
    order_.push_back(op);
    for (uint32_t s2 : p_.successors(op)) {
      if (--waiting_[s2] == 0) MakeReady(s2);
    }
  }

  // All predecessors of `op` are placed: when its inputs would be on each
  // device (weights are never sent; each device holds its own copy).
  void MakeReady(OpId op) {
    double* arr = &arrival_[static_cast<size_t>(op) * nd_];
    for (uint32_t t : p_.inputs(op)) {
      const ProblemTensor& tensor = p_.tensors[t];
      if (tensor.producer == kNoOp) continue;
      const double f = finish_[tensor.producer];
      const int pd = device_[tensor.producer];
      for (int d = 0; d < nd_; ++d) {
        const double a = d == pd || tensor.role == TensorRole::kWeight
                             ? f
                             : f + Comm(tensor.bytes, pd, d);
        arr[d] = std::max(arr[d], a);
      }
    }
    for (int d = 0; d < nd_; ++d) {
      pending_[d].push_back({arr[d], priority_[op], op});
      std::push_heap(pending_[d].begin(), pending_[d].end());
    }
  }

  Result<AlgoOutput> Stuck() const {
    OpId op = stuck_op_;
    if (op == kNoOp) {
      for (OpId x = 0; x < n_; ++x) {
        if (!placed_[x] && waiting_[x] == 0) {
          op = x;
          break;
        }
      }
    }
    return Infeasible("op '" + (op == kNoOp ? std::string("?") : p_.names[op]) +
                      "' fits no device's memory budget after " +
                      std::to_string(order_.size()) + " of " +
                      std::to_string(n_) + " ops were placed");
  }

  const Problem& p_;
  const Cluster& c_;
  const Budget& budget_;
  const int nd_;
  const size_t n_;
  const bool sct_;
  const std::vector<OpId>& fav_child_;
  const std::vector<OpId>& fav_parent_;
  MemoryLedger ledger_;
  std::vector<double> priority_;
  std::vector<double> latency_, inv_bw_;  // [from * nd + to]
  // Per device.
  std::vector<double> free_;
  std::vector<OpId> last_;
  std::vector<uint64_t> version_;  // placements so far
  std::vector<OpId> checked_op_;
  std::vector<uint64_t> checked_version_;
  std::vector<std::vector<PendingEntry>> pending_;
  std::vector<std::vector<AvailEntry>> avail_;
  // Per op.
  std::vector<double> finish_;
  std::vector<uint16_t> device_;
  std::vector<uint8_t> placed_;
  std::vector<uint32_t> dropped_;  // devices it no longer fits
  std::vector<uint32_t> waiting_;  // unplaced predecessors
  std::vector<double> arrival_;    // [op * nd + d]
  std::vector<OpId> order_;
  OpId stuck_op_ = kNoOp;
  std::vector<Option> options_;  // ChooseDevice's scratch
};

}  // namespace

MeanCosts ComputeMeanCosts(const Problem& p, const Cluster& c) {
  MeanCosts m;
  const int nd = static_cast<int>(c.size());
  m.seconds.assign(p.num_ops(), 0.0);
  for (int d = 0; d < nd; ++d) {
    for (OpId op = 0; op < p.num_ops(); ++op) {
      m.seconds[op] += PlanSeconds(p, c, op, d);
    }
  }
  for (double& s : m.seconds) s /= std::max(nd, 1);
  int pairs = 0;
  for (int a = 0; a < nd; ++a) {
    for (int b = 0; b < nd; ++b) {
      if (a == b) continue;
      const Link& l = c.link(a, b);
      m.latency += l.latency;
      m.inverse_bandwidth += l.bandwidth > 0.0 ? 1.0 / l.bandwidth : 0.0;
      ++pairs;
    }
  }
  if (pairs > 0) {
    m.latency /= pairs;
    m.inverse_bandwidth /= pairs;
  }
  return m;
}

std::vector<double> BottomLevels(const Problem& p, const MeanCosts& costs) {
  std::vector<double> level(p.num_ops(), 0.0);
  for (auto it = p.topo.rbegin(); it != p.topo.rend(); ++it) {
    const OpId op = *it;
    double tail = 0.0;
    for (uint32_t t : p.outputs(op)) {
      const ProblemTensor& tensor = p.tensors[t];
      const double comm = tensor.role == TensorRole::kWeight
                              ? 0.0
                              : costs.Transfer(tensor.bytes);
      for (uint32_t v : p.consumers(t)) {
        tail = std::max(tail, comm + level[v]);
      }
    }
    level[op] = costs.seconds[op] + tail;
  }
  return level;
}

int64_t EdgeBytes(const Problem& p, OpId from, OpId to) {
  int64_t bytes = 0;
  for (uint32_t t : p.inputs(to)) {
    const ProblemTensor& tensor = p.tensors[t];
    if (tensor.producer == from && tensor.role == TensorRole::kActivation) {
      bytes += tensor.bytes;
    }
  }
  return bytes;
}

Result<AlgoOutput> ListSchedule(const Problem& p, const Cluster& c,
                                const Budget& budget,
                                const ListScheduleOptions& options) {
  if (c.size() == 0) return BadInput("the cluster has no devices");
  Engine engine(p, c, budget, options);
  return engine.Run();
}

Result<AlgoOutput> PlaceReduced(
    const Problem& p, const PlaceOptions& o,
    const std::function<Result<AlgoOutput>(const Problem&)>& algorithm) {
  if (!o.coplace && !o.fuse) return algorithm(p);
  Grouping g = IdentityGrouping(p);
  if (o.coplace) g = CoPlace(p, g);
  if (o.fuse) g = FuseSharedWeights(p, g);
  if (g.num_groups == p.num_ops()) return algorithm(p);
  auto reduced = Contract(p, g);
  if (!reduced) return reduced.error();
  auto out = algorithm(*reduced);
  if (!out) {
    if (out.error().code != ErrorCode::kInfeasible) return out.error();
    auto plain = algorithm(p);
    if (plain) {
      plain->notes.emplace_back(
          "the co-placed groups fit no budget; planned op by op");
    }
    return plain;
  }
  Placement& pl = out->placement;
  if (pl.priority.empty()) {  // the reduced problem's topological order
    pl.priority.resize(reduced->num_ops());
    for (size_t i = 0; i < reduced->topo.size(); ++i) {
      pl.priority[reduced->topo[i]] = static_cast<uint32_t>(i);
    }
  }
  pl = Expand(p, g, pl);
  out->notes.insert(out->notes.begin(),
                    "reduced " + std::to_string(p.num_ops()) + " ops to " +
                        std::to_string(g.num_groups) + " groups");
  return out;
}

}  // namespace tessera::placer
