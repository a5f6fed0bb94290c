// UsagePart (usage_part_internal.h).

#include "service/measure/usage_part_internal.h"

#include <algorithm>
#include <cstdio>
#include <sstream>
#include <utility>

namespace tessera::service::service_internal {

UsagePart::UsagePart(std::shared_ptr<launch::GpuProbe> probe, double interval_s,
                     int node, std::string why_not)
    : probe_(std::move(probe)),
      interval_s_(interval_s),
      node_(node),
      why_not_(std::move(why_not)) {}

std::string UsagePart::Status() const {
  if (!probe_) return "not measured: " + why_not_;
  if (!last_error_.empty())
    return "measuring, last reading failed: " + last_error_;
  char every[32];
  std::snprintf(every, sizeof every, "%g", interval_s_);
  return std::string("measured every ") + every + " s";
}

std::optional<UsageSample> UsagePart::Read(
    double now, const std::map<JobId, int64_t>& leaders) {
  if (!probe_ || now < next_at_) return std::nullopt;
  next_at_ = now + interval_s_;
  UsageSample s;
  s.at = now;
  Result<launch::GpuReadings> r = probe_->Read();
  if (!r) {
    s.error = r.error().message;
    return s;
  }
  s.readings = std::move(*r);
  std::set<int64_t> sessions;
  for (const auto& [id, pid] : leaders) {
    if (pid > 0) sessions.insert(pid);
  }
  const auto members = launch::SessionProcesses(sessions);
  for (const auto& [id, pid] : leaders) {
    auto it = members.find(pid);
    s.pids[id] = it == members.end() ? std::set<uint32_t>{} : it->second;
  }
  return s;
}

std::vector<JobId> UsagePart::Apply(const UsageSample& s,
                                    std::map<JobId, Job>& running) {
  std::vector<JobId> store;
  last_error_ = s.error;
  if (!s.readings) return store;
  gpus_ = s.readings->gpus;
  launch::UsageMeter meter;  // this reading alone, folded into each job
  meter.Add(*s.readings, s.pids);
  for (const auto& [id, pids] : s.pids) {
    auto it = running.find(id);
    // A job with no process left ended since: its last reading stands
    // (whether it died at its cap is read from it).
    if (it == running.end() || pids.empty()) continue;
    const launch::JobUsage now = meter.Of(id);
    scheduler::MeasuredUse& u = it->second.usage;
    const double n = static_cast<double>(u.readings);
    u.mean_utilization_pct =
        (u.mean_utilization_pct * n + now.mean_utilization_pct) / (n + 1);
    ++u.readings;
    u.last_mib = now.last_mib;
    u.peak_mib = std::max(u.peak_mib, now.last_mib);
    const auto at = stored_at_.find(id);
    if (u.peak_mib > stored_peak_[id] &&
        (at == stored_at_.end() || s.at - at->second >= kStoreEveryS)) {
      stored_peak_[id] = u.peak_mib;
      store.push_back(id);
    }
  }
  return store;
}

bool UsagePart::Measures(const scheduler::Allocation& a,
                         const scheduler::Topology& t) const {
  for (const scheduler::GpuShare& g : a.gpus) {
    if (node_ >= 0 && t.gpus[g.gpu].node == node_) return true;
  }
  return false;
}

const launch::GpuReading* UsagePart::LastOf(const scheduler::Topology& t,
                                            int gpu) const {
  if (node_ < 0 || t.gpus[gpu].node != node_) return nullptr;
  for (const launch::GpuReading& g : gpus_) {
    if (g.index == t.gpus[gpu].index) return &g;
  }
  return nullptr;
}

std::string UsageMetrics(const scheduler::Topology& t,
                         const std::map<JobId, Job>& running,
                         const UsagePart& usage) {
  struct Sums {
    int64_t reserved = 0, used = 0, peak = 0;
  };
  std::map<std::string, Sums> pools;
  for (const std::string& p : t.pools) pools[p];
  for (const auto& [id, job] : running) {
    if (job.usage.readings == 0) continue;
    Sums& s = pools[job.request.pool];
    for (const scheduler::GpuShare& g : job.allocation.gpus) {
      s.reserved += g.memory_mib;
    }
    s.used += job.usage.last_mib;
    s.peak += job.usage.peak_mib;
  }
  std::ostringstream out;
  const struct {
    const char* name;
    const char* help;
    int64_t Sums::*field;
  } gauges[] = {
      {"tessera_pool_measured_memory_reserved_mib",
       "GPU memory reserved by the running jobs whose use is measured.",
       &Sums::reserved},
      {"tessera_pool_measured_memory_used_mib",
       "GPU memory those jobs' processes use (last reading).", &Sums::used},
      {"tessera_pool_measured_memory_peak_mib",
       "The most GPU memory each of those jobs used, summed.", &Sums::peak},
  };
  for (const auto& g : gauges) {
    out << "# HELP " << g.name << " " << g.help << "\n# TYPE " << g.name
        << " gauge\n";
    for (const auto& [pool, sums] : pools) {
      out << g.name << "{pool=\"" << pool << "\"} " << sums.*(g.field) << "\n";
    }
  }
  if (!usage.measuring()) return out.str();
  out << "# HELP tessera_gpu_memory_used_mib GPU memory in use (NVML).\n"
         "# TYPE tessera_gpu_memory_used_mib gauge\n";
  std::ostringstream util;
  util << "# HELP tessera_gpu_utilization_pct GPU busy time (NVML).\n"
          "# TYPE tessera_gpu_utilization_pct gauge\n";
  for (size_t i = 0; i < t.gpus.size(); ++i) {
    const launch::GpuReading* r = usage.LastOf(t, static_cast<int>(i));
    if (r == nullptr) continue;
    const std::string labels = "{gpu=\"" + t.gpus[i].id + "\",pool=\"" +
                               t.nodes[t.gpus[i].node].pool + "\"} ";
    out << "tessera_gpu_memory_used_mib" << labels << r->used_mib << "\n";
    util << "tessera_gpu_utilization_pct" << labels << r->utilization_pct
         << "\n";
  }
  return out.str() + util.str();
}

bool DiedAtCap(const Job& job, const scheduler::Allocation& held) {
  int64_t held_mib = 0;
  for (const scheduler::GpuShare& g : held.gpus) held_mib += g.memory_mib;
  return !held.exclusive && held_mib > 0 && job.usage.readings > 0 &&
         job.usage.last_mib * 100 >= held_mib * 95;
}

}  // namespace tessera::service::service_internal
