// Elastic jobs as JSON: what the job and people see of its workers, and
// what the store keeps to recover them (docs/elastic.md).
#include <string>

#include "service/wire/job_json.h"

namespace tessera::service {

// What this file uses of scheduler/, beyond what its headers name.
using scheduler::ElasticChange;
using scheduler::ElasticModeName;
using scheduler::ElasticRequest;
using scheduler::GpuInfo;
using scheduler::GpuShare;
using scheduler::JobStateName;

using nlohmann::json;

namespace {

json HistoryJson(const std::vector<ElasticChange>& history, bool iso) {
  json out = json::array();
  for (const ElasticChange& c : history) {
    out.push_back({{"at", iso ? IsoTime(c.at) : json(c.at)},
                   {"action", c.action},
                   {"workers", c.workers},
                   {"version", c.version}});
  }
  return out;
}

Error Bad(const std::string& field, const std::string& what) {
  return BadInput(field + ": " + what);
}

Status Ints(const json& j, const std::string& field, std::vector<int>* out) {
  if (!j.is_array()) return Bad(field, "must be a list");
  for (const json& v : j) {
    if (!v.is_number_integer()) return Bad(field, "must hold integers");
    out->push_back(v.get<int>());
  }
  return {};
}

}  // namespace

json ElasticAllocationJson(const Job& job, const Topology& topology) {
  if (!job.request.elastic) return nullptr;
  const ElasticRequest& e = *job.request.elastic;
  const ElasticState& st = job.elastic;
  json workers = json::array();
  for (size_t i = 0; i < st.workers.size() && i < job.allocation.gpus.size();
       ++i) {
    const GpuShare& g = job.allocation.gpus[i];
    const bool known = g.gpu >= 0 && g.gpu < int(topology.gpus.size());
    json w = {{"worker", st.workers[i]},
              {"gpu_milli", g.milli},
              {"gpu_memory_mib", g.memory_mib},
              {"guaranteed", st.workers[i] < e.min}};
    if (known) {
      const GpuInfo& gpu = topology.gpus[g.gpu];
      w["gpu"] = gpu.id;
      w["node"] = topology.nodes[gpu.node].name;
      w["cuda_visible_devices"] = std::to_string(gpu.index);
    }
    workers.push_back(std::move(w));
  }
  return {{"job", job.id},
          {"state", JobStateName(job.state)},
          {"version", st.version},
          {"min", e.min},
          {"max", e.max},
          {"mode", ElasticModeName(e.mode)},
          {"workers", workers},
          {"releasing", st.releasing},
          {"release_by", IsoTime(st.release_by)},
          {"grow_stopped", st.grow_stopped},
          {"history", HistoryJson(st.history, /*iso=*/true)}};
}

json ElasticStateRecordJson(const ElasticState& e) {
  return {{"version", e.version},
          {"workers", e.workers},
          {"releasing", e.releasing},
          {"release_by", e.release_by},
          {"grow_stopped", e.grow_stopped},
          {"history", HistoryJson(e.history, /*iso=*/false)}};
}

Status ParseElasticStateRecord(const json& j, ElasticState* e) {
  if (!j.is_object()) return Bad("elastic", "must be an object");
  if (j.contains("version")) {
    if (!j["version"].is_number_integer()) {
      return Bad("elastic.version", "must be an integer");
    }
    e->version = j["version"].get<int64_t>();
  }
  if (j.contains("workers")) {
    TESSERA_RETURN_IF_ERROR(Ints(j["workers"], "elastic.workers", &e->workers));
  }
  if (j.contains("releasing")) {
    TESSERA_RETURN_IF_ERROR(
        Ints(j["releasing"], "elastic.releasing", &e->releasing));
  }
  if (j.contains("release_by")) {
    if (!j["release_by"].is_number()) {
      return Bad("elastic.release_by", "must be a number");
    }
    e->release_by = j["release_by"].get<double>();
  }
  if (j.contains("grow_stopped")) {
    if (!j["grow_stopped"].is_boolean()) {
      return Bad("elastic.grow_stopped", "must be true or false");
    }
    e->grow_stopped = j["grow_stopped"].get<bool>();
  }
  if (j.contains("history")) {
    if (!j["history"].is_array())
      return Bad("elastic.history", "must be a list");
    for (const json& h : j["history"]) {
      if (!h.is_object() || !h.contains("at") || !h["at"].is_number()) {
        return Bad("elastic.history", "each entry needs a numeric 'at'");
      }
      ElasticChange c;
      c.at = h["at"].get<double>();
      if (h.contains("action") && h["action"].is_string()) {
        c.action = h["action"].get<std::string>();
      }
      if (h.contains("workers")) {
        TESSERA_RETURN_IF_ERROR(
            Ints(h["workers"], "elastic.history.workers", &c.workers));
      }
      if (h.contains("version") && h["version"].is_number_integer()) {
        c.version = h["version"].get<int64_t>();
      }
      e->history.push_back(std::move(c));
    }
  }
  return {};
}

}  // namespace tessera::service
