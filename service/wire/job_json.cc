// Jobs read from JSON (job_json_write.cc writes them). A submission is
// outside input: ParseJobRequest checks every key, type and range and
// names the field it rejects, so that a 400 tells the user what to fix. A
// stored record is our own output: ParseJobRecord checks keys and types
// only (so that whatever the service holds round trips), never the limits
// of the day.

#include "service/wire/job_json.h"

#include <cmath>
#include <initializer_list>
#include <limits>
#include <string>
#include <string_view>
#include <utility>

namespace tessera::service {

// What this file uses of scheduler/, beyond what its headers name.
using scheduler::ElasticMode;
using scheduler::ElasticRequest;
using scheduler::GpuShare;
using scheduler::IsUploadId;
using scheduler::kFullGpuMilli;
using scheduler::MeasuredUse;
using scheduler::ModelRequest;
using scheduler::ParseElasticMode;
using scheduler::ParseJobState;

namespace {

using nlohmann::json;

// Upper bounds on sizes that no real machine has: they keep sums over
// thousands of jobs far from overflow and catch unit mistakes (bytes sent
// as MiB).
inline constexpr int64_t kMaxMemoryMib = int64_t{16} << 20;  // 16 TiB
inline constexpr int64_t kMaxCpuMilli = int64_t{1} << 30;    // 1M cores
inline constexpr int64_t kMaxGpus = 1024;                    // on one node
inline constexpr int64_t kMaxPriority = 1'000'000;
inline constexpr int64_t kMaxBatch = 1 << 24;
inline constexpr int64_t kMaxDim = (int64_t{1} << 31) - 1;
inline constexpr int64_t kMaxRank = 64;
inline constexpr double kMaxTimeLimitS = 1e9;               // about 31 years
inline constexpr int64_t kMaxWorkSteps = int64_t{1} << 40;  // about 10^12

constexpr int64_t kInt64Min = std::numeric_limits<int64_t>::min();
constexpr int64_t kInt64Max = std::numeric_limits<int64_t>::max();
constexpr int64_t kIntMin = std::numeric_limits<int>::min();
constexpr int64_t kIntMax = std::numeric_limits<int>::max();

std::string Field(const std::string& where, std::string_view key) {
  return where.empty() ? std::string(key) : where + "." + std::string(key);
}

Error FieldError(const std::string& field, const std::string& what) {
  return BadInput(field + ": " + what);
}

bool IsEnvName(std::string_view s) {
  if (s.empty()) return false;
  for (size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    const bool alpha = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z');
    const bool digit = c >= '0' && c <= '9';
    if (!(alpha || c == '_' || (digit && i > 0))) return false;
  }
  return true;
}

// Reads JSON into the job structs. `strict` (a submission) adds the range
// and consistency checks and `limits`; otherwise only keys and types.
class Reader {
 public:
  Reader(bool strict, const RequestLimits& limits)
      : strict_(strict), limits_(limits) {}

  // `where` is the object's field path ("" for the top level).
  Status Keys(const json& obj, const std::string& where,
              std::initializer_list<std::string_view> known) const {
    if (!obj.is_object()) {
      return FieldError(where.empty() ? "request" : where,
                        "must be a JSON object");
    }
    for (const auto& [key, value] : obj.items()) {
      bool found = false;
      for (std::string_view k : known) found = found || k == key;
      if (found) continue;
      std::string list;
      for (std::string_view k : known) {
        list += (list.empty() ? "" : ", ") + std::string(k);
      }
      return FieldError(Field(where, key), "unknown field; known: " + list);
    }
    return {};
  }

  Status String(const json& v, const std::string& field,
                std::string* out) const {
    if (!v.is_string()) return FieldError(field, "must be a string");
    *out = v.get<std::string>();
    return Length(*out, field);
  }

  // Keys are strings too, and as limited.
  Status Length(const std::string& s, const std::string& field) const {
    if (strict_ && static_cast<int64_t>(s.size()) > limits_.max_string) {
      return FieldError(
          field,
          "longer than " + std::to_string(limits_.max_string) + " bytes");
    }
    return {};
  }

