#ifndef TESSERA_SCHEDULER_JOB_H_
#define TESSERA_SCHEDULER_JOB_H_

// What the queue holds: a job's request, the resources it needs, where it
// runs, and its life cycle. Plain data; JSON in job_json.h.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace tessera::scheduler {

using JobId = int64_t;

enum class JobState {
  kQueued,
  kRunning,
  kSucceeded,
  kFailed,
  kCancelled,
  kPreempted,  // stopped for a higher-priority job; back in the queue
  // Reserved and being handed to the launcher: durable before the launcher
  // is called, so that a restart never starts it a second time.
  kStarting,
  // Ended for lack of GPU memory (launch/out_of_memory.h): a failure whose
  // cause is known, with what it held and what it asked for in `reason`.
  kOom,
};
// "queued", "running", "succeeded", "failed", "cancelled", "preempted",
// "starting", "oom".
std::string_view JobStateName(JobState s);
std::optional<JobState> ParseJobState(std::string_view text);
bool IsTerminal(JobState s);  // succeeded, failed, cancelled, oom

// One GPU's capacity is memory (MiB) and compute in milli-GPU.
inline constexpr int kFullGpuMilli = 1000;

// Explicit resources: `gpus` whole GPUs on one node (exclusive), or, when
// gpus == 0, a fraction of one GPU: `gpu_milli` of its compute (1..1000)
// and `gpu_memory_mib` of its memory. CPU and host memory on the node.
struct Resources {
  int gpus = 0;
  int gpu_milli = 0;
  int64_t gpu_memory_mib = 0;
  int64_t cpu_milli = 0;
  int64_t memory_mib = 0;
  bool operator==(const Resources&) const = default;
};

// An elastic job (docs/elastic.md): `resources` is one worker's share (one
// whole GPU, or gpu_milli of one, plus its CPU and memory); the job starts
// with `min` workers, the guaranteed part, and is offered more up to `max`
// as capacity frees: extras, taken back first when others need the room.
enum class ElasticMode {
  kOneProcess,  // one process manages its workers (all GPUs visible)
  kPerWorker,   // one process per worker (each sees its own GPU)
};
struct ElasticRequest {
  int min = 1;
  int max = 1;
  ElasticMode mode = ElasticMode::kOneProcess;
  bool whole_gpus = true;  // asked as gpus: {min, max} (else workers)
  bool operator==(const ElasticRequest&) const = default;
};
std::string_view ElasticModeName(ElasticMode m);  // "one-process", ...
std::optional<ElasticMode> ParseElasticMode(std::string_view text);

// A job that asks by model: the estimator sizes it.
struct ModelRequest {
  std::string path;    // a file on the service's machine, or
  std::string upload;  // the id of a model uploaded (POST /v1/models)
  int64_t batch = 1;
  bool train = false;
  std::string dtype;  // "" = as exported; fp32, fp16, bf16
  // Mixed precision the job runs under (torch.autocast): "" = none, bf16,
  // fp16; weights stay fp32. Exclusive with a dtype other than "".
  std::string amp;
  std::map<std::string, std::vector<int64_t>> inputs;
};
// "0123...": 64 lowercase hex digits, the form of an upload's id.
bool IsUploadId(std::string_view id);

// POST /v1/jobs. Exactly one of `resources` and `model`.
struct JobRequest {
  std::string name;
  std::string pool;  // "" = the default pool
  int priority = 0;
  bool preemptible = false;
  std::vector<std::string> command;
  std::map<std::string, std::string> env;
  std::optional<Resources> resources;
  std::optional<ModelRequest> model;
  bool splittable = true;  // a model job may be split over several GPUs
  // Expected run time, for backfilling (0 = unknown: never backfilled past
  // the head's reservation).
  double time_limit_s = 0;
  // A model job's work, `work: {steps: N}`: training (or inference) steps,
  // each as long as the estimator's step on one whole GPU of the pool's
  // kind; 0 = not given (time_limit_s, else the service's default work,
  // stands for it in the split-or-wait decision).
  int64_t work_steps = 0;
  // The queue of the queue tree (docs/quotas.md) it goes to: "" = the
  // queue named after its user, else its team's.
  std::string queue;
  std::optional<ElasticRequest> elastic;  // set: an elastic job
  // Out of GPU memory (docs/operations.md, "Out of memory"): "" = the
  // pool's default, "fail" (the default's default) or "requeue" (back in
  // the queue once, with its reservation raised to what it was seen to
  // need plus the headroom).
  std::string on_oom;
};

