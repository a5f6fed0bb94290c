// The list-scheduling engine of m-ETF and m-SCT (list_scheduler_internal.h).
//
// Each device keeps the ready ops that may still go there in two
// structures: `pending`, a heap keyed by the time the op's inputs would
// arrive there, and `avail`, the ops whose inputs are there by the time
// the device is free, ordered by priority. An op available on every
// device leaves the devices' `avail` for one shared set, `global`: the
// ops of low priority (those that end a path) wait there once rather than
// on every device. The best op of a device is the better of `avail`'s and
// `global`'s best (it starts when the device is free), else the top of
// `pending`; the best (op, device) overall is the least start over the
// devices. Devices are asked in the order they are free and the asking
// stops at the first free after the best start found (it could start
// nothing earlier), except at a device an op might not fit: asking drops
// such ops there, and a drop is final, so those are asked every step as
// before (their answers, and so the plans, are the same).
//
// `avail` and `global` are RankSets (rank_set_internal.h) over the ops'
// ranks by priority (highest first, ties to the lower id), so that taking
// the best, adding and removing cost a few word operations; an op placed
// leaves them at once. (With binary heaps, as before, 13% of the ops of a
// 10^6-op graph waited in all eight devices' heaps, and their pops, which
// missed the cache, took most of the time.) An op that does not fit a
// device's budget leaves that device for good (what a device holds only
// grows): out of `global`, back into the other devices' `avail`. Ops
// placed elsewhere leave `pending` lazily; a heap mostly of such
// leftovers is compacted. None of this changes which op a device offers,
// so plans are the same as with the heaps.

#include "placer/baechi/list_scheduler_internal.h"

#include <algorithm>
#include <atomic>
#include <functional>
#include <limits>
#include <string>
#include <thread>
#include <utility>

#include "placer/baechi/pending_heap_internal.h"
#include "placer/baechi/rank_set_internal.h"
#include "placer/core/ledger_internal.h"

namespace tessera::placer {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
// Entries a heap may hold beyond twice its live ones before it is
// compacted.
constexpr size_t kCompactSlack = 64;
// Placements the ledger's worker is handed at once (Publish).
constexpr size_t kPublishEvery = 64;

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
        budget_(budget),
        nd_(static_cast<int>(c.size())),
        n_(p.num_ops()),
        second_thread_from_ops_(o.second_thread_from_ops),
        ledger_(p, nd_, Accounting::kLiveness) {
    // What each op could add to a device, and m-SCT's favourites when they
    // are still to be found, computed beside the priorities: for a large
    // graph, the longer of the two on the other core.
    growth_.resize(n_);
    auto growth = [this] {
      for (OpId op = 0; op < n_; ++op) growth_[op] = ledger_.GrowthBound(op);
    };
    std::function<void()> favourites;
    if (o.favourites) {
      favourites = [this, &o] { o.favourites(fav_child_, fav_parent_); };
    } else {
      fav_child_ = o.favourite_child;
      fav_parent_ = o.favourite_parent;
    }
    std::thread beside;
    if (n_ >= second_thread_from_ops_) {
      beside = favourites ? std::thread(favourites) : std::thread([&] {
        growth();
        FillProduced();
      });
    } else if (favourites) {
      if (o.tables_built) o.tables_built();
      favourites();
    }
    // What the second thread does not do, this one does.
    const bool here = !beside.joinable() || favourites;
    const bool favourites_beside = beside.joinable() && favourites;
    if (here) growth();
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
    by_free_.resize(nd_);
    for (int d = 0; d < nd_; ++d) by_free_[d] = d;
    last_child_.assign(nd_, kNoOp);
    version_.assign(nd_, 0);
    checked_op_.assign(nd_, kNoOp);
    checked_version_.assign(nd_, 0);
    pending_.resize(nd_);
    by_rank_ = ByPriority(priority_);
    rank_.resize(n_);
    for (uint32_t i = 0; i < n_; ++i) rank_[by_rank_[i]] = i;
    avail_.assign(nd_, RankSet(static_cast<uint32_t>(n_)));
    global_.Resize(static_cast<uint32_t>(n_));
    finish_.assign(n_, 0.0);
    device_.assign(n_, 0);
    placed_.assign(n_, 0);
    dropped_.assign(n_, 0);
    moved_.assign(n_, 0);
    in_global_.assign(n_, 0);
    no_global_.assign(n_, 0);
    waiting_.resize(n_);
    slot_.assign(n_, 0);
    order_.reserve(n_);
    share_.resize(nd_);
    profile_.resize(nd_);
    used_.resize(nd_);
    for (int d = 0; d < nd_; ++d) {
      share_[d] = c.devices[d].compute_share;
      profile_[d] = p.device_profile[d];
      used_[d] = ledger_.used(d);
    }
    // m-SCT: the favourites may fork the LP's child now, and the hook
    // does some of their work here (tables_built); then the inputs' table,
    // which only Run needs.
    if (favourites_beside && o.tables_built) o.tables_built();
    if (here) FillProduced();
    if (favourites_beside && o.joining) o.joining();
    if (beside.joinable()) beside.join();
    for (const int64_t g : growth_) max_growth_ = std::max(max_growth_, g);
    sct_ = fav_child_.size() == n_ && fav_parent_.size() == n_;
  }

