// Hierarchical queues with guarantees, borrowing and reclaim
// (queue_tree.h, docs/quotas.md).
#include "scheduler/queue_tree.h"

#include <algorithm>
#include <cmath>
#include <set>
#include <utility>

namespace tessera::scheduler {
namespace {

std::string Label(const std::string& path, const char* field, const char* dim) {
  return path + "." + field + "." + dim;
}

QueueAmount Sub(QueueAmount a, const QueueAmount& b) { return a -= b; }

}  // namespace

Result<QueueTree> QueueTree::Make(std::vector<QueueSpec> top) {
  QueueTree tree;
  Node root;
  root.spec.weight = 1;
  tree.nodes_.push_back(std::move(root));
  tree.by_name_[""] = 0;
  // Depth first, each node's fields checked with its config path.
  struct Item {
    QueueSpec spec;
    int parent;
    std::string path;
  };
  std::vector<Item> todo;
  for (size_t i = top.size(); i-- > 0;) {
    todo.push_back({std::move(top[i]), 0, "queues[" + std::to_string(i) + "]"});
  }
  QueueAmount top_guarantee;
  while (!todo.empty()) {
    Item item = std::move(todo.back());
    todo.pop_back();
    QueueSpec& s = item.spec;
    if (s.name.empty()) return BadInput(item.path + ".name: required");
    if (tree.by_name_.count(s.name)) {
      return BadInput(item.path + ".name: '" + s.name +
                      "' is given twice (queue names are unique in the tree)");
    }
    for (const auto& [field, amount] :
         {std::pair<const char*, const QueueAmount*>{"guaranteed",
                                                     &s.guaranteed},
          {"limit", &s.limit}}) {
      if (amount->gpu_milli < 0) {
        return BadInput(Label(item.path, field, "gpu_milli") +
                        ": must not be negative");
      }
      if (amount->gpu_memory_mib < 0) {
        return BadInput(Label(item.path, field, "gpu_memory") +
                        ": must not be negative");
      }
    }
    if (s.limit.gpu_milli < s.guaranteed.gpu_milli) {
      return BadInput(Label(item.path, "limit", "gpu_milli") + ": " +
                      std::to_string(s.limit.gpu_milli) +
                      " is below the queue's guarantee (" +
                      std::to_string(s.guaranteed.gpu_milli) + ")");
    }
    if (s.limit.gpu_memory_mib < s.guaranteed.gpu_memory_mib) {
      return BadInput(Label(item.path, "limit", "gpu_memory") + ": " +
                      std::to_string(s.limit.gpu_memory_mib) +
                      " MiB is below the queue's guarantee (" +
                      std::to_string(s.guaranteed.gpu_memory_mib) + " MiB)");
    }
    if (!(s.weight > 0) || !std::isfinite(s.weight)) {
      return BadInput(item.path + ".weight: must be above 0, e.g. 1");
    }
    QueueAmount children;
    for (const QueueSpec& c : s.children) children += c.guaranteed;
    for (const auto& [dim, over, have, want] :
         {std::tuple<const char*, bool, int64_t, int64_t>{
              "gpu_milli", children.gpu_milli > s.guaranteed.gpu_milli,
              children.gpu_milli, s.guaranteed.gpu_milli},
          {"gpu_memory", children.gpu_memory_mib > s.guaranteed.gpu_memory_mib,
           children.gpu_memory_mib, s.guaranteed.gpu_memory_mib}}) {
      if (over) {
        return BadInput(Label(item.path, "guaranteed", dim) + ": " +
                        std::to_string(want) +
                        " is less than its children's guarantees together (" +
                        std::to_string(have) + ")");
      }
    }
    Node node;
    node.parent = item.parent;
    node.depth = tree.nodes_[item.parent].depth + 1;
    node.own_guarantee = Sub(s.guaranteed, children);
    std::vector<QueueSpec> kids = std::move(s.children);
    s.children.clear();
    node.spec = std::move(s);
    const int index = tree.size();
    tree.by_name_[node.spec.name] = index;
    if (item.parent == 0) top_guarantee += node.spec.guaranteed;
    tree.nodes_.push_back(std::move(node));
    for (size_t i = kids.size(); i-- > 0;) {
      todo.push_back({std::move(kids[i]), index,
                      item.path + ".children[" + std::to_string(i) + "]"});
    }
  }
  // The root: the top-level queues' guarantees; its own jobs borrow.
  tree.nodes_[0].spec.guaranteed = top_guarantee;
  return tree;
}

int QueueTree::Find(std::string_view name) const {
  auto it = by_name_.find(name);
  return it == by_name_.end() ? -1 : it->second;
}

int QueueTree::Route(std::string_view requested, std::string_view user,
                     std::string_view team) const {
  if (!requested.empty()) return Find(requested);
  if (!user.empty()) {
    if (const int q = Find(user); q > 0) return q;
  }
  if (!team.empty()) {
    if (const int q = Find(team); q > 0) return q;
  }
  return 0;
}

bool QueueTree::Within(int q, int ancestor) const {
  for (; q >= 0; q = nodes_[q].parent) {
    if (q == ancestor) return true;
  }
  return false;
}

void QueueTree::Clear() {
  for (Node& n : nodes_) {
    n.used = n.own_guaranteed_used = n.guaranteed_used = {};
    n.running = n.borrowing = 0;
  }
}

void QueueTree::Add(const TreeJob& j) {
  if (!j.borrowed) nodes_[j.queue].own_guaranteed_used += j.amount;
  for (int q = j.queue; q >= 0; q = nodes_[q].parent) {
    Node& n = nodes_[q];
    n.used += j.amount;
    if (!j.borrowed) n.guaranteed_used += j.amount;
    ++n.running;
    if (j.borrowed) ++n.borrowing;
  }
}

void QueueTree::Remove(const TreeJob& j) {
  if (!j.borrowed) nodes_[j.queue].own_guaranteed_used -= j.amount;
  for (int q = j.queue; q >= 0; q = nodes_[q].parent) {
    Node& n = nodes_[q];
    n.used -= j.amount;
    if (!j.borrowed) n.guaranteed_used -= j.amount;
    --n.running;
    if (j.borrowed) --n.borrowing;
  }
}

QueueTree::Fit QueueTree::Classify(int q, const QueueAmount& amount,
                                   bool preemptible) const {
  const Node& own = nodes_[q];
  QueueAmount with = own.own_guaranteed_used;
  with += amount;
  if (q != 0 && with.Within(own.own_guarantee)) return Fit::kGuaranteed;
  if (!preemptible) return Fit::kNo;
  // Borrowing: each queue from q up borrows at most limit - guaranteed
  // (its guaranteed use never exceeds its guarantee), so its use stays
  // within its limit.
  for (int a = q; a > 0; a = nodes_[a].parent) {
    const Node& n = nodes_[a];
    QueueAmount borrowed = Sub(n.used, n.guaranteed_used);
    borrowed += amount;
    borrowed += n.spec.guaranteed;
    if (!borrowed.Within(n.spec.limit)) return Fit::kNo;
  }
  return Fit::kBorrowed;
}

double QueueTree::BorrowKey(int q) const {
  const Node& n = nodes_[q];
  const QueueAmount& total = nodes_[0].spec.guaranteed;
  const auto frac = [](int64_t over, int64_t of) {
    return static_cast<double>(std::max<int64_t>(0, over)) /
           static_cast<double>(std::max<int64_t>(1, of));
  };
  const double share = std::max(
      frac(n.used.gpu_milli - n.spec.guaranteed.gpu_milli, total.gpu_milli),
      frac(n.used.gpu_memory_mib - n.spec.guaranteed.gpu_memory_mib,
           total.gpu_memory_mib));
  return share / n.spec.weight;
}

std::vector<JobId> QueueTree::Reclaim(
    const TreePending& job, const std::vector<TreeJob>& running,
    const ClusterState& state,
    const std::function<bool(const ClusterState&)>& fits) const {
  std::vector<const TreeJob*> candidates;
  for (const TreeJob& r : running) {
    if (r.borrowed && r.preemptible && !Within(r.queue, job.queue) &&
        state.AllocationOf(r.id) != nullptr) {
      candidates.push_back(&r);
    }
  }
  std::stable_sort(candidates.begin(), candidates.end(),
                   [](const TreeJob* a, const TreeJob* b) {
                     return a->started_at != b->started_at
                                ? a->started_at > b->started_at
                                : a->id > b->id;
                   });
  ClusterState s = state;
  size_t taken = 0;
  bool ok = false;
  for (; taken < candidates.size(); ++taken) {
    s.Release(candidates[taken]->id);
    if (fits(s)) {
      ok = true;
      ++taken;
      break;
    }
  }
  if (!ok) return {};
  // As few as that order needs: give back the older ones it does not
  // (jobs of other pools, or on other nodes).
  std::vector<bool> keep(taken, true);
  for (size_t i = taken; i-- > 0;) {
    ClusterState trial = state;
    for (size_t k = 0; k < taken; ++k) {
      if (k != i && keep[k]) trial.Release(candidates[k]->id);
    }
    if (fits(trial)) keep[i] = false;
  }
  std::vector<JobId> victims;
  for (size_t k = 0; k < taken; ++k) {
    if (keep[k]) victims.push_back(candidates[k]->id);
  }
  return victims;
}

std::vector<QueueReport> QueueTree::Report() const {
  std::vector<QueueReport> out;
  for (size_t i = 1; i < nodes_.size(); ++i) {
    const Node& n = nodes_[i];
    QueueReport r;
    r.name = n.spec.name;
    r.parent = n.parent > 0 ? nodes_[n.parent].spec.name : "";
    r.depth = n.depth;
    r.guaranteed = n.spec.guaranteed;
    r.limit = n.spec.limit;
    r.weight = n.spec.weight;
    r.used = n.used;
    r.borrowed = Sub(n.used, n.guaranteed_used);
    r.idle.gpu_milli = std::max<int64_t>(
        0, n.spec.guaranteed.gpu_milli - n.guaranteed_used.gpu_milli);
    r.idle.gpu_memory_mib = std::max<int64_t>(
        0, n.spec.guaranteed.gpu_memory_mib - n.guaranteed_used.gpu_memory_mib);
    // Of its idle guarantee, what the queues outside it borrow now.
    const QueueAmount outside =
        Sub(Sub(nodes_[0].used, nodes_[0].guaranteed_used), r.borrowed);
    r.lent.gpu_milli = std::min(r.idle.gpu_milli, outside.gpu_milli);
    r.lent.gpu_memory_mib =
        std::min(r.idle.gpu_memory_mib, outside.gpu_memory_mib);
    r.running = n.running;
    r.borrowing_jobs = n.borrowing;
    out.push_back(std::move(r));
  }
  return out;
}

namespace {

// As the policies (Slurm's bf_max_job_test): after this many jobs in
// their guarantee that do not fit, the rest are offered without trying;
// and a reclaim tries at most this many jobs.
constexpr int kMaxMisses = 100;

using TreeAllocate =
    std::function<std::optional<Allocation>(const ClusterState&, JobId)>;

// The reclaim's stand-in for the queue policy when PlanTreeRound is given
// no trial: the jobs that fit `state` start in submission order, the
// others are skipped.
Decision StartInOrder(const ClusterState& state, const std::vector<JobId>& jobs,
                      const TreeAllocate& allocate) {
  ClusterState sim = state;
  Decision d;
  for (const JobId id : jobs) {
    if (std::optional<Allocation> a = allocate(sim, id)) {
      (void)sim.Reserve(id, *a);
      d.start.emplace_back(id, std::move(*a));
    }
  }
  return d;
}

// One PlanTreeRound: its inputs, the tree as the plan fills it, and what
// each step leaves for the next. The steps, in order: Promote, Classify,
// Reclaim (which classifies again for the job it reclaims for), then the
// borrowers offered (OfferBorrowers) or, while a reclaim is under way,
// held (HoldBorrowers).
class TreeRound {
 public:
  TreeRound(const QueueTree& tree, const std::vector<TreePending>& pending,
            const ClusterState& state, const TreeAllocate& allocate,
            const std::set<JobId>& reclaimers)
      : tree_(tree),
        pending_(pending),
        state_(state),
        allocate_(allocate),
        reclaimers_(reclaimers),
        planned_(tree) {
    planned_.Clear();
  }

