#ifndef TESSERA_SERVICE_SERVICE_INTERNAL_H_
#define TESSERA_SERVICE_SERVICE_INTERNAL_H_

// The service's state and its steps, shared by the files that implement the
// Service: service.cc (the API), service_rounds.cc (scheduling rounds and
// recovery), service_launch_env.cc (what a job starts with) and
// service_reservations.cc (reservations for outside systems); nobody else
// includes it. One mutex (`mu`) guards the cluster state and the jobs; the
// slow steps (launcher calls, model loading, the policies' planning) run
// on the round thread without it (docs/operations.md, "What survives
// what").

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "scheduler/admission.h"
#include "scheduler/elastic.h"
#include "scheduler/model_jobs.h"
#include "service/metrics_internal.h"
#include "service/service.h"
#include "service/store_internal.h"

namespace tessera::scheduler {

// Seconds the service waits after a launcher could not reach its engine
// before it starts jobs again: long enough not to hammer a controller that
// is down, short against a job's wait.
inline constexpr double kLaunchRetryS = 5;

namespace service_internal {

inline double WallClock() {
  return std::chrono::duration<double>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// The GPU kind a pool's model jobs are sized for: its first GPU's.
inline std::string PoolKind(const Topology& t, const std::string& pool) {
  for (const NodeInfo& n : t.nodes) {
    if (n.pool == pool && !n.gpus.empty()) return t.gpus[n.gpus[0]].kind;
  }
  return "";
}

// What a user or team holds (or one job would add).
struct QuotaUse {
  int64_t queued = 0, running = 0, gpu_milli = 0, gpu_memory_mib = 0;
};

// A submission rate's bucket: `tokens` at time `at` (0: never used).
struct TokenBucket {
  double tokens = 0, at = 0;
};

// service_quotas.cc.
// The quota of `user`: its own entry's fields, the default's for the rest.
Quota UserQuota(const Quotas& quotas, const std::string& user);
// The quota of `team`, or null if it has none.
const Quota* TeamQuota(const Quotas& quotas, const std::string& team);
// One running job holding `a`.
QuotaUse HeldBy(const Allocation& a);
// What a queued job would hold once started (before it is placed).
QuotaUse EstimateHeld(const Job& job, const Topology& t);
// service_reservations.cc: why `d` does not fit `node` now (it could when
// the node is empty); `subject` names the asker ("the job asks").
std::string WhyNot(const ClusterState& s, int node, const Resources& d,
                   std::string_view subject);
// Why holding `plus` more than `now` breaks `q` ("" if it does not).
std::string OverQuota(const Quota& q, const QuotaUse& now, const QuotaUse& plus,
                      const std::string& who);
// An elastic job's allocation and state without the workers `drop`: their
// GPU shares and ids gone, and no longer asked back (the release deadline
// cleared once nobody is). service_elastic.cc.
struct ElasticWithout {
  Allocation allocation;
  ElasticState state;
};
ElasticWithout DropWorkers(const Job& job, const std::set<int>& drop);
// A job as the queue policies see it (policy.h): queued, or running.
inline QueuedJob AsQueued(const Job& j) {
  return {j.id,
          j.user,
          j.team,
          j.request.priority,
          j.request.preemptible,
          j.submitted_at,
          j.request.time_limit_s,
          j.demand};
}
inline RunningJob AsRunning(const Job& j) {
  return {j.id,
          j.user,
          j.team,
          j.request.priority,
          j.request.preemptible,
          j.started_at,
          j.request.time_limit_s};
}

}  // namespace service_internal

// What a round's policies plan on: copies taken under the lock, so that
// the policies, model loading and split placement run without it.
struct RoundSnapshot {
  ClusterState state;
  std::vector<Job> queue;
  std::vector<Job> running;
  std::vector<Job> held;  // running and starting: what counts for quotas
  // Model jobs' sized graphs, by id (loaded again after a restart).
  std::unordered_map<JobId, std::shared_ptr<const SizedModel>> models;
  // The split-or-wait decision's inputs (service_decisions.cc): the jobs
  // holding GPUs (busy fraction, predicted end), the laws by GPU kind.
  double now = 0;
  std::unordered_map<JobId, Occupant> occupants;
  std::unordered_map<JobId, double> ends;  // absolute; infinity: unknown
  std::map<std::string, InterferenceLaw> laws;
};

namespace service_internal {

// A split-or-wait decision as GET /v1/jobs/{id} shows it.
struct DecisionRecord {
  nlohmann::json json;
};

// A running job's progress reports (POST /v1/jobs/{id}/progress).
struct JobProgress {
  double last_at = 0;
  int64_t last_steps = -1;  // -1: no report yet
  int last_sharing = 0;     // jobs beside it at the last report
  double step_s = 0;        // the last interval's step time
  double alone_step_s = 0;  // measured with nobody beside it (0: never)
};

// The interference factor fitted for one GPU kind: least squares of
// slowdown - 1 = alpha (k - 1) through the origin.
struct InterferenceFit {
  double xy = 0, xx = 0;
  int samples = 0;
  double alpha() const { return xx > 0 ? std::max(0.0, xy / xx) : 0; }
};
// A calibrated factor replaces the configured law after this many
// intervals measured beside other jobs.
inline constexpr int kMinCalibrationSamples = 3;

}  // namespace service_internal

// A start under way: the job (state `starting`, reserved and stored) and
// what the launcher is given.
struct PendingStart {
  Job job;
  LaunchSpec spec;
  std::shared_ptr<const SizedModel> model;
  std::function<placer::PlanPictures()> pictures;  // a split's; or empty
};

struct Service::Impl {
  ServiceOptions options;
  std::unique_ptr<Store> store;
  std::unique_ptr<Launcher> launcher;
  std::unique_ptr<GpuScorer> scorer;
  std::map<std::string, std::unique_ptr<QueuePolicy>> policies;