  ~Engine() { StopWorker(); }

  Result<AlgoOutput> Run() {
    StartWorker();
    for (OpId op = 0; op < n_; ++op) {
      waiting_[op] = static_cast<uint32_t>(p_.predecessors(op).size());
      if (waiting_[op] == 0) MakeReady(op);
    }
    while (order_.size() < n_) {
      OpId best_op = kNoOp;
      int best_d = -1;
      double best_start = kInf;
      bool best_reserved = false;
      // Devices in the order they are free. One free after the best start
      // so far cannot offer a better one; when every op fits it by the
      // growth bound, asking it would drop nothing, so it is skipped (its
      // `pending` is moved on when it is next asked; the sets it would
      // offer from are the same).
      for (int i = 0; i < nd_; ++i) {
        const int d = by_free_[i];
        if (free_[d] > best_start && used_[d] + max_growth_ <= budget_[d]) {
          continue;
        }
        OpId op;
        double start;
        bool reserved;
        if (!Candidate(d, op, start, reserved)) continue;
        if (best_op == kNoOp || start < best_start ||
            (start == best_start &&
             (priority_[op] > priority_[best_op] ||
              (priority_[op] == priority_[best_op] && d < best_d)))) {
          best_op = op;
          best_d = d;
          best_start = start;
          best_reserved = reserved;
        }
      }
      if (best_op == kNoOp) return Stuck();
      Place(best_op, best_reserved ? best_d : ChooseDevice(best_op, best_d));
    }
    StopWorker();
    AlgoOutput out;
    out.placement.device = std::move(device_);
    out.placement.priority.resize(n_);
    for (size_t i = 0; i < order_.size(); ++i) {
      out.placement.priority[order_[i]] = static_cast<uint32_t>(i);
    }
    return out;
  }

 private:
  // PlanSeconds, from per-device copies of the cluster's shares and the
  // problem's profile columns (the same arithmetic, so the same doubles).
  double Duration(OpId op, int d) const {
    const size_t at = static_cast<size_t>(op) * p_.num_profiles + profile_[d];
    const double forward = p_.forward_s[at] / share_[d];
    return p_.backward_s.empty() ? forward + 0.0
                                 : forward + p_.backward_s[at] / share_[d];
  }
  double Start(OpId op, int d) const {
    return std::max(free_[d],
                    arrival_[static_cast<size_t>(slot_[op]) * nd_ + d]);
  }
  double Comm(int64_t bytes, int from, int to) const {
    const size_t i = static_cast<size_t>(from) * nd_ + to;
    return latency_[i] + static_cast<double>(bytes) * inv_bw_[i];
  }

  // Whether `op` fits device `d`: at once when d has room for all that op
  // could add (the common case: the ledger need not look at d's tensors),
  // else by the ledger, once the worker has caught up.
  bool Fits(OpId op, int d) {
    if (used_[d] + growth_[op] <= budget_[d]) return true;
    if (worker_.joinable()) CatchUp();
    return ledger_.Fits(op, d, budget_[d]);
  }

