#ifndef TESSERA_SERVICE_SERVICE_H_
#define TESSERA_SERVICE_SERVICE_H_

// The queue service's core: takes submissions (durably), runs the pools'
// policies, reserves GPUs, launches and reaps jobs, recovers after a
// restart. Thread-safe; the HTTP layer (http_server.h) and tests call it.
// Authorization is the caller's: it passes the user and checks roles.

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "launch/gpu_usage.h"
#include "launch/launcher.h"
#include "scheduler/job.h"
#include "scheduler/model_jobs.h"
#include "scheduler/policy.h"
#include "scheduler/queue_tree.h"
#include "scheduler/start_decision.h"
#include "scheduler/topology.h"
#include "service/wire/job_json.h"

namespace tessera::service {

// The jobs, the cluster and the policy the service runs (scheduler/).
using scheduler::InterferenceLaw;
using scheduler::Job;
using scheduler::JobId;
using scheduler::JobRequest;
using scheduler::JobState;
using scheduler::kDefaultMaxModelBytes;
using scheduler::kDefaultMaxUploadBytes;
using scheduler::PolicyConfig;
using scheduler::QueueSpec;
using scheduler::Resources;
using scheduler::Topology;

struct User {
  std::string name;
  std::string team;  // "" = none
  bool admin = false;
  std::string token_name;  // which of the user's tokens ("" = unnamed)
};

// Who changed what, when: the audit trail of a job (Service::Events).
struct JobEvent {
  JobId job = 0;       // 0: not about one job (a node drained)
  double at = 0;       // Unix seconds
  std::string actor;   // a user's name, or "scheduler", or an origin ("k8s")
  std::string token;   // the token's name, when a user acted with one
  std::string action;  // "submitted", "starting", "cancel requested", ...
  std::string detail;  // what, for people
};

// What one user, or one team's users together, may hold at once
// (docs/operations.md, "Quotas"); unset: no limit. Like Slurm's QOS
// (MaxJobs, MaxSubmitJobs, MaxTRES) and Kubernetes' ResourceQuota.
struct Quota {
  std::optional<int64_t> max_queued;          // queued or preempted jobs
  std::optional<int64_t> max_running;         // starting or running jobs
  std::optional<int64_t> max_gpu_milli;       // held by those jobs
  std::optional<int64_t> max_gpu_memory_mib;  // held by those jobs
  // Submissions per second (a token bucket of `burst` submissions,
  // refilled at this rate); over it: kRateLimited with retry_after_s.
  std::optional<double> submissions_per_s;
  std::optional<int64_t> burst;  // default: max(1, 2 x the rate)
};

struct Quotas {
  Quota user_default;                  // every user without an entry
  std::map<std::string, Quota> users;  // per user: unset fields default
  std::map<std::string, Quota> teams;  // per team: its users together
  bool empty() const;
};

// Where the store lives (ServiceOptions::store): an SQLite file (the
// default, one machine) or a PostgreSQL database that several replicas
// share (docs/operations.md, "High availability").
struct StoreOptions {
  // A PostgreSQL connection URI or keyword string ("postgresql://tessera@
  // db.example:5432/tessera", "host=... dbname=..."); "" = SQLite at the
  // service's db_path.
  std::string postgres_url;
  // A file whose first line is the password (kept out of the config and
  // of process listings); "" = none, or the URI's.
  std::string postgres_password_file;
};

// One of several replicas of the service sharing a PostgreSQL store
// (ServiceOptions::replica; docs/operations.md, "High availability"): the
// one holding the store's lease leads (runs rounds, talks to the
// launcher); the others answer reads from the store and take submissions
// and cancels for it.
struct ReplicaOptions {
  std::string name;     // unique among the replicas
  std::string address;  // the URL the others send clients to
  double lease_s = 10;  // a leader that stops renewing loses it after this
  double lease_renew_s = 1;
};

// Where this replica stands (Service::Replica).
struct ReplicaStatus {
  bool replicated = false;  // false: one service alone, always leading
  std::string name;
  bool leader = true;
  std::string leader_name, leader_address;  // "" = nobody leads now
  double leader_since = 0;                  // Unix seconds
  int64_t epoch = 0;                        // the lease's
  double view_age_s = 0;  // a follower's: how old its view of the jobs is
};

// GET /v1/cluster's "replica", /healthz's and /readyz's (docs/http_api.md).
nlohmann::json ReplicaStatusJson(const ReplicaStatus& status);
// GET /metrics' lines about it: tessera_replica_leader (1 or 0), and with
// replicas tessera_replica_lease_epoch and a follower's
// tessera_replica_view_age_seconds.
std::string ReplicaMetrics(const ReplicaStatus& status);

struct ServiceOptions {
  Topology topology;
  std::map<std::string, PolicyConfig> policies;  // per pool; absent: fifo
  std::string scorer = "tessera";                // admission.h
  std::string db_path = "tessera.db";  // SQLite, unless store says otherwise
  StoreOptions store;
  // Set: this service is one replica of several (needs store.postgres_url).
  std::optional<ReplicaOptions> replica;
  std::string log_dir = "tessera-logs";
  double kill_grace_s = 10;
  int64_t max_queued_per_user = 1000;
  Quotas quotas;
  // The queue tree: guarantees, borrowing and reclaim (docs/quotas.md);
  // empty: none.
  std::vector<QueueSpec> queues;
  // Model jobs: reserved memory = the estimator's peak x (1 + headroom),
  // at least the peak + 96 MiB (scheduler::ReserveMiB).
  double model_headroom = scheduler::kDefaultModelHeadroom;
  // The split-or-wait decision (docs/scheduler.md, "Split or wait"): how
  // co-located jobs slow each other, per GPU kind (absent: the law
  // measured on an H100 under time-slicing), fitted again from the jobs'
  // progress reports when `calibrate_interference`; and the work assumed
  // for a model job that gives neither work.steps nor time_limit_s.
  std::map<std::string, InterferenceLaw> interference;
  bool calibrate_interference = true;
  double model_default_work_s = 3600;
  // Measured GPU use (docs/operations.md, "Measured use"): the probe of
  // this machine's GPUs (launch::OpenNvml), read every usage_interval_s;
  // its readings of GPU i belong to topology GPU i of node `usage_node`
  // ("" = the first node). Null: nothing measured, and
  // `usage_unavailable` says why.
  std::shared_ptr<launch::GpuProbe> gpu_probe;
  std::string usage_unavailable = "no GPU probe configured";
  double usage_interval_s = 1;
  std::string usage_node;
  // Pools whose jobs go back to the queue once when they run out of GPU
  // memory (`on_oom: requeue` on the pool; a job's own on_oom wins).
  std::set<std::string> requeue_oom_pools;
  // Model jobs by path read only regular files under these directories
  // (symbolic links resolved; each must exist); none: no job by path.
  std::vector<std::string> model_roots;
  int64_t max_model_bytes = kDefaultMaxModelBytes;    // a model file by path
  int64_t max_upload_bytes = kDefaultMaxUploadBytes;  // an uploaded model
  // Uploaded models are stored as <log_dir>/models/<sha256>.onnx.
  // Seconds since the Unix epoch; tests substitute a virtual clock.
  std::function<double()> clock;
  // Elastic jobs (docs/elastic.md): how long a job has to release the
  // extras asked back before they are reclaimed anyway.
  double elastic_release_grace_s = 30;
  // Scheduling rounds run on submissions, exits and this often.
  double tick_s = 0.2;
  bool start_thread = true;  // false: the caller drives Tick()
};

// Where a demand fits now on one node (Service::EvaluateNodes).
struct NodeRoom {
  enum class Verdict {
    kFits,
    kUnknownNode,  // not a node of the configuration
    kOtherPool,    // a node of another pool than the one asked for
    kNeverFits,    // too small even when empty
    kDrained,
    kNoRoomNow,  // could fit when others leave: `reason` says what is short
  };
  std::string node;
  Verdict verdict = Verdict::kUnknownNode;
  std::string node_pool;  // the node's pool, when it is known
  std::string reason;     // for kNoRoomNow
  double score = 0;       // the scorer's, for kFits (higher is better)
  bool fits() const { return verdict == Verdict::kFits; }
};

// What Service::Reserve did.
struct ReserveOutcome {
  enum class Kind {
    kReserved,     // held now, on disk
    kUnknownNode,  // not a node of the configuration
    kOtherPool,    // a node of another pool than the one asked for
    kNoRoom,       // drained, or no room now: `reason`
  };
  Kind kind = Kind::kNoRoom;
  std::string node_pool;  // the node's pool, when it is known
  std::string reason;     // for kNoRoom
  Job job;                // kReserved: the running job that holds it
};

// What Service::UploadModel stored.
struct UploadedModel {
  std::string id;     // the SHA-256 of the bytes, 64 hex digits
  int64_t bytes = 0;  // the model's size
  int64_t nodes = 0;  // its main graph's operators
};

struct JobFilter {
  std::optional<JobState> state;
  std::string user, pool;  // "" = any
  int64_t limit = 1000;
};

class Service {
 public:
  // Opens the store, recovers (re-adopts live jobs, fails lost ones,
  // re-reserves), and starts the scheduling thread. kBadInput for a bad
  // configuration or database.
  static Result<std::unique_ptr<Service>> Start(
      ServiceOptions options, std::unique_ptr<launch::Launcher> launcher);
  ~Service();  // stops the thread; running jobs keep running
  Service(const Service&) = delete;
  Service& operator=(const Service&) = delete;

