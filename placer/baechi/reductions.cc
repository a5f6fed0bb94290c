// Graph reductions (reductions_internal.h): co-placement, fusion of groups that
// share a weight, coarsening, expansion (the contracted problem is
// contract.cc's). Every function
// works on the graph of groups (distinct edges between groups) and keeps it
// acyclic; the arguments are in docs/placer_baechi.md.

#include "placer/baechi/reductions_internal.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <numeric>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "placer/baechi/rank_set_internal.h"

namespace tessera::placer {
namespace {

constexpr uint32_t kNone = UINT32_MAX;

// A weight smaller than this is left alone by FuseSharedWeights: a second
// copy of it costs less memory than the parallelism lost by gluing its
// consumers together (ONNX exports share tiny shape constants across whole
// networks).
constexpr int64_t kMinFusedWeightBytes = int64_t{1} << 20;
// FuseSharedWeights gives up on one merge after scanning this many edges of
// the group graph (the merge is then skipped), and stops fusing once it has
// scanned kFusionBudgetPerEdge x (edges + groups) in all: it stays
// near-linear on 10^6-op graphs.
constexpr int64_t kMaxFusionSearch = 4096;
constexpr int64_t kFusionBudgetPerEdge = 8;

// Ops of each group in topological order, as CSR.
struct Members {
  std::vector<uint32_t> begin, ops;
  std::span<const uint32_t> of(uint32_t g) const {
    return {ops.data() + begin[g], begin[g + 1] - begin[g]};
  }
};

Members GroupMembers(const Problem& p, const Grouping& g) {
  Members m;
  m.begin.assign(g.num_groups + 1, 0);
  for (uint32_t grp : g.group_of) ++m.begin[grp + 1];
  std::partial_sum(m.begin.begin(), m.begin.end(), m.begin.begin());
  m.ops.resize(p.num_ops());
  std::vector<uint32_t> fill(m.begin.begin(), m.begin.end() - 1);
  for (OpId op : p.topo) m.ops[fill[g.group_of[op]]++] = op;
  return m;
}

// Distinct edges between groups, both directions, as CSR.
struct GroupGraph {
  std::vector<uint32_t> out_begin, out, in_begin, in;
  std::span<const uint32_t> succ(uint32_t g) const {
    return {out.data() + out_begin[g], out_begin[g + 1] - out_begin[g]};
  }
  std::span<const uint32_t> pred(uint32_t g) const {
    return {in.data() + in_begin[g], in_begin[g + 1] - in_begin[g]};
  }
};

GroupGraph BuildGroupGraph(const Problem& p, const Grouping& g,
                           const Members& m) {
  GroupGraph gg;
  const uint32_t n = g.num_groups;
  gg.out_begin.assign(n + 1, 0);
  std::vector<uint32_t> stamp(n, kNone);
  for (uint32_t grp = 0; grp < n; ++grp) {
    gg.out_begin[grp] = static_cast<uint32_t>(gg.out.size());
    for (uint32_t op : m.of(grp)) {
      for (uint32_t s : p.successors(op)) {
        const uint32_t h = g.group_of[s];
        if (h == grp || stamp[h] == grp) continue;
        stamp[h] = grp;
        gg.out.push_back(h);
      }
    }
  }
  gg.out_begin[n] = static_cast<uint32_t>(gg.out.size());
  gg.in_begin.assign(n + 1, 0);
  for (uint32_t h : gg.out) ++gg.in_begin[h + 1];
  std::partial_sum(gg.in_begin.begin(), gg.in_begin.end(), gg.in_begin.begin());
  gg.in.resize(gg.out.size());
  std::vector<uint32_t> fill(gg.in_begin.begin(), gg.in_begin.end() - 1);
  for (uint32_t grp = 0; grp < n; ++grp) {
    for (uint32_t h : gg.succ(grp)) gg.in[fill[h]++] = grp;
  }
  return gg;
}

// Kahn's order of the groups: among the ready groups, the one whose first
// op comes first in p.topo (so the order follows the model's); groups
// without ops last. `indeg` counts the edges into each group that
// `visit(grp, f)` walks, calling f(h) once per edge from grp to h. The
// ready groups wait in a RankSet over their first op's position (distinct
// per group), which at 10^6 groups costs a third of a binary heap. Shorter
// than num_groups when the groups have a cycle.
template <typename Visit>
std::vector<uint32_t> KahnByFirstOp(const Problem& p, const Grouping& g,
                                    const Members& m,
                                    std::vector<uint32_t>& indeg, Visit visit) {
  const uint32_t n = g.num_groups;
  // Each group's key: its first op's position in p.topo; or, when the
  // groups are numbered in the order of their first ops and none is empty
  // (as Relabel numbers them), the group itself, which orders them alike.
  uint32_t next = 0;
  for (OpId op : p.topo) {
    const uint32_t grp = g.group_of[op];
    if (grp < next) continue;
    if (grp != next) break;
    ++next;
  }
  const bool by_number = next == n;
  std::vector<uint32_t> key, group_at, empty;
  uint32_t keys = n;
  if (!by_number) {
    // (Members holds only the ops in p.topo: a group of others is empty.)
    keys = static_cast<uint32_t>(p.topo.size());
    std::vector<uint32_t> pos(p.num_ops(), kNone);
    for (uint32_t i = 0; i < keys; ++i) pos[p.topo[i]] = i;
    key.assign(n, kNone);
    group_at.assign(keys, kNone);
    for (uint32_t grp = 0; grp < n; ++grp) {
      if (m.begin[grp] == m.begin[grp + 1]) {
        empty.push_back(grp);
        continue;
      }
      key[grp] = pos[m.of(grp)[0]];
      group_at[key[grp]] = grp;
    }
  }
  auto key_of = [&](uint32_t grp) { return by_number ? grp : key[grp]; };
  RankSet ready(keys);
  for (uint32_t grp = 0; grp < n; ++grp) {
    if (indeg[grp] == 0 && key_of(grp) != kNone) ready.Insert(key_of(grp));
  }
  std::vector<uint32_t> order;
  order.reserve(n);
  while (!ready.empty()) {
    const uint32_t at = ready.Min();
    ready.Erase(at);
    const uint32_t grp = by_number ? at : group_at[at];
    order.push_back(grp);
    visit(grp, [&](uint32_t h) {
      if (--indeg[h] == 0) ready.Insert(key_of(h));
    });
  }
  order.insert(order.end(), empty.begin(), empty.end());
  return order;
}

// A topological order of the groups (KahnByFirstOp) over the group graph.
std::vector<uint32_t> GroupTopoOrder(const Problem& p, const Grouping& g,
                                     const Members& m, const GroupGraph& gg) {
  std::vector<uint32_t> indeg(g.num_groups);
  for (uint32_t grp = 0; grp < g.num_groups; ++grp) {
    indeg[grp] = static_cast<uint32_t>(gg.pred(grp).size());
  }
  return KahnByFirstOp(p, g, m, indeg, [&gg](uint32_t grp, auto&& f) {
    for (uint32_t h : gg.succ(grp)) f(h);
  });
}

// The same order from the ops' edges, without building the group graph: a
// group's in-degree counts the edges from other groups into its members,
// repeats included, so it reaches zero when its last predecessor group is
// out, as with distinct edges.
std::vector<uint32_t> GroupTopoOrderFromOps(const Problem& p, const Grouping& g,
                                            const Members& m) {
  std::vector<uint32_t> indeg(g.num_groups, 0);
  for (OpId op = 0; op < p.num_ops(); ++op) {
    const uint32_t grp = g.group_of[op];
    for (uint32_t s : p.successors(op)) {
      if (g.group_of[s] != grp) ++indeg[g.group_of[s]];
    }
  }
  return KahnByFirstOp(p, g, m, indeg, [&](uint32_t grp, auto&& f) {
    for (uint32_t op : m.of(grp)) {
      for (uint32_t s : p.successors(op)) {
        if (g.group_of[s] != grp) f(g.group_of[s]);
      }
    }
  });
}

class UnionFind {
 public:
  explicit UnionFind(uint32_t n) : parent_(n) {
    std::iota(parent_.begin(), parent_.end(), 0);
  }
  uint32_t Find(uint32_t x) {
    while (parent_[x] != x) {
      parent_[x] = parent_[parent_[x]];
      x = parent_[x];
    }
    return x;
  }
  // Makes `root` the representative of both; both must be roots.
  void Join(uint32_t child, uint32_t root) { parent_[child] = root; }

