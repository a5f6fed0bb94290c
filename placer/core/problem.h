#ifndef TESSERA_PLACER_CORE_PROBLEM_H_
#define TESSERA_PLACER_CORE_PROBLEM_H_

// What placement works on: operators with their time on each kind of device
// in the cluster, and the tensors between them with their sizes. Built from
// a loaded model and a cluster (BuildProblem), or directly (ProblemBuilder)
// for tests, benchmarks and contracted graphs. Plain data; no ONNX.
//
// Memory conventions (the simulator's, docs/placer.md "Simulator"):
// - a weight tensor is resident for the whole step on every device that has
//   a consumer of it (each device holds its own copy; weights are never
//   transferred). In training each resident weight byte costs
//   `weight_state_factor` bytes (weight + gradient + optimizer state).
// - a graph input (no producer, not a weight) is present at time 0 on every
//   device that consumes it, until its last consumer there has run.
// - an activation is allocated when its producer starts and freed when its
//   last consumer on that device has run and every transfer of it is done;
//   a received copy likewise on the receiving device. Graph outputs stay.
// - `extra_bytes` of an op is memory it holds for the whole step on its
//   device (contracted groups keep their internal activations there).

#include <cstdint>
#include <limits>
#include <span>
#include <string>
#include <vector>

#include "common/result.h"
#include "estimator/profile.h"
#include "estimator/runtime/runtime.h"
#include "graph/graph.h"
#include "placer/core/cluster.h"

namespace tessera::placer {

using OpId = uint32_t;
inline constexpr OpId kNoOp = std::numeric_limits<OpId>::max();

enum class TensorRole : uint8_t { kActivation, kWeight, kInput };

struct ProblemTensor {
  std::string name;
  OpId producer = kNoOp;  // kNoOp for weights without a Constant node, inputs
  int64_t bytes = 0;
  TensorRole role = TensorRole::kActivation;
  bool output = false;  // a graph output: kept until the step ends
};

struct Problem {
  bool training = false;
  // Distinct device kinds the times are given for ("profiles"); a cluster
  // device d uses column device_profile[d].
  int num_profiles = 1;
  std::vector<int> device_profile;   // one entry per cluster device
  double weight_state_factor = 1.0;  // training: (w + grad + opt) / w

  // Per op.
  std::vector<std::string> names;  // unique; see BuildProblem for the rule
  std::vector<std::string> op_types;
  std::vector<double> forward_s;   // [op * num_profiles + profile]
  std::vector<double> backward_s;  // same layout; empty unless training
  std::vector<int64_t> workspace_bytes;
  std::vector<int64_t> extra_bytes;

  std::vector<ProblemTensor> tensors;

  // CSR adjacency (filled by ProblemBuilder::Build).
  std::vector<uint32_t> in_begin, in_tensors;    // op -> input tensors
  std::vector<uint32_t> out_begin, out_tensors;  // op -> output tensors
  std::vector<uint32_t> use_begin, use_ops;      // tensor -> consuming ops
  std::vector<uint32_t> succ_begin, succ_ops;    // op -> distinct successors
  std::vector<uint32_t> pred_begin, pred_ops;    // op -> distinct predecessors
  std::vector<OpId> topo;                        // a topological order

