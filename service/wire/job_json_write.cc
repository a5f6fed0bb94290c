// Jobs written as JSON: the API's shapes (JobJson, what a user reads) and
// the store's records (JobRecordJson, what ParseJobRecord in job_json.cc
// reads back). Keys are a stable contract (job_json.h).

#include <cmath>
#include <ctime>
#include <string>

#include "service/wire/job_json.h"

namespace tessera::service {

// What this file uses of scheduler/, beyond what its headers name.
using scheduler::ElasticModeName;
using scheduler::GpuShare;
using scheduler::JobStateName;
using scheduler::ModelRequest;

namespace {

using nlohmann::json;

json ExitCodeJson(const std::optional<int>& code) {
  return code ? json(*code) : json(nullptr);
}

json ModelJson(const ModelRequest& m) {
  json inputs = json::object();
  for (const auto& [name, dims] : m.inputs) inputs[name] = dims;
  json j = {{"path", m.path},
            {"batch", m.batch},
            {"train", m.train},
            {"dtype", m.dtype},
            {"inputs", inputs}};
  if (!m.upload.empty()) j["upload"] = m.upload;
  if (!m.amp.empty()) j["amp"] = m.amp;
  return j;
}

json AllocationRecordJson(const Allocation& a) {
  json gpus = json::array();
  for (const GpuShare& g : a.gpus) {
    gpus.push_back(
        {{"gpu", g.gpu}, {"milli", g.milli}, {"memory_mib", g.memory_mib}});
  }
  json record = {{"node", a.node},
                 {"gpus", gpus},
                 {"cpu_milli", a.cpu_milli},
                 {"memory_mib", a.memory_mib},
                 {"exclusive", a.exclusive}};
  if (a.spans_nodes) record["spans_nodes"] = true;
  return record;
}

}  // namespace

json IsoTime(double unix_s) {
  if (unix_s <= 0) return nullptr;
  const auto t = static_cast<std::time_t>(std::floor(unix_s));
  std::tm tm{};
  if (gmtime_r(&t, &tm) == nullptr) return nullptr;
  char buf[32];
  if (std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm) == 0) {
    return nullptr;
  }
  return std::string(buf);
}

json ResourcesJson(const Resources& r) {
  return {{"gpus", r.gpus},
          {"gpu_milli", r.gpu_milli},
          {"gpu_memory_mib", r.gpu_memory_mib},
          {"cpu_milli", r.cpu_milli},
          {"memory_mib", r.memory_mib}};
}

json JobRequestJson(const JobRequest& r) {
  json j = {{"name", r.name},
            {"pool", r.pool},
            {"priority", r.priority},
            {"preemptible", r.preemptible},
            {"command", r.command},
            {"env", json::object()},
            {"splittable", r.splittable},
            {"time_limit_s", r.time_limit_s}};
  if (r.work_steps > 0) j["work"] = {{"steps", r.work_steps}};
  if (!r.queue.empty()) j["queue"] = r.queue;
  if (!r.on_oom.empty()) j["on_oom"] = r.on_oom;
  for (const auto& [k, v] : r.env) j["env"][k] = v;
  if (r.resources) j["resources"] = ResourcesJson(*r.resources);
  if (r.model) j["model"] = ModelJson(*r.model);
  if (r.elastic && r.resources) {
    const json range = {{"min", r.elastic->min}, {"max", r.elastic->max}};
    j["resources"][r.elastic->whole_gpus ? "gpus" : "workers"] = range;
    j["elastic"] = {{"mode", ElasticModeName(r.elastic->mode)}};
  }
  return j;
}

json AllocationJson(const Allocation& a, const Topology& topology) {
  json allocation = json::array();
  for (const GpuShare& g : a.gpus) {
    const bool known = g.gpu >= 0 && g.gpu < int(topology.gpus.size());
    allocation.push_back(
        {{"gpu", known ? topology.gpus[g.gpu].id : "#" + std::to_string(g.gpu)},
         {"gpu_milli", g.milli},
         {"gpu_memory_mib", g.memory_mib}});
  }
  return allocation;
}

json MeasuredUseJson(const MeasuredUse& u) {
  return {{"peak_mib", u.peak_mib},
          {"last_mib", u.last_mib},
          {"mean_utilization_pct", u.mean_utilization_pct},
          {"readings", u.readings}};
}

json JobJson(const Job& job, const Topology& topology) {
  const json allocation = AllocationJson(job.allocation, topology);
  const int node = job.allocation.node;
  const bool node_known = node >= 0 && node < int(topology.nodes.size());
  json out = {{"id", job.id},
              {"name", job.request.name},
              {"user", job.user},
              {"team", job.team},
              {"pool", job.request.pool},
              {"state", JobStateName(job.state)},
              {"priority", job.request.priority},
              {"submitted_at", IsoTime(job.submitted_at)},
              {"started_at", IsoTime(job.started_at)},
              {"finished_at", IsoTime(job.finished_at)},
              {"exit_code", ExitCodeJson(job.exit_code)},
              {"reason", job.reason},
              {"request", JobRequestJson(job.request)},
              {"demand", ResourcesJson(job.demand)},
              {"allocation", allocation},
              {"node", node_known ? json(topology.nodes[node].name) : json()},
              {"restarts", job.restarts},
              {"plan", job.plan},
              {"elastic", ElasticAllocationJson(job, topology)}};
  if (!job.queue.empty()) {
    out["queue"] = job.queue;
    out["borrowed"] = job.borrowed;
  }
  if (job.usage.readings > 0) out["usage"] = MeasuredUseJson(job.usage);
  if (job.oom_requeues > 0) out["oom_requeues"] = job.oom_requeues;
  if (!job.sized_by.empty()) out["sized_by"] = job.sized_by;
  return out;
}

json JobRecordJson(const Job& job) {
  json out = {{"id", job.id},
              {"user", job.user},
              {"team", job.team},
              {"state", JobStateName(job.state)},
              {"request", JobRequestJson(job.request)},
              {"demand", ResourcesJson(job.demand)},
              {"submitted_at", job.submitted_at},
              {"started_at", job.started_at},
              {"finished_at", job.finished_at},
              {"exit_code", ExitCodeJson(job.exit_code)},
              {"reason", job.reason},
              {"allocation", AllocationRecordJson(job.allocation)},
              {"plan", job.plan},
              {"pid", job.pid},
              {"pid_start", job.pid_start},
              {"restarts", job.restarts},
              {"origin", job.origin},
              {"elastic", ElasticStateRecordJson(job.elastic)}};
  if (!job.queue.empty()) {
    out["queue"] = job.queue;
    out["borrowed"] = job.borrowed;
  }
  if (job.usage.readings > 0) out["usage"] = MeasuredUseJson(job.usage);
  if (job.oom_requeues > 0) out["oom_requeues"] = job.oom_requeues;
  if (!job.sized_by.empty()) out["sized_by"] = job.sized_by;
  return out;
}

nlohmann::json ProgressJson(const ProgressReport& p) {
  nlohmann::json out = {{"job", p.job}, {"steps", p.steps}};
  if (p.step_s) out["step_s"] = *p.step_s;
  if (p.slowdown) out["slowdown"] = *p.slowdown;
  out["sharing_with"] = p.sharing_with;
  if (p.predicted_end_s) out["predicted_end_s"] = *p.predicted_end_s;
  return out;
}

}  // namespace tessera::service
