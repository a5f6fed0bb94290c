#include "estimator/profile.h"

#include <algorithm>

namespace tessera::estimator {
namespace {

// Adam/SGD update: reads weights, gradients and state, writes weights and
// state once per step, at element-wise bandwidth.
double OptimizerSeconds(const MemoryEstimate& m, const DeviceSpec& device,
                        const TimeModel& model) {
  const double bytes =
      static_cast<double>(2 * m.weights + m.gradients + 2 * m.optimizer_state);
  const double bw =
      device.memory_bandwidth * model.of(OpClass::kElementwise).memory;
  return bw > 0 ? bytes / bw + device.launch_overhead_s : 0.0;
}

}  // namespace

Status CheckInputsBound(const graph::OpGraph& g) {
  for (const graph::TensorId t : g.inputs()) {
    const graph::TensorView v = g.tensor(t);
    if (v.shape_known()) continue;
    const std::string name(v.name);
    return BadInput("input '" + name + "' has unbound dimensions (" +
                    graph::FormatShape(g, t) +
                    "), which blocks costing: bind them (the CLI's --input " +
                    name + "=DxDx... or --batch N; a job's model.inputs." +
                    name + " or model.batch)");
  }
  return {};
}

int64_t BackwardFactor(OpClass c) {
  return c == OpClass::kMatrix || c == OpClass::kConvolution ||
                 c == OpClass::kDepthwiseConvolution ||
                 c == OpClass::kSpatialConvolution
             ? kMatrixBackwardFactor
             : kOtherBackwardFactor;
}

graph::DataType ComputeType(const graph::OpGraph& g, graph::NodeId n) {
  const graph::NodeView v = g.node(n);
  for (const graph::TensorId t : v.inputs) {
    if (t != graph::kNoTensor) return g.tensor(t).dtype;
  }
  for (const graph::TensorId t : v.outputs) {
    if (t != graph::kNoTensor) return g.tensor(t).dtype;
  }
  return graph::DataType::kFloat32;
}

Result<Profile> ProfileModel(const graph::Model& model,
                             const DeviceSpec& device,
                             const ProfileOptions& options) {
  const graph::OpGraph& g = *model.graph;
  TESSERA_RETURN_IF_ERROR(CheckInputsBound(g));
  const std::vector<OpCost> costs = CostAll(g);
  Profile p;
  p.ops.reserve(costs.size());
  for (graph::NodeId n = 0; n < g.num_nodes(); ++n) {
    const OpCost& c = costs[n];
    double seconds =
        OpSeconds(c, ComputeType(g, n), device, options.time_model);
    int64_t flops = c.flops;
    if (options.training) {
      const int64_t factor = BackwardFactor(c.op_class);
      seconds *= static_cast<double>(1 + factor);
      flops += factor * c.flops;
    }
    ClassTotals& t = p.classes[static_cast<size_t>(c.op_class)];
    ++t.ops;
    t.macs += c.macs;
    t.flops += flops;
    t.bytes += c.bytes_read + c.bytes_written;
    t.seconds += seconds;
    p.macs += c.macs;
    p.flops += flops;
    p.seconds += seconds;
    if (!c.exact) ++p.inexact_ops;
    p.ops.push_back(OpProfile{n, c, seconds});
  }
  p.memory = EstimateMemory(g, costs, model.weights,
                            {options.training, options.optimizer});
  if (options.training) {
    p.optimizer_seconds =
        OptimizerSeconds(p.memory, device, options.time_model);
    p.seconds += p.optimizer_seconds;
  }
  p.roofline_memory = p.memory;
  if (options.runtime.runtime != Runtime::kRoofline) {
    RuntimeOptions ro = options.runtime;
    ro.training = options.training;
    ro.optimizer = options.optimizer;
    auto e = EstimateRuntime(model, costs, device, ro);
    if (!e) return e.error();
    for (OpProfile& op : p.ops) op.seconds = e->node_seconds[op.node];
    p.classes = {};
    for (const OpProfile& op : p.ops) {
      ClassTotals& t = p.classes[static_cast<size_t>(op.cost.op_class)];
      ++t.ops;
      t.macs += op.cost.macs;
      t.flops += op.cost.flops *
                 (options.training ? 1 + BackwardFactor(op.cost.op_class) : 1);
      t.bytes += op.cost.bytes_read + op.cost.bytes_written;
      t.seconds += op.seconds;
    }
    p.seconds = e->step_s;
    p.optimizer_seconds = e->optimizer_s;
    // The live peak, in the memory breakdown's terms.
    p.memory.weights = e->weights;
    p.memory.gradients = e->gradients;
    p.memory.optimizer_state = e->optimizer_state;
    p.memory.workspace = e->workspace;
    p.memory.activations =
        std::max<int64_t>(0, e->live_peak_bytes - e->weights - e->gradients -
                                 e->optimizer_state - e->workspace);
    p.memory.peak_at = graph::kNoNode;
    p.runtime = std::move(e).value();
  }
  p.headroom_bytes = HeadroomBytes(p.memory.total(), options.fragmentation);
  p.fits = p.reserve_bytes() <= device.memory_bytes;
  return p;
}

int64_t Profile::reserve_bytes() const {
  const int64_t need =
      runtime ? std::max(runtime->reserved_peak_bytes, memory.total())
              : memory.total();
  return need + headroom_bytes;
}

}  // namespace tessera::estimator