  size_t num_ops() const { return names.size(); }
  size_t num_tensors() const { return tensors.size(); }
  std::span<const uint32_t> inputs(OpId op) const {
    return {in_tensors.data() + in_begin[op], in_begin[op + 1] - in_begin[op]};
  }
  std::span<const uint32_t> outputs(OpId op) const {
    return {out_tensors.data() + out_begin[op],
            out_begin[op + 1] - out_begin[op]};
  }
  std::span<const uint32_t> consumers(uint32_t tensor) const {
    return {use_ops.data() + use_begin[tensor],
            use_begin[tensor + 1] - use_begin[tensor]};
  }
  std::span<const uint32_t> successors(OpId op) const {
    return {succ_ops.data() + succ_begin[op],
            succ_begin[op + 1] - succ_begin[op]};
  }
  std::span<const uint32_t> predecessors(OpId op) const {
    return {pred_ops.data() + pred_begin[op],
            pred_begin[op + 1] - pred_begin[op]};
  }
  // Forward (and backward) seconds of `op` on cluster device `device`:
  // the profile's time divided by the device's compute share.
  double Forward(OpId op, int device, double share) const {
    return forward_s[static_cast<size_t>(op) * num_profiles +
                     device_profile[device]] /
           share;
  }
  double Backward(OpId op, int device, double share) const {
    return backward_s.empty()
               ? 0.0
               : backward_s[static_cast<size_t>(op) * num_profiles +
                            device_profile[device]] /
                     share;
  }
};

// Sets problem.topo to a topological order of its ops from the
// predecessor/successor CSR arrays (Kahn's algorithm, smallest index first
// among ready ops, so the order is deterministic and follows the ops' own
// numbering where it can). False if the ops form a cycle; topo then holds
// only the ops outside it.
bool FillTopologicalOrder(Problem& problem);

// Builds a Problem op by op. Ops must be added after the tensors they use.
class ProblemBuilder {
 public:
  // `num_profiles` columns of times per op; `device_profile` maps the
  // cluster's devices to them.
  ProblemBuilder(int num_profiles, std::vector<int> device_profile,
                 bool training);
  uint32_t AddTensor(std::string name, int64_t bytes, TensorRole role,
                     bool output = false);
  // `forward_s` (and `backward_s` when training) hold num_profiles values.
  OpId AddOp(std::string name, std::string op_type,
             std::span<const double> forward_s,
             std::span<const double> backward_s,
             std::span<const uint32_t> inputs,
             std::span<const uint32_t> outputs, int64_t workspace_bytes = 0,
             int64_t extra_bytes = 0);
  void set_weight_state_factor(double f) { p_.weight_state_factor = f; }
  // Fills adjacency and a topological order. kBadInput on a cycle or a
  // tensor produced twice.
  Result<Problem> Build() &&;

 private:
  Problem p_;
  std::vector<std::vector<uint32_t>> ins_, outs_;
};

struct ProblemOptions {
  bool training = false;
  estimator::Optimizer optimizer = estimator::Optimizer::kAdam;
  estimator::TimeModel time_model = estimator::TimeModel::Defaults();
  // What runs the parts (estimator/runtime/runtime.h). kRoofline: each op's
  // time is the operator roofline (time_model). kPyTorch / kOnnxRuntime: the
  // runtime model's GPU time of the op's kernels on each device kind
  // (casts, fusions, copies and backward by kernel kind included) plus its
  // share of the host time the GPU waits for in the runtime model's step
  // (its dispatch x (step - GPU busy) / all dispatch): nothing when the
  // step is GPU-bound, nearly its whole dispatch when host-bound. Every
  // part of a split is a process whose host thread dispatches its own ops,
  // so a split also splits the host's work. A CPU device is always priced
  // by the roofline.
  estimator::Runtime runtime = estimator::Runtime::kRoofline;
  estimator::Amp amp = estimator::Amp::kNone;
};

// What prices `cluster`'s ops unless told otherwise (`tessera plan`, the
// queue's splits): PyTorch eager, as the queue assumes a job runs, when
// every device is a GPU; the operator roofline otherwise.
estimator::Runtime DefaultRuntime(const Cluster& cluster);

// The Problem of `model`'s top-level graph on `cluster`: one op per node
// (Constant nodes included, at zero time; their values are weights), one
// profile per distinct DeviceSpec name in the cluster (priced by a runtime,
// per name and compute share), times from the estimator
// (estimator::OpSeconds or the runtime model; backward as
// estimator::ProfileModel counts it). Op names are the ONNX node names; a node
// without a name gets
// "<OpType>_<index>" (its index in the file's node list), and a name that
// is still taken gets "_<k>" appended for the smallest free k >= 1.
// kBadInput when an input has unbound symbolic dimensions (as profile).
Result<Problem> BuildProblem(const graph::Model& model, const Cluster& cluster,
                             const ProblemOptions& options);

}  // namespace tessera::placer

#endif  // TESSERA_PLACER_CORE_PROBLEM_H_
