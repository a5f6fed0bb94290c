#ifndef TESSERA_SERVICE_SERVICE_INTERNAL_H_
#define TESSERA_SERVICE_SERVICE_INTERNAL_H_

// The service's state and its steps, shared by the files that implement the
// Service: service.cc (the API), service_rounds.cc (scheduling rounds),
// service_transitions.cc (a job's starts and exits), service_recovery.cc
// (after a restart), service_launch_env.cc (what a job starts with) and
// service_reservations.cc (reservations for outside systems); nobody else
// includes it. One mutex (`mu`) guards the cluster state and the jobs; the
// slow steps (launcher calls, model loading, the policies' planning) run
// on the round thread without it (docs/operations.md, "What survives
// what").

#include <algorithm>
#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "common/mutex.h"
#include "launch/out_of_memory.h"
#include "scheduler/admission.h"
#include "scheduler/elastic.h"
#include "scheduler/model_jobs.h"
#include "scheduler/round.h"
#include "scheduler/start_decision.h"
#include "service/elastic_part_internal.h"
#include "service/job_table_internal.h"
#include "service/measure/learned_part_internal.h"
#include "service/measure/usage_part_internal.h"
#include "service/metrics_internal.h"
#include "service/quota_book_internal.h"
#include "service/service.h"
#include "service/store_internal.h"

namespace tessera::service {

// The queue, its decisions and the cluster's state (scheduler/).
using scheduler::AdmissionCache;
using scheduler::Allocation;
using scheduler::Decision;
using scheduler::ElasticHolding;
using scheduler::ElasticMode;
using scheduler::ElasticState;
using scheduler::GpuScorer;
using scheduler::ModelFiles;
using scheduler::NodeInfo;
using scheduler::Occupant;
using scheduler::QueuedJob;
using scheduler::QueuePolicy;
using scheduler::QueueTree;
using scheduler::RoundPlan;
using scheduler::RoundTree;
using scheduler::RunningJob;
using scheduler::SizedModel;
using scheduler::StartDecision;
using scheduler::TreePlan;

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
// The topology node whose GPUs the usage probe reads (-1: none).
inline int UsageNode(const ServiceOptions& o) {
  if (o.topology.nodes.empty()) return -1;
  return o.usage_node.empty() ? 0 : o.topology.FindNode(o.usage_node);
}

// The most memory of one GPU of `pool`.
inline int64_t MaxGpuMemory(const Topology& t, const std::string& pool) {
  int64_t most = 0;
  for (const NodeInfo& n : t.nodes) {
    if (n.pool != pool) continue;
    for (const int g : n.gpus) most = std::max(most, t.gpus[g].memory_mib);
  }
  return most;
}

inline std::string PoolKind(const Topology& t, const std::string& pool) {
  for (const NodeInfo& n : t.nodes) {
    if (n.pool == pool && !n.gpus.empty()) return t.gpus[n.gpus[0]].kind;
  }
  return "";
}

// service_reservations.cc: why `d` does not fit `node` now (it could when
// the node is empty); `subject` names the asker ("the job asks").
std::string WhyNot(const ClusterState& s, int node, const Resources& d,
                   std::string_view subject);
// An elastic job's allocation and state without the workers `drop`: their
// GPU shares and ids gone, and no longer asked back (the release deadline
// cleared once nobody is). service_elastic.cc.
struct ElasticWithout {
  Allocation allocation;
  ElasticState state;
};
ElasticWithout DropWorkers(const Job& job, const std::set<int>& drop);
// A split a round's decision chose: the plan (placer/'s JSON) and its
// pictures, drawn only for the jobs that start.
struct PlannedSplit {
  Allocation allocation;
  nlohmann::json plan;
  std::function<placer::PlanPictures()> pictures;
};
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

// A split-or-wait decision as the round made it (DecideModelStart): the
// forecast itself and what the API shows beside it. Kept typed; its JSON
// (docs/http_api.md, "decision") is written when asked for.
struct DecisionRecord {
  StartDecision decision;
  double decided_at = 0;  // Unix seconds
  std::string work_from;  // where its work estimate came from (WorkOf)
  InterferenceLaw law;    // of the pool's GPU kind, then
  std::string summary;    // DescribeDecision's line
};
// GET /v1/jobs/{id}'s "decision" and the queue view's.
nlohmann::json DecisionRecordJson(const DecisionRecord& r, const Topology& t);

// A running job's progress reports (POST /v1/jobs/{id}/progress).
struct JobProgress {
  double last_at = 0;
  int64_t last_steps = -1;  // -1: no report yet
  int last_sharing = 0;     // jobs beside it at the last report
  double step_s = 0;        // the last interval's step time
  double alone_step_s = 0;  // measured with nobody beside it (0: never)
};

}  // namespace service_internal