  // One round at a time (Loop, Tick). Held for the whole round, launcher
  // calls included; the round thread alone calls the launcher (but Adopt
  // and Reconcile, during Start, before the thread runs), so API calls
  // never wait on it. Taken before `mu`, never while holding it.
  std::mutex round_mu;
  // Guarded by round_mu (the round's own planning state).
  AdmissionCache admission_cache;  // the scorer's scores, by node stamp
  std::unordered_map<JobId, nlohmann::json> pending_plans;
  // The pictures of those plans, drawn only for the jobs that start.
  std::unordered_map<JobId, std::function<placer::PlanPictures()>>
      pending_pictures;

  std::mutex mu;  // guards everything below; never held across a
                  // launcher call, a model load or a policy's planning
  std::condition_variable wake;
  bool stopping = false;
  bool dirty = true;  // something changed: run a round
  std::thread thread;

  ClusterState state;
  std::vector<Job> queue;        // queued or preempted, by id
  std::map<JobId, Job> running;  // running (incl. stopping)
  // State `starting`: reserved and stored, the launcher not yet done (or
  // its outcome not yet stored).
  std::map<JobId, Job> starting;
  // Start outcomes the store has not taken yet (a failed write): the job
  // stays `starting`, in memory as in the store, and the write is tried
  // again every round.
  std::map<JobId, Job> unrecorded_starts;
  // Exits the store has not taken yet: the job stays running (and
  // reserved) until it has.
  std::map<JobId, Exited> unrecorded_exits;
  // `starting` jobs whose launcher could not say at recovery whether they
  // run (Reconciled::kUnknown): asked again every round.
  std::set<JobId> unreconciled;
  std::set<JobId> cancel_requested, preempt_requested;
  std::vector<JobId> stop_requests;  // launcher->Stop for the round thread
  std::unordered_map<JobId, std::shared_ptr<const SizedModel>> models;
  // After a transient launcher error nothing starts until then.
  double launch_retry_at = 0;
  Metrics metrics;
  // Reservations for outside systems (Job::origin set): running, but
  // kept out of `running`, so the launcher never sees them.
  std::map<JobId, Job> reserved;
  // Submission rates per user and team (service_quotas.cc).
  std::map<std::string, service_internal::TokenBucket> user_buckets,
      team_buckets;
  // Queued jobs a quota holds back, with why (for ClusterJson).
  std::map<JobId, std::string> quota_waits;
  // The last split-or-wait decision per model job (queued or running),
  // this round's collected unlocked (guarded by round_mu) and published.
  std::map<JobId, service_internal::DecisionRecord> start_decisions;
  std::unordered_map<JobId, service_internal::DecisionRecord>
      pending_decisions;  // guarded by round_mu
  std::map<JobId, service_internal::JobProgress> progress;
  std::map<std::string, service_internal::InterferenceFit> fits;  // by kind

