#ifndef TESSERA_CUDA_DEVICE_QUERY_H_
#define TESSERA_CUDA_DEVICE_QUERY_H_

// Lists the CUDA devices of this machine. Any CUDA error (no driver, no
// device, an old driver) means "no GPU": the caller gets an empty list and
// the reason, never a crash.

#include <cstdint>
#include <string>
#include <vector>

namespace tessera::cuda {

struct DeviceInfo {
  int index = 0;
  std::string name;
  int64_t memory_bytes = 0;
  int sm_count = 0;
  int compute_major = 0, compute_minor = 0;
  double memory_clock_khz = 0;
  int memory_bus_bits = 0;
};

struct DeviceQuery {
  std::vector<DeviceInfo> devices;
  std::string no_gpu_reason;  // set when devices is empty
};

DeviceQuery QueryDevices();

}  // namespace tessera::cuda

#endif  // TESSERA_CUDA_DEVICE_QUERY_H_