// A start under way: the job (state `starting`, reserved and stored) and
// what the launcher is given.
struct PendingStart {
  Job job;
  launch::LaunchSpec spec;
  std::shared_ptr<const SizedModel> model;
  std::function<placer::PlanPictures()> pictures;  // a split's; or empty
};

// The steps of a round (service_rounds.cc) hand these to each other.
// What the launcher said since the last round (step 1, no lock).
struct LauncherNews {
  std::vector<std::pair<JobId, launch::Reconciled>> reconciled;
  std::vector<launch::Exited> exits;
  // Per-worker elastic jobs' workers that ended while their job runs on.
  std::map<JobId, std::vector<launch::WorkerExited>> worker_exits;
  // Exits whose stderr says the job ran out of GPU memory.
  std::map<JobId, launch::OutOfMemory> oom;
};
// What a round plans on (step 2, taken under the lock).
struct RoundView {
  RoundSnapshot snap;
  std::vector<JobId> to_load;  // model jobs whose graph is not loaded yet
  bool reclaiming = false;     // reclaim victims still stopping (their grace)
  std::set<JobId> owners;      // queued jobs that reclaimed room
  // GPUs of this round's starts that wait for extras asked back: no later
  // start is placed on them (StartBesideExtras).
  std::set<int> waited_for;
  // to_load's step alone on a whole GPU as measured (measure/learned_part).
  std::map<JobId, double> measured_step_s;
};

struct Service::Impl {
  ServiceOptions options;
  std::unique_ptr<Store> store;
  // Shared by the Impls a replica swaps (only one runs rounds at a time).
  std::shared_ptr<launch::Launcher> launcher;
  std::unique_ptr<GpuScorer> scorer;
  std::map<std::string, std::unique_ptr<QueuePolicy>> policies;

  // One round at a time (Loop, Tick). Held for the whole round, launcher
  // calls included; the round thread alone calls the launcher (but Adopt
  // and Reconcile, during Start, before the thread runs), so API calls
  // never wait on it. Taken before `mu`, never while holding it.
  Mutex round_mu TESSERA_ACQUIRED_BEFORE(mu);
  // The round's own planning state.
  AdmissionCache admission_cache TESSERA_GUARDED_BY(round_mu);  // by stamp
  // The splits the round's decisions chose, by job, each with the
  // allocation it is for: a start takes the plan of the allocation it
  // starts at, whichever allocator call (the cluster now, or a policy's
  // what-if) made it.
  std::unordered_map<JobId, std::vector<service_internal::PlannedSplit>>
      pending_splits TESSERA_GUARDED_BY(round_mu);

  // Guards the jobs and the cluster state below (each member says so);
  // never held across a launcher call, a model load or a policy's
  // planning. What is not marked is set before the round thread starts and
  // only read after (options, the store, the launcher, the policies, the
  // queue tree, the model files).
  Mutex mu;
  std::condition_variable_any wake;
  bool stopping TESSERA_GUARDED_BY(mu) = false;
  bool dirty TESSERA_GUARDED_BY(mu) = true;  // something changed: run a round
  std::thread thread;

