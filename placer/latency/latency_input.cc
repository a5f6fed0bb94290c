// The single-sample latency model of Tarnawski et al. (latency_input.h):
// the problem read off a parsed input, and a split's latency.
//
// EvaluateLatency first cuts each accelerator's nodes into calls (convex
// pieces whose quotient graph is a DAG), then runs the calls and the CPU
// nodes as a list schedule: an event queue ordered by finish time, a CPU
// node starting when its last predecessor finishes, a call when its last
// outside predecessor finishes and its accelerator is free (the paper's pieces
// of one accelerator depend on each other in a chain, so this only orders calls
// cut further for a cycle). Cost O(k (n + m) + (n + m) log n) for a contiguous
// split; each extra cut for a cycle between calls adds O(n + m).

#include "placer/latency/latency_input.h"

#include <algorithm>
#include <functional>
#include <limits>
#include <map>
#include <queue>
#include <tuple>
#include <unordered_map>
#include <utility>

#include "placer/latency/latency_internal.h"

namespace tessera::placer {
namespace latency_internal {

Dag MakeDag(const LatencyProblem& p) {
  const size_t n = p.nodes.size();
  Dag g;
  g.succ.resize(n);
  g.pred.resize(n);
  for (const LatencyEdge& e : p.edges) {
    g.succ[e.from].push_back(e.to);
    g.pred[e.to].push_back(e.from);
  }
  std::vector<int> indegree(n, 0);
  for (size_t v = 0; v < n; ++v) {
    for (auto* list : {&g.succ[v], &g.pred[v]}) {
      std::sort(list->begin(), list->end());
      list->erase(std::unique(list->begin(), list->end()), list->end());
    }
    indegree[v] = static_cast<int>(g.pred[v].size());
  }
  std::priority_queue<int, std::vector<int>, std::greater<>> ready;
  for (size_t v = 0; v < n; ++v) {
    if (indegree[v] == 0) ready.push(static_cast<int>(v));
  }
  while (!ready.empty()) {
    const int v = ready.top();
    ready.pop();
    g.topo.push_back(v);
    for (const int w : g.succ[v]) {
      if (--indegree[w] == 0) ready.push(w);
    }
  }
  g.acyclic = g.topo.size() == n;
  return g;
}

std::vector<int> StrongComponents(const std::vector<std::vector<int>>& adj,
                                  int* count) {
  const int n = static_cast<int>(adj.size());
  std::vector<int> index(n, -1), low(n, 0), comp(n, -1), stack;
  std::vector<std::pair<int, size_t>> calls;  // vertex, next edge to try
  int next = 0;
  *count = 0;
  auto visit = [&](int v) {
    index[v] = low[v] = next++;
    stack.push_back(v);
    calls.emplace_back(v, 0);
  };
  for (int s = 0; s < n; ++s) {
    if (index[s] != -1) continue;
    visit(s);
    while (!calls.empty()) {
      const int v = calls.back().first;
      if (calls.back().second < adj[v].size()) {
        const int w = adj[v][calls.back().second++];
        if (index[w] == -1) {
          visit(w);
        } else if (comp[w] == -1) {  // on the stack
          low[v] = std::min(low[v], index[w]);
        }
        continue;
      }
      if (low[v] == index[v]) {
        int w = -1;
        do {
          w = stack.back();
          stack.pop_back();
          comp[w] = *count;
        } while (w != v);
        ++*count;
      }
      calls.pop_back();
      if (!calls.empty()) {
        const int parent = calls.back().first;
        low[parent] = std::min(low[parent], low[v]);
      }
    }
  }
  return comp;
}

}  // namespace latency_internal

namespace {

using latency_internal::Dag;

std::string DeviceName(int d) {
  return d == kOnCpu ? "a CPU" : "acc" + std::to_string(d);
}

// The first constraint `x` breaks (unsupported node on an accelerator,
// memory, colour class), or "".
std::string FirstViolation(const LatencyProblem& p, const LatencySplit& x) {
  const size_t n = p.nodes.size();
  for (size_t v = 0; v < n; ++v) {
    if (x.device[v] != kOnCpu && !p.nodes[v].on_accelerator) {
      return "node " + std::to_string(p.nodes[v].id) +
             " is not supported on accelerators but is on " +
             DeviceName(x.device[v]);
    }
  }
  std::vector<int64_t> memory(static_cast<size_t>(p.accelerators), 0);
  for (size_t v = 0; v < n; ++v) {
    if (x.device[v] != kOnCpu) memory[x.device[v]] += p.nodes[v].size;
  }
  for (int a = 0; a < p.accelerators; ++a) {
    if (memory[a] > p.accelerator_memory) {
      return DeviceName(a) + " holds " + std::to_string(memory[a]) +
             " bytes, over its " + std::to_string(p.accelerator_memory);
    }
  }
  std::unordered_map<int64_t, size_t> first_of_color;
  for (size_t v = 0; v < n; ++v) {
    if (p.nodes[v].color == -1) continue;
    const auto [it, fresh] = first_of_color.emplace(p.nodes[v].color, v);
    if (fresh || x.device[it->second] == x.device[v]) continue;
    const size_t w = it->second;
    return "nodes " + std::to_string(p.nodes[w].id) + " (on " +
           DeviceName(x.device[w]) + ") and " + std::to_string(p.nodes[v].id) +
           " (on " + DeviceName(x.device[v]) + ") share colour class " +
           std::to_string(p.nodes[v].color) + " but not a device";
  }
  return "";
}

// The units a split runs as: per node its unit; a unit is one call of an
// accelerator or one CPU node.
struct Units {
  std::vector<int> of_node;
  std::vector<int> accelerator;  // per unit; kOnCpu for a CPU node
};

// The paper's cut: on accelerator a, a node's piece is 1 + the most times
// a path into it leaves a and comes back. Each piece is convex.
Units PaperPieces(const LatencyProblem& p, const Dag& g,
                  const LatencySplit& x) {
  const size_t n = p.nodes.size();
  Units u;
  u.of_node.assign(n, -1);
  std::map<std::pair<int, int>, int> unit_of_piece;
  std::vector<int> piece(n);
  for (int a = 0; a < p.accelerators; ++a) {
    for (const int v : g.topo) {
      const bool on = x.device[v] == a;
      int best = on ? 1 : 0;
      for (const int w : g.pred[v]) {
        best = std::max(best, piece[w] + (on && x.device[w] != a ? 1 : 0));
      }
      piece[v] = best;
      if (!on) continue;
      const auto [it, fresh] = unit_of_piece.emplace(
          std::make_pair(a, best), static_cast<int>(u.accelerator.size()));
      if (fresh) u.accelerator.push_back(a);
      u.of_node[v] = it->second;
    }
  }
  for (const int v : g.topo) {
    if (x.device[v] != kOnCpu) continue;
    u.of_node[v] = static_cast<int>(u.accelerator.size());
    u.accelerator.push_back(kOnCpu);
  }
  return u;
}

// Cuts calls until no calls wait on each other in a cycle. With λ(v) the
// most unit changes along a path into v, every cycle of units holds a unit
// whose nodes have more than one λ (λ would grow around the cycle
// otherwise); the lowest such unit of each cycle's component is cut by λ,
// which keeps its pieces convex. At most n cuts. False if stuck (a bug).
bool BreakCycles(const Dag& g, Units& u) {
  const size_t n = g.topo.size();
  std::vector<int> lambda(n);
  for (;;) {
    const size_t units = u.accelerator.size();
    std::vector<std::vector<int>> adj(units);
    for (size_t v = 0; v < n; ++v) {
      for (const int w : g.succ[v]) {
        if (u.of_node[v] != u.of_node[w]) {
          adj[u.of_node[v]].push_back(u.of_node[w]);
        }
      }
    }
    int count = 0;
    const std::vector<int> comp =
        latency_internal::StrongComponents(adj, &count);
    if (count == static_cast<int>(units)) return true;
    std::vector<int> comp_size(count, 0);
    for (const int c : comp) ++comp_size[c];
    for (const int v : g.topo) {
      lambda[v] = 0;
      for (const int w : g.pred[v]) {
        lambda[v] = std::max(
            lambda[v], lambda[w] + (u.of_node[w] != u.of_node[v] ? 1 : 0));
      }
    }
    constexpr int kNone = std::numeric_limits<int>::max();
    std::vector<int> lo(units, kNone), hi(units, -1);
    for (size_t v = 0; v < n; ++v) {
      lo[u.of_node[v]] = std::min(lo[u.of_node[v]], lambda[v]);
      hi[u.of_node[v]] = std::max(hi[u.of_node[v]], lambda[v]);
    }
    std::vector<int> cut(count, -1);  // per component: the unit to cut
    for (size_t t = 0; t < units; ++t) {
      const int c = comp[t];
      if (comp_size[c] > 1 && lo[t] < hi[t] && cut[c] == -1) {
        cut[c] = static_cast<int>(t);
      }
    }
    std::map<std::pair<int, int>, int> piece;  // (unit, λ) -> new unit
    bool progress = false;
    for (size_t v = 0; v < n; ++v) {
      const int t = u.of_node[v];
      if (cut[comp[t]] != t || lambda[v] == lo[t]) continue;
      const auto [it, fresh] = piece.emplace(
          std::make_pair(t, lambda[v]), static_cast<int>(u.accelerator.size()));
      if (fresh) u.accelerator.push_back(u.accelerator[t]);
      u.of_node[v] = it->second;
      progress = true;
    }
    if (!progress) return false;
  }
}

struct UnitTimes {
  std::vector<double> duration;
  std::vector<int> first;  // the unit's earliest node in topological order
  std::vector<std::vector<int>> succ;
  std::vector<int> waiting;  // distinct predecessor units
};

// Durations: a CPU node's CPU time; a call's inbound costs (each outside
// node with an edge into it, once), compute, outbound costs (each of its
// nodes with an edge leaving it, once).
UnitTimes Durations(const LatencyProblem& p, const Dag& g, const Units& u) {
  const size_t units = u.accelerator.size();
  UnitTimes t;
  t.duration.assign(units, 0.0);
  t.first.assign(units, -1);
  t.succ.resize(units);
  t.waiting.assign(units, 0);
  for (size_t i = 0; i < g.topo.size(); ++i) {
    const int v = g.topo[i];
    const int a = u.of_node[v];
    if (t.first[a] == -1) t.first[a] = static_cast<int>(i);
    const LatencyNode& node = p.nodes[v];
    if (u.accelerator[a] == kOnCpu) {
      t.duration[a] += node.cpu_time;
      continue;
    }
    t.duration[a] += node.accelerator_time;
    bool leaves = false;
    for (const int w : g.succ[v]) leaves |= u.of_node[w] != a;
    if (leaves) t.duration[a] += p.out_cost[v];
  }
  // Inbound: distinct (outside node, call) pairs.
  std::vector<std::pair<int, int>> inbound;
  for (size_t v = 0; v < g.succ.size(); ++v) {
    for (const int w : g.succ[v]) {
      const int from = u.of_node[v], to = u.of_node[w];
      if (from == to) continue;
      t.succ[from].push_back(to);
      if (u.accelerator[to] != kOnCpu) {
        inbound.emplace_back(static_cast<int>(v), to);
      }
    }
  }
  std::sort(inbound.begin(), inbound.end());
  inbound.erase(std::unique(inbound.begin(), inbound.end()), inbound.end());
  for (const auto& [v, to] : inbound) t.duration[to] += p.out_cost[v];
  for (auto& s : t.succ) {
    std::sort(s.begin(), s.end());
    s.erase(std::unique(s.begin(), s.end()), s.end());
    for (const int to : s) ++t.waiting[to];
  }
  return t;
}

// The list schedule of the units; per unit its finish. False if some unit
// never became ready (a cycle between units: a bug).
bool Schedule(const Units& u, UnitTimes& t, int accelerators,
              std::vector<double>* finish) {
  const size_t units = u.accelerator.size();
  finish->assign(units, 0.0);
  using Event = std::tuple<double, int64_t, int>;  // time, sequence, unit
  std::priority_queue<Event, std::vector<Event>, std::greater<>> events;
  int64_t sequence = 0;
  // Per accelerator: ready calls by (ready time, first node), and whether
  // it runs one.
  using Ready = std::tuple<double, int, int>;
  std::vector<std::priority_queue<Ready, std::vector<Ready>, std::greater<>>>
      queue(static_cast<size_t>(accelerators));
  std::vector<bool> busy(static_cast<size_t>(accelerators), false);
  auto start_next = [&](int a, double now) {
    if (busy[a] || queue[a].empty()) return;
    const int unit = std::get<2>(queue[a].top());
    queue[a].pop();
    busy[a] = true;
    events.emplace(now + t.duration[unit], sequence++, unit);
  };
  auto release = [&](int unit, double now) {
    const int a = u.accelerator[unit];
    if (a == kOnCpu) {
      events.emplace(now + t.duration[unit], sequence++, unit);
      return;
    }
    queue[a].emplace(now, t.first[unit], unit);
    start_next(a, now);
  };
  for (size_t unit = 0; unit < units; ++unit) {
    if (t.waiting[unit] == 0) release(static_cast<int>(unit), 0.0);
  }
  size_t done = 0;
  while (!events.empty()) {
    const auto [now, seq, unit] = events.top();
    events.pop();
    (*finish)[unit] = now;
    ++done;
    const int a = u.accelerator[unit];
    if (a != kOnCpu) busy[a] = false;
    for (const int s : t.succ[unit]) {
      if (--t.waiting[s] == 0) release(s, now);
    }
    if (a != kOnCpu) start_next(a, now);
  }
  return done == units;
}

}  // namespace

LatencyProblem LatencyProblemFrom(const MaxLoadProblem& p) {
  LatencyProblem q;
  q.source = p.source;
  // The published format's two kinds: accelerators, then CPUs.
  q.accelerators = p.kinds.empty() ? 0 : p.kinds[0].count;
  q.accelerator_memory = p.kinds.empty() ? 0 : p.kinds[0].memory;
  q.nodes.reserve(p.nodes.size());
  for (const MaxLoadNode& m : p.nodes) {
    LatencyNode node;
    node.id = m.id;
    node.on_accelerator = m.RunsOn(0);
    node.accelerator_time = node.on_accelerator ? m.time[0] : 0;
    node.cpu_time = m.time.size() > 1 ? m.time[1] : 0;
    node.size = m.size;
    node.color = m.color;
    q.nodes.push_back(node);
  }
  q.out_cost = p.OutCosts();
  q.edges.reserve(p.edges.size());
  for (const MaxLoadEdge& e : p.edges) {
    q.edges.push_back(LatencyEdge{e.from, e.to});
  }
  return q;
}

LatencySplit SplitFromDeviceIndices(const LatencyProblem& p,
                                    const std::vector<int>& device) {
  LatencySplit x;
  x.device.reserve(device.size());
  for (const int d : device) {
    x.device.push_back(d >= 0 && d < p.accelerators ? d : kOnCpu);
  }
  return x;
}

LatencyEvaluation EvaluateLatency(const LatencyProblem& p,
                                  const LatencySplit& x) {
  LatencyEvaluation ev;
  const size_t n = p.nodes.size();
  if (x.device.size() != n) {
    ev.violation = "split has " + std::to_string(x.device.size()) +
                   " devices for " + std::to_string(n) + " nodes";
    return ev;
  }
  for (size_t v = 0; v < n; ++v) {
    const int d = x.device[v];
    if (d != kOnCpu && (d < 0 || d >= p.accelerators)) {
      ev.violation = "node " + std::to_string(p.nodes[v].id) + " on device " +
                     std::to_string(d) + ": neither a CPU (" +
                     std::to_string(kOnCpu) + ") nor an accelerator in [0, " +
                     std::to_string(p.accelerators) + ")";
      return ev;
    }
  }
  const Dag g = latency_internal::MakeDag(p);
  if (!g.acyclic) {
    ev.violation = "the graph has a cycle";
    return ev;
  }
  Units u = PaperPieces(p, g, x);
  if (!BreakCycles(g, u)) {
    ev.violation = "internal: could not order the calls";
    return ev;
  }
  UnitTimes times = Durations(p, g, u);
  std::vector<double> finish;
  if (!Schedule(u, times, p.accelerators, &finish)) {
    ev.violation = "internal: the calls wait on each other";
    return ev;
  }
  ev.finish.resize(n);
  for (size_t v = 0; v < n; ++v) {
    ev.finish[v] = finish[u.of_node[v]];
    ev.latency = std::max(ev.latency, ev.finish[v]);
  }
  std::vector<int> calls(static_cast<size_t>(p.accelerators), 0);
  for (const int a : u.accelerator) {
    if (a != kOnCpu) ++calls[a];
  }
  for (const int c : calls) {
    ev.calls += c;
    if (c > 1) ++ev.split_accelerators;
  }
  ev.violation = FirstViolation(p, x);
  return ev;
}

double LatencyLowerBound(const LatencyProblem& p) {
  const Dag g = latency_internal::MakeDag(p);
  std::vector<double> finish(p.nodes.size(), 0.0);
  double bound = 0;
  for (const int v : g.topo) {
    const LatencyNode& node = p.nodes[v];
    double start = 0;
    for (const int w : g.pred[v]) start = std::max(start, finish[w]);
    const double fastest = node.on_accelerator && p.accelerators > 0
                               ? std::min(node.accelerator_time, node.cpu_time)
                               : node.cpu_time;
    finish[v] = start + fastest;
    bound = std::max(bound, finish[v]);
  }
  return bound;
}

}  // namespace tessera::placer
