#ifndef TESSERA_SCHEDULER_MPS_H_
#define TESSERA_SCHEDULER_MPS_H_

// The one rule for the CUDA MPS limits of a fractional share, used by every
// path that hands GPUs to a process: the local launcher's environment, the
// Slurm launcher's per-part environment and a Kubernetes pod's annotations.

#include <cstdint>
#include <span>
#include <string>

namespace tessera::scheduler {

struct MpsLimits {
  // CUDA_MPS_ACTIVE_THREAD_PERCENTAGE: the smallest share's compute in
  // whole percent, rounded up, at least 1 ("25" for 250 milli).
  std::string active_thread_percentage;
  // CUDA_MPS_PINNED_DEVICE_MEM_LIMIT: each GPU's memory by its position
  // among the visible devices ("0=8192M,1=4096M").
  std::string pinned_device_mem_limit;
};

// `milli` and `memory_mib` per GPU, in the order the process sees the GPUs
// (CUDA_VISIBLE_DEVICES); both non-empty and of one length.
MpsLimits MpsLimitsFor(std::span<const int> milli,
                       std::span<const int64_t> memory_mib);

}  // namespace tessera::scheduler

#endif  // TESSERA_SCHEDULER_MPS_H_