  ClusterState state TESSERA_GUARDED_BY(mu);
  // Every job by state: queue, running, starting, reserved
  // (job_table_internal.h, with its invariants).
  service_internal::JobTable jobs TESSERA_GUARDED_BY(mu);
  // Start outcomes the store has not taken yet (a failed write): the job
  // stays `starting`, in memory as in the store, and the write is tried
  // again every round.
  std::map<JobId, Job> unrecorded_starts TESSERA_GUARDED_BY(mu);
  // Exits the store has not taken yet: the job stays running (and
  // reserved) until it has.
  std::map<JobId, launch::Exited> unrecorded_exits TESSERA_GUARDED_BY(mu);
  // Why exits not recorded yet were out of GPU memory (their stderr's
  // error), until the store has taken them.
  std::map<JobId, launch::OutOfMemory> oom_exits TESSERA_GUARDED_BY(mu);
  // `starting` jobs whose launcher could not say at recovery whether they
  // run (launch::Reconciled::kUnknown): asked again every round.
  std::set<JobId> unreconciled TESSERA_GUARDED_BY(mu);
  std::set<JobId> cancel_requested TESSERA_GUARDED_BY(mu);
  std::set<JobId> preempt_requested TESSERA_GUARDED_BY(mu);
  // launcher->Stop, for the round thread
  std::vector<JobId> stop_requests TESSERA_GUARDED_BY(mu);
  std::unordered_map<JobId, std::shared_ptr<const SizedModel>> models
      TESSERA_GUARDED_BY(mu);
  // After a transient launcher error nothing starts until then.
  double launch_retry_at TESSERA_GUARDED_BY(mu) = 0;
  Metrics metrics TESSERA_GUARDED_BY(mu);
  // Measured GPU use (measure/usage_part_internal.h): Read on the round
  // thread without `mu`, the rest under it.
  service_internal::UsagePart usage;
  // Quotas per user and team: the submission rates, why queued jobs wait
  // (quota_book_internal.h).
  service_internal::QuotaBook quotas TESSERA_GUARDED_BY(mu);
  // The last split-or-wait decision per model job (queued or running),
  // this round's collected unlocked (pending_decisions) and published.
  std::map<JobId, service_internal::DecisionRecord> start_decisions
      TESSERA_GUARDED_BY(mu);
  std::unordered_map<JobId, service_internal::DecisionRecord> pending_decisions
      TESSERA_GUARDED_BY(round_mu);
  std::map<JobId, service_internal::JobProgress> progress
      TESSERA_GUARDED_BY(mu);
  // What sizing and the interference law learned (by fingerprint, by GPU
  // kind), stored as one record (measure/learned_part_internal.h).
  service_internal::LearnedPart learned TESSERA_GUARDED_BY(mu);

  // The queue tree (service_queues.cc, docs/quotas.md); empty without
  // `queues:`. Reclaim victims still stopping (their grace), and why a
  // preempted job was stopped when it was not for a higher priority.
  QueueTree tree;
  std::set<JobId> reclaim_victims TESSERA_GUARDED_BY(mu);
  // Queued jobs room was reclaimed for.
  std::set<JobId> reclaimers TESSERA_GUARDED_BY(mu);
  std::map<JobId, std::string> preempt_reasons TESSERA_GUARDED_BY(mu);
  Status SetUpQueues();
  // A submission's queue: kBadInput for a queue the tree lacks.
  Status CheckQueue(const JobRequest& request) const;
  // The tree's part of the round (PlanRound's input) on the snapshot.
  RoundTree TreeRound(const RoundSnapshot& snap, bool reclaiming,
                      const std::set<JobId>& owners) const;
  // Phase 4 (the caller holds mu): promotions stored, victims asked to
  // stop; `held` is the tree with what runs and starts now.
  void ApplyQueuePlan(const TreePlan& plan) TESSERA_REQUIRES(mu);
  // The tree with what runs and starts now: an elastic job's guaranteed
  // part with its mark, its extras as a second, borrowed entry.
  QueueTree HeldTree() const TESSERA_REQUIRES(mu);
  // Whether growing `job` to `next` keeps every queue from the job's up
  // within its limit, on `held` (true without a tree).
  bool ExtrasWithinLimits(const QueueTree& held, const Job& job,
                          const Allocation& next) const TESSERA_REQUIRES(mu);
  // Marks `job` (about to start with `a`) guaranteed or borrowed against
  // `held` and counts it there; false (with `why`) if it may not start.
  bool MarkStart(QueueTree& held, Job& job, const Allocation& a,
                 std::string* why) const TESSERA_REQUIRES(mu);
  nlohmann::json QueuesJson() const TESSERA_REQUIRES(mu);