 private:
  std::vector<uint32_t> parent_;
};

// The grouping whose groups are the union-find components of `start`'s
// groups, numbered in order of first appearance along p.topo.
Grouping Relabel(const Problem& p, const Grouping& start, UnionFind& uf) {
  Grouping out;
  out.group_of.resize(p.num_ops());
  std::vector<uint32_t> label(start.num_groups, kNone);
  for (OpId op : p.topo) {
    const uint32_t root = uf.Find(start.group_of[op]);
    if (label[root] == kNone) label[root] = out.num_groups++;
    out.group_of[op] = label[root];
  }
  return out;
}

// Mean over profiles of an op's forward (+ backward) seconds.
double MeanWork(const Problem& p, OpId op) {
  double sum = 0.0;
  const size_t base = static_cast<size_t>(op) * p.num_profiles;
  for (int k = 0; k < p.num_profiles; ++k) {
    sum += p.forward_s[base + k];
    if (!p.backward_s.empty()) sum += p.backward_s[base + k];
  }
  return sum / std::max(1, p.num_profiles);
}

// Fuses components of the group graph while keeping a topological order of
// the components (Pearce & Kelly's reordering, applied to a merge).
class Fuser {
 public:
  Fuser(const GroupGraph& gg, const std::vector<uint32_t>& order,
        int64_t budget)
      : gg_(gg),
        uf_(static_cast<uint32_t>(order.size())),
        pos_(order.size()),
        next_(order.size(), kNone),
        tail_(order.size()),
        size_(order.size(), 1),
        mark_(order.size(), 0),
        budget_(budget) {
    for (size_t i = 0; i < order.size(); ++i) pos_[order[i]] = i;
    std::iota(tail_.begin(), tail_.end(), 0);
  }