  // The queue tree (service_queues.cc, docs/quotas.md); empty without
  // `queues:`. Reclaim victims still stopping (their grace), and why a
  // preempted job was stopped when it was not for a higher priority.
  QueueTree tree;
  std::set<JobId> reclaim_victims;
  std::set<JobId> reclaimers;  // queued jobs room was reclaimed for
  std::map<JobId, std::string> preempt_reasons;
  Status SetUpQueues();
  // A submission's queue: kBadInput for a queue the tree lacks.
  Status CheckQueue(const JobRequest& request) const;
  // The round's plan under the tree (no lock: the round thread).
  TreePlan PlanQueues(const RoundSnapshot& snap, bool reclaiming,
                      const std::set<JobId>& owners);
  // Phase 4 (the caller holds mu): promotions stored, victims asked to
  // stop; `held` is the tree with what runs and starts now.
  void ApplyQueuePlan(const TreePlan& plan);
  // The tree with what runs and starts now: an elastic job's guaranteed
  // part with its mark, its extras as a second, borrowed entry.
  QueueTree HeldTree() const;
  // Whether growing `job` to `next` keeps every queue from the job's up
  // within its limit, on `held` (true without a tree).
  bool ExtrasWithinLimits(const QueueTree& held, const Job& job,
                          const Allocation& next) const;
  // Marks `job` (about to start with `a`) guaranteed or borrowed against
  // `held` and counts it there; false (with `why`) if it may not start.
  bool MarkStart(QueueTree& held, Job& job, const Allocation& a,
                 std::string* why) const;
  nlohmann::json QueuesJson() const;

  // service_decisions.cc (the caller holds mu): the decision's inputs in
  // `snap`; the law of a GPU kind (calibrated, configured or measured);
  // the laws and fits for ClusterJson.
  void FillDecisionInputs(RoundSnapshot& snap, double now) const;
  InterferenceLaw LawOf(const std::string& kind) const;
  nlohmann::json InterferenceJson() const;
  // A model job's start (no lock: the round thread): the decision over
  // whole, fraction, split and wait (DecideStart), recorded in
  // pending_decisions; the allocation, or nullopt to wait.
  std::optional<Allocation> DecideModelStart(const RoundSnapshot& snap,
                                             const ClusterState& s,
                                             const Job& job,
                                             const SizedModel& sized);
  // The work the decision assumes (seconds on one whole GPU) and whence.
  std::pair<double, std::string> WorkOf(const Job& job,
                                        const SizedModel* sized) const;

  // Whether `user` may submit now: rates, then queued-job limits.
  Status AdmitSubmission(const User& user);
  static std::string FormatRate(double rate);
  // Every user's and team's use and quota, for ClusterJson.
  nlohmann::json QuotaJson() const;

  // Ends the reservation at `it` (the caller holds `mu`); wakes the queue,
  // which may start what it held back (service_reservations.cc).
  // `by`: who ended it (null: its origin).
  Result<Job> EndReserved(std::map<JobId, Job>::iterator it, JobState end,
                          const std::string& reason, const User* by = nullptr);

  // Elastic jobs (service_elastic.cc; the caller holds mu). A change of
  // a job's allocation wakes the long-polls; `notices` are the jobs to
  // signal (SIGUSR1), sent by the round thread without the lock.
  std::condition_variable allocation_changed;
  std::vector<JobId> notices;
  // Pools where extras were asked back this round: nothing grows there.
  std::set<std::string> elastic_reclaiming;
  // A job starting: its first `min` workers, version and history.
  void BeginElastic(Job& job);
  // The running elastic jobs (of `pool`, or all when null) as the round's
  // elastic rules see them (scheduler/elastic.h); views into `running`.
  std::vector<ElasticHolding> ElasticHoldings(
      const std::string* pool = nullptr) const;
  // The state the policies plan on: every elastic job holds only its
  // guaranteed part, so extras count as free (borrowable) capacity
  // (PlanOnGuaranteed).
  ClusterState PlanningState() const;
  // Before `allocation` (a start the policy chose) can be reserved: asks
  // back the extras in its way, on its node. True if it asked any.
  bool AskBackFor(const Allocation& allocation, const std::string& pool);
  // A start the policy planned (`allocation`) against the state now: kept
  // if it fits; if elastic extras of `pool` are in the way, replaced by a
  // placement on what is free now when there is one, else the extras are
  // asked back and false returned (the job waits). Holds round_mu and mu.
  bool MakeRoom(const RoundSnapshot& snap, const Job& job,
                const std::string& pool, Allocation& allocation);
  // Extras whose release_by has passed are reclaimed.
  void ReclaimOverdue(double now);
  // Free capacity goes to running elastic jobs, in GrowOrder, up to max.
  void GrowElastic();
  // Applies `next` (the job's new allocation and elastic state) to
  // running job `id`: reserved, stored with an event, file rewritten,
  // waiters woken, the job signalled. False if it does not fit or the
  // store failed (nothing changed).
  bool ApplyElastic(JobId id, const Allocation& next, ElasticState st,
                    const std::string& action, std::vector<int> workers,
                    const User* by = nullptr, const std::string& note = "");
  std::string AllocationFilePath(JobId id) const;
  void WriteAllocationFile(const Job& job) const;