  Status Bool(const json& v, const std::string& field, bool* out) const {
    if (!v.is_boolean()) return FieldError(field, "must be true or false");
    *out = v.get<bool>();
    return {};
  }

  // An integer in [min, max] when strict, any int64 otherwise.
  Status Int(const json& v, const std::string& field, int64_t min, int64_t max,
             int64_t* out) const {
    if (!v.is_number_integer()) return FieldError(field, "must be an integer");
    if (v.is_number_unsigned() && v.get<uint64_t>() > uint64_t(kInt64Max)) {
      return FieldError(field, "too large");
    }
    const int64_t x = v.get<int64_t>();
    if (!strict_) {
      *out = x;
      return {};
    }
    const std::string got = " (got " + std::to_string(x) + ")";
    if (x < min) {
      return FieldError(
          field, min == 0 ? "must not be negative" + got
                          : "must be at least " + std::to_string(min) + got);
    }
    if (x > max) {
      return FieldError(field, "must be at most " + std::to_string(max) + got);
    }
    *out = x;
    return {};
  }

  Status SmallInt(const json& v, const std::string& field, int64_t min,
                  int64_t max, int* out) const {
    int64_t x = 0;
    // Even a record must fit an int.
    TESSERA_RETURN_IF_ERROR(
        Int(v, field, strict_ ? min : kIntMin, strict_ ? max : kIntMax, &x));
    if (x < kIntMin || x > kIntMax) return FieldError(field, "out of range");
    *out = static_cast<int>(x);
    return {};
  }

  Status Number(const json& v, const std::string& field, double max,
                double* out) const {
    if (!v.is_number()) return FieldError(field, "must be a number");
    *out = v.get<double>();
    if (!std::isfinite(*out)) return FieldError(field, "must be finite");
    if (strict_ && *out < 0) return FieldError(field, "must not be negative");
    if (strict_ && *out > max) {
      return FieldError(field, "must be at most " + std::to_string(max));
    }
    return {};
  }

  // An elastic range {"min": N, "max": M} (docs/elastic.md).
  Status Range(const json& j, const std::string& where,
               ElasticRequest* e) const {
    TESSERA_RETURN_IF_ERROR(Keys(j, where, {"min", "max"}));
    if (j.contains("min")) {
      TESSERA_RETURN_IF_ERROR(
          SmallInt(j["min"], Field(where, "min"), 1, kMaxGpus, &e->min));
    }
    if (!j.contains("max")) {
      if (strict_) {
        return FieldError(Field(where, "max"),
                          "required: the most workers the job can use");
      }
      e->max = e->min;
      return {};
    }
    TESSERA_RETURN_IF_ERROR(
        SmallInt(j["max"], Field(where, "max"), 1, kMaxGpus, &e->max));
    if (strict_ && e->max < e->min) {
      return FieldError(Field(where, "max"),
                        "must be at least min (" + std::to_string(e->min) +
                            "; got " + std::to_string(e->max) + ")");
    }
    return {};
  }