  TreePlan& plan() { return plan_; }
  // Whether Classify found queued jobs in their guarantee.
  bool any_in_guarantee() const { return !first_.empty(); }

  void Promote(const std::vector<TreeJob>& running);
  void Classify(const std::set<JobId>& owners);
  void Reclaim(std::set<JobId>& owners, const TreeTrial& trial);
  void HoldBorrowers();
  void OfferBorrowers();

 private:
  std::map<JobId, QueueTree::Fit> CountOwners(const std::set<JobId>& owners,
                                              ClusterState& s);
  std::vector<JobId> ReclaimCandidates(const ClusterState& base,
                                       const TreeTrial& trial,
                                       ClusterState& after) const;

  const QueueTree& tree_;
  const std::vector<TreePending>& pending_;
  const ClusterState& state_;
  const TreeAllocate& allocate_;
  const std::set<JobId>& reclaimers_;
  TreePlan plan_;
  QueueTree planned_;  // what runs, and what the plan would start
  // Promote's: the running jobs with their marks, and the tree with them
  // (where each Classify starts from).
  std::vector<TreeJob> running_;
  QueueTree before_;
  // Classify's: the queued jobs that would borrow, those in their
  // guarantee (offered first), and the owners in their guarantee whose
  // room is not free.
  std::vector<const TreePending*> borrowers_, first_;
  std::vector<JobId> waiting_owners_;
};

// Promotions: a borrowed job that now fits its queue's own guarantee (a
// guaranteed one ended) becomes guaranteed, oldest first.
void TreeRound::Promote(const std::vector<TreeJob>& running) {
  running_ = running;
  std::vector<size_t> order(running_.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return running_[a].started_at < running_[b].started_at;
  });
  for (const TreeJob& j : running_) {
    if (!j.borrowed) planned_.Add(j);
  }
  for (const size_t i : order) {
    TreeJob& j = running_[i];
    if (!j.borrowed) continue;
    if (planned_.Classify(j.queue, j.amount, false) ==
        QueueTree::Fit::kGuaranteed) {
      j.borrowed = false;
      plan_.promote.push_back(j.id);
    }
    planned_.Add(j);
  }
  before_ = planned_;
}

// The queued jobs: the owners of reclaimed room first (their room, where
// they fit, and their place in their queue's guarantee), then the others
// in submission order, as if each starts that fits (a job that does not
// fit does not hold back the ones behind it). Run again with this round's
// owner, if any, counted first.
void TreeRound::Classify(const std::set<JobId>& owners) {
  planned_ = before_;
  plan_.offer.clear();
  plan_.fit.clear();
  plan_.held.clear();
  plan_.held_room.clear();
  borrowers_.clear();
  first_.clear();
  waiting_owners_.clear();
  ClusterState s = state_;
  const std::map<JobId, QueueTree::Fit> owner_fit = CountOwners(owners, s);
  int misses = 0;
  for (const TreePending& p : pending_) {
    if (p.queue < 0) {
      plan_.held[p.id] = "no such queue";
      continue;
    }
    if (auto it = owner_fit.find(p.id); it != owner_fit.end()) {
      // Counted above; ScheduleWithTree starts it in its room first.
      plan_.offer.push_back(p.id);
      plan_.fit[p.id] = it->second;
      if (it->second == QueueTree::Fit::kGuaranteed) first_.push_back(&p);
      continue;
    }
    const QueueTree::Fit fit =
        planned_.Classify(p.queue, p.amount, p.preemptible);
    if (fit == QueueTree::Fit::kNo) {
      plan_.held[p.id] = p.preemptible
                             ? "its queue '" + planned_.name(p.queue) +
                                   "' would pass its borrowing limit"
                             : "beyond its queue's guarantee, and only "
                               "preemptible jobs borrow";
      continue;
    }
    if (fit == QueueTree::Fit::kBorrowed) {
      borrowers_.push_back(&p);
      continue;
    }
    plan_.offer.push_back(p.id);
    plan_.fit[p.id] = fit;
    first_.push_back(&p);
    if (misses >= kMaxMisses) continue;
    if (std::optional<Allocation> a = allocate_(s, p.id)) {
      (void)s.Reserve(p.id, *a);
      planned_.Add({p.id, p.queue, p.amount, false, p.preemptible, 0});
    } else {
      ++misses;
    }
  }
}

// The owners counted first: the earlier rounds' owners (`reclaimers`) on
// the cluster now, then this round's on it less its victims. Each takes
// its place in its queue (one that lost it is left to the others' rules)
// and, where it fits `s`, its room there, held for it; an owner in its
// guarantee whose room is not free waits for it. Returns how each fits.
std::map<JobId, QueueTree::Fit> TreeRound::CountOwners(
    const std::set<JobId>& owners, ClusterState& s) {
  std::map<JobId, QueueTree::Fit> owner_fit;
  for (const bool earlier : {true, false}) {
    if (!earlier) {
      for (const JobId v : plan_.reclaim) s.Release(v);
    }
    for (const TreePending& p : pending_) {
      if (!owners.count(p.id) || p.queue < 0 ||
          reclaimers_.count(p.id) != static_cast<size_t>(earlier)) {
        continue;
      }
      const QueueTree::Fit fit =
          planned_.Classify(p.queue, p.amount, p.preemptible);
      if (fit == QueueTree::Fit::kNo) continue;  // it lost its place
      owner_fit[p.id] = fit;
      planned_.Add({p.id, p.queue, p.amount, fit == QueueTree::Fit::kBorrowed,
                    p.preemptible, 0});
      if (std::optional<Allocation> a = allocate_(s, p.id)) {
        (void)s.Reserve(p.id, *a);
        plan_.held_room[p.id] = *a;
      } else if (fit == QueueTree::Fit::kGuaranteed) {
        waiting_owners_.push_back(p.id);
      }
    }
  }
  return owner_fit;
}

// Reclaim: for the job the policy would start next if the borrowed work
// were gone, and only it: one owner at a time, none while victims stop;
// while an owner's room is not free, only such owners reclaim (what was
// taken back is used before more is). The first candidate that some
// victims make room for reclaims them (youngest first, QueueTree::
// Reclaim), and the queued jobs are classified again with it counted
// first (its place in its queue's guarantee and its room are its own from
// now on). A candidate that now borrows, or that nothing can be reclaimed
// for, is passed over.
void TreeRound::Reclaim(std::set<JobId>& owners, const TreeTrial& trial) {
  ClusterState base = state_;
  for (const auto& [id, a] : plan_.held_room) (void)base.Reserve(id, a);
  ClusterState after = base;
  const std::vector<JobId> candidates = ReclaimCandidates(base, trial, after);
  std::map<JobId, const TreePending*> by_id;
  for (const TreePending* p : first_) by_id[p->id] = p;
  int tries = 0;
  for (const JobId c : candidates) {
    if (++tries > kMaxMisses) break;
    auto it = by_id.find(c);
    if (it == by_id.end()) continue;  // an owner that now borrows
    const TreePending& p = *it->second;
    std::vector<JobId> victims =
        tree_.Reclaim(p, running_, after, [&](const ClusterState& st) {
          return allocate_(st, p.id).has_value();
        });
    if (victims.empty()) continue;
    for (const JobId v : victims) {
      plan_.reclaim.push_back(v);
      plan_.reclaimed_for[v] = p.id;
    }
    owners.insert(p.id);
    Classify(owners);
    break;
  }
}

// The jobs that may reclaim, in the order they try, on `base` (the
// cluster with the owners' room held): the owners whose room is not free,
// if any; else, unless the policy would preempt now, the jobs in their
// guarantee the policy would start with the borrowed preemptible work
// gone but does not start now (in its order), then the rest in submission
// order. `after` gets the policy's starts now: what a reclaim must make
// room beside.
std::vector<JobId> TreeRound::ReclaimCandidates(const ClusterState& base,
                                                const TreeTrial& trial,
                                                ClusterState& after) const {
  std::vector<JobId> ids;
  for (const TreePending* p : first_) {
    if (!plan_.held_room.count(p->id)) ids.push_back(p->id);
  }
  const TreeTrial run_policy =
      trial ? trial
            : TreeTrial(
                  [&](const ClusterState& st, const std::vector<JobId>& jobs) {
                    return StartInOrder(st, jobs, allocate_);
                  });
  if (!waiting_owners_.empty()) return waiting_owners_;
  std::vector<JobId> candidates;
  const Decision real = run_policy(base, ids);
  if (!real.preempt.empty()) return candidates;
  std::set<JobId> seen;
  for (const auto& [id, a] : real.start) {
    (void)after.Reserve(id, a);
    seen.insert(id);
  }
  ClusterState all_free = base;
  for (const TreeJob& r : running_) {
    if (r.borrowed && r.preemptible) all_free.Release(r.id);
  }
  // The policy's order with room, then the rest in submission order.
  for (const auto& [id, a] : run_policy(all_free, ids).start) {
    if (seen.insert(id).second) candidates.push_back(id);
  }
  for (const JobId id : ids) {
    if (seen.insert(id).second) candidates.push_back(id);
  }
  return candidates;
}

// While a reclaim is under way (this round's, or victims still stopping),
// no borrower is offered: what the victims free goes to the owners.
void TreeRound::HoldBorrowers() {
  for (const TreePending* b : borrowers_) {
    plan_.held[b->id] = "its queue is reclaiming its guarantee";
  }
}

// Borrowers: the queue furthest below its weighted share first, each
// queue's jobs in submission order.
void TreeRound::OfferBorrowers() {
  std::map<int, std::vector<const TreePending*>> by_queue;
  for (const TreePending* b : borrowers_) by_queue[b->queue].push_back(b);
  std::map<int, size_t> next;
  while (true) {
    int best = -1;
    double best_key = 0;
    for (const auto& [q, jobs] : by_queue) {
      if (next[q] >= jobs.size()) continue;
      const double key = planned_.BorrowKey(q);
      if (best < 0 || key < best_key) {
        best = q;
        best_key = key;
      }
    }
    if (best < 0) break;
    const TreePending& b = *by_queue[best][next[best]++];
    const QueueTree::Fit fit =
        planned_.Classify(b.queue, b.amount, b.preemptible);
    if (fit == QueueTree::Fit::kNo) {
      plan_.held[b.id] = "its queue '" + planned_.name(b.queue) +
                         "' would pass its borrowing limit";
      continue;
    }
    plan_.offer.push_back(b.id);
    plan_.fit[b.id] = fit;
    planned_.Add({b.id, b.queue, b.amount, fit == QueueTree::Fit::kBorrowed,
                  b.preemptible, 0});
  }
}

}  // namespace

