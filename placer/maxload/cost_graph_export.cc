// CostGraphFromProblem (placer/maxload/cost_graph.h): the estimator's placement
// Problem on a cluster as a cost graph, what `tessera profile --cost-graph`
// writes. The rules (docs/cost_graph.md, "Written by tessera profile"):
// - kinds: the cluster's devices grouped by (catalog kind, usable memory,
//   compute share), in cluster order; a kind's time is the estimator's
//   time on that catalog kind divided by the compute share;
// - memory of an op: the weights and graph inputs it reads (weights x the
//   training state factor: gradients and optimizer state too), counted on
//   every op reading them, plus the activations it writes and its
//   extra_bytes; a backward op holds nothing more;
// - edges: one per (op, distinct successor) with the bytes of the
//   activations between them; an edge through weights only (a Constant to
//   its readers) carries time 0, as weights are never sent. Training adds
//   each backward edge mirrored (the gradient of the same tensors) and an
//   edge of time 0 from an op to its backward op;
// - the link: the slowest link between two devices of the cluster (the
//   model has one cost per edge, whatever the devices).

#include <algorithm>
#include <cmath>
#include <limits>
#include <tuple>
#include <unordered_map>

#include "placer/maxload/cost_graph.h"

namespace tessera::placer {
namespace {

// The cluster's devices grouped into kinds; kind_of[d] per cluster device.
struct Kinds {
  std::vector<MaxLoadKind> kinds;
  std::vector<int> profile;  // per kind: the Problem's profile column
  std::vector<double> share;
};

Kinds KindsOf(const Problem& problem, const Cluster& cluster) {
  Kinds out;
  std::vector<std::tuple<int, int64_t, double>> keys;
  for (size_t d = 0; d < cluster.size(); ++d) {
    const ClusterDevice& dev = cluster.devices[d];
    const auto key = std::make_tuple(problem.device_profile[d],
                                     dev.memory_usable, dev.compute_share);
    const auto it = std::find(keys.begin(), keys.end(), key);
    if (it != keys.end()) {
      ++out.kinds[it - keys.begin()].count;
      continue;
    }
    keys.push_back(key);
    std::string name = dev.spec.name;
    for (int k = 2; std::any_of(out.kinds.begin(), out.kinds.end(),
                                [&](const auto& m) { return m.name == name; });
         ++k) {
      name = dev.spec.name + "-" + std::to_string(k);
    }
    // (Usable memory below 0, a headroom larger than the GPU, is none.)
    out.kinds.push_back(
        {name, 1, std::max<int64_t>(dev.memory_usable, 0), true});
    out.profile.push_back(problem.device_profile[d]);
    out.share.push_back(dev.compute_share);
  }
  return out;
}

// Bytes an op holds (see the file comment).
int64_t OpBytes(const Problem& p, OpId op) {
  double bytes = static_cast<double>(p.extra_bytes[op]);
  for (const uint32_t t : p.inputs(op)) {
    const ProblemTensor& tensor = p.tensors[t];
    if (tensor.role == TensorRole::kWeight) {
      bytes += static_cast<double>(tensor.bytes) *
               (p.training ? p.weight_state_factor : 1.0);
    } else if (tensor.role == TensorRole::kInput) {
      bytes += static_cast<double>(tensor.bytes);
    }
  }
  for (const uint32_t t : p.outputs(op)) {
    if (p.tensors[t].role == TensorRole::kActivation) {
      bytes += static_cast<double>(p.tensors[t].bytes);
    }
  }
  return std::llround(bytes);
}

struct CostLink {
  double bytes_per_s = 0, latency_s = 0;  // 0: one device, no link
};

CostLink SlowestLink(const Cluster& cluster) {
  CostLink out;
  double slowest = std::numeric_limits<double>::infinity();
  for (size_t a = 0; a < cluster.size(); ++a) {
    for (size_t b = 0; b < cluster.size(); ++b) {
      if (a == b) continue;
      const Link& l = cluster.link(a, b);
      slowest = std::min(slowest, l.bandwidth);
      out.latency_s = std::max(out.latency_s, l.latency);
    }
  }
  if (std::isfinite(slowest) && slowest > 0) out.bytes_per_s = slowest;
  return out;
}

}  // namespace

Result<CostGraph> CostGraphFromProblem(const Problem& problem,
                                       const Cluster& cluster,
                                       const std::string& model) {
  if (cluster.size() == 0) return BadInput("the cluster has no devices");
  if (problem.device_profile.size() != cluster.size()) {
    return Internal("the problem was built for another cluster");
  }
  CostGraph out;
  MaxLoadProblem& p = out.problem;
  CostGraphExtras& x = out.extras;
  p.source = model;
  x.model = model;
  const Kinds kinds = KindsOf(problem, cluster);
  p.kinds = kinds.kinds;
  const CostLink link = SlowestLink(cluster);
  x.link_bytes_per_s = link.bytes_per_s;
  x.link_latency_s = link.latency_s;

  const size_t n = problem.num_ops();
  const bool training = problem.training;
  const auto times = [&](const std::vector<double>& seconds, OpId op) {
    std::vector<double> t(p.kinds.size());
    for (size_t k = 0; k < t.size(); ++k) {
      t[k] = seconds[op * problem.num_profiles + kinds.profile[k]] /
             kinds.share[k];
    }
    return t;
  };
  for (OpId op = 0; op < n; ++op) {
    MaxLoadNode node;
    node.id = op;
    node.name = problem.names[op];
    node.time = times(problem.forward_s, op);
    node.size = OpBytes(problem, op);
    if (training) node.color = op;
    p.nodes.push_back(std::move(node));
    x.op_types.push_back(problem.op_types[op]);
    x.forward_of.push_back(-1);
  }
  for (OpId op = 0; training && op < n; ++op) {
    MaxLoadNode node;
    node.id = static_cast<int64_t>(n + op);
    node.name = problem.names[op] + "/backward";
    node.time = times(problem.backward_s, op);
    node.backward = true;
    node.color = op;
    p.nodes.push_back(std::move(node));
    x.op_types.push_back(problem.op_types[op]);
    x.forward_of.push_back(static_cast<int>(op));
  }

  const auto add_edge = [&](int from, int to, int64_t bytes) {
    const double cost =
        bytes < 0 || link.bytes_per_s == 0
            ? 0.0
            : CostOfBytes(bytes, link.bytes_per_s, link.latency_s);
    p.edges.push_back({from, to, cost});
    x.edge_bytes.push_back(link.bytes_per_s == 0 ? -1 : bytes);
  };
  std::unordered_map<uint32_t, int64_t> sent;  // successor -> bytes
  for (OpId u = 0; u < n; ++u) {
    sent.clear();
    for (const uint32_t t : problem.outputs(u)) {
      if (problem.tensors[t].role != TensorRole::kActivation) continue;
      for (const uint32_t v : problem.consumers(t)) {
        sent[v] += problem.tensors[t].bytes;
      }
    }
    for (const uint32_t v : problem.successors(u)) {
      const auto it = sent.find(v);
      const int64_t bytes = it == sent.end() ? -1 : it->second;
      add_edge(static_cast<int>(u), static_cast<int>(v), bytes);
      if (training) {
        add_edge(static_cast<int>(n + v), static_cast<int>(n + u), bytes);
      }
    }
    if (training) add_edge(static_cast<int>(u), static_cast<int>(n + u), -1);
  }
  return out;
}

}  // namespace tessera::placer
