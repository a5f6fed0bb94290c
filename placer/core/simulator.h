#ifndef TESSERA_PLACER_CORE_SIMULATOR_H_
#define TESSERA_PLACER_CORE_SIMULATOR_H_

// The single source of truth for a plan: an event-driven simulation of one
// step (forward, plus backward when training) of a Problem placed on a
// Cluster. Every algorithm is judged by it, and so is every benchmark.
//
// - An op runs on its device for Problem::Forward(op, d, share). A device
//   runs one op at a time; among its ready ops it starts the one with the
//   smallest `priority` (the placement's order; topological by default).
// - A tensor consumed on another device is sent once per destination
//   device, as soon as it is produced, costing latency + bytes / bandwidth;
//   each device has one send and one receive channel, and a transfer holds
//   the sender's send channel and the receiver's receive channel
//   (Baechi's model); transfers queue FIFO in the order they become ready.
// - Training: after the whole forward pass, each op's backward runs on its
//   forward op's device in reverse dependency order: it needs the gradient
//   of each of its outputs that has consumers (from every consumer's
//   backward, sent back over the links like forward tensors) and produces a
//   gradient for each activation input. Memory as in problem.h, plus:
//   forward activations stay until the backward of their last local
//   consumer (and of their producer) has run; a gradient lives from its
//   production until its producer's backward has run.
// - Microbatches (pipeline schedules): the step runs `microbatches` copies
//   of the graph, each op taking forward_s / M (launch overhead included in
//   the division: a documented simplification), activations / M each;
//   devices take ready work by (microbatch, priority), which gives the
//   GPipe fill-and-drain schedule for stage placements.

#include <cstdint>
#include <string>
#include <vector>

#include "placer/core/cluster.h"
#include "placer/core/problem.h"

namespace tessera::placer {

struct Placement {
  std::vector<uint16_t> device;    // per op: an index into Cluster::devices
  std::vector<uint32_t> priority;  // per op; empty: position in problem.topo
};

struct SimOptions {
  int microbatches = 1;
  bool record_ops = false;  // fill SimResult::op_records (for timelines)
};

struct DeviceStats {
  double busy_s = 0.0;
  int64_t peak_bytes = 0;
  OpId peak_op = kNoOp;      // the op running (or last started) at the peak
  int64_t weight_bytes = 0;  // resident weights (x state factor in training)
  int ops = 0;
};

struct LinkStats {
  int from = 0, to = 0;
  int64_t transfers = 0;
  int64_t bytes = 0;
  double busy_s = 0.0;
};

struct TransferRecord {
  uint32_t tensor = 0;
  int from = 0, to = 0;
  int64_t bytes = 0;
  double start_s = 0.0, end_s = 0.0;
  bool gradient = false;  // backward: a gradient sent back
  int microbatch = 0;
};

struct OpRecord {
  OpId op = 0;
  int device = 0;
  double start_s = 0.0, end_s = 0.0;
  bool backward = false;
  int microbatch = 0;
};

struct SimResult {
  double step_s = 0.0;
  std::vector<DeviceStats> devices;       // one per cluster device
  std::vector<LinkStats> links;           // only pairs that carried something
  std::vector<TransferRecord> transfers;  // every transfer, in start order
  std::vector<OpRecord> op_records;       // when SimOptions::record_ops
  int64_t transfer_bytes = 0;
  // True when no device's peak exceeds its memory_usable.
  bool fits = true;
};

// REQUIRES: placement.device has problem.num_ops() entries, each <
// cluster.size(); problem.device_profile has cluster.size() entries.
SimResult Simulate(const Problem& problem, const Cluster& cluster,
                   const Placement& placement, const SimOptions& options = {});

// max(the critical path with every op on its fastest device / microbatches,
// total work / total effective speed), communication ignored: no
// placement's simulated step with that many microbatches is shorter (one
// microbatch's path is 1/M of the whole batch's). Training counts backward
// work too.
double LowerBound(const Problem& problem, const Cluster& cluster,
                  int microbatches = 1);

// The ILP's time model of a placement (a relaxation of the simulator's):
// max(the busiest device's total op time, the longest path where each edge
// between devices costs the cheapest link's latency + bytes / bandwidth over
// all device pairs). Never more than Simulate(...).step_s for the same
// placement with microbatches 1. Training adds backward time to every op
// and the reverse path (same length).
double RelaxedStepTime(const Problem& problem, const Cluster& cluster,
                       const Placement& placement);

}  // namespace tessera::placer

#endif  // TESSERA_PLACER_CORE_SIMULATOR_H_