  // The ledger's bookkeeping on a second thread, for a large graph on a
  // machine with two cores: placements reach it in order through queue_;
  // meanwhile used_[d] is an upper bound (the exact count plus the growth
  // bound of each op placed on d since), which answers Fits in the common
  // case. Plans are the same: Fits gives the same answers.
  void StartWorker() {
    if (n_ < second_thread_from_ops_ ||
        std::thread::hardware_concurrency() < 2) {
      return;
    }
    queue_.resize(n_);
    worker_ = std::thread([this] {
      size_t done = 0;
      for (;;) {
        const size_t queued = queued_.load(std::memory_order_acquire);
        if (queued == done) {
          if (stop_.load(std::memory_order_acquire)) return;
          std::this_thread::yield();
          continue;
        }
        for (; done < queued; ++done) {
          if (done % kPublishEvery == 0 &&
              stop_.load(std::memory_order_relaxed)) {
            return;
          }
          ledger_.Place(queue_[done].op, queue_[done].device);
        }
        applied_.store(done, std::memory_order_release);
      }
    });
  }
  // Waits until the worker has applied every placement; the ledger is then
  // the main thread's until the next one, and used_ exact again.
  void CatchUp() {
    Publish();
    const size_t queued = queued_.load(std::memory_order_relaxed);
    while (applied_.load(std::memory_order_acquire) < queued) {
      std::this_thread::yield();
    }
    for (int e = 0; e < nd_; ++e) used_[e] = ledger_.used(e);
  }
  // Hands the placements queued since the last call to the worker. They
  // go in batches: publishing each one made the counter's cache line
  // travel between the cores at every placement.
  void Publish() { queued_.store(in_queue_, std::memory_order_release); }
  // Nothing reads the ledger once the schedule is done (or stuck), so the
  // worker stops where it is: at 10^6 ops x 8 devices, m-ETF's placements
  // outran it by 30 ms at the end.
  void StopWorker() {
    if (!worker_.joinable()) return;
    stop_.store(true, std::memory_order_release);
    worker_.join();
  }

  // Whether `op` fits device `d`, remembering the answer for the top of
  // d's heaps until d changes.
  bool FitsTop(OpId op, int d) {
    if (checked_op_[d] == op && checked_version_[d] == version_[d]) {
      return true;
    }
    if (!Fits(op, d)) return false;
    checked_op_[d] = op;
    checked_version_[d] = version_[d];
    return true;
  }

  void Drop(OpId op) {
    no_global_[op] = 1;  // one device less: never available everywhere
    if (++dropped_[op] == nd_ && stuck_op_ == kNoOp) {
      stuck_op_ = op;
    }
  }

  // `op`'s inputs are on device d by the time d is free: into d's `avail`,
  // or, when that makes it available everywhere, out of every device's
  // `avail` into `global`.
  void MakeAvailable(OpId op, int d) {
    const uint32_t r = rank_[op];
    if (!no_global_[op] && ++moved_[op] == nd_) {
      in_global_[op] = 1;
      for (RankSet& a : avail_) a.Erase(r);
      global_.Insert(r);
      return;
    }
    avail_[d].Insert(r);
  }

  // `op`, the best of `global`, does not fit device d: it leaves `global`
  // for the other devices' `avail`.
  void Evict(OpId op, int d) {
    const uint32_t r = rank_[op];
    global_.Erase(r);
    in_global_[op] = 0;
    Drop(op);
    for (int e = 0; e < nd_; ++e) {
      if (e != d) avail_[e].Insert(r);
    }
  }

  // Removes the placed ops from device d's `pending` heap.
  void Compact(int d) {
    pending_[d].EraseIf(
        [this](const PendingEntry& e) { return placed_[e.op] != 0; });
  }

