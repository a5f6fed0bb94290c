#ifndef TESSERA_SIM_MODEL_WORKLOAD_H_
#define TESSERA_SIM_MODEL_WORKLOAD_H_

// Model jobs on the queue (`tessera simulate --mode models`): a seeded
// Poisson stream of training jobs drawn from a model zoo, replayed on a
// virtual clock under three admissions (whole GPUs, fractions of one GPU,
// fractions plus splitting over residual slivers), with co-located jobs
// slowed by the co-location slowdown measured on an H100
// (estimator::CoLocationSlowdown) or, as an override, a linear
// interference law. Starts are decided by the queue's
// own policy (MakePolicy) with an Allocator around FindAllocation and, for
// splitting, SplitAcrossSlivers, as the service does; nothing here decides
// where a job goes. docs/simulate_models.md describes the model.

#include <compare>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "common/result.h"
#include "estimator/interference.h"
#include "scheduler/model_jobs.h"
#include "scheduler/start_decision.h"
#include "scheduler/topology.h"

namespace tessera::sim {

// The cluster, the models' sizes and their interference (scheduler/).
using scheduler::Allocation;
using scheduler::ClusterState;
using scheduler::GpuInfo;
using scheduler::InterferenceLaw;
using scheduler::Resources;
using scheduler::SizedModel;
using scheduler::Topology;

// A job's run time alone, in seconds: "fixed:S", "exp:MEAN",
// "uniform:LO,HI", or "lognormal:MU,SIGMA" (of ln seconds).
struct DurationDistribution {
  enum class Kind { kFixed, kExponential, kUniform, kLognormal };
  Kind kind = Kind::kFixed;
  double a = 0, b = 0;  // S | MEAN | LO,HI | MU,SIGMA
  double Sample(std::mt19937_64& rng) const;
  double Mean() const;
};
// kBadInput "FIELD: ..." for an unknown distribution, a wrong number of
// parameters, a non-number, or a value that gives no positive durations.
// FIELD names what the spec fills, ModelWorkloadOptions::duration unless
// the caller says otherwise.
Result<DurationDistribution> ParseDurationDistribution(
    std::string_view spec, std::string_view field = "duration");

// One (model, batch) a job can be, sized once on the pool's GPU kind.
struct ModelJobKind {
  std::string path;  // the ONNX file
  std::string name;  // e.g. "resnet50/b32"
  int64_t batch = 0;
  SizedModel sized;        // sized.model null: cannot be split (tests)
  int64_t demand_mib = 0;  // need x (1 + headroom): ModelDemand
  // Its training step alone on one whole GPU: the PyTorch runtime model's
  // (SizedModel::step_s), as the placer prices its splits.
  double step_s = 0;
  // The fraction of its step alone the GPU is busy, which sets how much
  // sharing slows it (estimator::CoLocationSlowdown): the PyTorch runtime
  // model's (SizedModel::busy_fraction); by default the measured mean of
  // training jobs.
  double busy_fraction = estimator::kTrainingBusyFraction;
};

// Sizes every (path, batch) for training on GPU kind `kind`, `threads` at
// a time (0: one per core); `progress` (may be empty) gets the count done.
// kBadInput naming the file when a model does not load.
Result<std::vector<ModelJobKind>> SizeModelJobKinds(
    const std::vector<std::string>& paths, const std::vector<int>& batches,
    const std::string& kind, double headroom, int threads,
    const std::function<void(int done, int total)>& progress = {});

// A generated job: what it is, when it arrives, and how long it runs alone
// on whole GPUs (its work, in seconds at speed 1).
struct ModelJob {
  int kind = 0;  // index into the kinds
  double arrival_s = 0;
  double duration_s = 0;
};

struct ModelWorkloadOptions {
  int jobs = 200;
  double arrival_per_hour = 30;
  DurationDistribution duration;
};

// `options.jobs` jobs with exponential inter-arrival times (rate per hour,
// the first after one gap from t = 0), kinds uniform over `num_kinds`,
// durations from the distribution. The same seed gives the same jobs.
// REQUIRES: num_kinds >= 1, arrival_per_hour > 0.
std::vector<ModelJob> GenerateModelJobs(int num_kinds,
                                        const ModelWorkloadOptions& options,
                                        uint64_t seed);

// kTessera: per job, by predicted finish (scheduler/start_decision.h):
// whole GPUs now, a fraction now, a split now, or wait for whole capacity.
enum class Admission { kWhole, kFraction, kSplit, kTessera };
// "whole", "fraction", "split", "tessera".
std::string_view AdmissionName(Admission a);
inline constexpr Admission kAdmissions[] = {
    Admission::kWhole, Admission::kFraction, Admission::kSplit,
    Admission::kTessera};
// The fixed admissions tessera's decision is compared with.
inline constexpr Admission kFixedAdmissions[] = {
    Admission::kWhole, Admission::kFraction, Admission::kSplit};

// InterferenceLaw and InterferenceRate: scheduler/start_decision.h.

// A fractional job's compute share never drops below this: a GPU takes
// at most 20 tiny jobs, well under MPS's 48 clients per GPU (Volta on).
inline constexpr int kMinShareMilli = 50;

// The fraction a model job asks for under fraction and split: its memory
// demand, and compute in proportion to its share of the GPU's memory
// (at least kMinShareMilli). The share bounds co-location only; speed
// comes from InterferenceRate.
Resources FractionDemand(const ModelJobKind& kind, int64_t gpu_memory_mib);
// Under whole: ceil(demand / GPU memory) whole GPUs (at least one).
Resources WholeDemand(const ModelJobKind& kind, int64_t gpu_memory_mib);

// Placer results shared by runs on the same cluster and kinds: for a
// (kind, free capacity of the pool's GPUs) the split SplitAcrossSlivers
// finds, and the speed it runs at. The speed is the estimator's step on
// one whole GPU over the split's step when its GPUs run at full speed (a
// second SplitAcrossSlivers on the same GPUs with the memory others hold
// but all their compute): co-location is InterferenceRate's to charge, so
// the speed is the cost of splitting itself (transfers, idle stages).
// The placer is not called when no node has two slivers whose usable
// memory adds up to the job's single-GPU peak (the parts' peaks add up to
// at least that). One cache per topology and kind list (keys name nodes
// and kinds by index). Safe for concurrent use.
class SplitCache {
 public:
  struct Entry {
    std::optional<Allocation> allocation;  // nullopt: no split fits
    double speed = 1;                      // the single-GPU step / step_s, <= 1
    double step_s = 0;                     // the split's step at full speed
    double shared_step_s = 0;  // the step as planned on the slivers' compute
  };
  // The split for `kind` in `state`, computing and remembering it.
  Entry Find(const ClusterState& state, std::string_view pool, int kind_index,
             const ModelJobKind& kind, double headroom);
  int64_t placer_calls() const;
  int64_t hits() const;
  int64_t filtered() const;  // misses answered without the placer

