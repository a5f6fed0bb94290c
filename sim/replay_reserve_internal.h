#ifndef TESSERA_SIM_REPLAY_RESERVE_INTERNAL_H_
#define TESSERA_SIM_REPLAY_RESERVE_INTERNAL_H_

// Idle GPUs kept for whole-GPU pods in the snapshot replay
// (SnapshotOptions::reserve_share, docs/simulate.md "Keeping idle GPUs").
// Late in a replay the pods that fail are whole-GPU pods that find no idle
// GPU left, while fractions took the last ones (an 810-milli pod alone on
// a GPU keeps 190 milli no typical task fills); the physical limit drops
// fractions instead. The reserve counts the idle GPUs a whole GPU pod
// could still use, those on nodes with the CPU and host memory free that
// the workload asks per GPU, and once no more than its size are left a fraction
// that would open one of them fails instead (the snapshot has no queue to wait
// in).

#include <cstdint>
#include <vector>

#include "scheduler/job.h"
#include "scheduler/topology.h"
#include "sim/trace.h"

namespace tessera::sim {

class IdleReserve {
 public:
  // `per_gpu`: the CPU milli and host memory a node needs free for its idle
  // GPUs to count; `keep`: the reserve's size, in GPUs.
  struct Need {
    double cpu_milli = 0;
    double memory_mib = 0;
  };
  IdleReserve(const scheduler::ClusterState& state, Need per_gpu, double keep);

  // Whether `pod` (a fraction of one GPU) may not take `a`: it would open
  // an idle GPU that counts while no more than `keep` of them are left.
  // Whole-GPU pods are never refused.
  bool Refuses(const scheduler::ClusterState& state, const TracePod& pod,
               const scheduler::Allocation& a) const;
  // To be called after each reservation or release of `a`.
  void Update(const scheduler::ClusterState& state,
              const scheduler::Allocation& a);
  // The idle GPUs that count now.
  int64_t idle() const { return idle_; }

 private:
  bool Counts(const scheduler::ClusterState& state, int gpu) const;
  int CountOn(const scheduler::ClusterState& state, int node) const;

  Need need_;
  double keep_;
  std::vector<int> on_node_;  // counted idle GPUs per node
  int64_t idle_ = 0;
};

// The reserve's size for `share` (SnapshotOptions::reserve_share): that
// share of the cluster's GPUs, times the share of the pods' GPU milli that
// whole one-GPU pods ask (0 where the pods ask none: nothing to keep for).
double ReserveGpus(const std::vector<TracePod>& pods, double share,
                   size_t gpus);

}  // namespace tessera::sim

#endif  // TESSERA_SIM_REPLAY_RESERVE_INTERNAL_H_