  // service_decisions.cc (the caller holds mu): the decision's inputs in
  // `snap`; the law of a GPU kind (calibrated, configured or measured);
  // the laws and fits for ClusterJson.
  void FillDecisionInputs(RoundSnapshot& snap, double now) const
      TESSERA_REQUIRES(mu);
  InterferenceLaw LawOf(const std::string& kind) const TESSERA_REQUIRES(mu);
  nlohmann::json InterferenceJson() const TESSERA_REQUIRES(mu);
  // A model job's start (no lock: the round thread): the decision over
  // whole, fraction, split and wait (DecideStart), recorded in
  // pending_decisions; the allocation, or nullopt to wait.
  std::optional<Allocation> DecideModelStart(const RoundSnapshot& snap,
                                             const ClusterState& s,
                                             const Job& job,
                                             const SizedModel& sized)
      TESSERA_REQUIRES(round_mu);
  // The work the decision assumes (seconds on one whole GPU) and whence.
  std::pair<double, std::string> WorkOf(const Job& job,
                                        const SizedModel* sized) const;

  // Ends the reservation at `it` (the caller holds `mu`); wakes the queue,
  // which may start what it held back (service_reservations.cc).
  // `by`: who ended it (null: its origin).
  Result<Job> EndReserved(std::map<JobId, Job>::iterator it, JobState end,
                          const std::string& reason, const User* by = nullptr)
      TESSERA_REQUIRES(mu);

  // Elastic jobs (service_elastic.cc; the caller holds mu). A change of
  // a job's allocation wakes the long-polls; what the launcher is owed
  // (signals, workers to start and stop) is the elastic part's
  // (elastic_part_internal.h), handed over by the round thread.
  std::condition_variable_any allocation_changed;
  service_internal::ElasticPart elastic TESSERA_GUARDED_BY(mu);
  // A job starting: its first `min` workers, version and history.
  void BeginElastic(Job& job) TESSERA_REQUIRES(mu);
  // The running elastic jobs (of `pool`, or all when null) as the round's
  // elastic rules see them (scheduler/elastic.h); views into `running`.
  std::vector<ElasticHolding> ElasticHoldings(
      const std::string* pool = nullptr) const TESSERA_REQUIRES(mu);
  // The state the policies plan on: every elastic job holds only its
  // guaranteed part, so extras count as free (borrowable) capacity
  // (PlanOnGuaranteed).
  ClusterState PlanningState() const TESSERA_REQUIRES(mu);
  // Before `allocation` (a start the policy chose) can be reserved: asks
  // back the extras in its way, on its node. True if it asked any.
  bool AskBackFor(const Allocation& allocation, const std::string& pool)
      TESSERA_REQUIRES(mu);
  // A start the policy planned (`allocation`) against the state now: kept
  // if it fits; if elastic extras of `pool` are in the way, replaced by a
  // placement on what is free now when there is one (StartBesideExtras,
  // off the GPUs `view.waited_for` keeps for earlier starts), else the
  // extras are asked back, its GPUs added to `view.waited_for` and false
  // returned (the job waits). Holds round_mu and mu.
  bool MakeRoom(RoundView& view, const Job& job, const std::string& pool,
                Allocation& allocation) TESSERA_REQUIRES(round_mu, mu);
  // Extras whose release_by has passed are reclaimed.
  void ReclaimOverdue(double now) TESSERA_REQUIRES(mu);
  // Free capacity goes to running elastic jobs, in GrowOrder, up to max.
  void GrowElastic() TESSERA_REQUIRES(mu);
  // Applies `next` (the job's new allocation and elastic state) to
  // running job `id`: reserved, stored with an event, file rewritten,
  // waiters woken, the job signalled. False if it does not fit or the
  // store failed (nothing changed).
  bool ApplyElastic(JobId id, const Allocation& next, ElasticState st,
                    const std::string& action, std::vector<int> workers,
                    const User* by = nullptr, const std::string& note = "")
      TESSERA_REQUIRES(mu);
  std::string AllocationFilePath(JobId id) const;
  void WriteAllocationFile(const Job& job) const TESSERA_REQUIRES(mu);

