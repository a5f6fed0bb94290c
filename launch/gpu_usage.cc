// UsageMeter, and the NVML probe (gpu_usage.h). NVML is loaded with
// dlopen; its few types are declared here as the NVML API documents them
// (nvml.h is not needed to build).
#include "launch/gpu_usage.h"

#include <dlfcn.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace tessera::launch {

void UsageMeter::Add(const GpuReadings& r,
                     const std::map<JobId, std::set<uint32_t>>& pids) {
  std::map<int, int> utilization;
  for (const GpuReading& g : r.gpus) utilization[g.index] = g.utilization_pct;
  for (const auto& [id, own] : pids) {
    int64_t used = 0;
    std::set<int> gpus;
    for (const ProcessReading& p : r.processes) {
      if (!own.count(p.pid)) continue;
      used += p.used_mib;
      gpus.insert(p.gpu);
    }
    Sums& s = jobs_[id];
    s.usage.last_mib = used;
    s.usage.peak_mib = std::max(s.usage.peak_mib, used);
    if (!gpus.empty()) {
      double u = 0;
      for (const int g : gpus) u += utilization[g];
      s.utilization_sum += u / static_cast<double>(gpus.size());
    }
    ++s.usage.readings;
    s.usage.mean_utilization_pct =
        s.utilization_sum / static_cast<double>(s.usage.readings);
  }
}

std::map<int64_t, std::set<uint32_t>> SessionProcesses(
    const std::set<int64_t>& sessions) {
  std::map<int64_t, std::set<uint32_t>> out;
  if (sessions.empty()) return out;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator("/proc", ec)) {
    const std::string name = entry.path().filename().string();
    if (name.empty() || !std::isdigit(static_cast<unsigned char>(name[0]))) {
      continue;
    }
    std::ifstream in(entry.path() / "stat");
    std::string text;
    if (!in || !std::getline(in, text)) continue;  // ended meanwhile
    // "pid (comm) state ppid pgrp session ...": comm may hold spaces.
    const size_t paren = text.rfind(')');
    if (paren == std::string::npos) continue;
    std::istringstream rest(text.substr(paren + 1));
    std::string state;
    int64_t ppid = 0, pgrp = 0, session = 0;
    if (!(rest >> state >> ppid >> pgrp >> session)) continue;
    if (state == "Z" || state == "X") continue;  // ended, not reaped yet
    if (sessions.count(session)) {
      out[session].insert(static_cast<uint32_t>(std::stoul(name)));
    }
  }
  return out;
}

JobUsage UsageMeter::Of(JobId id) const {
  auto it = jobs_.find(id);
  return it == jobs_.end() ? JobUsage{} : it->second.usage;
}

namespace {

// The NVML API's types, as documented (nvml.h, API version 12).
using NvmlReturn = int;  // NVML_SUCCESS = 0
constexpr NvmlReturn kNvmlSuccess = 0;
constexpr NvmlReturn kNvmlInsufficientSize = 7;
using NvmlDevice = void*;
struct NvmlMemory {
  unsigned long long total, free, used;
};
struct NvmlUtilization {
  unsigned int gpu, memory;
};
struct NvmlProcessInfo {  // nvmlProcessInfo_v2_t, the _v3 calls' type
  unsigned int pid;
  unsigned long long used_gpu_memory;
  unsigned int gpu_instance_id, compute_instance_id;
};
constexpr unsigned long long kNotAvailable = ~0ULL;  // NVML_VALUE_NOT_AVAILABLE

class NvmlProbe : public GpuProbe {
 public:
  ~NvmlProbe() override {
    if (shutdown_) shutdown_();
    if (handle_) dlclose(handle_);
  }

