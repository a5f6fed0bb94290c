// Graph reductions (reductions_internal.h): co-placement, fusion of groups that
// share a weight, coarsening, and the contracted problem. Every function
// works on the graph of groups (distinct edges between groups) and keeps it
// acyclic; the arguments are in docs/placer_baechi.md.

#include "placer/baechi/reductions_internal.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <numeric>
#include <queue>
#include <span>
#include <string>
#include <utility>
#include <vector>

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

// A topological order of the groups; among ready groups, the one whose
// first op comes first in p.topo (so the order follows the model's).
// Shorter than num_groups when the groups have a cycle.
std::vector<uint32_t> GroupTopoOrder(const Problem& p, const Grouping& g,
                                     const Members& m, const GroupGraph& gg) {
  const uint32_t n = g.num_groups;
  std::vector<uint32_t> first(n, kNone);
  {
    std::vector<uint32_t> pos(p.num_ops());
    for (size_t i = 0; i < p.topo.size(); ++i) {
      pos[p.topo[i]] = static_cast<uint32_t>(i);
    }
    for (uint32_t grp = 0; grp < n; ++grp) {
      if (m.begin[grp] != m.begin[grp + 1]) first[grp] = pos[m.of(grp)[0]];
    }
  }
  using Entry = std::pair<uint32_t, uint32_t>;  // (first, group)
  std::priority_queue<Entry, std::vector<Entry>, std::greater<>> ready;
  std::vector<uint32_t> indeg(n);
  for (uint32_t grp = 0; grp < n; ++grp) {
    indeg[grp] = static_cast<uint32_t>(gg.pred(grp).size());
    if (indeg[grp] == 0) ready.emplace(first[grp], grp);
  }
  std::vector<uint32_t> order;
  order.reserve(n);
  while (!ready.empty()) {
    const uint32_t grp = ready.top().second;
    ready.pop();
    order.push_back(grp);
    for (uint32_t h : gg.succ(grp)) {
      if (--indeg[h] == 0) ready.emplace(first[h], h);
    }
  }
  return order;
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

// Contract's steps, each filling some of the contracted problem `q`'s
// arrays from those the previous ones filled.

// In training the ledger also counts twice the largest tensor a device
// produces or receives; the largest tensor made inside each group stays
// a (consumer-less) tensor of the group so that count stays what it is
// for the ops. Per group, that tensor (kNone outside training).
std::vector<uint32_t> LargestInside(const Problem& p, const Grouping& g) {
  std::vector<uint32_t> largest_inside(g.num_groups, kNone);
  if (p.training) {
    for (uint32_t t = 0; t < p.num_tensors(); ++t) {
      const ProblemTensor& tensor = p.tensors[t];
      if (tensor.role != TensorRole::kActivation || tensor.producer == kNoOp) {
        continue;
      }
      uint32_t& best = largest_inside[g.group_of[tensor.producer]];
      if (best == kNone || p.tensors[best].bytes < tensor.bytes) best = t;
    }
  }
  return largest_inside;
}

// Tensors: which survive, their producer group and consumer groups
// (q.tensors, q.use_begin, q.use_ops); the bytes of the others go to
// q.extra_bytes.
void ContractTensors(const Problem& p, const Grouping& g, Problem& q) {
  const uint32_t n = g.num_groups;
  const std::vector<uint32_t> largest_inside = LargestInside(p, g);
  q.extra_bytes.assign(n, 0);
  auto state_bytes = [&](int64_t bytes) {
    return p.training ? static_cast<int64_t>(std::ceil(
                            static_cast<double>(bytes) * p.weight_state_factor))
                      : bytes;
  };
  std::vector<uint32_t> stamp(n, kNone);
  q.tensors.reserve(p.num_tensors());
  q.use_begin.reserve(p.num_tensors() + 1);
  for (uint32_t t = 0; t < p.num_tensors(); ++t) {
    const ProblemTensor& tensor = p.tensors[t];
    const uint32_t prod =
        tensor.producer == kNoOp ? kNone : g.group_of[tensor.producer];
    bool inside_use = false, outside_use = false;
    for (uint32_t op : p.consumers(t)) {
      (g.group_of[op] == prod ? inside_use : outside_use) = true;
    }
    if (tensor.role == TensorRole::kActivation && prod != kNone &&
        !outside_use && inside_use && !tensor.output &&
        largest_inside[prod] != t) {
      q.extra_bytes[prod] += tensor.bytes;  // lives and dies in its group
      continue;
    }
    // A weight whose producer (a Constant) shares a group with a consumer:
    // a group cannot read its own output. Read only there, the weight
    // becomes one without a producer; read elsewhere too, the producing
    // group keeps it as an output and counts its copy as extra (the ledger
    // counts weights only where they are read).
    uint32_t producer_group = prod;
    if (tensor.role == TensorRole::kWeight && prod != kNone && inside_use) {
      if (outside_use) {
        q.extra_bytes[prod] += state_bytes(tensor.bytes);
      } else {
        producer_group = kNone;
      }
    }
    const auto id = static_cast<uint32_t>(q.tensors.size());
    ProblemTensor kept = tensor;
    kept.producer = producer_group == kNone ? kNoOp : producer_group;
    q.tensors.push_back(std::move(kept));
    q.use_begin.push_back(static_cast<uint32_t>(q.use_ops.size()));
    for (uint32_t op : p.consumers(t)) {
      const uint32_t grp = g.group_of[op];
      if (grp == producer_group || stamp[grp] == id) continue;
      stamp[grp] = id;
      q.use_ops.push_back(grp);
    }
  }
  q.use_begin.push_back(static_cast<uint32_t>(q.use_ops.size()));
}

// Inputs and outputs of each of the `n` groups: transposes of the tensors'
// consumers and producers.
void TransposeTensorUses(Problem& q, uint32_t n) {
  const auto nt = static_cast<uint32_t>(q.tensors.size());
  q.in_begin.assign(n + 1, 0);
  q.out_begin.assign(n + 1, 0);
  for (uint32_t grp : q.use_ops) ++q.in_begin[grp + 1];
  for (const ProblemTensor& t : q.tensors) {
    if (t.producer != kNoOp) ++q.out_begin[t.producer + 1];
  }
  std::partial_sum(q.in_begin.begin(), q.in_begin.end(), q.in_begin.begin());
  std::partial_sum(q.out_begin.begin(), q.out_begin.end(), q.out_begin.begin());
  q.in_tensors.resize(q.in_begin[n]);
  q.out_tensors.resize(q.out_begin[n]);
  std::vector<uint32_t> fill_in(q.in_begin.begin(), q.in_begin.end() - 1);
  std::vector<uint32_t> fill_out(q.out_begin.begin(), q.out_begin.end() - 1);
  for (uint32_t t = 0; t < nt; ++t) {
    for (uint32_t i = q.use_begin[t]; i < q.use_begin[t + 1]; ++i) {
      q.in_tensors[fill_in[q.use_ops[i]]++] = t;
    }
    if (q.tensors[t].producer != kNoOp) {
      q.out_tensors[fill_out[q.tensors[t].producer]++] = t;
    }
  }
}

// Distinct predecessors (sorted) and successors of each of the `n` groups.
void FillGroupEdges(Problem& q, uint32_t n) {
  std::vector<uint32_t> stamp(n, kNone);
  q.pred_begin.assign(n + 1, 0);
  for (uint32_t grp = 0; grp < n; ++grp) {
    q.pred_begin[grp] = static_cast<uint32_t>(q.pred_ops.size());
    for (uint32_t t : q.inputs(grp)) {
      const OpId prod = q.tensors[t].producer;
      if (prod == kNoOp || stamp[prod] == grp) continue;
      stamp[prod] = grp;
      q.pred_ops.push_back(prod);
    }
    std::sort(q.pred_ops.begin() + q.pred_begin[grp], q.pred_ops.end());
  }
  q.pred_begin[n] = static_cast<uint32_t>(q.pred_ops.size());
  q.succ_begin.assign(n + 1, 0);
  for (uint32_t v : q.pred_ops) ++q.succ_begin[v + 1];
  std::partial_sum(q.succ_begin.begin(), q.succ_begin.end(),
                   q.succ_begin.begin());
  q.succ_ops.resize(q.pred_ops.size());
  std::vector<uint32_t> fill(q.succ_begin.begin(), q.succ_begin.end() - 1);
  for (uint32_t grp = 0; grp < n; ++grp) {
    for (uint32_t v : q.predecessors(grp)) q.succ_ops[fill[v]++] = grp;
  }
}

// Per group: times summed, the largest workspace, extra bytes added, name
// and type (the op's own when the group has one op).
void SumGroupCosts(const Problem& p, const Grouping& g, Problem& q) {
  const uint32_t n = g.num_groups;
  const int np = p.num_profiles;
  q.forward_s.assign(static_cast<size_t>(n) * np, 0.0);
  if (p.training) q.backward_s.assign(static_cast<size_t>(n) * np, 0.0);
  q.workspace_bytes.assign(n, 0);
  std::vector<uint32_t> size(n, 0), member(n, kNone);
  for (OpId op = 0; op < p.num_ops(); ++op) {
    const uint32_t grp = g.group_of[op];
    const size_t from = static_cast<size_t>(op) * np;
    const size_t to = static_cast<size_t>(grp) * np;
    for (int k = 0; k < np; ++k) {
      q.forward_s[to + k] += p.forward_s[from + k];
      if (p.training) q.backward_s[to + k] += p.backward_s[from + k];
    }
    q.workspace_bytes[grp] =
        std::max(q.workspace_bytes[grp], p.workspace_bytes[op]);
    q.extra_bytes[grp] += p.extra_bytes[op];
    ++size[grp];
    member[grp] = op;
  }
  q.names.resize(n);
  q.op_types.resize(n);
  for (uint32_t grp = 0; grp < n; ++grp) {
    q.names[grp] = "group" + std::to_string(grp);
    q.op_types[grp] = size[grp] == 1 ? p.op_types[member[grp]] : "Group";
  }
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
  const GroupGraph gg = BuildGroupGraph(p, start, m);
  const std::vector<uint32_t> order = GroupTopoOrder(p, start, m, gg);
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

// Builds the contracted Problem's arrays directly (ProblemBuilder's
// per-op vectors cost seconds on 10^6-op graphs).
Result<Problem> Contract(const Problem& p, const Grouping& g) {
  const uint32_t n = g.num_groups;
  if (g.group_of.size() != p.num_ops()) {
    return Internal("a grouping of " + std::to_string(g.group_of.size()) +
                    " ops for a problem of " + std::to_string(p.num_ops()));
  }
  Problem q;
  q.training = p.training;
  q.num_profiles = p.num_profiles;
  q.device_profile = p.device_profile;
  q.weight_state_factor = p.weight_state_factor;
  ContractTensors(p, g, q);
  TransposeTensorUses(q, n);
  FillGroupEdges(q, n);
  SumGroupCosts(p, g, q);

  // Groups are numbered along the model's order, so the smallest-first
  // order follows it too.
  if (!FillTopologicalOrder(q)) {
    return Internal("contracting " + std::to_string(p.num_ops()) +
                    " ops into " + std::to_string(n) + " groups made a cycle");
  }
  return q;
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
