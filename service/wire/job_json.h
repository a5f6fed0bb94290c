#ifndef TESSERA_SERVICE_WIRE_JOB_JSON_H_
#define TESSERA_SERVICE_WIRE_JOB_JSON_H_

// Jobs as JSON: the API's shapes (docs/http_api.md), also what the store
// keeps. Keys are a stable contract: add, never rename.

#include <optional>

#include <nlohmann/json.hpp>

#include "common/result.h"
#include "scheduler/job.h"
#include "scheduler/topology.h"

namespace tessera::service {

// The jobs and the cluster the JSON describes (scheduler/).
using scheduler::Allocation;
using scheduler::ElasticState;
using scheduler::Job;
using scheduler::JobRequest;
using scheduler::MeasuredUse;
using scheduler::Resources;
using scheduler::Topology;

// "2026-11-22T23:04:05Z" (UTC), or null for 0 (not yet).
nlohmann::json IsoTime(double unix_s);

// Limits a submission must respect.
struct RequestLimits {
  int64_t max_command_args = 1024;
  int64_t max_env = 256;
  int64_t max_string = 4096;  // bytes of any one string
};

// A submission: {"name", "pool", "priority", "preemptible", "command",
// "env", "resources": {...}} or "model": {...} instead of resources, plus
// "splittable" and "time_limit_s". kBadInput naming the field for unknown
// fields, wrong types, negative numbers, a gpu_milli outside 1..1000, both
// or neither of resources and model, an empty command.
Result<JobRequest> ParseJobRequest(const nlohmann::json& j,
                                   const RequestLimits& limits = {});
nlohmann::json JobRequestJson(const JobRequest& r);
nlohmann::json ResourcesJson(const Resources& r);

// {"id", "name", "user", "pool", "state", "priority", "submitted_at",
// "started_at", "finished_at", "exit_code", "reason", "request",
// "demand", "allocation": [{"gpu", "gpu_milli", "gpu_memory_mib"}],
// "plan"}; times as ISO-8601 UTC strings (null when not yet).
nlohmann::json JobJson(const Job& job, const Topology& topology);
// The job's GPU shares as JobJson has them: [{"gpu": "node0/gpu1",
// "gpu_milli", "gpu_memory_mib"}] (an index out of range as "#N").
nlohmann::json AllocationJson(const Allocation& allocation,
                              const Topology& topology);

// The store's form: JobJson plus what the service needs to recover (the
// allocation by indices, pid and start time). Parse is its inverse.
nlohmann::json JobRecordJson(const Job& job);
// {"peak_mib", "last_mib", "mean_utilization_pct", "readings"}.
nlohmann::json MeasuredUseJson(const MeasuredUse& u);
Result<Job> ParseJobRecord(const nlohmann::json& j);

// Elastic jobs (service/wire/elastic_json.cc, docs/elastic.md). The job's
// allocation as GET /v1/jobs/{id}/allocation answers it (null for a job
// that is not elastic): {"version", "min", "max", "mode", "workers":
// [{"worker", "gpu", "node", "cuda_visible_devices", "gpu_milli",
// "gpu_memory_mib", "guaranteed"}], "releasing", "release_by", "history"}.
nlohmann::json ElasticAllocationJson(const Job& job, const Topology& topology);
// What a running job's progress report measured (Service::ReportProgress,
// POST /v1/jobs/{id}/progress).
struct ProgressReport {
  scheduler::JobId job = 0;
  int64_t steps = 0;               // done in all
  std::optional<double> step_s;    // the last interval's step time
  std::optional<double> slowdown;  // that step over the job's own, shared
  int sharing_with = 0;            // jobs on its GPUs beside it now
  std::optional<double> predicted_end_s;  // Unix seconds, with work.steps
};
// {"job", "steps", "sharing_with"} and, when measured, "step_s",
// "slowdown", "predicted_end_s".
nlohmann::json ProgressJson(const ProgressReport& p);

// The store's form of ElasticState, and its inverse.
nlohmann::json ElasticStateRecordJson(const ElasticState& e);
Status ParseElasticStateRecord(const nlohmann::json& j, ElasticState* e);

}  // namespace tessera::service

#endif  // TESSERA_SERVICE_WIRE_JOB_JSON_H_
