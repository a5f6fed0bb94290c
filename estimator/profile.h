#ifndef TESSERA_ESTIMATOR_PROFILE_H_
#define TESSERA_ESTIMATOR_PROFILE_H_

// A model's profile on one device: every operator's cost and time, totals
// per operator class, peak memory and whether it fits. What `tessera
// profile` prints and what the placer's decisions rest on.

#include <array>
#include <optional>
#include <vector>

#include "estimator/device_catalog.h"
#include "estimator/memory_model.h"
#include "estimator/op_cost.h"
#include "estimator/runtime/runtime.h"
#include "estimator/time_model.h"

namespace tessera::estimator {

struct ProfileOptions {
  bool training = false;
  Optimizer optimizer = Optimizer::kAdam;
  double fragmentation = kDefaultFragmentation;
  TimeModel time_model = TimeModel::Defaults();
  // kRoofline (the default): operators timed alone, memory as the graph
  // says. Otherwise the runtime model (estimator/runtime/runtime.h) times the
  // step and follows memory; `runtime` carries its settings (training and
  // optimizer are taken from the fields above).
  RuntimeOptions runtime{.runtime = Runtime::kRoofline};
};

struct OpProfile {
  graph::NodeId node = graph::kNoNode;
  OpCost cost;           // forward
  double seconds = 0.0;  // forward, plus backward when training
};

struct ClassTotals {
  int64_t ops = 0, macs = 0, flops = 0, bytes = 0;
  double seconds = 0.0;
};

struct Profile {
  std::vector<OpProfile> ops;  // indexed by NodeId of the main graph
  std::array<ClassTotals, kNumOpClasses> classes{};
  int64_t macs = 0;      // forward
  int64_t flops = 0;     // per step: forward, plus backward when training
  double seconds = 0.0;  // per step
  double optimizer_seconds = 0.0;  // training: the weight update
  MemoryEstimate memory;
  int64_t headroom_bytes = 0;
  bool fits = false;
  int inexact_ops = 0;  // operators costed with a fallback or an unknown
  // Under a runtime model: its estimate (memory.total() is then its live
  // peak; headroom is added to the reserved peak); nullopt for kRoofline.
  std::optional<RuntimeEstimate> runtime;
  // The operator roofline's memory (what `memory` holds without a runtime),
  // kept under a runtime too: the placer sizes a split's parts with it.
  MemoryEstimate roofline_memory;
  // What a queue must reserve on one GPU for this job: the runtime's
  // reserved peak, or the model's need, plus headroom.
  int64_t reserve_bytes() const;
};

// Backward costs this many times the forward FLOPs for matrix and
// convolution work (one product for the input's gradient, one for the
// weight's); other operators' backward is about as expensive as forward.
inline constexpr int64_t kMatrixBackwardFactor = 2;
inline constexpr int64_t kOtherBackwardFactor = 1;

// Backward's cost as a multiple of forward's for operators of class `c`
// (kMatrixBackwardFactor or kOtherBackwardFactor).
int64_t BackwardFactor(OpClass c);

// kBadInput naming the first input of `g` with unbound (symbolic)
// dimensions and how to bind it; costing needs every input bound.
Status CheckInputsBound(const graph::OpGraph& g);

// Profiles `model` on `device`. A graph input with unbound (symbolic)
// dimensions blocks costing: kBadInput naming the input and how to bind it.
Result<Profile> ProfileModel(const graph::Model& model,
                             const DeviceSpec& device,
                             const ProfileOptions& options);

// The element type an operator computes in: that of its first input, or of
// its first output for operators without inputs.
graph::DataType ComputeType(const graph::OpGraph& g, graph::NodeId n);

}  // namespace tessera::estimator

#endif  // TESSERA_ESTIMATOR_PROFILE_H_