  // Per-worker elastic jobs (docs/elastic.md, "The two launch modes"): the
  // launcher runs a process per worker. Under mu the service queues which
  // workers to start (a grow) and stop (a shrink asked, a release, a
  // reclaim) in `elastic`; the round thread hands them to the launcher
  // without it.
  using WorkerStop = service_internal::WorkerStop;
  static bool PerWorker(const Job& job) {
    return job.request.elastic &&
           job.request.elastic->mode == ElasticMode::kPerWorker;
  }
  // What `workers` of `job` start with: each its own GPU
  // (CUDA_VISIBLE_DEVICES, TESSERA_GPUS), its share's MPS limits, its id.
  std::vector<launch::LaunchWorker> WorkerLaunches(
      const Job& job, const Topology& t, const std::vector<int>& workers);
  // The processes of `workers` of `job` ended (or never started: `why`):
  // extras are released (their shares freed); the job grows no more when
  // one ended without being asked back.
  void WorkersEnded(JobId id, const std::vector<launch::WorkerExited>& ended)
      TESSERA_REQUIRES(mu);
  // The round thread's launcher calls for per-worker jobs (no lock held);
  // starts that failed are handed back as ended workers.
  std::vector<launch::WorkerExited> RunWorkerCalls(
      std::vector<launch::LaunchSpec> starts, std::vector<WorkerStop> stops)
      TESSERA_EXCLUDES(mu);
  // Recover: takes over a running per-worker job's live workers; extras
  // that ended meanwhile are released. False if none is alive.
  bool AdoptWorkerJob(Job& job) TESSERA_REQUIRES(mu);

  // Which model files jobs may name (Start fills it from `options`).
  ModelFiles model_files;
  // Uploads are loaded one at a time (UploadModel): bounds their memory.
  Mutex upload_mu;

  // Replicas (service/replica/, docs/operations.md, "High availability").
  // What an Impl is made as: a leader (of its lease's epoch) runs rounds
  // and talks to the launcher; a follower mirrors the store every tick and
  // hands submissions and cancels to the leader through the store's inbox.
  struct Leadership {
    bool replicated = false;  // false: one service alone
    bool leading = true;
    int64_t epoch = 0;  // the lease's, for the store's fence
    // A leader starts jobs only while this says its lease surely holds
    // (null: always).
    std::function<bool()> may_act;
    // Exits this process's launcher reported that an earlier leader of
    // this process could not store (the store was down when it stepped
    // down): recovery finishes those jobs with them instead of failing
    // them as lost.
    std::map<JobId, launch::Exited> exits;
    std::map<JobId, launch::OutOfMemory> ooms;
  };
  static Result<std::shared_ptr<Impl>> Create(
      ServiceOptions options, std::shared_ptr<launch::Launcher> launcher,
      const Leadership& lead);
  void StartThread();
  void StopThread();  // the round (or mirror) thread; jobs keep running
  bool replicated = false;
  // Leads; false once it stepped down (its thread stopped, it answers as
  // a follower until the replica swaps it for one).
  std::atomic<bool> leading{true};
  std::function<bool()> may_act;
  // A follower's view: the store's active jobs as of `mirrored_at`.
  double mirrored_at TESSERA_GUARDED_BY(mu) = 0;
  // Rebuilds the job table and the cluster state from the store's active
  // jobs (no launcher call); kUnavailable if the store cannot be read
  // (the view stays as it was).
  Status Mirror() TESSERA_REQUIRES(mu);
  // The leader's round: what followers asked (submissions, cancels),
  // applied, then cleared from the inbox.
  void ApplyInbox() TESSERA_REQUIRES(round_mu) TESSERA_EXCLUDES(mu);
  // Service::Cancel on the leader, and on a follower (asked of the
  // leader through the inbox).
  Result<Job> Cancel(JobId id, const std::string& reason, const User* by)
      TESSERA_REQUIRES(mu);
  Result<Job> AskCancel(JobId id, const std::string& reason, const User* by)
      TESSERA_REQUIRES(mu);
  // kUnavailable naming the leader unless this Impl leads: what only the
  // leader does (drains, progress, elastic calls, uploads, reservations).
  Status LeaderOnly() const;
  // The drained nodes are a record of the store: written with `node` set
  // to `drained` (kUnavailable if the store fails), read back at a
  // takeover, a restart and every follower's mirror.
  Status StoreDrains(int node, bool drained) TESSERA_REQUIRES(mu);
  Status LoadDrains() TESSERA_REQUIRES(mu);