  // Validates, sizes (model jobs), stores and queues; the job is on disk
  // when this returns. kBadInput naming the field (unknown pool, a request
  // no GPU of the pool could ever hold, a model that does not load, the
  // user's queue full).
  // A non-empty `idempotency_key` makes a retried submission one job: the
  // same user's second submission with the key returns the first's job.
  // On a follower the job is stored for the leader's next round.
  Result<Job> Submit(const User& user, JobRequest request,
                     const std::string& idempotency_key = "");
  // Checks an uploaded ONNX model (at most max_upload_bytes,
  // kMaxModelFields protobuf fields, counted before parsing, and
  // kMaxModelNodes nodes: it must load) and stores it durably under its
  // SHA-256, which a submission's model.upload names. Uploads are loaded
  // one at a time, outside the queue's lock. kBadInput saying what is wrong.
  Result<UploadedModel> UploadModel(const User& user, const std::string& bytes);
  int64_t max_upload_bytes() const;
  Result<std::vector<Job>> List(const JobFilter& filter);
  Result<std::optional<Job>> Get(JobId id);
  // Job `id`'s audit trail, oldest first.
  Result<std::vector<JobEvent>> Events(JobId id);
  // Queued: cancelled at once. Running: stopped (SIGTERM, then SIGKILL);
  // the job is `cancelled` when its process exits. Terminal: unchanged.
  // On a follower: asked of the leader (its next round), the job as now.
  // `by`: who asked, for the audit trail (null: the service itself).
  Result<Job> Cancel(JobId id, const std::string& reason,
                     const User* by = nullptr);
  // A drained node admits nothing new; its running jobs continue.
  Status SetDrained(const std::string& node, bool drained,
                    const User* by = nullptr);