  static Result<std::unique_ptr<GpuProbe>> Open(const std::string& library) {
    std::unique_ptr<NvmlProbe> p(new NvmlProbe);
    p->handle_ = dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!p->handle_) {
      const char* why = dlerror();
      return Unavailable("GPU usage: cannot load " + library + " (" +
                         (why ? why : "unknown") +
                         "); jobs run without measured use");
    }
    std::string missing;
    const auto bind = [&](auto& fn, const char* name) {
      fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(
          dlsym(p->handle_, name));
      if (!fn) missing += std::string(missing.empty() ? "" : ", ") + name;
    };
    NvmlReturn (*init)() = nullptr;
    bind(init, "nvmlInit_v2");
    bind(p->shutdown_, "nvmlShutdown");
    bind(p->count_, "nvmlDeviceGetCount_v2");
    bind(p->handle_by_index_, "nvmlDeviceGetHandleByIndex_v2");
    bind(p->memory_, "nvmlDeviceGetMemoryInfo");
    bind(p->utilization_, "nvmlDeviceGetUtilizationRates");
    bind(p->compute_, "nvmlDeviceGetComputeRunningProcesses_v3");
    bind(p->mps_, "nvmlDeviceGetMPSComputeRunningProcesses_v3");
    if (!missing.empty()) {
      p->shutdown_ = nullptr;
      return Unavailable("GPU usage: " + library + " lacks " + missing);
    }
    if (const NvmlReturn r = init(); r != kNvmlSuccess) {
      p->shutdown_ = nullptr;
      return Unavailable("GPU usage: nvmlInit failed (NVML error " +
                         std::to_string(r) + ")");
    }
    return std::unique_ptr<GpuProbe>(std::move(p));
  }

  Result<GpuReadings> Read() override {
    unsigned int n = 0;
    if (const NvmlReturn r = count_(&n); r != kNvmlSuccess) {
      return Unavailable("GPU usage: nvmlDeviceGetCount failed (NVML error " +
                         std::to_string(r) + ")");
    }
    GpuReadings out;
    for (unsigned int i = 0; i < n; ++i) {
      NvmlDevice d = nullptr;
      if (handle_by_index_(i, &d) != kNvmlSuccess) continue;
      GpuReading g;
      g.index = static_cast<int>(i);
      NvmlMemory m{};
      if (memory_(d, &m) == kNvmlSuccess) {
        g.used_mib = static_cast<int64_t>(m.used >> 20);
        g.total_mib = static_cast<int64_t>(m.total >> 20);
      }
      NvmlUtilization u{};
      if (utilization_(d, &u) == kNvmlSuccess) {
        g.utilization_pct = static_cast<int>(u.gpu);
      }
      out.gpus.push_back(g);
      // Compute processes, then MPS clients (under MPS the former is the
      // server; the clients carry the per-job memory).
      for (auto* list : {compute_, mps_}) Processes(list, d, g.index, out);
    }
    return out;
  }

 private:
  using ProcessList = NvmlReturn (*)(NvmlDevice, unsigned int*,
                                     NvmlProcessInfo*);
  static void Processes(ProcessList list, NvmlDevice d, int gpu,
                        GpuReadings& out) {
    std::vector<NvmlProcessInfo> infos(64);
    for (int tries = 0; tries < 3; ++tries) {
      auto count = static_cast<unsigned int>(infos.size());
      const NvmlReturn r = list(d, &count, infos.data());
      if (r == kNvmlInsufficientSize) {
        infos.resize(std::max<size_t>(count, infos.size()) * 2);
        continue;
      }
      if (r != kNvmlSuccess) return;
      for (unsigned int k = 0; k < count && k < infos.size(); ++k) {
        const NvmlProcessInfo& p = infos[k];
        out.processes.push_back(
            {gpu, p.pid,
             p.used_gpu_memory == kNotAvailable
                 ? 0
                 : static_cast<int64_t>(p.used_gpu_memory >> 20)});
      }
      return;
    }
  }

  void* handle_ = nullptr;
  NvmlReturn (*shutdown_)() = nullptr;
  NvmlReturn (*count_)(unsigned int*) = nullptr;
  NvmlReturn (*handle_by_index_)(unsigned int, NvmlDevice*) = nullptr;
  NvmlReturn (*memory_)(NvmlDevice, NvmlMemory*) = nullptr;
  NvmlReturn (*utilization_)(NvmlDevice, NvmlUtilization*) = nullptr;
  ProcessList compute_ = nullptr;
  ProcessList mps_ = nullptr;
};

}  // namespace

Result<std::unique_ptr<GpuProbe>> OpenNvml(const std::string& library) {
  return NvmlProbe::Open(library);
}

}  // namespace tessera::launch