  explicit Impl(ServiceOptions o)
      : options(std::move(o)),
        state(options.topology),
        usage(options.gpu_probe, options.usage_interval_s,
              service_internal::UsageNode(options), options.usage_unavailable),
        quotas(options.quotas, options.max_queued_per_user) {}

  double Now() const {
    return options.clock ? options.clock() : service_internal::WallClock();
  }

  // Loads and sizes a model job's graph (no lock needed; slow).
  // With `measured_step_s` > 0, its step time replaces the estimate's.
  std::shared_ptr<const SizedModel> LoadModel(const Job& job,
                                              double measured_step_s) const;
  // Canonicalizes the model roots into `model_files` (service_models.cc).
  Status SetUpModelFiles();

  std::optional<Allocation> Allocate(const RoundSnapshot& snap,
                                     const ClusterState& s, const Job& job)
      TESSERA_REQUIRES(round_mu);

  // The environment a job starts with (docs/scheduler.md, "Launching").
  // Writes the plan and device map files of a split job: no lock held.
  // A split job's plan pictures, as files beside its plan
  // (PlanPicturePath); a failure to write leaves the job without them.
  void WritePlanPictures(JobId id, const placer::PlanPictures& pictures) const;
  std::map<std::string, std::string> LaunchEnv(const Job& job,
                                               const Topology& t,
                                               const SizedModel* sized) const;
  // What the launcher is given to start `job` on its allocation: all of
  // it, or with `workers` only those workers of a per-worker job (a grow).
  // `sized`: a model job's graph (its plan files), or null.
  launch::LaunchSpec LaunchSpecFor(const Job& job, const Topology& t,
                                   const SizedModel* sized,
                                   const std::vector<int>* workers = nullptr);

  // Stores `job` (and `event`, in the same transaction); kUnavailable (and
  // store_errors counted) if the store fails. The caller changes its
  // memory only once this succeeded.
  Status Persist(const Job& job, const JobEvent* event = nullptr)
      TESSERA_REQUIRES(mu);
  // An audit event by `by` (null: the scheduler) now.
  JobEvent Event(JobId job, const User* by, std::string action,
                 std::string detail) const;
  // Stores an event that changes no job; counts a store failure.
  Status Record(const JobEvent& event) TESSERA_REQUIRES(mu);

  // Ends a running job (its process exited); false if the store failed
  // (the job then stays running and the exit is tried again).
  bool Finish(const launch::Exited& e) TESSERA_REQUIRES(mu);

  // What `a` holds on each node, for the launcher: the node that holds the
  // CPU and memory first.
  static std::vector<launch::LaunchPart> LaunchParts(const Topology& t,
                                                     const Allocation& a);

  // Back to the queue, in id order.
  void EndedByItself(Job& job, const launch::Exited& e, const Allocation& held)
      TESSERA_REQUIRES(mu);
  void Requeue(Job job) TESSERA_REQUIRES(mu);

  // Marks `job` (removed from the queue by the caller) `starting` on
  // `allocation`, with a split job's `plan` (null otherwise), reserved and
  // stored; nullopt (the job back in the queue) if it no longer fits or
  // the store fails.
  std::optional<Job> BeginStart(Job job, const Allocation& allocation,
                                nlohmann::json plan) TESSERA_REQUIRES(mu);
  // Applies what the launcher said about a `starting` job.
  void EndStart(JobId id, const Result<launch::Launched>& launched)
      TESSERA_REQUIRES(mu);
  // Stores the outcome of a start and moves the job on; false if the
  // store failed (the outcome is kept and tried again).
  bool RecordStart(const Job& outcome) TESSERA_REQUIRES(mu);

