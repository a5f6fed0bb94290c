// The event-driven step simulator (model in simulator.h). Tasks are
// (op, microbatch, forward|backward); events are task completions and
// transfer arrivals, processed in time order, all events of one instant
// before any device picks its next task.

#include "placer/core/simulator.h"

#include <algorithm>
#include <cmath>
#include <queue>

namespace tessera::placer {
namespace {

enum class EventKind : uint8_t { kTaskDone, kArrival };

struct Event {
  double time;
  uint64_t seq;
  EventKind kind;
  uint64_t id;  // task id or transfer index
  bool operator>(const Event& o) const {
    return time != o.time ? time > o.time : seq > o.seq;
  }
};

// Smaller runs first: forward before backward, then microbatch, then the
// placement's priority (reversed for backward).
struct ReadyKey {
  uint64_t key;
  uint64_t task;
  bool operator>(const ReadyKey& o) const {
    return key != o.key ? key > o.key : task > o.task;
  }
};

class Simulation {
 public:
  Simulation(const Problem& p, const Cluster& c, const Placement& pl,
             const SimOptions& o)
      : p_(p),
        c_(c),
        dev_(pl.device),
        n_(p.num_ops()),
        m_(std::max(1, o.microbatches)),
        nd_(static_cast<int>(c.size())),
        record_(o.record_ops) {
    priority_.resize(n_);
    if (pl.priority.size() == n_) {
      priority_ = pl.priority;
    } else {
      for (size_t i = 0; i < p.topo.size(); ++i) {
        priority_[p.topo[i]] = static_cast<uint32_t>(i);
      }
    }
    result_.devices.resize(nd_);
    link_stats_.resize(static_cast<size_t>(nd_) * nd_);
    for (int d = 0; d < nd_; ++d) {
      result_.devices[d].ops = 0;
    }
    for (size_t op = 0; op < n_; ++op) result_.devices[dev_[op]].ops++;
  }

  SimResult Run() {
    SetUpHolders();
    SetUpStatic();
    SetUpTasks();
    Loop();
    Finish();
    return std::move(result_);
  }

 private:
  // ---- set-up -------------------------------------------------------------

  // Every non-weight tensor has holders: the devices that keep a copy
  // (producer's device first, then remote consumer devices; for graph
  // inputs, the consumer devices).
  void SetUpHolders() {
    const size_t nt = p_.num_tensors();
    holder_begin_.assign(nt + 1, 0);
    std::vector<int> seen(nd_, -1);
    for (uint32_t t = 0; t < nt; ++t) {
      holder_begin_[t] = static_cast<uint32_t>(holder_dev_.size());
      const ProblemTensor& tensor = p_.tensors[t];
      if (tensor.role == TensorRole::kWeight) continue;
      if (tensor.role == TensorRole::kActivation && tensor.producer == kNoOp) {
        continue;  // never produced: nothing to hold
      }
      if (tensor.role == TensorRole::kActivation) {
        const int pd = dev_[tensor.producer];
        holder_dev_.push_back(static_cast<uint16_t>(pd));
        seen[pd] = static_cast<int>(t);
      }
      for (uint32_t u : p_.consumers(t)) {
        const int d = dev_[u];
        if (seen[d] == static_cast<int>(t)) continue;
        seen[d] = static_cast<int>(t);
        holder_dev_.push_back(static_cast<uint16_t>(d));
      }
    }
    holder_begin_[nt] = static_cast<uint32_t>(holder_dev_.size());
    refs_.assign(holder_dev_.size() * m_, 0);
    // Initial reference counts (per microbatch, identical).
    for (uint32_t t = 0; t < nt; ++t) {
      const ProblemTensor& tensor = p_.tensors[t];
      for (uint32_t h = holder_begin_[t]; h < holder_begin_[t + 1]; ++h) {
        const int d = holder_dev_[h];
        int64_t r = 0;
        for (uint32_t u : p_.consumers(t)) r += dev_[u] == d;
        const bool producer_copy =
            tensor.role == TensorRole::kActivation && h == holder_begin_[t];
        if (producer_copy) {
          r += (holder_begin_[t + 1] - holder_begin_[t]) - 1;  // transfers
          r += 1;                     // released when the producer is done
          if (tensor.output) r += 1;  // never released
        }
        for (int mb = 0; mb < m_; ++mb) refs_[h * m_ + mb] = r;
      }
    }
  }

  uint32_t HolderOf(uint32_t t, int d) const {
    for (uint32_t h = holder_begin_[t]; h < holder_begin_[t + 1]; ++h) {
      if (holder_dev_[h] == d) return h;
    }
    return UINT32_MAX;
  }