  // `elastic` (null for a demand) takes a range: gpus {min, max} (one
  // whole GPU per worker) or workers {min, max} (each worker's share).
  Status Resources(const json& j, const std::string& where,
                   scheduler::Resources* r,
                   std::optional<ElasticRequest>* elastic = nullptr) const {
    if (elastic) {
      TESSERA_RETURN_IF_ERROR(Keys(j, where,
                                   {"gpus", "gpu_milli", "gpu_memory_mib",
                                    "cpu_milli", "memory_mib", "workers"}));
    } else {
      TESSERA_RETURN_IF_ERROR(Keys(
          j, where,
          {"gpus", "gpu_milli", "gpu_memory_mib", "cpu_milli", "memory_mib"}));
    }
    const auto f = [&](const char* k) { return Field(where, k); };
    if (elastic && j.contains("gpus") && j["gpus"].is_object()) {
      elastic->emplace();
      TESSERA_RETURN_IF_ERROR(Range(j["gpus"], f("gpus"), &**elastic));
      r->gpus = 1;
    } else if (j.contains("gpus")) {
      TESSERA_RETURN_IF_ERROR(
          SmallInt(j["gpus"], f("gpus"), 0, kMaxGpus, &r->gpus));
    }
    if (elastic && j.contains("workers")) {
      if (elastic->has_value() && strict_) {
        return FieldError(f("workers"),
                          "cannot be combined with gpus: {min, max} (a "
                          "worker per GPU already)");
      }
      elastic->emplace();
      (*elastic)->whole_gpus = false;
      TESSERA_RETURN_IF_ERROR(Range(j["workers"], f("workers"), &**elastic));
      if (strict_ && r->gpus > 1) {
        return FieldError(f("gpus"),
                          "an elastic job's worker holds one whole GPU "
                          "(gpus: 1) or a fraction of one (gpu_milli)");
      }
    }
    if (j.contains("gpu_milli")) {
      TESSERA_RETURN_IF_ERROR(SmallInt(j["gpu_milli"], f("gpu_milli"), 0,
                                       kFullGpuMilli, &r->gpu_milli));
    }
    if (j.contains("gpu_memory_mib")) {
      TESSERA_RETURN_IF_ERROR(Int(j["gpu_memory_mib"], f("gpu_memory_mib"), 0,
                                  kMaxMemoryMib, &r->gpu_memory_mib));
    }
    if (j.contains("cpu_milli")) {
      TESSERA_RETURN_IF_ERROR(
          Int(j["cpu_milli"], f("cpu_milli"), 0, kMaxCpuMilli, &r->cpu_milli));
    }
    if (j.contains("memory_mib")) {
      TESSERA_RETURN_IF_ERROR(Int(j["memory_mib"], f("memory_mib"), 0,
                                  kMaxMemoryMib, &r->memory_mib));
    }
    if (!strict_) return {};
    if (r->gpus > 0 && r->gpu_milli > 0) {
      return FieldError(f("gpu_milli"),
                        "cannot be combined with gpus: ask for whole GPUs "
                        "(gpus) or a fraction of one (gpu_milli)");
    }
    if (r->gpus == 0 && r->gpu_milli == 0) {
      return FieldError(f("gpu_milli"),
                        "must be 1..1000 when gpus is 0 (or ask for whole "
                        "GPUs with gpus >= 1)");
    }
    return {};
  }

  Status Model(const json& j, ModelRequest* m) const {
    TESSERA_RETURN_IF_ERROR(
        Keys(j, "model",
             {"path", "upload", "batch", "train", "dtype", "amp", "inputs"}));
    if (j.contains("path")) {
      TESSERA_RETURN_IF_ERROR(String(j["path"], "model.path", &m->path));
    }
    if (j.contains("upload")) {
      TESSERA_RETURN_IF_ERROR(String(j["upload"], "model.upload", &m->upload));
    }
    if (strict_ && !m->path.empty() && !m->upload.empty()) {
      return FieldError("model.path, model.upload",
                        "give one: a file on the service's machine (path) or "
                        "an uploaded model's id (upload)");
    }
    if (strict_ && m->path.empty() && m->upload.empty()) {
      return FieldError("model.path",
                        "required: the ONNX model to size, a file under the "
                        "service's model_roots (or model.upload: the id POST "
                        "/v1/models returned)");
    }
    if (strict_ && !m->upload.empty() && !IsUploadId(m->upload)) {
      return FieldError("model.upload",
                        "'" + m->upload +
                            "' is not an upload id (64 lowercase hex digits, "
                            "as POST /v1/models returns)");
    }
    if (j.contains("batch")) {
      TESSERA_RETURN_IF_ERROR(
          Int(j["batch"], "model.batch", 1, kMaxBatch, &m->batch));
    }
    if (j.contains("train")) {
      TESSERA_RETURN_IF_ERROR(Bool(j["train"], "model.train", &m->train));
    }
    if (j.contains("dtype")) {
      TESSERA_RETURN_IF_ERROR(String(j["dtype"], "model.dtype", &m->dtype));
      const std::string& d = m->dtype;
      if (strict_ &&
          !(d.empty() || d == "fp32" || d == "fp16" || d == "bf16")) {
        return FieldError(
            "model.dtype",
            "must be one of \"\", fp32, fp16, bf16 (got '" + d + "')");
      }
    }
    if (j.contains("amp")) {
      TESSERA_RETURN_IF_ERROR(String(j["amp"], "model.amp", &m->amp));
      const std::string& a = m->amp;
      if (strict_ &&
          !(a.empty() || a == "none" || a == "bf16" || a == "fp16")) {
        return FieldError(
            "model.amp",
            "must be one of \"\", none, bf16, fp16 (got '" + a + "')");
      }
      if (strict_ && !a.empty() && a != "none" && !m->dtype.empty()) {
        return FieldError("model.amp, model.dtype",
                          "amp keeps the weights in fp32 and dtype re-types "
                          "them: give one");
      }
    }
    if (j.contains("inputs")) return Inputs(j["inputs"], &m->inputs);
    return {};
  }

