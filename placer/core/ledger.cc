// MemoryLedger: the conservative per-device memory count every algorithm
// plans with (rules in ledger_internal.h).

#include "placer/core/ledger_internal.h"

#include <algorithm>

namespace tessera::placer {
namespace {

bool UseMask(int num_devices) { return num_devices <= 64; }

uint64_t Key(uint32_t tensor, int d) {
  return (static_cast<uint64_t>(tensor) << 16) | static_cast<uint64_t>(d);
}

}  // namespace

MemoryLedger::MemoryLedger(const Problem& problem, int num_devices,
                           Accounting accounting)
    : p_(problem),
      num_devices_(num_devices),
      live_mode_(accounting == Accounting::kLiveness && !problem.training) {
  if (live_mode_) {
    static_.assign(num_devices, 0);
    live_.assign(num_devices, 0);
    peak_.assign(num_devices, 0);
    remaining_.resize(p_.num_tensors());
    for (uint32_t t = 0; t < p_.num_tensors(); ++t) {
      remaining_[t] = static_cast<uint32_t>(p_.consumers(t).size());
    }
  }
  device_.assign(p_.num_ops(), kUnplaced);
  base_.assign(num_devices, 0);
  max_workspace_.assign(num_devices, 0);
  max_tensor_.assign(num_devices, 0);
  if (UseMask(num_devices)) mask_.assign(p_.num_tensors(), 0);
}

void MemoryLedger::Reset() {
  std::fill(device_.begin(), device_.end(), kUnplaced);
  std::fill(base_.begin(), base_.end(), 0);
  std::fill(max_workspace_.begin(), max_workspace_.end(), 0);
  std::fill(max_tensor_.begin(), max_tensor_.end(), 0);
  std::fill(mask_.begin(), mask_.end(), 0);
  held_.clear();
  if (live_mode_) {
    std::fill(static_.begin(), static_.end(), 0);
    std::fill(live_.begin(), live_.end(), 0);
    std::fill(peak_.begin(), peak_.end(), 0);
    for (uint32_t t = 0; t < p_.num_tensors(); ++t) {
      remaining_[t] = static_cast<uint32_t>(p_.consumers(t).size());
    }
  }
}

bool MemoryLedger::Holds(uint32_t tensor, int d) const {
  if (UseMask(num_devices_)) return (mask_[tensor] >> d) & 1u;
  return held_.count(Key(tensor, d)) != 0;
}

void MemoryLedger::Mark(uint32_t tensor, int d) {
  if (UseMask(num_devices_)) {
    mask_[tensor] |= uint64_t{1} << d;
  } else {
    held_.insert(Key(tensor, d));
  }
}

int64_t MemoryLedger::used(int d) const {
  if (live_mode_) return static_[d] + peak_[d];
  return base_[d] + max_workspace_[d] + (p_.training ? 2 * max_tensor_[d] : 0);
}

int64_t MemoryLedger::LiveUsedIfPlaced(OpId op, int d) const {
  int64_t add_static = p_.extra_bytes[op];
  int64_t during = live_[d] + p_.workspace_bytes[op];
  for (uint32_t t : p_.outputs(op)) {
    if (p_.tensors[t].role == TensorRole::kActivation) {
      during += p_.tensors[t].bytes;
    }
  }
  for (uint32_t t : p_.inputs(op)) {
    const ProblemTensor& tensor = p_.tensors[t];
    if (Holds(t, d)) continue;
    if (tensor.role == TensorRole::kActivation) {
      if (tensor.producer != kNoOp && device_[tensor.producer] != d) {
        during += tensor.bytes;
      }
    } else {
      add_static += tensor.bytes;  // a weight or a graph input
    }
  }
  return static_[d] + add_static + std::max(peak_[d], during);
}

void MemoryLedger::FreeEverywhere(uint32_t t) {
  const ProblemTensor& tensor = p_.tensors[t];
  if (tensor.output || tensor.producer == kNoOp) return;
  const int home = device_[tensor.producer];
  live_[home] -= tensor.bytes;
  for (int d = 0; d < num_devices_; ++d) {
    if (d != home && Holds(t, d)) live_[d] -= tensor.bytes;
  }
}

void MemoryLedger::LivePlace(OpId op, int d) {
  const int64_t after = LiveUsedIfPlaced(op, d);
  int64_t added_live = 0;
  for (uint32_t t : p_.outputs(op)) {
    if (p_.tensors[t].role == TensorRole::kActivation) {
      added_live += p_.tensors[t].bytes;
    }
  }
  for (uint32_t t : p_.inputs(op)) {
    const ProblemTensor& tensor = p_.tensors[t];
    if (Holds(t, d)) continue;
    if (tensor.role == TensorRole::kActivation) {
      if (tensor.producer != kNoOp && device_[tensor.producer] != d) {
        added_live += tensor.bytes;
        Mark(t, d);
      }
    } else {
      Mark(t, d);
    }
  }
  device_[op] = static_cast<uint16_t>(d);
  live_[d] += added_live;
  peak_[d] = std::max(peak_[d], live_[d] + p_.workspace_bytes[op]);
  static_[d] = after - peak_[d];
  for (uint32_t t : p_.inputs(op)) {
    if (p_.tensors[t].role != TensorRole::kActivation) continue;
    if (remaining_[t] > 0 && --remaining_[t] == 0) FreeEverywhere(t);
  }
  for (uint32_t t : p_.outputs(op)) {
    if (p_.tensors[t].role == TensorRole::kActivation &&
        p_.consumers(t).empty()) {
      FreeEverywhere(t);
    }
  }
}

int64_t MemoryLedger::UsedIfPlaced(OpId op, int d) const {
  if (live_mode_) return LiveUsedIfPlaced(op, d);
  int64_t add = p_.extra_bytes[op];
  int64_t largest = max_tensor_[d];
  for (uint32_t t : p_.outputs(op)) {
    const ProblemTensor& tensor = p_.tensors[t];
    if (tensor.role != TensorRole::kActivation) continue;
    add += tensor.bytes;
    largest = std::max(largest, tensor.bytes);
  }
  for (uint32_t t : p_.inputs(op)) {
    const ProblemTensor& tensor = p_.tensors[t];
    if (Holds(t, d)) continue;
    switch (tensor.role) {
      case TensorRole::kWeight:
        add += p_.training
                   ? static_cast<int64_t>(static_cast<double>(tensor.bytes) *
                                          p_.weight_state_factor)
                   : tensor.bytes;
        break;
      case TensorRole::kInput:
        add += tensor.bytes;
        break;
      case TensorRole::kActivation:
        if (tensor.producer != kNoOp && device_[tensor.producer] != d) {
          add += tensor.bytes;
          largest = std::max(largest, tensor.bytes);
        }
        break;
    }
  }
  const int64_t workspace = std::max(max_workspace_[d], p_.workspace_bytes[op]);
  return base_[d] + add + workspace + (p_.training ? 2 * largest : 0);
}

void MemoryLedger::Place(OpId op, int d) {
  if (live_mode_) {
    LivePlace(op, d);
    return;
  }
  const int64_t after = UsedIfPlaced(op, d);
  for (uint32_t t : p_.outputs(op)) {
    const ProblemTensor& tensor = p_.tensors[t];
    if (tensor.role != TensorRole::kActivation) continue;
    max_tensor_[d] = std::max(max_tensor_[d], tensor.bytes);
    Mark(t, d);
  }
  for (uint32_t t : p_.inputs(op)) {
    const ProblemTensor& tensor = p_.tensors[t];
    if (tensor.role == TensorRole::kActivation &&
        (tensor.producer == kNoOp || device_[tensor.producer] == d)) {
      continue;
    }
    if (tensor.role == TensorRole::kActivation) {
      max_tensor_[d] = std::max(max_tensor_[d], tensor.bytes);
    }
    Mark(t, d);
  }
  max_workspace_[d] = std::max(max_workspace_[d], p_.workspace_bytes[op]);
  device_[op] = static_cast<uint16_t>(d);
  base_[d] = after - max_workspace_[d] - (p_.training ? 2 * max_tensor_[d] : 0);
}

// UsedIfPlaced - used adds, in either accounting, only terms for op's
// own tensors not yet on d (each at most its bytes, weights times the
// state factor when training), its workspace (in place of a smaller
// maximum, or on top of the live bytes, which never exceed the peak) and,
// when training, twice the growth of the largest activation.
int64_t MemoryLedger::GrowthBound(OpId op) const {
  int64_t largest = 0;
  for (uint32_t t : p_.outputs(op)) {
    if (p_.tensors[t].role == TensorRole::kActivation) {
      largest = std::max(largest, p_.tensors[t].bytes);
    }
  }
  for (uint32_t t : p_.inputs(op)) {
    if (p_.tensors[t].role == TensorRole::kActivation) {
      largest = std::max(largest, p_.tensors[t].bytes);
    }
  }
  return StandaloneBytes(p_, op) + (p_.training ? 2 * largest : 0);
}

int64_t WholeModelBytes(const Problem& problem) {
  MemoryLedger all(problem, 1);
  for (OpId op : problem.topo) all.Place(op, 0);
  return all.used(0);
}

int64_t StandaloneBytes(const Problem& problem, OpId op) {
  int64_t bytes = problem.extra_bytes[op] + problem.workspace_bytes[op];
  for (uint32_t t : problem.outputs(op)) {
    if (problem.tensors[t].role == TensorRole::kActivation) {
      bytes += problem.tensors[t].bytes;
    }
  }
  for (uint32_t t : problem.inputs(op)) {
    const ProblemTensor& tensor = problem.tensors[t];
    bytes += tensor.role == TensorRole::kWeight && problem.training
                 ? static_cast<int64_t>(static_cast<double>(tensor.bytes) *
                                        problem.weight_state_factor)
                 : tensor.bytes;
  }
  return bytes;
}

}  // namespace tessera::placer