  int64_t PerMicrobatch(int64_t bytes) const {
    return m_ == 1 ? bytes : (bytes + m_ - 1) / m_;
  }

  // Resident weights, extra bytes and graph inputs at time 0.
  void SetUpStatic() {
    current_.assign(nd_, 0);
    last_op_.assign(nd_, kNoOp);
    std::vector<uint32_t> seen(nd_, UINT32_MAX);
    for (uint32_t t = 0; t < p_.num_tensors(); ++t) {
      const ProblemTensor& tensor = p_.tensors[t];
      if (tensor.role != TensorRole::kWeight) continue;
      const int64_t bytes =
          p_.training ? static_cast<int64_t>(static_cast<double>(tensor.bytes) *
                                             p_.weight_state_factor)
                      : tensor.bytes;
      for (uint32_t u : p_.consumers(t)) {
        const int d = dev_[u];
        if (seen[d] == t) continue;
        seen[d] = t;
        result_.devices[d].weight_bytes += bytes;
        Allocate(d, bytes, kNoOp);
      }
    }
    for (size_t op = 0; op < n_; ++op) {
      if (p_.extra_bytes[op] > 0) Allocate(dev_[op], p_.extra_bytes[op], op);
    }
    for (uint32_t t = 0; t < p_.num_tensors(); ++t) {
      if (p_.tensors[t].role != TensorRole::kInput) continue;
      for (uint32_t h = holder_begin_[t]; h < holder_begin_[t + 1]; ++h) {
        for (int mb = 0; mb < m_; ++mb) {
          Allocate(holder_dev_[h], PerMicrobatch(p_.tensors[t].bytes), kNoOp);
        }
      }
    }
  }

  void SetUpTasks() {
    const size_t tasks = n_ * m_ * (p_.training ? 2 : 1);
    pending_.assign(tasks, 0);
    grad_hold_.assign(p_.training ? n_ * m_ : 0, 0);
    ready_.resize(nd_);
    busy_.assign(nd_, false);
    send_free_.assign(nd_, 0.0);
    recv_free_.assign(nd_, 0.0);
    // Forward: one pending arrival per activation input with a producer.
    for (size_t op = 0; op < n_; ++op) {
      uint32_t need = 0;
      for (uint32_t t : p_.inputs(op)) {
        const ProblemTensor& tensor = p_.tensors[t];
        need +=
            tensor.role == TensorRole::kActivation && tensor.producer != kNoOp;
      }
      uint32_t grads = 0;
      if (p_.training) {
        for (uint32_t t : p_.outputs(op)) {
          if (p_.tensors[t].role == TensorRole::kActivation) {
            grads += static_cast<uint32_t>(p_.consumers(t).size());
          }
        }
      }
      for (int mb = 0; mb < m_; ++mb) {
        pending_[Task(op, mb, false)] = need;
        if (p_.training) pending_[Task(op, mb, true)] = grads;
      }
    }
    forward_left_ = n_ * m_;
    for (size_t op = 0; op < n_; ++op) {
      for (int mb = 0; mb < m_; ++mb) {
        if (pending_[Task(op, mb, false)] == 0) MakeReady(Task(op, mb, false));
      }
    }
  }

  // ---- tasks --------------------------------------------------------------

  uint64_t Task(size_t op, int mb, bool backward) const {
    return ((backward ? uint64_t{1} : 0) * m_ + mb) * n_ + op;
  }
  size_t OpOf(uint64_t task) const { return task % n_; }
  int MbOf(uint64_t task) const { return static_cast<int>((task / n_) % m_); }
  bool IsBackward(uint64_t task) const { return task / n_ >= uint64_t(m_); }

  void MakeReady(uint64_t task) {
    const size_t op = OpOf(task);
    const bool bwd = IsBackward(task);
    const uint64_t prio = bwd ? (UINT32_MAX - priority_[op]) : priority_[op];
    const uint64_t key = (uint64_t{bwd} << 63) |
                         (static_cast<uint64_t>(MbOf(task)) << 32) | prio;
    ready_[dev_[op]].push(ReadyKey{key, task});
    dirty_.push_back(dev_[op]);
  }

