#ifndef TESSERA_LAUNCH_GPU_USAGE_H_
#define TESSERA_LAUNCH_GPU_USAGE_H_

// What the GPUs of this machine are really used for (issue 31, "Usage,
// measured"): a probe reads each GPU's memory and utilisation and the
// device memory of each process on it; a meter adds the readings up per
// job, from the processes each job runs.
//
// The probe over NVML loads libnvidia-ml.so.1 at run time (dlopen), so
// nothing needs a GPU or the driver to build or to test: without the
// library OpenNvml says so (kUnavailable) and the service runs without
// measurements. Tests give the meter readings of their own.

#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "common/result.h"
#include "scheduler/job.h"

namespace tessera::launch {

using scheduler::JobId;

struct GpuReading {
  int index = 0;  // as the driver numbers them (nvidia-smi's)
  int64_t used_mib = 0, total_mib = 0;
  int utilization_pct = 0;  // kernels running, over the driver's last period
};
struct ProcessReading {
  int gpu = 0;  // GpuReading::index
  uint32_t pid = 0;
  int64_t used_mib = 0;  // its device memory (an MPS client's under MPS)
};
struct GpuReadings {
  std::vector<GpuReading> gpus;
  std::vector<ProcessReading> processes;
};

class GpuProbe {
 public:
  virtual ~GpuProbe() = default;
  virtual Result<GpuReadings> Read() = 0;
};

// A probe over NVML (`library`, found by the dynamic loader's search):
// kUnavailable naming the library and the loader's reason when it is not
// there or has not the functions used.
Result<std::unique_ptr<GpuProbe>> OpenNvml(
    const std::string& library = "libnvidia-ml.so.1");

// One job's measured use so far.
struct JobUsage {
  int64_t last_mib = 0;  // device memory of its processes, last reading
  int64_t peak_mib = 0;  // the most of it in any reading
  // The mean utilisation of the GPUs its processes used, over readings.
  double mean_utilization_pct = 0;
  int readings = 0;
};

// The processes of each session in `sessions` (a session's id is its
// leader's pid: the local launcher starts each job with setsid, so a job's
// whole process tree is its session), read from /proc. A session with no
// live process is absent.
std::map<int64_t, std::set<uint32_t>> SessionProcesses(
    const std::set<int64_t>& sessions);

class UsageMeter {
 public:
  // Adds `r` to the jobs whose processes (pids, the job's whole process
  // tree) `pids` lists. A process of no listed job is nobody's.
  void Add(const GpuReadings& r,
           const std::map<JobId, std::set<uint32_t>>& pids);
  // The use measured for `id` (all zero before its first reading).
  JobUsage Of(JobId id) const;
  void Forget(JobId id) { jobs_.erase(id); }

 private:
  struct Sums {
    JobUsage usage;
    double utilization_sum = 0;
  };
  std::map<JobId, Sums> jobs_;
};

}  // namespace tessera::launch

#endif  // TESSERA_LAUNCH_GPU_USAGE_H_