  // The split-or-wait decision (docs/scheduler.md, "Split or wait") last
  // taken for model job `id`: while queued, re-taken every round; once
  // started, the one it started under. Null when there is none.
  nlohmann::json DecisionOf(JobId id);
  // POST /v1/jobs/{id}/progress: running job `id` has done `steps` steps
  // in all. The service measures its step time between reports, predicts
  // its end from it (for the decisions of the jobs that wait), and fits
  // the interference factor of its GPU kind from the steps it ran beside
  // others. kBadInput when `steps` went back; kInfeasible when the job is
  // not running. Returns what it measured (ProgressJson writes it).
  Result<ProgressReport> ReportProgress(JobId id, int64_t steps);

  // Elastic jobs (service_elastic.cc, docs/elastic.md).
  // GET /v1/jobs/{id}/allocation?after=V&wait_s=S: the elastic job (its
  // allocation as ElasticAllocationJson writes it) at once when its
  // version is above `after` or the job no longer runs, else when it
  // changes or `wait_s` (real seconds) have passed. kNotFound: no such
  // job; kBadInput: not an elastic job.
  Result<Job> WaitAllocation(JobId id, int64_t after, double wait_s);
  // POST /v1/jobs/{id}/release: the job has let `workers` go (extras: asked
  // back, or given back unasked); their shares are freed at once.
  // kBadInput naming the worker that is not an extra it holds;
  // kInfeasible when the job is not running. Returns the job after.
  Result<Job> ReleaseWorkers(JobId id, const std::vector<int>& workers,
                             const User* by = nullptr);

