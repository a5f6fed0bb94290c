#ifndef TESSERA_SERVICE_MEASURE_OUT_OF_MEMORY_INTERNAL_H_
#define TESSERA_SERVICE_MEASURE_OUT_OF_MEMORY_INTERNAL_H_

// What becomes of a job that ran out of GPU memory (issue 31;
// docs/operations.md, "Out of memory"): it ends `oom`, or, when it asked
// (on_oom: requeue, its own or its pool's), goes back to the queue once
// with its reservation raised to what it was seen to need plus the
// headroom. Internal to service/.

#include <cstdint>
#include <optional>
#include <string>

#include "launch/out_of_memory.h"
#include "scheduler/job.h"

namespace tessera::service::service_internal {

struct OomHeld {
  int64_t per_gpu_mib = 0;  // the memory it held on each GPU (its cap)
  int gpus = 0;
  bool exclusive = false;       // whole GPUs: no cap to raise
  int64_t largest_gpu_mib = 0;  // the largest GPU of its pool
};

struct OomOutcome {
  bool requeue = false;
  int64_t gpu_memory_mib = 0;  // per GPU, when requeued
  // For the event: "reservation 2048 -> 3226 MiB per GPU (seen 3072 MiB
  // + 5%)", or why it is not put back.
  std::string detail;
};

// The rule. Seen to need, per GPU: the most of the sampler's peak (over
// its GPUs) and what it held plus what the failed allocation asked for;
// when neither says more than its cap, the cap plus a quarter. Requeued
// when asked, at most once per job, never for whole GPUs, never past the
// largest GPU of its pool.
OomOutcome DecideOom(const scheduler::Job& job,
                     const std::optional<launch::OutOfMemory>& oom,
                     const OomHeld& held, bool asked, double headroom);

}  // namespace tessera::service::service_internal

#endif  // TESSERA_SERVICE_MEASURE_OUT_OF_MEMORY_INTERNAL_H_