TreePlan PlanTreeRound(
    const QueueTree& tree, const std::vector<TreePending>& pending,
    const std::vector<TreeJob>& running, const ClusterState& state,
    const std::function<std::optional<Allocation>(const ClusterState&, JobId)>&
        allocate,
    bool reclaiming, const std::set<JobId>& reclaimers,
    const TreeTrial& trial) {
  TreeRound round(tree, pending, state, allocate, reclaimers);
  round.Promote(running);
  std::set<JobId> owners(reclaimers.begin(), reclaimers.end());
  round.Classify(owners);
  if (!reclaiming && round.any_in_guarantee()) round.Reclaim(owners, trial);
  if (reclaiming || !round.plan().reclaim.empty()) {
    round.HoldBorrowers();
  } else {
    round.OfferBorrowers();
  }
  return std::move(round.plan());
}

Decision ScheduleWithTree(QueuePolicy& policy, const TreePlan& plan,
                          const std::vector<QueuedJob>& queue,
                          std::vector<RunningJob> running,
                          const ClusterState& state, const Allocator& allocate,
                          double now) {
  std::map<JobId, const QueuedJob*> by_id;
  for (const QueuedJob& q : queue) by_id[q.id] = &q;
  std::vector<QueuedJob> first, second;
  for (const JobId id : plan.offer) {
    auto it = by_id.find(id);
    if (it == by_id.end()) continue;  // another pool's
    (plan.fit.at(id) == QueueTree::Fit::kGuaranteed ? first : second)
        .push_back(*it->second);
  }
  Decision d;
  ClusterState s = state;
  // The reclaimed room goes to whom it was reclaimed for: an owner whose
  // room is free starts there, before the policy sees the rest.
  for (const auto& [id, a] : plan.held_room) {
    auto it = by_id.find(id);
    if (it == by_id.end() || s.AllocationOf(id) != nullptr || !s.Fits(a)) {
      continue;
    }
    (void)s.Reserve(id, a);
    d.start.emplace_back(id, a);
    const QueuedJob& q = *it->second;
    running.push_back(
        {q.id, q.user, q.team, q.priority, q.preemptible, now, q.time_limit_s});
    std::erase_if(first, [id](const QueuedJob& j) { return j.id == id; });
    std::erase_if(second, [id](const QueuedJob& j) { return j.id == id; });
  }
  if (!first.empty()) {
    Decision more = policy.Schedule(first, running, s, allocate, now);
    d.preempt = std::move(more.preempt);
    for (const auto& [id, a] : more.start) {
      (void)s.Reserve(id, a);
      const QueuedJob& q = *by_id.at(id);
      running.push_back({q.id, q.user, q.team, q.priority, q.preemptible, now,
                         q.time_limit_s});
    }
    d.start.insert(d.start.end(), std::make_move_iterator(more.start.begin()),
                   std::make_move_iterator(more.start.end()));
  }
  if (!second.empty() && d.preempt.empty()) {
    // The room reclaimed for owners' jobs that did not start is not lent.
    ClusterState lend = s;
    for (const auto& [id, a] : plan.held_room) {
      if (lend.AllocationOf(id) == nullptr && lend.Fits(a)) {
        (void)lend.Reserve(id, a);
      }
    }
    s = std::move(lend);
    // Borrowed work preempts nobody: a policy that would is not followed.
    Decision more = policy.Schedule(second, running, s, allocate, now);
    if (more.preempt.empty()) {
      d.start.insert(d.start.end(), more.start.begin(), more.start.end());
    }
  }
  return d;
}

}  // namespace tessera::scheduler
