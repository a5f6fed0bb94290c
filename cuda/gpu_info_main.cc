// tessera-gpu-info: what CUDA devices this machine has, or why none.
#include <cstdio>

#include "cuda/device_query.h"

int main() {
  const tessera::cuda::DeviceQuery q = tessera::cuda::QueryDevices();
  if (q.devices.empty()) {
    std::printf("no GPU: %s\n", q.no_gpu_reason.c_str());
    return 0;
  }
  for (const auto& d : q.devices) {
    std::printf(
        "gpu%d  %s  %.1f GiB  sm_%d%d  %d SMs  %.0f GB/s peak\n", d.index,
        d.name.c_str(), static_cast<double>(d.memory_bytes) / (1 << 30),
        d.compute_major, d.compute_minor, d.sm_count,
        2.0 * d.memory_clock_khz * 1e3 * (d.memory_bus_bits / 8.0) / 1e9);
  }
  return 0;
}