  UnionFind& components() { return uf_; }
  bool exhausted() const { return budget_ <= 0; }

  // Merges the components of groups `x` and `y` unless a path between them
  // runs through a third component (a cycle) or finding out costs too much.
  // Returns whether they are one component now.
  bool TryMerge(uint32_t x, uint32_t y) {
    uint32_t a = uf_.Find(x), b = uf_.Find(y);
    if (a == b) return true;
    if (pos_[a] > pos_[b]) std::swap(a, b);
    ++epoch_;
    int64_t scanned = 0;
    std::vector<uint32_t> fwd, bwd;
    if (!Search(a, b, /*forward=*/true, fwd, scanned) ||
        !Search(b, a, /*forward=*/false, bwd, scanned)) {
      budget_ -= scanned;
      return false;
    }
    budget_ -= scanned;
    Reorder(a, b, fwd, bwd);
    return true;
  }

 private:
  // Components reachable from `from` (forward) or reaching it (backward)
  // strictly between the positions of `from` and `to`. False when one of
  // them touches `to` (a path through a third component) or the search
  // exceeds its limit.
  bool Search(uint32_t from, uint32_t to, bool forward,
              std::vector<uint32_t>& found, int64_t& scanned) {
    const size_t lo = std::min(pos_[from], pos_[to]);
    const size_t hi = std::max(pos_[from], pos_[to]);
    std::vector<uint32_t> stack = {from};
    while (!stack.empty()) {
      const uint32_t c = stack.back();
      stack.pop_back();
      for (uint32_t member = c; member != kNone; member = next_[member]) {
        const auto edges = forward ? gg_.succ(member) : gg_.pred(member);
        scanned += static_cast<int64_t>(edges.size()) + 1;
        if (scanned > kMaxFusionSearch || scanned > budget_) return false;
        for (uint32_t h : edges) {
          const uint32_t r = uf_.Find(h);
          if (r == c) continue;
          if (r == to) {
            if (c == from) continue;  // the direct edge: contracting it is fine
            return false;
          }
          if (pos_[r] <= lo || pos_[r] >= hi || mark_[r] == epoch_) continue;
          mark_[r] = epoch_;
          found.push_back(r);
          stack.push_back(r);
        }
      }
    }
    return true;
  }

  // Merges a (earlier) and b: the components reaching b move to the front
  // of the positions involved, then the merged one, then those a reaches.
  void Reorder(uint32_t a, uint32_t b, std::vector<uint32_t>& fwd,
               std::vector<uint32_t>& bwd) {
    auto by_pos = [&](uint32_t u, uint32_t v) { return pos_[u] < pos_[v]; };
    std::sort(fwd.begin(), fwd.end(), by_pos);
    std::sort(bwd.begin(), bwd.end(), by_pos);
    std::vector<size_t> slots;
    slots.reserve(fwd.size() + bwd.size() + 2);
    slots.push_back(pos_[a]);
    slots.push_back(pos_[b]);
    for (uint32_t c : fwd) slots.push_back(pos_[c]);
    for (uint32_t c : bwd) slots.push_back(pos_[c]);
    std::sort(slots.begin(), slots.end());
    size_t i = 0;
    for (uint32_t c : bwd) pos_[c] = slots[i++];
    const size_t merged = slots[i++];
    for (uint32_t c : fwd) pos_[c] = slots[i++];
    // Join the smaller member list onto the larger root.
    uint32_t root = a, child = b;
    if (size_[b] > size_[a]) std::swap(root, child);
    uf_.Join(child, root);
    next_[tail_[root]] = child;
    tail_[root] = tail_[child];
    size_[root] += size_[child];
    pos_[root] = merged;
  }

