#ifndef TESSERA_SERVICE_MEASURE_USAGE_PART_INTERNAL_H_
#define TESSERA_SERVICE_MEASURE_USAGE_PART_INTERNAL_H_

// The service's measured GPU use (issue 31; docs/operations.md, "Measured
// use"): every interval_s it reads the GPU probe (NVML), finds each running
// job's processes (its session: the local launcher starts each job with
// setsid) and adds the reading to the job's MeasuredUse, which the job's
// record keeps. It keeps the last reading of each GPU for the cluster view
// and /metrics.
//
// Read runs on the round thread without the service's lock (the probe and
// /proc take milliseconds); Apply and the rest under it. Internal to
// service/.

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "launch/gpu_usage.h"
#include "scheduler/job.h"
#include "scheduler/topology.h"

namespace tessera::service::service_internal {

using scheduler::Job;
using scheduler::JobId;

// One reading of the probe with the processes of the jobs it was taken
// for, or why there is none.
struct UsageSample {
  std::optional<launch::GpuReadings> readings;
  std::string error;  // the probe's, when readings is empty
  std::map<JobId, std::set<uint32_t>> pids;
  double at = 0;
};

class UsagePart {
 public:
  // A job's record is written again when its peak grew, at most this often
  // (and always when it ends: its record is written then anyway).
  static constexpr double kStoreEveryS = 10;

  // `probe` null: nothing measured, `why_not` says why. `node` is the
  // topology node whose GPUs the probe reads (this machine), -1: none.
  UsagePart(std::shared_ptr<launch::GpuProbe> probe, double interval_s,
            int node, std::string why_not);

  bool measuring() const { return probe_ != nullptr; }
  // Whether `a` holds a GPU of the probe's node (only those are measured).
  bool Measures(const scheduler::Allocation& a,
                const scheduler::Topology& t) const;
  // "measured every 1 s by NVML" or why not, for the cluster view.
  std::string Status() const;

  // A sample when one is due at `now`, of the jobs `leaders` lists (job id
  // -> its session leader's pid). Round thread only.
  std::optional<UsageSample> Read(double now,
                                  const std::map<JobId, int64_t>& leaders);
  // Adds `s` to the running jobs it lists; returns those whose record is
  // due to be stored again (their peak grew, kStoreEveryS since the last).
  std::vector<JobId> Apply(const UsageSample& s, std::map<JobId, Job>& running);
  // The job's record was stored (its usage with it).
  void Stored(JobId id, double at) { stored_at_[id] = at; }
  void Forget(JobId id) {
    stored_at_.erase(id);
    stored_peak_.erase(id);
  }

  // The last reading of topology GPU `gpu`, if it is on the probe's node.
  const launch::GpuReading* LastOf(const scheduler::Topology& t, int gpu) const;

 private:
  std::shared_ptr<launch::GpuProbe> probe_;
  double interval_s_;
  int node_;
  std::string why_not_;
  double next_at_ = 0;  // round thread only
  std::string last_error_;
  std::vector<launch::GpuReading> gpus_;  // by GpuReading::index
  std::map<JobId, double> stored_at_;
  std::map<JobId, int64_t> stored_peak_;
};

// /metrics lines of measured use: per pool, over the running jobs whose
// use is measured, the GPU memory they reserve, use now and used at most;
// per GPU of the probe's node, the memory used and the utilisation.
std::string UsageMetrics(const scheduler::Topology& t,
                         const std::map<JobId, Job>& running,
                         const UsagePart& usage);

// Whether a job that failed without an out-of-memory message was seen at
// its cap when it died: a fractional job (one with a cap) whose last
// reading was 95% or more of the GPU memory it held.
bool DiedAtCap(const Job& job, const scheduler::Allocation& held);

}  // namespace tessera::service::service_internal

#endif  // TESSERA_SERVICE_MEASURE_USAGE_PART_INTERNAL_H_