  void Dispatch(int d) {
    if (busy_[d] || ready_[d].empty()) return;
    const uint64_t task = ready_[d].top().task;
    ready_[d].pop();
    const size_t op = OpOf(task);
    const bool bwd = IsBackward(task);
    const int mb = MbOf(task);
    const double share = c_.devices[d].compute_share;
    const double dur =
        (bwd ? p_.Backward(op, d, share) : p_.Forward(op, d, share)) / m_;
    busy_[d] = true;
    last_op_[d] = static_cast<OpId>(op);
    // Allocations at start: outputs (forward) or input gradients
    // (backward), and the workspace.
    int64_t bytes = PerMicrobatch(p_.workspace_bytes[op]);
    if (!bwd) {
      for (uint32_t t : p_.outputs(op)) {
        if (p_.tensors[t].role == TensorRole::kActivation) {
          bytes += PerMicrobatch(p_.tensors[t].bytes);
        }
      }
    } else {
      for (uint32_t t : p_.inputs(op)) {
        if (IsGradTarget(t)) bytes += PerMicrobatch(p_.tensors[t].bytes);
      }
    }
    Allocate(d, bytes, static_cast<OpId>(op));
    result_.devices[d].busy_s += dur;
    if (record_) {
      result_.op_records.push_back(
          OpRecord{static_cast<OpId>(op), d, now_, now_ + dur, bwd, mb});
    }
    Push(now_ + dur, EventKind::kTaskDone, task);
  }

  // An input of a backward op whose gradient flows to a producer.
  bool IsGradTarget(uint32_t t) const {
    return p_.tensors[t].role == TensorRole::kActivation &&
           p_.tensors[t].producer != kNoOp;
  }

  void TaskDone(uint64_t task) {
    const size_t op = OpOf(task);
    const int d = dev_[op];
    const int mb = MbOf(task);
    busy_[d] = false;
    dirty_.push_back(d);
    Free(d, PerMicrobatch(p_.workspace_bytes[op]));
    if (!IsBackward(task)) {
      ForwardDone(op, d, mb);
    } else {
      BackwardDone(op, d, mb);
    }
  }

  void ForwardDone(size_t op, int d, int mb) {
    for (uint32_t t : p_.outputs(op)) {
      if (p_.tensors[t].role != TensorRole::kActivation) continue;
      // Local consumers.
      for (uint32_t u : p_.consumers(t)) {
        if (dev_[u] == d) Arrive(Task(u, mb, false));
      }
      // One transfer per remote holder.
      for (uint32_t h = holder_begin_[t] + 1; h < holder_begin_[t + 1]; ++h) {
        StartTransfer(t, d, holder_dev_[h], mb, false);
      }
      if (!p_.training) Release(t, d, mb);  // the producer's own reference
    }
    if (!p_.training) {
      for (uint32_t t : p_.inputs(op)) {
        if (p_.tensors[t].role != TensorRole::kWeight) Release(t, d, mb);
      }
    }
    if (--forward_left_ == 0 && p_.training) {
      backward_open_ = true;
      for (size_t v = 0; v < n_; ++v) {
        for (int b = 0; b < m_; ++b) {
          if (pending_[Task(v, b, true)] == 0) MakeReady(Task(v, b, true));
        }
      }
    }
  }

  void BackwardDone(size_t op, int d, int mb) {
    // Gradients for each activation input go to its producer.
    for (uint32_t t : p_.inputs(op)) {
      if (!IsGradTarget(t)) continue;
      const OpId v = p_.tensors[t].producer;
      const int64_t bytes = PerMicrobatch(p_.tensors[t].bytes);
      if (dev_[v] == d) {
        grad_hold_[v * m_ + mb] += bytes;
        ArriveGrad(v, mb);
      } else {
        StartTransfer(t, d, dev_[v], mb, true);
      }
    }
    // Activations kept for backward: inputs on this device, own outputs.
    for (uint32_t t : p_.inputs(op)) {
      if (p_.tensors[t].role != TensorRole::kWeight) Release(t, d, mb);
    }
    for (uint32_t t : p_.outputs(op)) {
      if (p_.tensors[t].role == TensorRole::kActivation) Release(t, d, mb);
    }
    // Gradients received for this op's outputs.
    Free(d, grad_hold_[op * m_ + mb]);
    grad_hold_[op * m_ + mb] = 0;
  }

  void Arrive(uint64_t task) {
    if (--pending_[task] == 0) MakeReady(task);
  }

  void ArriveGrad(OpId v, int mb) {
    const uint64_t task = Task(v, mb, true);
    if (--pending_[task] == 0 && backward_open_) MakeReady(task);
  }

  // ---- transfers ----------------------------------------------------------