  // The op device `d` would run next and when it would start. With
  // favourites, a device whose last op's favourite child is ready and
  // starts there no later than anywhere else is reserved for that child:
  // another op may go first only if it finishes before the child can start.
  bool Candidate(int d, OpId& op, double& start, bool& reserved) {
    auto& pend = pending_[d];
    RankSet& avail = avail_[d];
    reserved = false;
    if (pend.size() > 2 * ready_ + kCompactSlack) Compact(d);
    for (;;) {
      while (!pend.empty() && pend.top().arrival <= free_[d]) {
        const PendingEntry e = pend.top();
        pend.Pop();
        if (!placed_[e.op]) MakeAvailable(e.op, d);
      }
      // The best (least rank) of d's `avail` and `global`: it starts when
      // d is free.
      const uint32_t a = avail.Min(), g = global_.Min();
      if (a != RankSet::kNone || g != RankSet::kNone) {
        const bool from_global = g < a;
        const OpId x = by_rank_[from_global ? g : a];
        if (!FitsTop(x, d)) {
          if (from_global) {
            Evict(x, d);
          } else {
            Drop(x);
            avail.Erase(a);
          }
          continue;
        }
        op = x;
        start = free_[d];
        break;
      }
      if (pend.empty()) return false;
      const OpId x = pend.top().op;
      if (placed_[x] || !FitsTop(x, d)) {
        if (!placed_[x]) Drop(x);
        pend.Pop();
        continue;
      }
      op = x;
      start = pend.top().arrival;
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
    const OpId child = last_child_[d];
    if (child == kNoOp || placed_[child] || waiting_[child] != 0) {
      return kNoOp;
    }
    const double here = Start(child, d);
    // No device starts it earlier: at once when no device could (every
    // start is at least the least free time and the least arrival).
    if (here > std::max(min_free_, min_arrival_[slot_[child]])) {
      for (int e = 0; e < nd_; ++e) {
        if (e != d && Start(child, e) < here) return kNoOp;
      }
    }
    return Fits(child, d) ? child : kNoOp;
  }

  // Where `op` (the earliest ready op, found on device `from`) goes: the
  // device where it finishes earliest among those it fits (ties: earlier
  // start, then lower index). With favourites: not a device reserved for
  // another child that `op` would delay; and the favourite parent's device
  // when `op` finishes there no later than at the best other device plus
  // the transfer from its parent that staying saves.
  int ChooseDevice(OpId op, int from) {
    auto before = [](const Option& a, const Option& b) {
      if (a.finish != b.finish) return a.finish < b.finish;
      if (a.start != b.start) return a.start < b.start;
      return a.d < b.d;
    };
    const double from_start = Start(op, from);
    const Option found{from_start + Duration(op, from), from_start, from};
    // Only the devices ranked before where it was found can take it.
    options_.clear();
    for (int d = 0; d < nd_; ++d) {
      if (d == from) continue;
      const double s = Start(op, d);
      const Option o{s + Duration(op, d), s, d};
      if (before(o, found)) options_.push_back(o);
    }
    std::sort(options_.begin(), options_.end(), before);
    int chosen = from;
    double chosen_finish = found.finish;
    for (const Option& o : options_) {
      if (sct_) {
        const OpId child = ReservedFor(o.d);
        if (child != kNoOp && child != op && o.finish > Start(child, o.d)) {
          continue;
        }
      }
      if (Fits(op, o.d)) {
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
        const double saved = Comm(InputBytesFrom(parent, op), pd, chosen);
        if (there <= chosen_finish + saved && Fits(op, pd)) {
          chosen = pd;
        }
      }
    }
    return chosen;
  }

  void Place(OpId op, int d) {
    const double s = Start(op, d);
    const double f = s + Duration(op, d);
    free_slots_.push_back(slot_[op]);  // its arrivals are read no more
    finish_[op] = f;
    free_[d] = f;
    // d moves later in by_free_ (frees only grow; ties by index).
    int i = static_cast<int>(std::find(by_free_.begin(), by_free_.end(), d) -
                             by_free_.begin());
    for (; i + 1 < nd_; ++i) {
      const int e = by_free_[i + 1];
      if (free_[e] > f || (free_[e] == f && e > d)) break;
      by_free_[i] = e;
    }
    by_free_[i] = d;
    min_free_ = free_[by_free_[0]];
    device_[op] = static_cast<uint16_t>(d);
    placed_[op] = 1;
    --ready_;
    const uint32_t r = rank_[op];
    if (in_global_[op]) {
      in_global_[op] = 0;
      global_.Erase(r);
    } else {
      for (RankSet& a : avail_) a.Erase(r);
    }
    if (sct_) last_child_[d] = fav_child_[op];
    if (worker_.joinable()) {
      queue_[in_queue_++] = {op, static_cast<uint16_t>(d)};
      if (in_queue_ % kPublishEvery == 0) Publish();
      used_[d] += growth_[op];
    } else {
      ledger_.Place(op, d);
      used_[d] = ledger_.used(d);  // placing changes no other device's
    }
    ++version_[d];
    order_.push_back(op);
    for (uint32_t s2 : p_.successors(op)) {
      if (--waiting_[s2] == 0) MakeReady(s2);
    }
  }

  // Per op, its input tensors that some op produces, in input order: a
  // run of entries that MakeReady reads instead of each tensor's record
  // (the tensors of a 10^6-op graph span ~80 MB, and reading them missed
  // the cache on a third of MakeReady's time). Two arrays of 4 and 8
  // bytes rather than one of 16-byte records: at 10^6 ops the records
  // took 37.5 MiB, past the largest block glibc's malloc serves from its
  // heap (32 MiB), so each placement mapped them afresh and faulted in
  // 7,650 pages (~90 ms on a machine whose page faults cost 12 us).
  void FillProduced() {
    produced_begin_.resize(n_ + 1);
    produced_op_.reserve(p_.in_tensors.size());
    produced_bytes_.reserve(p_.in_tensors.size());
    for (OpId op = 0; op < n_; ++op) {
      produced_begin_[op] = static_cast<uint32_t>(produced_op_.size());
      for (uint32_t t : p_.inputs(op)) {
        const ProblemTensor& tensor = p_.tensors[t];
        if (tensor.producer == kNoOp) continue;
        produced_op_.push_back(
            tensor.producer |
            (tensor.role == TensorRole::kActivation ? 0 : kNotActivation));
        produced_bytes_.push_back(
            tensor.role == TensorRole::kWeight ? int64_t{-1} : tensor.bytes);
      }
    }
    produced_begin_[n_] = static_cast<uint32_t>(produced_op_.size());
  }

  // The bytes of the activations `from` makes and `to` reads, from the
  // inputs' table (reading the tensors' records for this took 30 ms of
  // m-SCT's schedule at 10^6 ops x 8 devices).
  int64_t InputBytesFrom(OpId from, OpId to) const {
    int64_t bytes = 0;
    for (uint32_t i = produced_begin_[to]; i < produced_begin_[to + 1]; ++i) {
      // (An entry equal to `from` is an activation: others carry the bit.)
      if (produced_op_[i] == from) bytes += produced_bytes_[i];
    }
    return bytes;
  }

  // A row of arrival_ for `op`, ready now, zeroed: one a placed op left,
  // else a new one.
  double* TakeSlot(OpId op) {
    uint32_t slot;
    if (free_slots_.empty()) {
      slot = static_cast<uint32_t>(arrival_.size() / nd_);
      arrival_.resize(arrival_.size() + nd_, 0.0);
      min_arrival_.push_back(0.0);
    } else {
      slot = free_slots_.back();
      free_slots_.pop_back();
      std::fill_n(&arrival_[static_cast<size_t>(slot) * nd_], nd_, 0.0);
    }
    slot_[op] = slot;
    return &arrival_[static_cast<size_t>(slot) * nd_];
  }

  // All predecessors of `op` are placed: when its inputs would be on each
  // device (weights are never sent; each device holds its own copy).
  void MakeReady(OpId op) {
    ++ready_;
    double* arr = TakeSlot(op);
    for (uint32_t i = produced_begin_[op]; i < produced_begin_[op + 1]; ++i) {
      const OpId producer = produced_op_[i] & ~kNotActivation;
      const int64_t bytes = produced_bytes_[i];
      const double f = finish_[producer];
      const int pd = device_[producer];
      for (int d = 0; d < nd_; ++d) {
        const double a = d == pd || bytes < 0 ? f : f + Comm(bytes, pd, d);
        arr[d] = std::max(arr[d], a);
      }
    }
    if (sct_) min_arrival_[slot_[op]] = *std::min_element(arr, arr + nd_);
    for (int d = 0; d < nd_; ++d) {
      // Inputs there before the device is free: available there now (the
      // device's next Candidate would move it from `pending` anyway).
      if (arr[d] <= free_[d]) {
        MakeAvailable(op, d);
        continue;
      }
      pending_[d].Push({arr[d], rank_[op], op});
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
  const Budget& budget_;
  const int nd_;
  const size_t n_;
  bool sct_ = false;  // favourites for every op (m-SCT)
  std::vector<OpId> fav_child_, fav_parent_;
  const size_t second_thread_from_ops_;
  MemoryLedger ledger_;
  std::vector<double> priority_;
  std::vector<uint32_t> by_rank_;         // ops by priority, highest first
  std::vector<uint32_t> rank_;            // per op: its place in by_rank_
  std::vector<double> latency_, inv_bw_;  // [from * nd + to]
  // Per device.
  std::vector<double> share_;  // its compute share
  std::vector<int> profile_;   // its column in the problem's profiles
  std::vector<int64_t> used_;  // ledger_.used, or above it (StartWorker)
  std::vector<double> free_;
  std::vector<int> by_free_;       // the devices by free_, ties by index
  double min_free_ = 0.0;          // over the devices
  std::vector<OpId> last_child_;   // the favourite child of its last op
  std::vector<uint64_t> version_;  // placements so far
  std::vector<OpId> checked_op_;
  std::vector<uint64_t> checked_version_;
  std::vector<PendingHeap> pending_;
  std::vector<RankSet> avail_;
  RankSet global_;  // ops available on every device (in no `avail`)
  // Per op.
  std::vector<double> finish_;
  std::vector<uint16_t> device_;
  std::vector<uint8_t> placed_;
  // (Device counts fit 16 bits: so do device_ and the ledger's ids.)
  std::vector<uint16_t> dropped_;  // devices it no longer fits
  std::vector<uint32_t> waiting_;  // unplaced predecessors
  std::vector<uint16_t> moved_;    // devices where it became available
  std::vector<int64_t> growth_;    // ledger_.GrowthBound
  // Each input tensor with a producer (FillProduced): the producer, with
  // kNotActivation set unless the tensor is an activation (InputBytesFrom
  // counts only activations), and its bytes, or -1 for a weight (never
  // sent: each device holds its own copy).
  static constexpr uint32_t kNotActivation = uint32_t{1} << 31;
  std::vector<uint32_t> produced_begin_;
  std::vector<uint32_t> produced_op_;
  std::vector<int64_t> produced_bytes_;
  int64_t max_growth_ = 0;  // over the ops
  std::vector<uint8_t> in_global_;
  std::vector<uint8_t> no_global_;  // dropped by a device: never global
  // When each ready op's inputs would be on each device: a row per ready
  // op, [slot_[op] * nd + d], reused once the op is placed. (A row per op
  // took 64 MB at 10^6 ops x 8 devices, and reading it missed the cache.)
  std::vector<uint32_t> slot_;
  std::vector<double> arrival_;
  std::vector<double> min_arrival_;  // per row: over the devices (m-SCT's)
  std::vector<uint32_t> free_slots_;
  std::vector<OpId> order_;
  OpId stuck_op_ = kNoOp;
  // The ledger's worker (StartWorker).
  struct Placed {
    OpId op;
    uint16_t device;
  };
  std::vector<Placed> queue_;
  size_t in_queue_ = 0;  // placements written to queue_ (queued_: published)
  std::atomic<size_t> queued_{0}, applied_{0};
  std::atomic<bool> stop_{false};
  std::thread worker_;
  size_t ready_ = 0;             // ready ops not placed yet
  std::vector<Option> options_;  // ChooseDevice's scratch
};

}  // namespace

Result<AlgoOutput> ListSchedule(const Problem& p, const Cluster& c,
                                const Budget& budget,
                                const ListScheduleOptions& options) {
  if (c.size() == 0) return BadInput("the cluster has no devices");
  // The inputs' table marks a producer's id with its top bit (FillProduced).
  if (p.num_ops() >= size_t{1} << 31) {
    return BadInput("the list schedulers place fewer than 2^31 ops, got " +
                    std::to_string(p.num_ops()));
  }
  Engine engine(p, c, budget, options);
  return engine.Run();
}

}  // namespace tessera::placer
