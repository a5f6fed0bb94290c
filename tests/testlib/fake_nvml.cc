// A stand-in for libnvidia-ml.so.1 with the NVML calls tessera's probe
// uses (launch/gpu_usage.cc), so that tests load the probe for real
// (dlopen, dlsym) on machines without a GPU. What it reports comes from
// the file named by TESSERA_FAKE_NVML_READINGS, read again at every
// nvmlDeviceGetCount_v2 (once per probe reading), one item per line:
//   gpu INDEX USED_MIB TOTAL_MIB UTILIZATION_PCT
//   proc GPU PID USED_MIB     a compute process
//   mps GPU PID USED_MIB      an MPS client
// Indices must be 0..n-1 in order. No file, or an unreadable one: no GPU.
// TESSERA_FAKE_NVML_FAIL_INIT=1 makes nvmlInit_v2 fail (error 9).

#include <cstdlib>
#include <fstream>
#include <mutex>
#include <sstream>
#include <string>
#include <vector>

namespace {

struct Gpu {
  unsigned long long used = 0, total = 0;
  unsigned int utilization = 0;
};
struct Process {
  int gpu = 0;
  unsigned int pid = 0;
  unsigned long long used = 0;
  bool mps = false;
};
struct MemoryInfo {
  unsigned long long total, free, used;
};
struct Utilization {
  unsigned int gpu, memory;
};
struct ProcessInfo {
  unsigned int pid;
  unsigned long long used_gpu_memory;
  unsigned int gpu_instance_id, compute_instance_id;
};

std::mutex mu;
std::vector<Gpu> gpus;
std::vector<Process> processes;

void Load() {
  std::lock_guard lock(mu);
  gpus.clear();
  processes.clear();
  const char* path = std::getenv("TESSERA_FAKE_NVML_READINGS");
  if (path == nullptr) return;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream words(line);
    std::string kind;
    words >> kind;
    constexpr unsigned long long kMiB = 1ULL << 20;
    if (kind == "gpu") {
      int index = 0;
      unsigned long long used = 0, total = 0;
      Gpu g;
      if (words >> index >> used >> total >> g.utilization) {
        g.used = used * kMiB;
        g.total = total * kMiB;
        gpus.push_back(g);
      }
    } else if (kind == "proc" || kind == "mps") {
      Process p;
      unsigned long long used = 0;
      if (words >> p.gpu >> p.pid >> used) {
        p.used = used * kMiB;
        p.mps = kind == "mps";
        processes.push_back(p);
      }
    }
  }
}

int List(void* device, unsigned int* count, ProcessInfo* out, bool mps) {
  std::lock_guard lock(mu);
  const int gpu = static_cast<int>(reinterpret_cast<long>(device)) - 1;
  std::vector<ProcessInfo> found;
  for (const Process& p : processes) {
    if (p.gpu == gpu && p.mps == mps) found.push_back({p.pid, p.used, 0, 0});
  }
  if (found.size() > *count) {
    *count = static_cast<unsigned int>(found.size());
    return 7;  // NVML_ERROR_INSUFFICIENT_SIZE
  }
  *count = static_cast<unsigned int>(found.size());
  for (size_t i = 0; i < found.size(); ++i) out[i] = found[i];
  return 0;
}

}  // namespace

extern "C" {

int nvmlInit_v2() {
  const char* fail = std::getenv("TESSERA_FAKE_NVML_FAIL_INIT");
  return fail != nullptr && std::string(fail) == "1" ? 9 : 0;
}
int nvmlShutdown() { return 0; }
int nvmlDeviceGetCount_v2(unsigned int* count) {
  Load();
  std::lock_guard lock(mu);
  *count = static_cast<unsigned int>(gpus.size());
  return 0;
}
int nvmlDeviceGetHandleByIndex_v2(unsigned int index, void** device) {
  std::lock_guard lock(mu);
  if (index >= gpus.size()) return 2;  // NVML_ERROR_INVALID_ARGUMENT
  *device = reinterpret_cast<void*>(static_cast<long>(index) + 1);
  return 0;
}
int nvmlDeviceGetMemoryInfo(void* device, MemoryInfo* m) {
  std::lock_guard lock(mu);
  const size_t i = static_cast<size_t>(reinterpret_cast<long>(device)) - 1;
  if (i >= gpus.size()) return 2;
  *m = {gpus[i].total, gpus[i].total - gpus[i].used, gpus[i].used};
  return 0;
}
int nvmlDeviceGetUtilizationRates(void* device, Utilization* u) {
  std::lock_guard lock(mu);
  const size_t i = static_cast<size_t>(reinterpret_cast<long>(device)) - 1;
  if (i >= gpus.size()) return 2;
  *u = {gpus[i].utilization, 0};
  return 0;
}
int nvmlDeviceGetComputeRunningProcesses_v3(void* device, unsigned int* count,
                                            ProcessInfo* out) {
  return List(device, count, out, false);
}
int nvmlDeviceGetMPSComputeRunningProcesses_v3(void* device,
                                               unsigned int* count,
                                               ProcessInfo* out) {
  return List(device, count, out, true);
}

}  // extern "C"
