// Placing the latency inputs (latency_input.h): the blocks that must share
// a device, the paper's greedy baseline, and the conversion to tessera's
// Problem and Cluster that runs m-TOPO, m-ETF, m-SCT and the ILP on them.

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "placer/latency/latency_input.h"
#include "placer/latency/latency_internal.h"

namespace tessera::placer {
namespace {

using latency_internal::Dag;

Link MakeLink(double bandwidth, LinkKind kind) {
  return Link{bandwidth, 0.0, kind};
}

ClusterDevice MakeDevice(const std::string& id, const std::string& kind,
                         int64_t memory) {
  ClusterDevice d;
  d.id = id;
  d.node = "host";
  d.spec.name = kind;
  d.spec.display_name = kind;
  d.spec.kind =
      kind == "cpu" ? estimator::DeviceKind::kCpu : estimator::DeviceKind::kGpu;
  d.spec.memory_bytes = memory;
  d.memory_total = memory;
  d.memory_usable = memory;
  d.memory_given = true;
  return d;
}

// k accelerators, then `cpus` CPUs of `cpu_memory` bytes each; a transfer
// of `bytes_per_unit` bytes takes one time unit between an accelerator and
// a CPU, two between accelerators, none between CPUs.
Cluster MakeCluster(const LatencyProblem& p, int cpus, int64_t cpu_memory,
                    double bytes_per_unit) {
  Cluster c;
  c.source = p.source;
  for (int a = 0; a < p.accelerators; ++a) {
    c.devices.push_back(MakeDevice("acc" + std::to_string(a), "accelerator",
                                   p.accelerator_memory));
  }
  for (int i = 0; i < cpus; ++i) {
    c.devices.push_back(
        MakeDevice("cpu" + std::to_string(i), "cpu", cpu_memory));
  }
  const size_t n = c.devices.size();
  const double inf = std::numeric_limits<double>::infinity();
  c.links.resize(n * n);
  for (size_t from = 0; from < n; ++from) {
    for (size_t to = 0; to < n; ++to) {
      const bool acc_from = static_cast<int>(from) < p.accelerators;
      const bool acc_to = static_cast<int>(to) < p.accelerators;
      Link& l = c.links[from * n + to];
      if (from == to) {
        l = MakeLink(inf, LinkKind::kLocal);
      } else if (acc_from && acc_to) {
        l = MakeLink(bytes_per_unit / 2, LinkKind::kCustom);
      } else if (acc_from || acc_to) {
        l = MakeLink(bytes_per_unit, LinkKind::kCustom);
      } else {
        l = MakeLink(inf, LinkKind::kCustom);
      }
    }
  }
  return c;
}

}  // namespace

LatencyBlocks ColocatedBlocks(const LatencyProblem& p) {
  const size_t n = p.nodes.size();
  // Colour classes first.
  std::vector<int> group(n);
  int groups = 0;
  std::unordered_map<int64_t, int> group_of_color;
  for (size_t v = 0; v < n; ++v) {
    const int64_t color = p.nodes[v].color;
    if (color == -1) {
      group[v] = groups++;
      continue;
    }
    const auto [it, fresh] = group_of_color.emplace(color, groups);
    if (fresh) ++groups;
    group[v] = it->second;
  }
  // Merged while two reach each other: the strong components of the
  // classes' quotient graph.
  std::vector<std::vector<int>> adj(static_cast<size_t>(groups));
  for (const LatencyEdge& e : p.edges) {
    if (group[e.from] != group[e.to]) adj[group[e.from]].push_back(group[e.to]);
  }
  int count = 0;
  const std::vector<int> comp = latency_internal::StrongComponents(adj, &count);
  // The blocks' DAG, its vertices known by their smallest node.
  std::vector<int> smallest(static_cast<size_t>(count), -1);
  for (size_t v = 0; v < n; ++v) {
    const int b = comp[group[v]];
    if (smallest[b] == -1) smallest[b] = static_cast<int>(v);
  }
  auto by_smallest = [&](int a, int b) { return smallest[a] < smallest[b]; };
  std::vector<std::vector<int>> succ(static_cast<size_t>(count));
  std::vector<int> indegree(static_cast<size_t>(count), 0);
  for (int g = 0; g < groups; ++g) {
    for (const int h : adj[g]) {
      if (comp[g] != comp[h]) succ[comp[g]].push_back(comp[h]);
    }
  }
  for (auto& s : succ) {
    std::sort(s.begin(), s.end(), by_smallest);
    s.erase(std::unique(s.begin(), s.end()), s.end());
    for (const int b : s) ++indegree[b];
  }
  // Depth-first topological order: a stack of ready blocks, those readied
  // together pushed largest first.
  std::vector<int> stack;
  for (int b = 0; b < count; ++b) {
    if (indegree[b] == 0) stack.push_back(b);
  }
  std::sort(stack.rbegin(), stack.rend(), by_smallest);
  std::vector<int> number(static_cast<size_t>(count), -1);
  int next = 0;
  while (!stack.empty()) {
    const int b = stack.back();
    stack.pop_back();
    number[b] = next++;
    for (auto it = succ[b].rbegin(); it != succ[b].rend(); ++it) {
      if (--indegree[*it] == 0) stack.push_back(*it);
    }
  }
  LatencyBlocks blocks;
  blocks.count = count;
  blocks.of_node.resize(n);
  for (size_t v = 0; v < n; ++v) blocks.of_node[v] = number[comp[group[v]]];
  return blocks;
}

LatencySplit GreedyLatencySplit(const LatencyProblem& p) {
  const LatencyBlocks blocks = ColocatedBlocks(p);
  std::vector<int64_t> size(static_cast<size_t>(blocks.count), 0);
  std::vector<bool> cpu_only(static_cast<size_t>(blocks.count), false);
  for (size_t v = 0; v < p.nodes.size(); ++v) {
    size[blocks.of_node[v]] += p.nodes[v].size;
    if (!p.nodes[v].on_accelerator) cpu_only[blocks.of_node[v]] = true;
  }
  std::vector<int> device(static_cast<size_t>(blocks.count), kOnCpu);
  int opened = 0;     // accelerators used so far
  int64_t fill = 0;   // bytes on the one being filled
  bool open = false;  // one is being filled
  for (int b = 0; b < blocks.count; ++b) {
    const bool fits = !cpu_only[b] && size[b] <= p.accelerator_memory;
    if (open && fits && fill + size[b] <= p.accelerator_memory) {
      device[b] = opened - 1;
      fill += size[b];
      continue;
    }
    open = false;
    if (!fits || opened == p.accelerators) continue;  // a CPU
    device[b] = opened++;
    fill = size[b];
    open = true;
  }
  LatencySplit x;
  x.device.resize(p.nodes.size());
  for (size_t v = 0; v < p.nodes.size(); ++v) {
    x.device[v] = device[blocks.of_node[v]];
  }
  return x;
}

Result<LatencyPlacementInstance> MakeLatencyPlacementInstance(
    const LatencyProblem& p, const LatencyPlacementOptions& o) {
  if (o.cpu_devices < 0 || p.accelerators + o.cpu_devices < 1) {
    return BadInput(p.source + ": " + std::to_string(p.accelerators) +
                    " accelerators and " + std::to_string(o.cpu_devices) +
                    " CPU devices: at least one device needed");
  }
  if (!(o.bytes_per_time_unit > 0) || !std::isfinite(o.bytes_per_time_unit)) {
    return BadInput("bytes_per_time_unit must be a positive number");
  }
  const Dag g = latency_internal::MakeDag(p);
  if (!g.acyclic) return BadInput(p.source + ": the graph has a cycle");
  const LatencyBlocks blocks = ColocatedBlocks(p);
  const size_t n = p.nodes.size();
  LatencyPlacementInstance inst;
  inst.accelerators = p.accelerators;
  std::vector<int> profile(static_cast<size_t>(p.accelerators), 0);
  profile.resize(static_cast<size_t>(p.accelerators + o.cpu_devices), 1);
  ProblemBuilder builder(2, profile, /*training=*/false);

  // A tensor per node whose output leaves its block.
  constexpr uint32_t kNone = std::numeric_limits<uint32_t>::max();
  std::vector<uint32_t> tensor(n, kNone);
  for (size_t v = 0; v < n; ++v) {
    bool leaves = false;
    for (const int w : g.succ[v]) {
      leaves |= blocks.of_node[w] != blocks.of_node[v];
    }
    if (!leaves) continue;
    const auto bytes = static_cast<int64_t>(
        std::llround(p.out_cost[v] * o.bytes_per_time_unit));
    tensor[v] = builder.AddTensor("n" + std::to_string(p.nodes[v].id), bytes,
                                  TensorRole::kActivation);
  }
  std::vector<std::vector<int>> members(static_cast<size_t>(blocks.count));
  for (size_t v = 0; v < n; ++v) {
    members[blocks.of_node[v]].push_back(static_cast<int>(v));
  }
  for (int b = 0; b < blocks.count; ++b) {
    double times[2] = {0.0, 0.0};
    int64_t bytes = 0;
    bool cpu_only = false;
    std::vector<uint32_t> ins, outs;
    for (const int v : members[b]) {
      const LatencyNode& node = p.nodes[v];
      times[0] += node.accelerator_time;
      times[1] += node.cpu_time;
      bytes += node.size;
      cpu_only |= !node.on_accelerator;
      if (tensor[v] != kNone) outs.push_back(tensor[v]);
      for (const int u : g.pred[v]) {
        if (blocks.of_node[u] != b) ins.push_back(tensor[u]);
      }
    }
    std::sort(ins.begin(), ins.end());
    ins.erase(std::unique(ins.begin(), ins.end()), ins.end());
    // A block with a CPU-only node needs more than an accelerator has.
    if (cpu_only) bytes = std::max(bytes, p.accelerator_memory + 1);
    std::string name = "n" + std::to_string(p.nodes[members[b][0]].id);
    if (members[b].size() > 1) {
      name += "+" + std::to_string(members[b].size() - 1);
    }
    builder.AddOp(std::move(name), "block", times, {}, ins, outs,
                  /*workspace_bytes=*/0, /*extra_bytes=*/bytes);
  }
  auto problem = std::move(builder).Build();
  if (!problem) return problem.error();
  inst.problem = std::move(*problem);
  // A CPU holds everything twice over: unlimited for the model, yet of the
  // accelerators' scale (the ILP scales its memory rows to the largest
  // device, so an astronomical CPU would blur the accelerators' rows).
  int64_t everything = 0;
  for (const int64_t b : inst.problem.extra_bytes) everything += b;
  for (const ProblemTensor& t : inst.problem.tensors) everything += t.bytes;
  const int64_t cpu_memory = 2 * std::max(everything, p.accelerator_memory) + 1;
  inst.cluster =
      MakeCluster(p, o.cpu_devices, cpu_memory, o.bytes_per_time_unit);
  inst.op_of_node.assign(blocks.of_node.begin(), blocks.of_node.end());
  return inst;
}

LatencySplit SplitFromPlacement(const LatencyPlacementInstance& instance,
                                const Placement& placement) {
  LatencySplit x;
  x.device.reserve(instance.op_of_node.size());
  for (const uint32_t op : instance.op_of_node) {
    const int d = placement.device[op];
    x.device.push_back(d < instance.accelerators ? d : kOnCpu);
  }
  return x;
}

Result<LatencyRun> PlaceForLatency(const LatencyProblem& p, Algorithm a,
                                   const PlaceOptions& options,
                                   const LatencyPlacementOptions& lo) {
  auto inst = MakeLatencyPlacementInstance(p, lo);
  if (!inst) return inst.error();
  auto plan = Place(inst->problem, inst->cluster, a, options);
  if (!plan) return plan.error();
  LatencyRun run;
  run.split = SplitFromPlacement(*inst, plan->placement);
  run.evaluation = EvaluateLatency(p, run.split);
  run.seconds = plan->placement_s;
  run.simulated_step = plan->sim.step_s;
  run.notes = std::move(plan->notes);
  run.ilp_objective = plan->ilp_objective_s;
  run.ilp_gap = plan->ilp_gap;
  run.ilp_status = plan->ilp_status;
  return run;
}

}  // namespace tessera::placer