  void StartTransfer(uint32_t t, int from, int to, int mb, bool gradient) {
    const Link& link = c_.link(from, to);
    const int64_t bytes = PerMicrobatch(p_.tensors[t].bytes);
    const double start = std::max({now_, send_free_[from], recv_free_[to]});
    const double dur =
        link.latency + static_cast<double>(bytes) / link.bandwidth;
    const double end = start + dur;
    send_free_[from] = end;
    recv_free_[to] = end;
    TransferRecord rec;
    rec.tensor = t;
    rec.from = from;
    rec.to = to;
    rec.bytes = bytes;
    rec.start_s = start;
    rec.end_s = end;
    rec.gradient = gradient;
    rec.microbatch = mb;
    // The receiver holds the copy from the start of the transfer; the
    // reservation is made now, so the allocation is too (conservative).
    Allocate(to, bytes, last_op_[to]);
    LinkStats& ls = link_stats_[static_cast<size_t>(from) * nd_ + to];
    ls.from = from;
    ls.to = to;
    ls.transfers++;
    ls.bytes += bytes;
    ls.busy_s += dur;
    result_.transfer_bytes += bytes;
    result_.transfers.push_back(rec);
    Push(end, EventKind::kArrival, result_.transfers.size() - 1);
  }

  void TransferDone(size_t index) {
    const TransferRecord rec = result_.transfers[index];
    const uint32_t t = rec.tensor;
    if (!rec.gradient) {
      Release(t, rec.from, rec.microbatch);  // the sender's reference
      for (uint32_t u : p_.consumers(t)) {
        if (dev_[u] == rec.to) Arrive(Task(u, rec.microbatch, false));
      }
    } else {
      Free(rec.from, rec.bytes);  // sent: the sender's gradient copy
      const OpId v = p_.tensors[t].producer;
      grad_hold_[v * m_ + rec.microbatch] += rec.bytes;
      ArriveGrad(v, rec.microbatch);
    }
  }

  // ---- memory -------------------------------------------------------------

  void Release(uint32_t t, int d, int mb) {
    const uint32_t h = HolderOf(t, d);
    if (h == UINT32_MAX) return;
    int64_t& r = refs_[static_cast<size_t>(h) * m_ + mb];
    if (r <= 0) return;
    if (--r == 0) Free(d, PerMicrobatch(p_.tensors[t].bytes));
  }

  void Allocate(int d, int64_t bytes, OpId op) {
    if (bytes <= 0) return;
    current_[d] += bytes;
    DeviceStats& s = result_.devices[d];
    if (current_[d] > s.peak_bytes) {
      s.peak_bytes = current_[d];
      s.peak_op = op;
    }
  }
  void Free(int d, int64_t bytes) { current_[d] -= bytes; }

  // ---- loop ---------------------------------------------------------------

  void Push(double time, EventKind kind, uint64_t id) {
    events_.push(Event{time, seq_++, kind, id});
  }

  void Loop() {
    for (int d = 0; d < nd_; ++d) Dispatch(d);
    dirty_.clear();
    while (!events_.empty()) {
      now_ = events_.top().time;
      while (!events_.empty() && events_.top().time == now_) {
        const Event e = events_.top();
        events_.pop();
        if (e.kind == EventKind::kTaskDone) {
          TaskDone(e.id);
        } else {
          TransferDone(e.id);
        }
      }
      for (int d : dirty_) Dispatch(d);
      dirty_.clear();
      end_ = std::max(end_, now_);
    }
  }

  void Finish() {
    result_.step_s = end_;
    for (const LinkStats& ls : link_stats_) {
      if (ls.transfers > 0) result_.links.push_back(ls);
    }
    result_.fits = true;
    for (int d = 0; d < nd_; ++d) {
      if (result_.devices[d].peak_bytes > c_.devices[d].memory_usable) {
        result_.fits = false;
      }
    }
  }

  const Problem& p_;
  const Cluster& c_;
  const std::vector<uint16_t>& dev_;
  const size_t n_;
  const int m_;
  const int nd_;
  const bool record_;
  std::vector<uint32_t> priority_;

  std::vector<uint32_t> holder_begin_;
  std::vector<uint16_t> holder_dev_;
  std::vector<int64_t> refs_;
  std::vector<int64_t> current_;
  std::vector<OpId> last_op_;

  std::vector<uint32_t> pending_;
  std::vector<int64_t> grad_hold_;
  std::vector<
      std::priority_queue<ReadyKey, std::vector<ReadyKey>, std::greater<>>>
      ready_;
  std::vector<bool> busy_;
  std::vector<int> dirty_;
  std::vector<double> send_free_, recv_free_;
  std::vector<LinkStats> link_stats_;
  std::priority_queue<Event, std::vector<Event>, std::greater<>> events_;
  uint64_t seq_ = 0;
  size_t forward_left_ = 0;
  bool backward_open_ = false;
  double now_ = 0.0, end_ = 0.0;
  SimResult result_;
};

}  // namespace

SimResult Simulate(const Problem& problem, const Cluster& cluster,
                   const Placement& placement, const SimOptions& options) {
  return Simulation(problem, cluster, placement, options).Run();
}

}  // namespace tessera::placer