  // GET /v1/cluster.
  nlohmann::json ClusterJson();
  // Whether this replica leads, and who does (always this one without
  // replicas).
  ReplicaStatus Replica() const;
  // GET /v1/queue (docs/http_api.md): per pool ("" = every pool), the
  // queued jobs in the order the policy considers them, each with why it
  // waits, its position and an estimated start, and the running ones.
  nlohmann::json QueueJson(const std::string& pool);
  // GET /metrics: Prometheus text format.
  std::string MetricsText();
  // The cluster as configured: nodes, pools and GPUs, which never change
  // (drains do, and ClusterJson has them). Safe to read without the lock.
  const Topology& topology() const;
  std::string LogPath(JobId id, bool stderr_log) const;
  // Where a split job's plan pictures are (the timeline, or with `graph`
  // the graph by device: HTML fragments, placer::RenderPlanPictures),
  // written when it started; the file is missing for other jobs.
  std::string PlanPicturePath(JobId id, bool graph) const;

  // One scheduling round: reap exits, run every pool's policy, launch.
  void Tick();
  // The invariants of the cluster state ("" when they hold).
  std::string CheckInvariants();

  // Reservations on behalf of an outside system (service_reservations.cc).
  // A reservation is a running job whose process is not tessera's (a
  // Kubernetes pod, say: k8s/): it holds its GPU share in the same cluster
  // state as the queue's jobs, is stored like them, survives restarts and
  // ends by EndReservation or Cancel; the launcher never sees it.
  //
  // Where `demand` fits now on each of `nodes` (by name), in their order,
  // scored as the scorer ranks them; only nodes of `pool` ("" = any) are
  // offered. `subject` names the asker in reasons ("the pod asks 4000").
  std::vector<NodeRoom> EvaluateNodes(const Resources& demand,
                                      const std::vector<std::string>& nodes,
                                      const std::string& pool,
                                      std::string_view subject);
  // Reserves `job.demand` on `node` now (the GPU the scorer picks there) and
  // stores `job` as a running job of its origin before returning; `job`
  // gives user, request (name, env, resources) and a non-empty origin.
  // kBadInput for an empty origin; kInternal if the store fails.
  Result<ReserveOutcome> Reserve(Job job, const std::string& node,
                                 const std::string& pool,
                                 std::string_view subject);
  // Ends the reservation held by job `id`: the job becomes `end` with
  // `reason`. nullopt if `id` holds none.
  Result<std::optional<Job>> EndReservation(JobId id, JobState end,
                                            const std::string& reason);
  // The reservations of `origin` held now, by job id.
  std::vector<Job> Reservations(const std::string& origin);

 private:
  struct Impl;
  // Replicas: the lease's thread, which swaps a leader's Impl for a
  // follower's and back (service/replica/replication.cc).
  struct Replication;
  Service(std::shared_ptr<Impl> impl, Topology topology);
  static Result<std::unique_ptr<Service>> Replicated(
      ServiceOptions options, std::shared_ptr<launch::Launcher> launcher);
  // The Impl that answers now: the leader's or the follower's. A call
  // keeps the one it started with until it returns.
  std::shared_ptr<Impl> Current() const;
  void Swap(std::shared_ptr<Impl> next);
  // Stops the lease's thread and the Impl's, then lets the lease go.
  void StopReplication();
  const Topology topology_;  // as configured: never changes
  mutable std::mutex current_mu_;
  std::shared_ptr<Impl> current_;  // guarded by current_mu_
  std::unique_ptr<Replication> replication_;
};

}  // namespace tessera::service

#endif  // TESSERA_SERVICE_SERVICE_H_