  Status Inputs(const json& j,
                std::map<std::string, std::vector<int64_t>>* out) const {
    if (!j.is_object()) return FieldError("model.inputs", "must be an object");
    if (strict_ && static_cast<int64_t>(j.size()) > limits_.max_env) {
      return FieldError(
          "model.inputs",
          "too many entries (at most " + std::to_string(limits_.max_env) + ")");
    }
    for (const auto& [name, dims] : j.items()) {
      const std::string field = "model.inputs." + name;
      TESSERA_RETURN_IF_ERROR(Length(name, field));
      if (!dims.is_array()) {
        return FieldError(field, "must be a list of dimensions");
      }
      if (strict_ && static_cast<int64_t>(dims.size()) > kMaxRank) {
        return FieldError(
            field, "more than " + std::to_string(kMaxRank) + " dimensions");
      }
      std::vector<int64_t>& shape = (*out)[name];
      for (size_t i = 0; i < dims.size(); ++i) {
        int64_t d = 0;
        TESSERA_RETURN_IF_ERROR(Int(
            dims[i], field + "[" + std::to_string(i) + "]", 1, kMaxDim, &d));
        shape.push_back(d);
      }
    }
    return {};
  }

  Status Command(const json& j, std::vector<std::string>* out) const {
    if (!j.is_array())
      return FieldError("command", "must be a list of strings");
    if (strict_ && static_cast<int64_t>(j.size()) > limits_.max_command_args) {
      return FieldError("command",
                        "too many arguments (" + std::to_string(j.size()) +
                            "; at most " +
                            std::to_string(limits_.max_command_args) + ")");
    }
    for (size_t i = 0; i < j.size(); ++i) {
      std::string arg;
      TESSERA_RETURN_IF_ERROR(
          String(j[i], "command[" + std::to_string(i) + "]", &arg));
      out->push_back(std::move(arg));
    }
    return {};
  }

  Status Env(const json& j, std::map<std::string, std::string>* out) const {
    if (!j.is_object()) return FieldError("env", "must be an object");
    if (strict_ && static_cast<int64_t>(j.size()) > limits_.max_env) {
      return FieldError("env", "too many entries (" + std::to_string(j.size()) +
                                   "; at most " +
                                   std::to_string(limits_.max_env) + ")");
    }
    for (const auto& [key, value] : j.items()) {
      const std::string field = "env." + key;
      TESSERA_RETURN_IF_ERROR(Length(key, field));
      if (strict_ && !IsEnvName(key)) {
        return FieldError(field,
                          "not a valid variable name ([A-Za-z_][A-Za-z0-9_]*)");
      }
      std::string v;
      TESSERA_RETURN_IF_ERROR(String(value, field, &v));
      (*out)[key] = std::move(v);
    }
    return {};
  }