  // Per-worker elastic jobs (docs/elastic.md, "The two launch modes"): the
  // launcher runs a process per worker. Under mu the service queues which
  // workers to start (a grow) and stop (a shrink asked, a release, a
  // reclaim); the round thread hands them to the launcher without it.
  struct WorkerStop {
    JobId id = 0;
    std::vector<int> workers;
    double grace_s = 0;
  };
  std::vector<LaunchSpec> worker_starts;
  std::vector<WorkerStop> worker_stops;
  // Reclaimed workers whose process was killed and has not been reaped
  // yet: their job does not grow meanwhile (a new worker could get the
  // same id).
  std::map<JobId, std::set<int>> workers_dying;
  static bool PerWorker(const Job& job) {
    return job.request.elastic &&
           job.request.elastic->mode == ElasticMode::kPerWorker;
  }
  // What `workers` of `job` start with: each its own GPU
  // (CUDA_VISIBLE_DEVICES, TESSERA_GPUS), its share's MPS limits, its id.
  std::vector<LaunchWorker> WorkerLaunches(const Job& job, const Topology& t,
                                           const std::vector<int>& workers);
  // The processes of `workers` of `job` ended (or never started: `why`):
  // extras are released (their shares freed); the job grows no more when
  // one ended without being asked back.
  void WorkersEnded(JobId id, const std::vector<WorkerExited>& ended);
  // The round thread's launcher calls for per-worker jobs (no lock held);
  // starts that failed are handed back as ended workers.
  std::vector<WorkerExited> RunWorkerCalls(std::vector<LaunchSpec> starts,
                                           std::vector<WorkerStop> stops);
  // Recover: takes over a running per-worker job's live workers; extras
  // that ended meanwhile are released. False if none is alive.
  bool AdoptWorkerJob(Job& job);

  // Which model files jobs may name (Start fills it from `options`).
  ModelFiles model_files;
  // Uploads are loaded one at a time (UploadModel): bounds their memory.
  std::mutex upload_mu;

  explicit Impl(ServiceOptions o)
      : options(std::move(o)), state(options.topology) {}

  double Now() const {
    return options.clock ? options.clock() : service_internal::WallClock();
  }

  // Loads and sizes a model job's graph (no lock needed; slow).
  std::shared_ptr<const SizedModel> LoadModel(const Job& job) const;
  // Canonicalizes the model roots into `model_files` (service_models.cc).
  Status SetUpModelFiles();

  std::optional<Allocation> Allocate(const RoundSnapshot& snap,
                                     const ClusterState& s, const Job& job);

  // The environment a job starts with (docs/scheduler.md, "Launching").
  // Writes the plan and device map files of a split job: no lock held.
  // A split job's plan pictures, as files beside its plan
  // (PlanPicturePath); a failure to write leaves the job without them.
  void WritePlanPictures(JobId id, const placer::PlanPictures& pictures) const;
  std::map<std::string, std::string> LaunchEnv(const Job& job,
                                               const Topology& t,
                                               const SizedModel* sized) const;

  // Stores `job` (and `event`, in the same transaction); kUnavailable (and
  // store_errors counted) if the store fails. The caller changes its
  // memory only once this succeeded.
  Status Persist(const Job& job, const JobEvent* event = nullptr);
  // An audit event by `by` (null: the scheduler) now.
  JobEvent Event(JobId job, const User* by, std::string action,
                 std::string detail) const;
  // Stores an event that changes no job; counts a store failure.
  Status Record(const JobEvent& event);

  // Ends a running job (its process exited); false if the store failed
  // (the job then stays running and the exit is tried again).
  bool Finish(const Exited& e);

  // What `a` holds on each node, for the launcher: the node that holds the
  // CPU and memory first.
  static std::vector<LaunchPart> LaunchParts(const Topology& t,
                                             const Allocation& a);

  // Back to the queue, in id order.
  void Requeue(Job job);

  // Marks `job` (removed from the queue by the caller) `starting` on
  // `allocation`, reserved and stored; nullopt (the job back in the queue)
  // if it no longer fits or the store fails.
  std::optional<Job> BeginStart(Job job, const Allocation& allocation);
  // Applies what the launcher said about a `starting` job.
  void EndStart(JobId id, const Result<Launched>& launched);
  // Stores the outcome of a start and moves the job on; false if the
  // store failed (the outcome is kept and tried again).
  bool RecordStart(const Job& outcome);

  // One scheduling round; takes round_mu, then mu when it needs it.
  void RunRound();
  void Loop();

  // After a restart: live jobs are re-adopted, the others are lost; a
  // start under way when the service stopped is reconciled, never redone.
  Status Recover();
  // A `starting` job found (or not) by the launcher: the caller holds mu.
  void ApplyReconciled(Job job, const Reconciled& r);
};

}  // namespace tessera::scheduler

#endif  // TESSERA_SERVICE_SERVICE_INTERNAL_H_
