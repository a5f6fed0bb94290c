#include "scheduler/mps.h"

#include <algorithm>

#include "scheduler/job.h"

namespace tessera::scheduler {

MpsLimits MpsLimitsFor(std::span<const int> milli,
                       std::span<const int64_t> memory_mib) {
  MpsLimits out;
  int least = kFullGpuMilli;
  for (const int m : milli) least = std::min(least, m);
  out.active_thread_percentage = std::to_string(std::max(1, (least + 9) / 10));
  for (size_t i = 0; i < memory_mib.size(); ++i) {
    out.pinned_device_mem_limit += (i ? "," : "") + std::to_string(i) + "=" +
                                   std::to_string(memory_mib[i]) + "M";
  }
  return out;
}

}  // namespace tessera::scheduler