  // One scheduling round; takes round_mu, then mu when it needs it. Its
  // steps (service_rounds.cc), each with the lock it runs under:
  // 1. (no mu) the stops asked for, then what the launcher has to say.
  LauncherNews CollectLauncherEvents() TESSERA_REQUIRES(round_mu)
      TESSERA_EXCLUDES(mu);
  // 2. (mu) what the store has to take from it; the round's housekeeping
  // (overdue extras reclaimed); the snapshot the policies plan on.
  void RecordLauncherEvents(const LauncherNews& news) TESSERA_REQUIRES(mu);
  // A reading of the running jobs' GPU use when one is due (takes `mu`
  // briefly for their pids; reads the probe without it), and its effect.
  std::optional<service_internal::UsageSample> SampleUsage(double now)
      TESSERA_REQUIRES(round_mu) TESSERA_EXCLUDES(mu);
  void ApplyUsage(const service_internal::UsageSample& sample)
      TESSERA_REQUIRES(mu);
  // A model job's run that ended (succeeded, or out of memory on `held`):
  // its measurements become a sizing sample of its fingerprint.
  void LearnFrom(const Job& job, const Allocation& held, bool out_of_memory)
      TESSERA_REQUIRES(mu);
  // The learned record to the store when due; back from it at start.
  void StoreLearned(double now) TESSERA_REQUIRES(mu);
  Status LoadLearned() TESSERA_REQUIRES(mu);
  void BeginRound(double now) TESSERA_REQUIRES(mu);
  RoundView TakeSnapshot(double now) TESSERA_REQUIRES(mu);
  // 3. (no mu) models not loaded yet, then every pool's policy.
  RoundPlan Plan(RoundView& view, double now) TESSERA_REQUIRES(round_mu)
      TESSERA_EXCLUDES(mu);
  // 4. (mu) the decisions against the state now: preemptions asked, each
  // start reserved and stored as `starting`.
  std::vector<PendingStart> Commit(RoundView& view, RoundPlan& plan)
      TESSERA_REQUIRES(round_mu, mu);
  void RequestPreemptions(const scheduler::PoolPlan& pd) TESSERA_REQUIRES(mu);
  std::optional<PendingStart> CommitStart(RoundView& view,
                                          const std::string& pool, JobId id,
                                          const Allocation& chosen,
                                          service_internal::Holdings* held,
                                          QueueTree* tree_held)
      TESSERA_REQUIRES(round_mu, mu);
  // 5. (no mu) the launcher starts them; (mu) the outcomes, stored.
  std::vector<Result<launch::Launched>> Launch(
      std::vector<PendingStart>& starts, const Topology& t)
      TESSERA_REQUIRES(round_mu) TESSERA_EXCLUDES(mu);
  // 6. (no mu) the launcher calls decided meanwhile (taken under mu).
  struct LauncherCalls {
    std::vector<JobId> stops;
    service_internal::ElasticCalls elastic;
  };
  LauncherCalls TakeLauncherCalls() TESSERA_REQUIRES(mu);
  void Flush(LauncherCalls calls) TESSERA_EXCLUDES(mu);
  void RunRound() TESSERA_EXCLUDES(round_mu, mu);
  void Loop() TESSERA_EXCLUDES(round_mu, mu);

  // After a restart: live jobs are re-adopted, the others are lost; a
  // start under way when the service stopped is reconciled, never redone.
  Status Recover() TESSERA_REQUIRES(mu);
  // A `starting` job found (or not) by the launcher: the caller holds mu.
  void ApplyReconciled(Job job, const launch::Reconciled& r)
      TESSERA_REQUIRES(mu);
  // Stores what reconciling made of a `starting` job; false when the
  // store failed (the job then stays `starting` with the outcome kept in
  // unrecorded_starts), and the caller places the job only on true.
  bool StoreReconciled(const Job& outcome, const JobEvent& event)
      TESSERA_REQUIRES(mu);
};

}  // namespace tessera::service

#endif  // TESSERA_SERVICE_SERVICE_INTERNAL_H_
