#ifndef TESSERA_PLACER_CORE_LEDGER_INTERNAL_H_
#define TESSERA_PLACER_CORE_LEDGER_INTERNAL_H_

// Internal: the memory accounting every algorithm plans with. Conservative
// for inference: every activation an op produces or receives stays counted
// on its device (the simulator frees them, so its peak is never higher).
// Per device:
//   resident weights (each weight tensor once per device, x the weight
//   state factor in training)
//   + outputs of its ops + received copies of remote inputs + graph inputs
//   it consumes + extra_bytes of its ops
//   + the largest workspace of its ops
//   + training: twice the largest tensor it produces or receives (the
//     gradients in flight during backward; the simulator checks the rest).
// Ops must be placed after their producers (any topological order).
//
// Liveness accounting (Accounting::kLiveness, inference only; the list
// schedulers and m-topo use it): activations are counted from their
// producer's placement until their last consumer anywhere is placed, the
// way the simulator frees them when devices run ops in placement order; a
// device's count is the peak of that live set (+ the running op's
// workspace) on top of its weights, graph inputs and extra bytes. Not an
// upper bound on the simulator's peak (a device may run ops in another
// order than they were placed), so the driver's simulation and budget
// retries catch what it misses. Conservative accounting made GPT-2's
// inference count 5.5 GiB where its simulated peak is under 1 GiB.

#include <cstdint>
#include <unordered_set>
#include <vector>

#include "placer/core/problem.h"

namespace tessera::placer {

inline constexpr uint16_t kUnplaced = UINT16_MAX;

enum class Accounting { kConservative, kLiveness };

class MemoryLedger {
 public:
  // Training always uses conservative accounting.
  MemoryLedger(const Problem& problem, int num_devices,
               Accounting accounting = Accounting::kConservative);

  // The bytes device `d` would hold after placing `op` there. REQUIRES: the
  // producers of op's inputs are placed.
  int64_t UsedIfPlaced(OpId op, int d) const;
  bool Fits(OpId op, int d, int64_t budget) const {
    return UsedIfPlaced(op, d) <= budget;
  }
  // At least UsedIfPlaced(op, d) - used(d) on every device, whatever is
  // placed: what `op` needs if no tensor of it were there yet (its
  // standalone bytes, plus twice its largest activation when training).
  // used(d) + GrowthBound(op) <= budget answers Fits without looking at
  // what d holds.
  int64_t GrowthBound(OpId op) const;
  void Place(OpId op, int d);
  // Removes every op; keeps the allocations.
  void Reset();

  int64_t used(int d) const;
  uint16_t device_of(OpId op) const { return device_[op]; }
  const std::vector<uint16_t>& devices() const { return device_; }

 private:
  bool Holds(uint32_t tensor, int d) const;
  void Mark(uint32_t tensor, int d);
  int64_t LiveUsedIfPlaced(OpId op, int d) const;
  void LivePlace(OpId op, int d);
  void FreeEverywhere(uint32_t tensor);

  const Problem& p_;
  int num_devices_;
  std::vector<uint16_t> device_;  // per op
  std::vector<int64_t> base_;     // per device: everything but workspace
  std::vector<int64_t> max_workspace_, max_tensor_;  // per device
  // (tensor, device) pairs a device holds (weights, received copies,
  // inputs): a bitmask per tensor when devices <= 64, else a set.
  std::vector<uint64_t> mask_;
  std::unordered_set<uint64_t> held_;
  // Liveness accounting.
  bool live_mode_ = false;
  std::vector<int64_t> static_, live_, peak_;  // per device
  std::vector<uint32_t> remaining_;  // per tensor: consumers not yet placed
};

// The conservative count with every op of `problem` on one device: what
// tessera counts for the whole model.
int64_t WholeModelBytes(const Problem& problem);

// The bytes `op` needs on a device by itself: its weights (x state factor),
// inputs, outputs, extra and workspace. No placement can do with less.
int64_t StandaloneBytes(const Problem& problem, OpId op);

}  // namespace tessera::placer

#endif  // TESSERA_PLACER_CORE_LEDGER_INTERNAL_H_
