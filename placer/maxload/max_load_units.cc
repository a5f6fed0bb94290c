// BuildMaxLoadUnits (placer/maxload/max_load_units.h): color classes, free
// nodes joined to their neighbour, the order DAG of a contiguous split.
#include "placer/maxload/max_load_units.h"

#include <algorithm>
#include <limits>
#include <set>
#include <unordered_map>
#include <utility>

#include "placer/maxload/max_load_internal.h"

namespace tessera::placer {
namespace {

using max_load_internal::UnionFind;

// Strongly connected components of a graph on `n` vertices (iterative
// Tarjan): the component of each vertex.
std::vector<int> Components(int n, const std::vector<std::vector<int>>& succ,
                            int* count) {
  std::vector<int> index(n, -1), low(n, 0), comp(n, -1), stack;
  std::vector<char> on_stack(n, 0);
  std::vector<std::pair<int, size_t>> call;
  int next = 0;
  *count = 0;
  for (int root = 0; root < n; ++root) {
    if (index[root] != -1) continue;
    call.emplace_back(root, 0);
    index[root] = low[root] = next++;
    stack.push_back(root);
    on_stack[root] = 1;
    while (!call.empty()) {
      auto& [v, i] = call.back();
      if (i < succ[v].size()) {
        const int w = succ[v][i++];
        if (index[w] == -1) {
          index[w] = low[w] = next++;
          stack.push_back(w);
          on_stack[w] = 1;
          call.emplace_back(w, 0);
        } else if (on_stack[w]) {
          low[v] = std::min(low[v], index[w]);
        }
        continue;
      }
      const int done = v;
      call.pop_back();
      if (!call.empty()) {
        low[call.back().first] = std::min(low[call.back().first], low[done]);
      }
      if (low[done] == index[done]) {
        int w = -1;
        do {
          w = stack.back();
          stack.pop_back();
          on_stack[w] = 0;
          comp[w] = *count;
        } while (w != done);
        ++*count;
      }
    }
  }
  return comp;
}

bool FreeNode(const MaxLoadNode& node) {
  return std::all_of(node.time.begin(), node.time.end(),
                     [](double t) { return t == 0; });
}

std::vector<int> Distinct(std::vector<int> v) {
  std::sort(v.begin(), v.end());
  v.erase(std::unique(v.begin(), v.end()), v.end());
  return v;
}

// Joins each color class into one group.
void JoinColorClasses(const MaxLoadProblem& p, UnionFind& uf) {
  const int n = static_cast<int>(p.nodes.size());
  std::unordered_map<int64_t, int> first_of_color;
  for (int v = 0; v < n; ++v) {
    const int64_t c = p.nodes[v].color;
    if (c == -1) continue;
    const auto [it, fresh] = first_of_color.emplace(c, v);
    if (!fresh) uf.Join(it->second, v);
  }
}

// Whether some present kind's memory limit is below the whole graph's
// size: then a free node of nonzero size may not join its neighbour.
bool MemoryBinds(const MaxLoadProblem& p) {
  int64_t total_size = 0;
  for (const MaxLoadNode& node : p.nodes) total_size += node.size;
  bool memory_binds = false;
  for (const MaxLoadKind& k : p.kinds) {
    if (k.count > 0 && k.memory >= 0 && total_size > k.memory) {
      memory_binds = true;
    }
  }
  return memory_binds;
}

// Joins each free color group to its one neighbour (the rules in
// max_load_units.h). Returns, per node, whether its edges order nothing
// (a group that neither sends nor receives); counts the joins in `out`.
std::vector<char> JoinFreeNodes(const MaxLoadProblem& p, UnionFind& uf,
                                MaxLoadUnits& out) {
  const int n = static_cast<int>(p.nodes.size());
  const std::vector<double> out_cost = p.OutCosts();
  const bool memory_binds = MemoryBinds(p);
  // Per color group (root): whether free (no time anywhere: runs on every
  // kind), its size, the groups it receives from and sends to, and
  // whether a member with a successor outside sends anything.
  struct Group {
    bool free = true;
    int64_t size = 0;
    std::vector<int> from, to;
    bool sends = false;
  };
  std::unordered_map<int, Group> info;
  for (int v = 0; v < n; ++v) {
    Group& g = info[uf.Find(v)];
    g.free = g.free && FreeNode(p.nodes[v]);
    g.size += p.nodes[v].size;
  }
  for (const MaxLoadEdge& e : p.edges) {
    const int a = uf.Find(e.from), b = uf.Find(e.to);
    if (a == b) continue;
    info[a].to.push_back(b);
    info[b].from.push_back(a);
    if (out_cost[e.from] > 0) info[a].sends = true;
  }
  std::vector<char> unordered(n, 0);
  std::vector<int> roots;
  for (int v = 0; v < n; ++v) {
    if (uf.Find(v) == v) roots.push_back(v);
  }
  for (const int r : roots) {
    Group& g = info[r];
    if (!g.free || (g.size > 0 && memory_binds)) continue;
    const std::vector<int> in = Distinct(g.from), out_groups = Distinct(g.to);
    int anchor = -1;
    bool order_nothing = false;
    if (!g.sends && in.size() == 1) {
      anchor = in[0];
    } else if (in.empty() && out_groups.size() == 1) {
      anchor = out_groups[0];
    } else if (in.empty() && !g.sends && !out_groups.empty()) {
      // Sends nothing and receives nothing: where it sits changes no
      // load, so its edges need not order anything either.
      anchor = out_groups[0];
      order_nothing = true;
    }
    if (anchor == -1) continue;
    if (order_nothing) {
      for (int v = 0; v < n; ++v) {
        if (uf.Find(v) == uf.Find(r)) unordered[v] = 1;
      }
    }
    if (uf.Join(r, anchor)) ++out.free_nodes_joined;
  }
  return unordered;
}

// Which way the backward pass runs: compare backward edges between groups
// that hold forward nodes with the forward edges' pairs; true when they
// mirror them more often than they copy them.
bool BackwardMirrored(const MaxLoadProblem& p, const std::vector<int>& group) {
  std::set<std::pair<int, int>> forward_pairs;
  for (const MaxLoadEdge& e : p.edges) {
    if (!p.nodes[e.from].backward && !p.nodes[e.to].backward) {
      forward_pairs.emplace(group[e.from], group[e.to]);
    }
  }
  int same = 0, mirrored = 0;
  for (const MaxLoadEdge& e : p.edges) {
    if (!p.nodes[e.from].backward || !p.nodes[e.to].backward) continue;
    const int a = group[e.from], b = group[e.to];
    if (a == b) continue;
    if (forward_pairs.count({a, b})) ++same;
    if (forward_pairs.count({b, a})) ++mirrored;
  }
  return mirrored > same;
}

// The order between the `groups` groups (`group`: per node), with the
// groups on a cycle of it merged: sets `out`'s unit_of, preds and
// backward_mirrored, and returns the number of units.
int OrderUnits(const MaxLoadProblem& p, const std::vector<int>& group,
               int groups, const std::vector<char>& unordered,
               MaxLoadUnits& out) {
  const int n = static_cast<int>(p.nodes.size());
  out.backward_mirrored = BackwardMirrored(p, group);
  std::vector<std::vector<int>> succ(groups);
  for (const MaxLoadEdge& e : p.edges) {
    const bool fu = !p.nodes[e.from].backward, fv = !p.nodes[e.to].backward;
    int a = group[e.from], b = group[e.to];
    if (fu != fv || a == b) continue;  // forward to backward: no order
    if (unordered[e.from]) continue;
    if (!fu && out.backward_mirrored) std::swap(a, b);
    succ[a].push_back(b);
  }
  int count = 0;
  const std::vector<int> comp = Components(groups, succ, &count);
  for (int v = 0; v < n; ++v) out.unit_of[v] = comp[group[v]];
  out.preds.assign(count, {});
  for (int a = 0; a < groups; ++a) {
    for (const int b : succ[a]) {
      if (comp[a] != comp[b]) out.preds[comp[b]].push_back(comp[a]);
    }
  }
  for (auto& list : out.preds) list = Distinct(std::move(list));
  return count;
}

// A topological order of the units (Kahn, smallest first for
// determinism).
std::vector<int> TopologicalOrder(const std::vector<std::vector<int>>& preds) {
  const int units = static_cast<int>(preds.size());
  std::vector<int> indegree(units, 0);
  std::vector<std::vector<int>> after(units);
  for (int u = 0; u < units; ++u) {
    for (const int w : preds[u]) {
      ++indegree[u];
      after[w].push_back(u);
    }
  }
  std::set<int> ready;
  for (int u = 0; u < units; ++u) {
    if (indegree[u] == 0) ready.insert(u);
  }
  std::vector<int> order;
  while (!ready.empty()) {
    const int u = *ready.begin();
    ready.erase(ready.begin());
    order.push_back(u);
    for (const int w : after[u]) {
      if (--indegree[w] == 0) ready.insert(w);
    }
  }
  return order;
}

}  // namespace

MaxLoadUnits BuildMaxLoadUnits(const MaxLoadProblem& p, bool order) {
  const int n = static_cast<int>(p.nodes.size());
  UnionFind uf(n);
  MaxLoadUnits out;
  JoinColorClasses(p, uf);
  // Free nodes, when memory cannot bind.
  const std::vector<char> unordered = JoinFreeNodes(p, uf, out);

  // Units so far: the union-find's roots.
  std::vector<int> group(n, -1);
  int groups = 0;
  for (int v = 0; v < n; ++v) {
    const int r = uf.Find(v);
    if (group[r] == -1) group[r] = groups++;
    group[v] = group[r];
  }
  out.unit_of = group;
  if (order) {
    groups = OrderUnits(p, group, groups, unordered, out);
  } else {
    out.preds.assign(groups, {});
  }
  out.members.assign(groups, {});
  for (int v = 0; v < n; ++v) out.members[out.unit_of[v]].push_back(v);
  out.topological = TopologicalOrder(out.preds);
  return out;
}

std::vector<double> UnitTimes(const MaxLoadProblem& p,
                              const MaxLoadUnits& units) {
  const size_t kinds = p.kinds.size();
  std::vector<double> time(units.members.size() * kinds, 0);
  for (size_t v = 0; v < p.nodes.size(); ++v) {
    const auto u = static_cast<size_t>(units.unit_of[v]);
    for (size_t k = 0; k < kinds; ++k) {
      const double t = p.nodes[v].time[k];
      double& at = time[u * kinds + k];
      at = t < 0 ? std::numeric_limits<double>::infinity() : at + t;
    }
  }
  return time;
}

}  // namespace tessera::placer
