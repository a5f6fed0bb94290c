// PartitionGraph: nodes -> parts by (device, level), and what flows between.
#include <algorithm>
#include <map>
#include <unordered_map>
#include <unordered_set>

#include "split/split.h"

namespace tessera::split {
namespace {

using graph::NodeId;
using graph::OpGraph;
using graph::TensorId;
using graph::TensorKind;

// Every tensor a node reads: its inputs and what its subgraphs capture.
template <typename F>
void ForEachRead(const OpGraph& g, NodeId n, F&& f) {
  const graph::NodeView v = g.node(n);
  for (const TensorId t : v.inputs) {
    if (t != graph::kNoTensor) f(t);
  }
  for (const TensorId t : v.implicit_inputs) f(t);
}

bool IsStandardDomain(std::string_view domain) {
  return domain.empty() || domain == "ai.onnx";
}

// Operators whose output is not a function of their inputs.
bool IsNondeterministic(std::string_view op_type) {
  return op_type.starts_with("Random") || op_type == "Multinomial" ||
         op_type == "Bernoulli" || op_type == "Dropout";
}

// Nodes whose outputs depend on weights alone: Constant nodes and
// deterministic standard operators (no subgraphs) that read only weights
// and such nodes' outputs, like the shape arithmetic of exported models.
std::vector<char> ConstantNodes(const OpGraph& g) {
  std::vector<char> constant(g.num_nodes(), 0);
  for (const NodeId n : g.topological_order()) {
    const graph::NodeView v = g.node(n);
    if (!IsStandardDomain(v.domain)) continue;
    if (v.op_type == "Constant") {
      constant[n] = 1;
      continue;
    }
    if (!v.subgraphs.empty() || IsNondeterministic(v.op_type)) continue;
    bool only_weights = true, any = false;
    ForEachRead(g, n, [&](TensorId t) {
      any = true;
      const graph::TensorView tv = g.tensor(t);
      if (tv.kind == TensorKind::kInitializer) return;
      if (tv.producer != graph::kNoNode && constant[tv.producer]) return;
      only_weights = false;
    });
    constant[n] = any && only_weights;
  }
  return constant;
}

std::string ListFew(const std::vector<std::string>& names) {
  constexpr size_t kShown = 5;
  std::string text;
  for (size_t i = 0; i < names.size() && i < kShown; ++i) {
    text += (i ? ", '" : "'") + names[i] + "'";
  }
  if (names.size() > kShown) {
    text += " and " + std::to_string(names.size() - kShown) + " more";
  }
  return text;
}

// node -> device index from the plan, or the error naming what mismatches.
Result<std::vector<int>> NodeDevices(const OpGraph& g,
                                     std::span<const std::string> names,
                                     const PlanAssignment& plan) {
  std::unordered_map<std::string_view, NodeId> by_name;
  by_name.reserve(names.size());
  for (NodeId n = 0; n < names.size(); ++n) by_name.emplace(names[n], n);
  std::vector<int> device(g.num_nodes(), -1);
  std::vector<std::string> unknown;
  for (const auto& [name, d] : plan.placement) {
    const auto it = by_name.find(name);
    if (it == by_name.end()) {
      unknown.push_back(name);
      continue;
    }
    device[it->second] = d;
  }
  if (!unknown.empty()) {
    return BadInput(plan.source + ": placement names " +
                    std::to_string(unknown.size()) +
                    " node(s) the model does not have: " + ListFew(unknown) +
                    " (was the plan made for another model?)");
  }
  std::vector<std::string> missing;
  for (NodeId n = 0; n < g.num_nodes(); ++n) {
    if (device[n] < 0) missing.push_back(names[n]);
  }
  if (!missing.empty()) {
    return BadInput(plan.source + ": placement leaves out " +
                    std::to_string(missing.size()) + " of the model's " +
                    std::to_string(g.num_nodes()) +
                    " nodes: " + ListFew(missing) +
                    " (was the plan made for another model?)");
  }
  return device;
}

// A constant node that leads to a non-constant one is copied into the
// part of each node that reads it, never transferred: weights are. Per
// node, whether it is copied.
std::vector<char> CopiedNodes(const OpGraph& g) {
  const std::vector<char> constant = ConstantNodes(g);
  std::vector<char> copied(g.num_nodes(), 0);
  const auto topo = g.topological_order();
  for (auto it = topo.rbegin(); it != topo.rend(); ++it) {
    const NodeId n = *it;
    if (!constant[n]) continue;
    for (const TensorId t : g.node(n).outputs) {
      if (t == graph::kNoTensor) continue;
      for (const NodeId c : g.consumers(t)) {
        if (!constant[c] || copied[c]) copied[n] = 1;
      }
    }
  }
  return copied;
}

// level(n) = max over producers p of level(p) + (device(p) != device(n)).
std::vector<int> Levels(const OpGraph& g, const std::vector<char>& copied,
                        const std::vector<int>& node_device) {
  std::vector<int> level(g.num_nodes(), 0);
  for (const NodeId n : g.topological_order()) {
    if (copied[n]) continue;
    int l = 0;
    ForEachRead(g, n, [&](TensorId t) {
      const NodeId prod = g.tensor(t).producer;
      if (prod == graph::kNoNode || copied[prod]) return;
      l = std::max(l,
                   level[prod] + (node_device[prod] != node_device[n] ? 1 : 0));
    });
    level[n] = l;
  }
  return level;
}

// Parts ordered by (level, device): every edge goes to a later part. Fills
// p.parts (their level, device and nodes), p.devices_used and p.node_part.
void MakeParts(const std::vector<int>& level, const std::vector<char>& copied,
               Partition& p) {
  const size_t num_nodes = level.size();
  std::map<std::pair<int, int>, int> part_of_key;
  for (NodeId n = 0; n < num_nodes; ++n) {
    if (!copied[n])
      part_of_key.emplace(std::pair{level[n], p.node_device[n]}, 0);
  }
  std::unordered_set<int> used_devices;
  for (auto& [key, index] : part_of_key) {
    index = static_cast<int>(p.parts.size());
    Part part;
    part.level = key.first;
    part.device = key.second;
    p.parts.push_back(std::move(part));
    used_devices.insert(key.second);
  }
  p.devices_used = static_cast<int>(used_devices.size());
  p.node_part.assign(num_nodes, -1);
  for (NodeId n = 0; n < num_nodes; ++n) {
    if (copied[n]) continue;
    const int part = part_of_key.at({level[n], p.node_device[n]});
    p.node_part[n] = part;
    p.parts[part].nodes.push_back(n);
    ++p.parts[part].ops;
  }
}

// Per part, what it reads from outside itself and what it sends.
struct PartReads {
  std::vector<std::unordered_set<TensorId>> received, sent, initializers,
      graph_inputs;
  explicit PartReads(size_t parts)
      : received(parts),
        sent(parts),
        initializers(parts),
        graph_inputs(parts) {}
};

// Adds to each part the copied nodes its nodes read (transitively), then
// records what the part reads from outside itself; each tensor it receives
// from another part is a transfer. Leaves each part's nodes sorted.
PartReads CollectReads(const OpGraph& g, const std::vector<char>& copied,
                       Partition& p) {
  const size_t num_parts = p.parts.size();
  PartReads reads(num_parts);
  std::vector<char> in_part(g.num_nodes(), 0);  // scratch, per part
  for (size_t part = 0; part < num_parts; ++part) {
    // The part's nodes and, transitively, the copied nodes they read.
    std::vector<NodeId>& nodes = p.parts[part].nodes;
    for (size_t i = 0; i < nodes.size(); ++i) {
      in_part[nodes[i]] = 1;
      ForEachRead(g, nodes[i], [&](TensorId t) {
        const NodeId prod = g.tensor(t).producer;
        if (prod != graph::kNoNode && copied[prod] && !in_part[prod]) {
          in_part[prod] = 1;
          nodes.push_back(prod);  // visited later in this loop
        }
      });
    }
    for (const NodeId n : nodes) {
      in_part[n] = 0;
      ForEachRead(g, n, [&](TensorId t) {
        const graph::TensorView v = g.tensor(t);
        if (v.kind == TensorKind::kInput) {
          reads.graph_inputs[part].insert(t);
        } else if (v.kind == TensorKind::kInitializer) {
          reads.initializers[part].insert(t);
        } else if (v.producer != graph::kNoNode && !copied[v.producer]) {
          const int from = p.node_part[v.producer];
          if (from != static_cast<int>(part) &&
              reads.received[part].insert(t).second) {
            reads.sent[from].insert(t);
            p.transfers.push_back({t, from, static_cast<int>(part)});
          }
        }
      });
    }
    std::sort(nodes.begin(), nodes.end());
  }
  return reads;
}

void AddOutput(Part& part, TensorId t) {
  if (std::find(part.outputs.begin(), part.outputs.end(), t) ==
      part.outputs.end()) {
    part.outputs.push_back(t);
  }
}

// The original outputs: each from the part that produces it (the first
// part holding a copy, for a copied Constant's value).
void AssignGraphOutputs(const OpGraph& g, const std::vector<char>& copied,
                        Partition& p, PartReads& reads) {
  const size_t num_parts = p.parts.size();
  for (const TensorId t : g.outputs()) {
    const NodeId prod = g.tensor(t).producer;
    if (prod == graph::kNoNode) {
      // An input or initializer returned as it is: the first part passes it.
      if (num_parts == 0) continue;
      const TensorKind kind = g.tensor(t).kind;
      if (kind == TensorKind::kInput) reads.graph_inputs[0].insert(t);
      if (kind == TensorKind::kInitializer) reads.initializers[0].insert(t);
      AddOutput(p.parts[0], t);
      continue;
    }
    int part = p.node_part[prod];
    if (copied[prod]) {
      for (size_t q = 0; q < num_parts && part < 0; ++q) {
        if (std::binary_search(p.parts[q].nodes.begin(), p.parts[q].nodes.end(),
                               prod)) {
          part = static_cast<int>(q);
        }
      }
      if (part < 0 && num_parts > 0) {  // read by nobody but the caller
        part = 0;
        auto& nodes = p.parts[0].nodes;
        nodes.insert(std::upper_bound(nodes.begin(), nodes.end(), prod), prod);
      }
    }
    if (part >= 0) AddOutput(p.parts[part], t);
  }
}

// Each part's inputs (the graph's, in its order, then those received),
// outputs (then those sent) and initializers, sorted by TensorId.
void FinishParts(const OpGraph& g, const PartReads& reads, Partition& p) {
  for (size_t part = 0; part < p.parts.size(); ++part) {
    Part& pt = p.parts[part];
    for (const TensorId t : g.inputs()) {
      if (reads.graph_inputs[part].count(t)) pt.inputs.push_back(t);
    }
    std::vector<TensorId> in(reads.received[part].begin(),
                             reads.received[part].end());
    std::sort(in.begin(), in.end());
    pt.inputs.insert(pt.inputs.end(), in.begin(), in.end());
    std::vector<TensorId> out(reads.sent[part].begin(), reads.sent[part].end());
    std::sort(out.begin(), out.end());
    for (const TensorId t : out) AddOutput(pt, t);
    if (pt.outputs.empty()) {
      // Dead code in the original too; ONNX Runtime refuses a graph without
      // outputs, so the part returns the values nobody reads.
      for (const NodeId n : pt.nodes) {
        for (const TensorId t : g.node(n).outputs) {
          if (t != graph::kNoTensor && g.consumers(t).empty()) {
            pt.outputs.push_back(t);
          }
        }
      }
    }
    pt.initializers.assign(reads.initializers[part].begin(),
                           reads.initializers[part].end());
    std::sort(pt.initializers.begin(), pt.initializers.end());
  }
}

}  // namespace

Result<Partition> PartitionGraph(const OpGraph& g,
                                 std::span<const std::string> names,
                                 const PlanAssignment& plan) {
  if (names.size() != g.num_nodes()) {
    return Internal("PartitionGraph: " + std::to_string(names.size()) +
                    " names for " + std::to_string(g.num_nodes()) + " nodes");
  }
  auto devices = NodeDevices(g, names, plan);
  if (!devices) return devices.error();
  Partition p;
  p.node_device = std::move(devices).value();

  const std::vector<char> copied = CopiedNodes(g);
  MakeParts(Levels(g, copied, p.node_device), copied, p);
  PartReads reads = CollectReads(g, copied, p);
  AssignGraphOutputs(g, copied, p, reads);
  FinishParts(g, reads, p);
  std::sort(p.transfers.begin(), p.transfers.end(),
            [](const Transfer& a, const Transfer& b) {
              return std::tie(a.from_part, a.to_part, a.tensor) <
                     std::tie(b.from_part, b.to_part, b.tensor);
            });
  return p;
}

}  // namespace tessera::split
