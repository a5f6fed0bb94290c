#ifndef TESSERA_SIM_REPLAY_H_
#define TESSERA_SIM_REPLAY_H_

// Trace replay, snapshot mode: the experiment of Weng et al. (ATC'23) on
// the queue's own admission code (FindAllocation with a named scorer).
// Pods of a trace arrive one at a time, in a seeded shuffle of the pod list
// followed by seeded draws with replacement, until their GPU requests reach
// `inflation_pct` of the cluster's GPUs; they never leave; a pod that fits
// nowhere fails and the run goes on. The allocation ratio is read where the
// arrived requests first reach each level. docs/simulate.md has the details.

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "common/stats.h"
#include "scheduler/fragmentation.h"
#include "scheduler/topology.h"
#include "sim/trace.h"

namespace tessera::sim {

struct SnapshotOptions {
  std::string scorer = "fgd";  // ScorerNames()
  int seeds = 10;
  uint64_t first_seed = 42;  // seeds first_seed, first_seed + 1, ...
  double inflation_pct = 130;
  std::vector<int> levels_pct = {80, 90, 100, 110, 120};
  int threads = 0;  // 0: one per core (never more than seeds)
  // The typical tasks fgd and tessera descend and the fragmentation ratio
  // is measured with. Default: those of the pod list itself.
  const Workload* workload = nullptr;
  // Also compute the physical limit at each level (replay_bound.h); it
  // depends on the seed, not the policy.
  bool bound = false;
  // Pods decided together per round (1: one at a time, as the paper). A
  // round holds up to this many consecutive arrivals and also ends where
  // arrival reaches a level, so every level is read with every arrived pod
  // decided (a curve point passed inside a round is read at its end).
  // Within a round the pods go in decreasing order of the GPU milli they
  // ask (ties: arrival order), each to the policy's best node or failed
  // where it fits nowhere.
  int round_pods = 1;
  // Rounds of more than one pod then place each of their fractions once
  // more, smallest first: released and re-scored on the cluster the whole
  // round left (none of the round has started, so nothing running moves),
  // and the round's failed pods are tried again. False: largest first
  // only (docs/simulate.md, "Rounds").
  bool repack_rounds = true;
  // Idle GPUs kept for whole-GPU pods (0: none). The reserve is this share
  // of the GPUs times the share of the pods' GPU milli that whole one-GPU
  // pods ask; once no more idle GPUs than that are left on nodes with the
  // CPU and memory the workload asks per GPU, a fraction that would open
  // one of them fails instead (docs/simulate.md, "Keeping idle GPUs").
  double reserve_share = 0;
};

// The cluster when the arrived GPU requests first reached a level.
struct LevelPoint {
  int level_pct = 0;
  bool reached = false;      // false: the run ended below it
  double arrived_pct = 0;    // arrived GPU requests / capacity
  double alloc_pct = 0;      // allocated GPU / capacity
  double frag_pct = 0;       // fragmented / idle GPU (fragmentation.h)
  int64_t failed_pods = 0;   // pods that fitted nowhere so far
  double failed_gpus = 0;    // their GPU requests, in GPUs
  int64_t arrived_pods = 0;  // pods arrived so far (draws counted again)
  // The most any placement could allocate of the pods arrived so far, %
  // of capacity (options.bound; -1 otherwise).
  double bound_pct = -1;
};

struct SnapshotRun {
  uint64_t seed = 0;
  std::vector<LevelPoint> levels;  // as options.levels_pct
  // (arrived %, allocated %) each time arrival passes a whole percent.
  std::vector<std::pair<double, double>> curve;
  int64_t pods = 0, failed_pods = 0;
  double seconds = 0;  // wall time of this seed (RunSnapshot: without limits)
  // What went wrong on the way without stopping the run, for the user: a
  // physical limit whose solve failed (the GPUs' capacity stands in).
  std::vector<std::string> notes;
};

// One seed, on this thread. `pods` must be non-empty. With options.bound
// it also solves the limits, each in a forked child: call it so only where
// no other thread of the process is running (RunSnapshot does not).
SnapshotRun RunSnapshotSeed(const Topology& topology,
                            const std::vector<TracePod>& pods,
                            const Workload& workload,
                            const SnapshotOptions& options, uint64_t seed);

// Every seed, in parallel. `progress` (may be empty) is called after each
// seed with the number done, from the worker threads one at a time. The
// physical limits (options.bound) are solved after the seeds, on the
// calling thread: each solve is a forked child, and a child forked while
// other threads run may deadlock on a lock one of them held (it did under
// AddressSanitizer).
// kBadInput for an unknown scorer, no pods, a cluster without GPUs, or a
// reserve_share outside [0, 1].
Result<std::vector<SnapshotRun>> RunSnapshot(
    const Topology& topology, const std::vector<TracePod>& pods,
    const SnapshotOptions& options,
    const std::function<void(int done)>& progress = {});

// The mean and range over seeds of `value(run)`.
template <typename F>
MeanRange OverSeeds(const std::vector<SnapshotRun>& runs, F value) {
  std::vector<double> values;
  values.reserve(runs.size());
  for (const SnapshotRun& r : runs) values.push_back(value(r));
  return MeanRangeOf(values);
}

// The physical limit at level `l` (it depends on the seed only), mean over
// the seeds of `runs`.
double PhysicalLimitAt(const std::vector<SnapshotRun>& runs, size_t l);

// The GPU milli of the cluster.
int64_t GpuCapacityMilli(const Topology& topology);

}  // namespace tessera::sim

#endif  // TESSERA_SIM_REPLAY_H_