 private:
  double FullSpeedStep(const ClusterState& state, std::string_view pool,
                       int kind_index, const ModelJobKind& kind,
                       double headroom, const Allocation& a, int& calls);

  mutable std::mutex mu_;
  std::unordered_map<std::string, Entry> entries_;      // guarded by mu_
  std::unordered_map<std::string, double> full_speed_;  // guarded by mu_
  int64_t placer_calls_ = 0, hits_ = 0, filtered_ = 0;  // guarded by mu_
};

struct ModelSimOptions {
  Admission admission = Admission::kSplit;
  InterferenceLaw interference;       // default: measured, time-slicing
  std::string scorer = "tessera";     // ScorerNames()
  std::string queue_policy = "fifo";  // PolicyNames()
  std::string pool;                   // "" = the default pool
  double headroom = scheduler::kDefaultModelHeadroom;  // model_headroom
  uint64_t seed = 1;                                   // for random scorers
  bool record_utilization = true;  // fill ModelSimResult::utilization
  // Check the cluster's invariants after every round (tests): the first
  // violation goes to ModelSimResult::violation.
  bool check_invariants = false;
};

// What happened to one job.
struct JobOutcome {
  bool ran = false;  // false: never fitted (or was stuck at the end)
  bool split = false;
  int gpus = 0;  // GPUs it held
  double arrival_s = 0, start_s = 0, finish_s = 0;
};

// The cluster at one moment: allocated compute and memory in use, in
// percent of the pool's capacity, and jobs queued and running.
struct UtilizationPoint {
  double t = 0;
  double gpu_pct = 0, memory_pct = 0;
  int queued = 0, running = 0;
};

struct ModelSimResult {
  Admission admission = Admission::kSplit;
  InterferenceLaw interference;
  uint64_t seed = 0;
  int64_t jobs = 0, completed = 0, never_ran = 0;
  int64_t split_jobs = 0;  // started as a gang by SplitAcrossSlivers
  // tessera: jobs its decision held back at least once to wait for whole
  // capacity (while something else fitted them).
  int64_t decided_waits = 0;
  double mean_split_speed = 0;  // their SplitCache speed (0 if none)
  // Their speed at the compute shares the plan assumed (the slivers' free
  // milli, as the service caps them with MPS); reported, not used.
  double mean_split_shared_speed = 0;
  double mean_jct_s = 0;  // finish - arrival, over completed jobs
  double delay_mean_s = 0, delay_p50_s = 0, delay_p95_s = 0;  // start - arrival
  double mean_stretch = 0;                                    // JCT / duration
  double makespan_s = 0;  // the last finish (time starts at 0)
  // Time-weighted over [0, makespan]: allocated GPU milli (whole GPUs count
  // 1000) and the memory jobs reserve (whole-GPU jobs: their demand, not
  // the GPU's), over the pool's capacity.
  double gpu_util_pct = 0, memory_util_pct = 0;
  int max_running = 0;
  std::vector<JobOutcome> outcomes;           // by job
  std::vector<UtilizationPoint> utilization;  // after every event
  std::string violation;  // check_invariants: the first one, "" if none
  double seconds = 0;     // wall time
};

// The mean JCT of each run over the jobs that completed in all of them
// (runs of the same arrivals under different admissions: the comparison
// on equal work). Zeros when no job completed everywhere.
// REQUIRES: every run has the same number of outcomes.
std::vector<double> MeanJctOfCommonJobs(
    const std::vector<const ModelSimResult*>& runs);

// Replays `jobs` on `topology` under `options`. kBadInput for an unknown
// scorer, queue policy or pool, a pool without GPUs, or a job whose kind
// is out of range. `cache` may be null (splits are remembered for this
// run only).
Result<ModelSimResult> SimulateModelJobs(const Topology& topology,
                                         const std::vector<ModelJobKind>& kinds,
                                         const std::vector<ModelJob>& jobs,
                                         const ModelSimOptions& options,
                                         SplitCache* cache = nullptr);

// Every seed x admission x interference on the same arrivals per seed, in
// parallel. Results are ordered by seed, then interference, then
// admission (kAdmissions).
struct ModelExperimentOptions {
  ModelWorkloadOptions workload;
  ModelSimOptions sim;  // admission and interference are set per run
  std::vector<InterferenceLaw> interference = {InterferenceLaw{}};
  int seeds = 1;
  uint64_t first_seed = 42;
  int threads = 0;  // 0: one per core
};
Result<std::vector<ModelSimResult>> RunModelExperiment(
    const Topology& topology, const std::vector<ModelJobKind>& kinds,
    const ModelExperimentOptions& options, SplitCache& cache,
    const std::function<void(int done, int total)>& progress = {});

// The pool `pool` names ("" = the default), or kBadInput.
Result<std::string> ResolveModelPool(const Topology& topology,
                                     std::string_view pool);
// The GPU kind and memory of the pool's first GPU (the service sizes model
// jobs on it).
const GpuInfo* PoolGpu(const Topology& topology, std::string_view pool);

}  // namespace tessera::sim

#endif  // TESSERA_SIM_MODEL_WORKLOAD_H_