  const GroupGraph& gg_;
  UnionFind uf_;
  std::vector<size_t> pos_;     // per component root: topological position
  std::vector<uint32_t> next_;  // member list of each component
  std::vector<uint32_t> tail_;  // per root: last member
  std::vector<uint32_t> size_;  // per root: members
  std::vector<uint32_t> mark_;  // per root: visited in epoch
  uint32_t epoch_ = 0;
  int64_t budget_;
};

// Whether `v` holds each of 0 .. v.size() - 1 once.
bool IsPermutation(const std::vector<uint32_t>& v) {
  std::vector<uint8_t> seen(v.size(), 0);
  for (uint32_t x : v) {
    if (x >= v.size() || seen[x]) return false;
    seen[x] = 1;
  }
  return true;
}

// Whether some weight large enough to fuse is read by two groups (or made
// in one and read in another).
bool AnythingToFuse(const Problem& p, const Grouping& g) {
  for (uint32_t t = 0; t < p.num_tensors(); ++t) {
    const ProblemTensor& tensor = p.tensors[t];
    if (tensor.role != TensorRole::kWeight ||
        tensor.bytes < kMinFusedWeightBytes) {
      continue;
    }
    uint32_t first =
        tensor.producer == kNoOp ? kNone : g.group_of[tensor.producer];
    for (uint32_t op : p.consumers(t)) {
      if (first == kNone) {
        first = g.group_of[op];
      } else if (g.group_of[op] != first) {
        return true;
      }
    }
  }
  return false;
}

// Whether every op is its own group, numbered by op.
bool IsIdentity(const Grouping& g) {
  for (uint32_t op = 0; op < g.group_of.size(); ++op) {
    if (g.group_of[op] != op) return false;
  }
  return g.num_groups == g.group_of.size();
}

}  // namespace

Grouping IdentityGrouping(const Problem& p) {
  Grouping g;
  g.num_groups = static_cast<uint32_t>(p.num_ops());
  g.group_of.resize(p.num_ops());
  std::iota(g.group_of.begin(), g.group_of.end(), 0);
  return g;
}

// Baechi's rule, on the groups of `start`: a group whose only successor
// group is H joins H's group, all such joins at once (transitively, so
// chains collapse). The rule looks at the successors in `start`, not at
// the merged groups: re-applying it to merged groups would swallow every
// graph with a single sink whole. Each merged group is an in-tree of such
// edges, and contracting edges that are their tails' only way out creates
// no cycle (docs/placer_baechi.md).
Grouping CoPlace(const Problem& p, const Grouping& start) {
  UnionFind uf(start.num_groups);
  auto join = [&uf](uint32_t grp, std::span<const uint32_t> succ) {
    if (succ.size() != 1) return;
    const uint32_t a = uf.Find(grp), b = uf.Find(succ[0]);
    if (a != b) uf.Join(a, b);
  };
  if (IsIdentity(start)) {  // the groups' successors are the ops' own
    for (OpId op = 0; op < p.num_ops(); ++op) join(op, p.successors(op));
  } else {
    const Members m = GroupMembers(p, start);
    const GroupGraph gg = BuildGroupGraph(p, start, m);
    for (uint32_t grp = 0; grp < start.num_groups; ++grp) {
      join(grp, gg.succ(grp));
    }
  }
  return Relabel(p, start, uf);
}

Grouping FuseSharedWeights(const Problem& p, const Grouping& start) {
  if (!AnythingToFuse(p, start)) return start;
  const Members m = GroupMembers(p, start);
  const GroupGraph gg = BuildGroupGraph(p, start, m);
  const std::vector<uint32_t> order = GroupTopoOrder(p, start, m, gg);
  if (order.size() != start.num_groups) return start;
  const int64_t budget =
      kFusionBudgetPerEdge *
      (static_cast<int64_t>(gg.out.size()) + start.num_groups);
  Fuser fuser(gg, order, budget);
  std::vector<uint32_t> groups;
  for (uint32_t t = 0; t < p.num_tensors() && !fuser.exhausted(); ++t) {
    const ProblemTensor& tensor = p.tensors[t];
    if (tensor.role != TensorRole::kWeight ||
        tensor.bytes < kMinFusedWeightBytes) {
      continue;
    }
    groups.clear();
    if (tensor.producer != kNoOp) {
      groups.push_back(start.group_of[tensor.producer]);
    }
    for (uint32_t op : p.consumers(t)) groups.push_back(start.group_of[op]);
    if (groups.size() < 2) continue;
    uint32_t cur = groups[0];
    for (size_t i = 1; i < groups.size(); ++i) {
      if (fuser.TryMerge(cur, groups[i])) cur = groups[i];
    }
  }
  return Relabel(p, start, fuser.components());
}

// Cuts a topological order of the groups into runs of about equal work:
// group i goes to run floor((work before i + half its own) / target), a
// non-decreasing index, so runs are contiguous and edges only go forward.
Grouping Coarsen(const Problem& p, const Grouping& start, uint32_t max_groups) {
  max_groups = std::max<uint32_t>(max_groups, 1);
  if (start.num_groups <= max_groups) return start;
  const Members m = GroupMembers(p, start);
  const std::vector<uint32_t> order = GroupTopoOrderFromOps(p, start, m);
  if (order.size() != start.num_groups) return start;
  std::vector<double> work(start.num_groups, 0.0);
  double total = 0.0;
  for (OpId op = 0; op < p.num_ops(); ++op) {
    const double w = MeanWork(p, op);
    work[start.group_of[op]] += w;
    total += w;
  }
  if (!(total > 0.0)) {  // no times at all: balance by group count
    std::fill(work.begin(), work.end(), 1.0);
    total = static_cast<double>(start.num_groups);
  }
  const double target = total / max_groups;
  std::vector<uint32_t> run(start.num_groups);
  double before = 0.0;
  uint32_t last = 0, label = 0;
  for (size_t i = 0; i < order.size(); ++i) {
    const uint32_t grp = order[i];
    const auto r = std::min<uint32_t>(
        max_groups - 1,
        static_cast<uint32_t>((before + work[grp] / 2) / target));
    if (i > 0 && r != last) ++label;
    last = r;
    run[grp] = label;
    before += work[grp];
  }
  Grouping out;
  out.num_groups = label + 1;
  out.group_of.resize(p.num_ops());
  for (OpId op = 0; op < p.num_ops(); ++op) {
    out.group_of[op] = run[start.group_of[op]];
  }
  return out;
}

Placement Expand(const Problem& p, const Grouping& g,
                 const Placement& group_placement) {
  const uint32_t n = g.num_groups;
  Placement out;
  out.device.resize(p.num_ops());
  for (OpId op = 0; op < p.num_ops(); ++op) {
    out.device[op] = group_placement.device[g.group_of[op]];
  }
  // Groups by priority (or in a topological order of the groups when the
  // group placement has none), ops in topological order within a group: a
  // stable bucket sort of p.topo.
  std::vector<uint32_t> rank(n);
  if (group_placement.priority.size() == n &&
      IsPermutation(group_placement.priority)) {
    rank = group_placement.priority;
  } else if (group_placement.priority.size() == n) {
    std::vector<uint32_t> by(n);
    std::iota(by.begin(), by.end(), 0);
    std::sort(by.begin(), by.end(), [&](uint32_t a, uint32_t b) {
      return group_placement.priority[a] < group_placement.priority[b];
    });
    for (uint32_t i = 0; i < n; ++i) rank[by[i]] = i;
  } else {
    const Members m = GroupMembers(p, g);
    const std::vector<uint32_t> order =
        GroupTopoOrder(p, g, m, BuildGroupGraph(p, g, m));
    std::iota(rank.begin(), rank.end(), 0);  // (only if not a DAG)
    for (uint32_t i = 0; i < order.size(); ++i) rank[order[i]] = i;
  }
  std::vector<uint32_t> begin(n + 1, 0);
  for (uint32_t grp : g.group_of) ++begin[rank[grp] + 1];
  std::partial_sum(begin.begin(), begin.end(), begin.begin());
  out.priority.resize(p.num_ops());
  for (OpId op : p.topo) {
    out.priority[op] = begin[rank[g.group_of[op]]]++;
  }
  return out;
}

}  // namespace tessera::placer
