// DecideOom (out_of_memory_internal.h).

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "service/measure/out_of_memory_internal.h"

namespace tessera::service::service_internal {

OomOutcome DecideOom(const scheduler::Job& job,
                     const std::optional<launch::OutOfMemory>& oom,
                     const OomHeld& held, bool asked, double headroom) {
  OomOutcome out;
  if (!asked) return out;
  if (job.oom_requeues > 0) {
    out.detail = "not put back again: it was once already";
    return out;
  }
  if (held.exclusive || held.gpus <= 0) {
    out.detail = "not put back: it held whole GPUs, all their memory";
    return out;
  }
  int64_t seen = job.usage.peak_mib / held.gpus;
  if (oom && oom->tried_mib) {
    seen = std::max(seen, held.per_gpu_mib + *oom->tried_mib);
  }
  if (seen <= held.per_gpu_mib) seen = held.per_gpu_mib + held.per_gpu_mib / 4;
  const auto raised = static_cast<int64_t>(
      std::ceil(static_cast<double>(seen) * (1 + headroom)));
  char pct[16];
  std::snprintf(pct, sizeof pct, "%g%%", headroom * 100);
  if (raised > held.largest_gpu_mib) {
    out.detail = "not put back: it needs " + std::to_string(raised) +
                 " MiB per GPU (seen " + std::to_string(seen) + " MiB + " +
                 pct + "), more than any GPU of its pool has (" +
                 std::to_string(held.largest_gpu_mib) + " MiB)";
    return out;
  }
  out.requeue = true;
  out.gpu_memory_mib = raised;
  out.detail = "reservation " + std::to_string(held.per_gpu_mib) + " -> " +
               std::to_string(raised) + " MiB per GPU (seen " +
               std::to_string(seen) + " MiB + " + pct + ")";
  return out;
}

}  // namespace tessera::service::service_internal