// A reservation on one GPU.
struct GpuShare {
  int gpu = -1;  // index into Topology::gpus
  int milli = 0;
  int64_t memory_mib = 0;
  bool operator==(const GpuShare&) const = default;
};

// Where a job runs: one share per GPU (several for whole-GPU jobs and split
// gangs), all on `node`, plus CPU and memory on that node. A split gang
// under a launcher that starts one part per node (a cluster engine) may
// span nodes: its shares are then on any nodes and `node` is the first.
struct Allocation {
  int node = -1;  // index into Topology::nodes
  std::vector<GpuShare> gpus;
  int64_t cpu_milli = 0;
  int64_t memory_mib = 0;
  bool exclusive = false;    // whole GPUs: shared with nobody
  bool spans_nodes = false;  // a gang whose GPUs may be on other nodes
  bool empty() const { return gpus.empty() && node < 0; }
  bool operator==(const Allocation&) const = default;
};

// A running elastic job's workers: allocation.gpus[i] is worker
// workers[i]'s share; workers 0..min-1 are the guaranteed part and never
// asked back, the others are extras. `version` grows with every change the
// job is told about (grow, a shrink asked, a release).
struct ElasticChange {
  double at = 0;             // Unix seconds
  std::string action;        // "start", "grow", "shrink asked", "released", ...
  std::vector<int> workers;  // the workers it was about
  int64_t version = 0;       // the allocation's version after it
  bool operator==(const ElasticChange&) const = default;
};
struct ElasticState {
  int64_t version = 0;
  std::vector<int> workers;    // worker ids, parallel to allocation.gpus
  std::vector<int> releasing;  // extras asked back, not yet released
  double release_by = 0;       // then they are reclaimed anyway
  std::vector<ElasticChange> history;  // oldest first (bounded)
  // Per-worker mode: a worker's process ended without being asked to (its
  // work is running out), so the job is offered no more workers.
  bool grow_stopped = false;
  bool operator==(const ElasticState&) const = default;
};

// What a job's processes were measured to use on its GPUs
// (launch/gpu_usage.h), kept with the job.
struct MeasuredUse {
  int64_t peak_mib = 0;  // device memory of its processes, the most seen
  int64_t last_mib = 0;  // the last reading
  double mean_utilization_pct = 0;  // of the GPUs it used, over readings
  int64_t readings = 0;
  bool operator==(const MeasuredUse&) const = default;
};

struct Job {
  JobId id = 0;
  std::string user;
  std::string team;  // the user's team when submitted ("" = none)
  JobRequest request;
  // What the queue reserves: request.resources, or what the estimator
  // computed for request.model (per GPU for a split job: see `plan`).
  Resources demand;
  JobState state = JobState::kQueued;
  double submitted_at = 0, started_at = 0, finished_at = 0;  // Unix seconds
  std::optional<int> exit_code;
  std::string reason;     // why it failed, was cancelled or preempted
  Allocation allocation;  // empty unless running
  nlohmann::json plan;    // the placer's plan.json for a split job, or null
  int64_t pid = 0;        // the launched process (group leader)
  int64_t pid_start = 0;  // its start time (clock ticks since boot)
  int restarts = 0;       // times preempted and requeued
  // "" for a job tessera launches; otherwise the outside system whose
  // object holds this reservation (e.g. "k8s": a pod), with no process of
  // tessera's (Service::Reserve). Never set from a submission.
  std::string origin;
  // Under the queue tree (docs/quotas.md), set when it starts: its queue
  // and whether it runs on borrowed capacity (reclaimable) rather than in
  // its queue's guarantee. Stored, so a restart keeps the mark.
  std::string queue;
  bool borrowed = false;
  ElasticState elastic;  // an elastic job's workers while it runs
  MeasuredUse usage;     // this run's (reset when it starts again)
  int oom_requeues = 0;  // times put back after running out of memory
  // A model job: what sized its memory (scheduler::LearnedSize::source:
  // "estimate", "estimate, raised by 1 measurement", "measured (3
  // samples)", "out of memory at 2048 MiB"); "" for a job by resources.
  std::string sized_by;
};

}  // namespace tessera::scheduler

#endif  // TESSERA_SCHEDULER_JOB_H_