  Status Request(const json& j, JobRequest* r) const {
    TESSERA_RETURN_IF_ERROR(
        Keys(j, "",
             {"name", "pool", "priority", "preemptible", "command", "env",
              "resources", "model", "splittable", "time_limit_s", "work",
              "queue", "elastic", "on_oom"}));
    if (j.contains("name")) {
      TESSERA_RETURN_IF_ERROR(String(j["name"], "name", &r->name));
    }
    if (j.contains("pool")) {
      TESSERA_RETURN_IF_ERROR(String(j["pool"], "pool", &r->pool));
    }
    if (j.contains("queue")) {
      TESSERA_RETURN_IF_ERROR(String(j["queue"], "queue", &r->queue));
    }
    if (j.contains("priority")) {
      TESSERA_RETURN_IF_ERROR(SmallInt(j["priority"], "priority", -kMaxPriority,
                                       kMaxPriority, &r->priority));
    }
    if (j.contains("preemptible")) {
      TESSERA_RETURN_IF_ERROR(
          Bool(j["preemptible"], "preemptible", &r->preemptible));
    }
    if (j.contains("command")) {
      TESSERA_RETURN_IF_ERROR(Command(j["command"], &r->command));
    }
    if (j.contains("env")) TESSERA_RETURN_IF_ERROR(Env(j["env"], &r->env));
    if (j.contains("resources")) {
      r->resources.emplace();
      TESSERA_RETURN_IF_ERROR(
          Resources(j["resources"], "resources", &*r->resources, &r->elastic));
    }
    if (j.contains("elastic"))
      TESSERA_RETURN_IF_ERROR(Elastic(j["elastic"], r));
    if (j.contains("model")) {
      r->model.emplace();
      TESSERA_RETURN_IF_ERROR(Model(j["model"], &*r->model));
    }
    if (j.contains("splittable")) {
      TESSERA_RETURN_IF_ERROR(
          Bool(j["splittable"], "splittable", &r->splittable));
    }
    if (j.contains("time_limit_s")) {
      TESSERA_RETURN_IF_ERROR(Number(j["time_limit_s"], "time_limit_s",
                                     kMaxTimeLimitS, &r->time_limit_s));
    }
    if (j.contains("work")) TESSERA_RETURN_IF_ERROR(Work(j["work"], r));
    if (j.contains("on_oom")) {
      TESSERA_RETURN_IF_ERROR(String(j["on_oom"], "on_oom", &r->on_oom));
      if (r->on_oom != "fail" && r->on_oom != "requeue") {
        return FieldError("on_oom",
                          "must be fail or requeue (got '" + r->on_oom + "')");
      }
    }
    return strict_ ? Consistent(*r) : Status{};
  }

  // {"mode": "one-process" | "per-worker"}: for an elastic job only.
  Status Elastic(const json& j, JobRequest* r) const {
    TESSERA_RETURN_IF_ERROR(Keys(j, "elastic", {"mode"}));
    if (!r->elastic) {
      if (strict_) {
        return FieldError("elastic",
                          "only for an elastic job: ask for a range, "
                          "resources.gpus: {min, max} or resources.workers: "
                          "{min, max}");
      }
      return {};
    }
    if (!j.contains("mode")) return {};
    std::string mode;
    TESSERA_RETURN_IF_ERROR(String(j["mode"], "elastic.mode", &mode));
    const std::optional<ElasticMode> m = ParseElasticMode(mode);
    if (!m) {
      return FieldError("elastic.mode",
                        "must be one-process or per-worker "
                        "(got '" +
                            mode + "')");
    }
    r->elastic->mode = *m;
    return {};
  }

  Status Work(const json& j, JobRequest* r) const {
    if (!j.is_object()) return FieldError("work", "must be an object");
    TESSERA_RETURN_IF_ERROR(Keys(j, "work", {"steps"}));
    if (!j.contains("steps")) {
      return FieldError("work.steps", "required: the job's steps");
    }
    return Int(j["steps"], "work.steps", 1, kMaxWorkSteps, &r->work_steps);
  }

  // What no single field shows: the request as a whole.
  static Status Consistent(const JobRequest& r) {
    if (r.resources && r.model) {
      return FieldError("resources, model",
                        "give one: explicit resources or a model to size");
    }
    if (!r.resources && !r.model) {
      return FieldError("resources",
                        "required (or a model for the queue to size)");
    }
    if (r.command.empty()) {
      return FieldError("command", "required: a non-empty list [argv0, ...]");
    }
    if (r.work_steps > 0 && !r.model) {
      return FieldError("work",
                        "only a model job declares its work in steps (the "
                        "queue knows a step's time from the model); give "
                        "time_limit_s instead");
    }
    if (r.elastic && r.model) {
      return FieldError("elastic", "a model job cannot be elastic");
    }
    if (r.command[0].empty()) {
      return FieldError("command[0]", "must not be empty (the program)");
    }
    return {};
  }

