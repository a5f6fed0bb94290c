// BuildProblem: a loaded model's top-level graph as a placement Problem,
// with every op's time on each distinct device kind of the cluster.

#include <algorithm>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>

#include "estimator/estimator.h"
#include "placer/core/problem.h"

namespace tessera::placer {
namespace {

TensorRole RoleOf(graph::TensorKind kind) {
  switch (kind) {
    case graph::TensorKind::kInitializer:
    case graph::TensorKind::kConstant:
      return TensorRole::kWeight;
    case graph::TensorKind::kInput:
    case graph::TensorKind::kOuterScope:
      return TensorRole::kInput;
    case graph::TensorKind::kActivation:
      break;
  }
  return TensorRole::kActivation;
}

// One profile per distinct device kind, in cluster order; priced by a
// runtime model, one per kind and compute share (what a share of a GPU
// buys is the runtime model's, not 1 / share: Problem::Forward divides
// by the share, so those profiles store time x share).
struct Profiles {
  std::vector<const estimator::DeviceSpec*> specs;  // per profile
  std::vector<double> shares;                       // per profile
  std::vector<int> device_profile;                  // per device
  int count() const { return static_cast<int>(specs.size()); }
};

Profiles DistinctProfiles(const Cluster& cluster,
                          const ProblemOptions& options) {
  const bool by_share = options.runtime != estimator::Runtime::kRoofline;
  Profiles out;
  for (const ClusterDevice& d : cluster.devices) {
    const bool gpu = d.spec.kind == estimator::DeviceKind::kGpu;
    const double share = by_share && gpu ? d.compute_share : 1.0;
    int index = -1;
    for (size_t i = 0; i < out.specs.size(); ++i) {
      if (out.specs[i]->name == d.spec.name && out.shares[i] == share)
        index = static_cast<int>(i);
    }
    if (index < 0) {
      index = static_cast<int>(out.specs.size());
      out.specs.push_back(&d.spec);
      out.shares.push_back(share);
    }
    out.device_profile.push_back(index);
  }
  return out;
}

struct RuntimeTimes {
  // The runtime model's per-node times, per profile (none: the roofline).
  std::vector<std::optional<estimator::RuntimeEstimate>> runtime;
  // Per profile: the host time the GPU waits for (step - GPU busy) over all
  // the host's dispatch: the share of each op's dispatch it cannot hide.
  std::vector<double> exposed;
};

// The runtime model's estimate for each GPU profile, unless the options
// price by the roofline.
Result<RuntimeTimes> EstimateRuntimes(
    const graph::Model& model, const std::vector<estimator::OpCost>& costs,
    const Profiles& profiles, const ProblemOptions& options) {
  const int num_profiles = profiles.count();
  RuntimeTimes out;
  out.runtime.resize(num_profiles);
  out.exposed.assign(num_profiles, 0.0);
  if (options.runtime == estimator::Runtime::kRoofline) return out;
  estimator::RuntimeOptions ro;
  ro.runtime = options.runtime;
  ro.costs = estimator::DefaultCosts(options.runtime);
  ro.training = options.training;
  ro.optimizer = options.optimizer;
  ro.amp = options.amp;
  for (int i = 0; i < num_profiles; ++i) {
    if (profiles.specs[i]->kind != estimator::DeviceKind::kGpu) continue;
    ro.compute_share = profiles.shares[i];
    auto e = estimator::EstimateRuntime(model, costs, *profiles.specs[i], ro);
    if (!e) return e.error();
    double host = 0;
    for (const double h : e->node_host_seconds) host += h;
    if (host > 0)
      out.exposed[i] = std::max(0.0, e->step_s - e->gpu_busy_s) / host;
    out.runtime[i] = std::move(e).value();
  }
  return out;
}

// Node n's forward time on each profile into `fwd`, and in training its
// backward time into `bwd` (cleared first).
void NodeTimes(const graph::OpGraph& g, graph::NodeId n,
               const estimator::OpCost& cost, const Profiles& profiles,
               const RuntimeTimes& rt, const ProblemOptions& options,
               std::vector<double>& fwd, std::vector<double>& bwd) {
  const graph::DataType dtype = estimator::ComputeType(g, n);
  bwd.clear();
  for (int i = 0; i < profiles.count(); ++i) {
    const double share = profiles.shares[i];
    if (rt.runtime[i]) {
      // Its kernels' GPU time, plus its share of the host time the GPU
      // waits for (none when the step is GPU-bound; nearly its whole
      // dispatch when host-bound), split between forward and backward
      // as the GPU time is. On one device the ops add up to the
      // runtime model's step less the loss and the optimizer.
      const estimator::RuntimeEstimate& e = *rt.runtime[i];
      const double f = e.node_forward_seconds[n];
      const double back = std::max(0.0, e.node_seconds[n] - f);
      const double host = e.node_host_seconds[n] * rt.exposed[i];
      const double host_fwd =
          options.training && f + back > 0 ? host * f / (f + back) : host;
      fwd[i] = (f + host_fwd) * share;
      if (options.training) bwd.push_back((back + host - host_fwd) * share);
      continue;
    }
    fwd[i] = estimator::OpSeconds(cost, dtype, *profiles.specs[i],
                                  options.time_model);
    if (options.training) {
      bwd.push_back(
          static_cast<double>(estimator::BackwardFactor(cost.op_class)) *
          fwd[i]);
    }
  }
}

}  // namespace

estimator::Runtime DefaultRuntime(const Cluster& cluster) {
  for (const ClusterDevice& d : cluster.devices) {
    if (d.spec.kind != estimator::DeviceKind::kGpu)
      return estimator::Runtime::kRoofline;
  }
  return estimator::Runtime::kPyTorch;
}

Result<Problem> BuildProblem(const graph::Model& model, const Cluster& cluster,
                             const ProblemOptions& options) {
  const graph::OpGraph& g = *model.graph;
  TESSERA_RETURN_IF_ERROR(estimator::CheckInputsBound(g));
  if (cluster.size() == 0) return BadInput("the cluster has no devices");

  const Profiles profiles = DistinctProfiles(cluster, options);
  const int num_profiles = profiles.count();
  ProblemBuilder b(num_profiles, profiles.device_profile, options.training);

  const std::vector<estimator::OpCost> costs = estimator::CostAll(g);
  if (options.training) {
    const estimator::MemoryEstimate m = estimator::EstimateMemory(
        g, costs, model.weights, {true, options.optimizer});
    if (m.weights > 0) {
      b.set_weight_state_factor(
          static_cast<double>(m.weights + m.gradients + m.optimizer_state) /
          static_cast<double>(m.weights));
    }
  }

  std::unordered_set<graph::TensorId> outputs(g.outputs().begin(),
                                              g.outputs().end());
  std::unordered_map<graph::TensorId, uint32_t> tensor_of;
  auto tensor = [&](graph::TensorId t) -> uint32_t {
    auto it = tensor_of.find(t);
    if (it != tensor_of.end()) return it->second;
    const graph::TensorView v = g.tensor(t);
    const uint32_t id =
        b.AddTensor(std::string(v.name), std::max<int64_t>(v.bytes, 0),
                    RoleOf(v.kind), outputs.count(t) > 0);
    tensor_of.emplace(t, id);
    return id;
  };

  Result<RuntimeTimes> runtime =
      EstimateRuntimes(model, costs, profiles, options);
  if (!runtime) return runtime.error();

  const std::vector<std::string> names = graph::UniqueNodeNames(g);
  std::vector<double> fwd(num_profiles), bwd;
  std::vector<uint32_t> ins, outs;
  for (graph::NodeId n = 0; n < g.num_nodes(); ++n) {
    const graph::NodeView v = g.node(n);
    NodeTimes(g, n, costs[n], profiles, *runtime, options, fwd, bwd);
    ins.clear();
    outs.clear();
    for (graph::TensorId t : v.inputs) {
      if (t != graph::kNoTensor) ins.push_back(tensor(t));
    }
    for (graph::TensorId t : v.implicit_inputs) ins.push_back(tensor(t));
    for (graph::TensorId t : v.outputs) {
      if (t != graph::kNoTensor) outs.push_back(tensor(t));
    }
    b.AddOp(names[n], std::string(v.op_type), fwd, bwd, ins, outs,
            costs[n].workspace_bytes);
  }
  // Graph outputs no node produces (an input passed through) still count.
  for (graph::TensorId t : g.outputs()) tensor(t);
  return std::move(b).Build();
}

}  // namespace tessera::placer
