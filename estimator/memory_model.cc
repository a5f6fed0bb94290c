#include "estimator/memory_model.h"

#include <algorithm>
#include <vector>

namespace tessera::estimator {
namespace {

using graph::NodeId;
using graph::OpGraph;
using graph::TensorId;

int64_t Bytes(const OpGraph& g, TensorId t) {
  return std::max<int64_t>(g.tensor(t).bytes, 0);
}

// Peak of live activation bytes over the topological order: a buffer is
// allocated when its producer runs and freed after the last consumer of any
// tensor aliasing it; graph inputs are live from the start, graph outputs
// never freed. Weights are accounted for separately.
void InferencePeak(const OpGraph& g, std::span<const OpCost> costs,
                   MemoryEstimate* m) {
  const size_t n_tensors = g.num_tensors();
  std::vector<TensorId> buffer(n_tensors);
  std::vector<int64_t> uses(n_tensors, 0);
  std::vector<bool> pinned(n_tensors, false);
  for (TensorId t = 0; t < n_tensors; ++t) buffer[t] = t;
  for (const NodeId n : g.topological_order()) {
    const graph::NodeView v = g.node(n);
    if (IsView(g, n) && !v.inputs.empty() && v.inputs[0] != graph::kNoTensor) {
      for (const TensorId out : v.outputs) {
        if (out != graph::kNoTensor) buffer[out] = buffer[v.inputs[0]];
      }
    }
  }
  for (TensorId t = 0; t < n_tensors; ++t) {
    uses[buffer[t]] += static_cast<int64_t>(g.consumers(t).size());
  }
  for (const TensorId t : g.outputs()) pinned[buffer[t]] = true;
  int64_t live = 0;
  for (const TensorId t : g.inputs()) live += Bytes(g, t);
  auto release = [&](TensorId b) {
    if (uses[b] == 0 && !pinned[b] && !graph::IsWeight(g.tensor(b).kind)) {
      live -= Bytes(g, b);
      pinned[b] = true;  // freed once
    }
  };
  m->activations = live;
  for (const NodeId n : g.topological_order()) {
    const graph::NodeView v = g.node(n);
    const bool view = IsView(g, n);
    for (const TensorId out : v.outputs) {
      if (out != graph::kNoTensor && !view &&
          !graph::IsWeight(g.tensor(out).kind)) {
        live += Bytes(g, out);
      }
    }
    if (live + costs[n].workspace_bytes > m->activations + m->workspace) {
      m->activations = live;
      m->workspace = costs[n].workspace_bytes;
      m->peak_at = n;
    }
    // consumers() lists each (tensor, node) pair once: decrement likewise.
    std::vector<TensorId> read;
    for (const TensorId t : v.inputs) {
      if (t != graph::kNoTensor) read.push_back(t);
    }
    read.insert(read.end(), v.implicit_inputs.begin(), v.implicit_inputs.end());
    std::sort(read.begin(), read.end());
    read.erase(std::unique(read.begin(), read.end()), read.end());
    for (const TensorId t : read) --uses[buffer[t]];
    for (const TensorId t : read) release(buffer[t]);
    for (const TensorId out : v.outputs) {
      if (out != graph::kNoTensor) release(buffer[out]);
    }
  }
}

// Training keeps every forward activation for the backward pass, plus the
// largest activation's gradient while backward runs.
void TrainingActivations(const OpGraph& g, std::span<const OpCost> costs,
                         MemoryEstimate* m) {
  int64_t kept = 0;
  int64_t largest = 0;
  for (const TensorId t : g.inputs()) kept += Bytes(g, t);
  for (NodeId n = 0; n < g.num_nodes(); ++n) {
    const graph::NodeView v = g.node(n);
    if (IsView(g, n) || v.op_type == "Constant") continue;
    for (const TensorId out : v.outputs) {
      if (out == graph::kNoTensor) continue;
      kept += Bytes(g, out);
      largest = std::max(largest, Bytes(g, out));
    }
    m->workspace = std::max(m->workspace, costs[n].workspace_bytes);
  }
  m->activations = kept + largest;
}

int64_t OptimizerBytes(Optimizer o, const graph::WeightStats& w) {
  // Weights stored in fewer than 4 bytes each (fp16/bf16) train in mixed
  // precision: the optimizer keeps an fp32 master copy.
  const bool mixed = w.bytes < 4 * w.elements;
  const int64_t master = mixed ? 4 * w.elements : 0;
  switch (o) {
    case Optimizer::kNone:
      return 0;
    case Optimizer::kSgd:
      return master;
    case Optimizer::kSgdMomentum:
      return master + 4 * w.elements;
    case Optimizer::kAdam:
      return master + 8 * w.elements;  // two fp32 moments
  }
  return 0;
}

}  // namespace

Result<Optimizer> ParseOptimizer(std::string_view text) {
  if (text == "none") return Optimizer::kNone;
  if (text == "sgd") return Optimizer::kSgd;
  if (text == "sgd-momentum") return Optimizer::kSgdMomentum;
  if (text == "adam") return Optimizer::kAdam;
  return BadInput("optimizer '" + std::string(text) +
                  "': expected adam, sgd, sgd-momentum or none");
}

std::string_view OptimizerName(Optimizer o) {
  switch (o) {
    case Optimizer::kNone:
      return "none";
    case Optimizer::kSgd:
      return "sgd";
    case Optimizer::kSgdMomentum:
      return "sgd-momentum";
    case Optimizer::kAdam:
      return "adam";
  }
  return "none";
}

MemoryEstimate EstimateMemory(const graph::OpGraph& g,
                              std::span<const OpCost> costs,
                              const graph::WeightStats& weights,
                              const MemoryOptions& options) {
  MemoryEstimate m;
  m.weights = weights.bytes;
  if (!options.training) {
    InferencePeak(g, costs, &m);
    return m;
  }
  m.gradients = weights.bytes;
  m.optimizer_state = OptimizerBytes(options.optimizer, weights);
  TrainingActivations(g, costs, &m);
  return m;
}

int64_t HeadroomBytes(int64_t model_bytes, double fragmentation) {
  return kCudaContextBytes +
         static_cast<int64_t>(static_cast<double>(model_bytes) * fragmentation);
}

}  // namespace tessera::estimator