 private:
  bool strict_;
  RequestLimits limits_;
};

Status ParseAllocationRecord(const Reader& rd, const json& j, Allocation* a) {
  TESSERA_RETURN_IF_ERROR(rd.Keys(
      j, "allocation",
      {"node", "gpus", "cpu_milli", "memory_mib", "exclusive", "spans_nodes"}));
  if (j.contains("node")) {
    TESSERA_RETURN_IF_ERROR(
        rd.SmallInt(j["node"], "allocation.node", kIntMin, kIntMax, &a->node));
  }
  if (j.contains("cpu_milli")) {
    TESSERA_RETURN_IF_ERROR(rd.Int(j["cpu_milli"], "allocation.cpu_milli",
                                   kInt64Min, kInt64Max, &a->cpu_milli));
  }
  if (j.contains("memory_mib")) {
    TESSERA_RETURN_IF_ERROR(rd.Int(j["memory_mib"], "allocation.memory_mib",
                                   kInt64Min, kInt64Max, &a->memory_mib));
  }
  if (j.contains("exclusive")) {
    TESSERA_RETURN_IF_ERROR(
        rd.Bool(j["exclusive"], "allocation.exclusive", &a->exclusive));
  }
  if (j.contains("spans_nodes")) {
    TESSERA_RETURN_IF_ERROR(
        rd.Bool(j["spans_nodes"], "allocation.spans_nodes", &a->spans_nodes));
  }
  if (!j.contains("gpus")) return {};
  if (!j["gpus"].is_array()) {
    return FieldError("allocation.gpus", "must be a list");
  }
  for (size_t i = 0; i < j["gpus"].size(); ++i) {
    const std::string where = "allocation.gpus[" + std::to_string(i) + "]";
    const json& g = j["gpus"][i];
    TESSERA_RETURN_IF_ERROR(rd.Keys(g, where, {"gpu", "milli", "memory_mib"}));
    GpuShare s;
    if (g.contains("gpu")) {
      TESSERA_RETURN_IF_ERROR(
          rd.SmallInt(g["gpu"], where + ".gpu", kIntMin, kIntMax, &s.gpu));
    }
    if (g.contains("milli")) {
      TESSERA_RETURN_IF_ERROR(rd.SmallInt(g["milli"], where + ".milli", kIntMin,
                                          kIntMax, &s.milli));
    }
    if (g.contains("memory_mib")) {
      TESSERA_RETURN_IF_ERROR(rd.Int(g["memory_mib"], where + ".memory_mib",
                                     kInt64Min, kInt64Max, &s.memory_mib));
    }
    a->gpus.push_back(s);
  }
  return {};
}

Status ParseMeasuredUse(const Reader& rd, const json& j, MeasuredUse* u) {
  TESSERA_RETURN_IF_ERROR(
      rd.Keys(j, "usage",
              {"peak_mib", "last_mib", "mean_utilization_pct", "readings"}));
  const std::pair<const char*, int64_t*> ints[] = {{"peak_mib", &u->peak_mib},
                                                   {"last_mib", &u->last_mib},
                                                   {"readings", &u->readings}};
  for (const auto& [key, out] : ints) {
    if (j.contains(key)) {
      TESSERA_RETURN_IF_ERROR(
          rd.Int(j[key], std::string("usage.") + key, 0, kInt64Max, out));
    }
  }
  if (j.contains("mean_utilization_pct")) {
    TESSERA_RETURN_IF_ERROR(rd.Number(j["mean_utilization_pct"],
                                      "usage.mean_utilization_pct", 100,
                                      &u->mean_utilization_pct));
  }
  return {};
}

}  // namespace

Result<JobRequest> ParseJobRequest(const json& j, const RequestLimits& limits) {
  JobRequest r;
  TESSERA_RETURN_IF_ERROR(Reader(/*strict=*/true, limits).Request(j, &r));
  return r;
}

Result<Job> ParseJobRecord(const json& j) {
  const Reader rd(/*strict=*/false, {});
  TESSERA_RETURN_IF_ERROR(rd.Keys(
      j, "",
      {"id",       "user",         "team",       "state",       "request",
       "demand",   "submitted_at", "started_at", "finished_at", "exit_code",
       "reason",   "allocation",   "plan",       "pid",         "pid_start",
       "restarts", "origin",       "queue",      "borrowed",    "elastic",
       "usage",    "oom_requeues", "sized_by"}));
  for (const char* k : {"id", "state", "request"}) {
    if (!j.contains(k)) return FieldError(k, "missing from the job record");
  }
  Job job;
  TESSERA_RETURN_IF_ERROR(rd.Int(j["id"], "id", 0, kInt64Max, &job.id));
  std::string state;
  TESSERA_RETURN_IF_ERROR(rd.String(j["state"], "state", &state));
  const auto s = ParseJobState(state);
  if (!s) return FieldError("state", "unknown job state '" + state + "'");
  job.state = *s;
  TESSERA_RETURN_IF_ERROR(rd.Request(j["request"], &job.request));
  if (j.contains("user")) {
    TESSERA_RETURN_IF_ERROR(rd.String(j["user"], "user", &job.user));
  }
  if (j.contains("team")) {
    TESSERA_RETURN_IF_ERROR(rd.String(j["team"], "team", &job.team));
  }
  if (j.contains("demand")) {
    TESSERA_RETURN_IF_ERROR(rd.Resources(j["demand"], "demand", &job.demand));
  }
  const std::pair<const char*, double*> times[] = {
      {"submitted_at", &job.submitted_at},
      {"started_at", &job.started_at},
      {"finished_at", &job.finished_at}};
  for (const auto& [key, out] : times) {
    if (j.contains(key)) {
      TESSERA_RETURN_IF_ERROR(rd.Number(j[key], key, 0, out));
    }
  }
  if (j.contains("exit_code") && !j["exit_code"].is_null()) {
    int code = 0;
    TESSERA_RETURN_IF_ERROR(
        rd.SmallInt(j["exit_code"], "exit_code", kIntMin, kIntMax, &code));
    job.exit_code = code;
  }
  if (j.contains("reason")) {
    TESSERA_RETURN_IF_ERROR(rd.String(j["reason"], "reason", &job.reason));
  }
  if (j.contains("allocation")) {
    TESSERA_RETURN_IF_ERROR(
        ParseAllocationRecord(rd, j["allocation"], &job.allocation));
  }
  if (j.contains("plan")) job.plan = j["plan"];
  if (j.contains("pid")) {
    TESSERA_RETURN_IF_ERROR(rd.Int(j["pid"], "pid", 0, kInt64Max, &job.pid));
  }
  if (j.contains("pid_start")) {
    TESSERA_RETURN_IF_ERROR(
        rd.Int(j["pid_start"], "pid_start", 0, kInt64Max, &job.pid_start));
  }
  if (j.contains("origin")) {
    TESSERA_RETURN_IF_ERROR(rd.String(j["origin"], "origin", &job.origin));
  }
  if (j.contains("restarts")) {
    TESSERA_RETURN_IF_ERROR(
        rd.SmallInt(j["restarts"], "restarts", 0, kIntMax, &job.restarts));
  }
  if (j.contains("queue")) {
    TESSERA_RETURN_IF_ERROR(rd.String(j["queue"], "queue", &job.queue));
  }
  if (j.contains("borrowed")) {
    TESSERA_RETURN_IF_ERROR(rd.Bool(j["borrowed"], "borrowed", &job.borrowed));
  }
  if (j.contains("elastic")) {
    TESSERA_RETURN_IF_ERROR(
        ParseElasticStateRecord(j["elastic"], &job.elastic));
  }
  if (j.contains("usage")) {
    TESSERA_RETURN_IF_ERROR(ParseMeasuredUse(rd, j["usage"], &job.usage));
  }
  if (j.contains("oom_requeues")) {
    TESSERA_RETURN_IF_ERROR(rd.SmallInt(j["oom_requeues"], "oom_requeues", 0,
                                        kIntMax, &job.oom_requeues));
  }
  if (j.contains("sized_by")) {
    TESSERA_RETURN_IF_ERROR(
        rd.String(j["sized_by"], "sized_by", &job.sized_by));
  }
  return job;
}

}  // namespace tessera::service
