#include "cuda/device_query.h"

#include <cuda_runtime.h>

namespace tessera::cuda {

DeviceQuery QueryDevices() {
  DeviceQuery q;
  int count = 0;
  const cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess) {
    q.no_gpu_reason = std::string("cudaGetDeviceCount: ") +
                      cudaGetErrorString(err) + " (error " +
                      std::to_string(static_cast<int>(err)) + ")";
    return q;
  }
  if (count == 0) q.no_gpu_reason = "no CUDA device";
  for (int i = 0; i < count; ++i) {
    cudaDeviceProp p{};
    if (cudaGetDeviceProperties(&p, i) != cudaSuccess) continue;
    DeviceInfo d;
    d.index = i;
    d.name = p.name;
    d.memory_bytes = static_cast<int64_t>(p.totalGlobalMem);
    d.sm_count = p.multiProcessorCount;
    d.compute_major = p.major;
    d.compute_minor = p.minor;
    int clock = 0, bus = 0;
    cudaDeviceGetAttribute(&clock, cudaDevAttrMemoryClockRate, i);
    cudaDeviceGetAttribute(&bus, cudaDevAttrGlobalMemoryBusWidth, i);
    d.memory_clock_khz = clock;
    d.memory_bus_bits = bus;
    q.devices.push_back(d);
  }
  return q;
}

}  // namespace tessera::cuda
