#ifndef TESSERA_LAUNCH_LAUNCHER_H_
#define TESSERA_LAUNCH_LAUNCHER_H_

// Starting jobs: an interface, so that a cluster engine (Slurm, Kubernetes)
// can take the local launcher's place.

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/result.h"
#include "launch/mps_daemon.h"
#include "scheduler/job.h"

namespace tessera::launch {

// What a job is comes from scheduler/ (job.h); a launcher only runs it.
using scheduler::JobId;

// What a job holds on one node, for launchers that hand placements to a
// cluster engine (a split job that spans nodes has one part per node).
struct LaunchPart {
  std::string node;                     // the node's name in the config
  std::vector<int> gpu_indices;         // on the node (CUDA_VISIBLE_DEVICES)
  std::vector<int> gpu_milli;           // per GPU: 1000 for a whole GPU
  std::vector<int64_t> gpu_memory_mib;  // per GPU
  bool exclusive = false;               // whole GPUs
  int64_t cpu_milli = 0, memory_mib = 0;
  // The node's fractions are isolated by MPS (scheduler::Isolation::kMps):
  // a fractional part runs as a client of an MPS control daemon.
  bool mps = false;
};

// One process of a per-worker elastic job (docs/elastic.md, "The two launch
// modes"): its worker id and what its environment adds to the job's
// (its own CUDA_VISIBLE_DEVICES, limits and TESSERA_WORKER_ID).
struct LaunchWorker {
  int id = 0;
  std::map<std::string, std::string> env;
};

struct LaunchSpec {
  JobId id = 0;
  std::string name;  // the job's name for people ("" = none)
  std::string user;
  std::vector<std::string> command;
  std::map<std::string, std::string> env;  // added to the service's own
  std::string log_dir;                     // <log_dir>/<id>.out and .err
  std::vector<LaunchPart> parts;           // by node, the first holds CPU
  // An elastic job: it starts with SIGUSR1 ignored (inherited by what it
  // runs), so that the notice of a change (Notify) kills no process that
  // did not ask for it; the job installs its handler when it is ready.
  bool ignore_sigusr1 = false;
  // A per-worker elastic job: one process per worker instead of one for
  // the job, each in its own process group, all appending to the job's
  // logs. The job ends when all of them have ended; it succeeded if every
  // worker below `guaranteed_workers` exited 0.
  std::vector<LaunchWorker> workers;
  int guaranteed_workers = 0;
};

// What Start returns and Adopt gets back after a restart. The local
// launcher: the process id and its start time. The Slurm launcher: pid is
// the Slurm job id (the leader's, for a heterogeneous job), start_time 0.
struct Launched {
  int64_t pid = 0;
  int64_t start_time = 0;  // /proc/<pid>/stat field 22 (ticks since boot)
};

struct Reconciled {
  enum class Kind { kRunning, kNotFound, kUnknown };
  Kind kind = Kind::kUnknown;
  Launched launched;   // kRunning
  std::string detail;  // kNotFound, kUnknown: what the engine said
  // kNotFound: the engine knows the job never started (the local
  // launcher's pid file is written before the job may run), so starting
  // it later is not starting it twice.
  bool never_ran = false;
};

// A worker process of a per-worker elastic job that ended while its job
// runs on (Launcher::TakeWorkerExits).
struct WorkerExited {
  JobId id = 0;
  int worker = 0;
  std::optional<int> exit_code;  // nullopt: killed by a signal or unknown
  std::string reason;
};

struct Exited {
  JobId id = 0;
  std::optional<int> exit_code;  // nullopt: killed by a signal or unknown
  std::string reason;            // "signal 9", "exit code unknown (adopted)"
  bool cancelled = false;        // the engine cancelled it (scancel by someone)
};

class Launcher {
 public:
  virtual ~Launcher() = default;
  // Starts the job's command; the error says why it could not start. An
  // error with code kUnavailable is transient (the engine is unreachable,
  // the machine out of processes or disk): the service puts the job back in
  // the queue and tries again. Any other code fails the job with the
  // message.
  virtual Result<Launched> Start(const LaunchSpec& spec) = 0;
  // SIGTERM to the job's process group, SIGKILL after `grace_s`.
  virtual void Stop(JobId id, double grace_s) = 0;
  // Sends `sig` to the job's process group (an elastic job's allocation
  // changed: SIGUSR1); a no-op for a job it does not run, or a launcher
  // that cannot signal (a cluster engine: the job polls its allocation).
  virtual void Notify(JobId /*id*/, int /*sig*/) {}
  // Jobs whose process has ended since the last call.
  virtual std::vector<Exited> Poll() = 0;
  // After a restart: takes over a job still running from the previous
  // service (same pid and start time). False if it is gone.
  virtual bool Adopt(JobId id, int64_t pid, int64_t start_time) = 0;
  // After a restart, for a job whose start was under way when the service
  // stopped (state `starting`): whether the engine started it. kRunning:
  // it runs, `launched` says which process (the launcher now watches it,
  // as after Adopt). kNotFound: it is not running (never started, or
  // started and ended). kUnknown: the engine cannot tell now (Slurm
  // unreachable): ask again later. Never starts anything.
  virtual Reconciled Reconcile(JobId /*id*/) {
    return {Reconciled::Kind::kNotFound,
            {},
            "this launcher keeps no record of the jobs it starts"};
  }
  // Per-worker elastic jobs (LaunchSpec::workers). Whether this launcher
  // runs them; a service refuses per-worker jobs otherwise.
  virtual bool per_worker() const { return false; }
  // Starts `spec.workers` as more processes of running job `spec.id` (a
  // grow). The error says why; the workers are then not running.
  virtual Status StartWorkers(const LaunchSpec& spec) {
    return BadInput("job " + std::to_string(spec.id) +
                    ": this launcher cannot start workers");
  }
  // SIGTERM to those workers' process groups, SIGKILL after `grace_s`.
  virtual void StopWorkers(JobId /*id*/, const std::vector<int>& /*workers*/,
                           double /*grace_s*/) {}
  // The workers whose process ended (found by Poll) while their job runs
  // on; a job's last worker ends the job itself (Poll's Exited).
  virtual std::vector<WorkerExited> TakeWorkerExits() { return {}; }
  // After a restart: takes over the live processes of `workers` of job
  // `id` (their pid files); returns the workers adopted (none: the job is
  // gone). A guaranteed one (below `guaranteed`) not found ended while the
  // service was down: the job's status is then unknown (failed).
  virtual std::vector<int> AdoptWorkers(JobId /*id*/,
                                        const std::vector<int>& /*workers*/,
                                        int /*guaranteed*/) {
    return {};
  }
  // Paths of the job's stdout and stderr logs.
  virtual std::string LogPath(JobId id, bool stderr_log) const = 0;
  // Whether one job may hold GPUs of several nodes (a split model's gang):
  // the local launcher starts one process on this machine, a cluster
  // engine starts one part per node.
  virtual bool multi_node() const { return false; }
};

// Runs commands on this machine: each in its own process group (setsid),
// stdout/stderr to <log_dir>/<id>.out / .err, reaped with waitpid; adopted
// processes are watched with kill(pid, 0) and their start time. Before the
// child may exec, the parent writes <log_dir>/<id>.pid ("PID START_TIME")
// and only then tells the child to go; a child whose parent died first
// exits without running anything. So after a crash, a job with no pid file
// never ran, and one with a pid file is found by Reconcile.
//
// With `mps`, a job with a fractional part on a node of isolation mps
// (LaunchPart::mps) runs as a client of that MPS control daemon (one for
// the machine's GPUs: a split job's process uses several, and a process is
// the client of one daemon): before each such start the launcher checks
// the daemon and starts it (again) if it does not answer; when it cannot,
// the start fails with kUnavailable saying why, and the service tries
// again later. Without `mps`, such a start fails with kInfeasible.
// The daemon outlives the launcher, as the jobs do.
std::unique_ptr<Launcher> MakeLocalLauncher(
    std::string log_dir, std::optional<MpsOptions> mps = std::nullopt);

// The process start time of `pid` (field 22 of /proc/<pid>/stat), or -1.
int64_t ProcessStartTime(int64_t pid);

}  // namespace tessera::launch

#endif  // TESSERA_LAUNCH_LAUNCHER_H_
