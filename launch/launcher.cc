// The local launcher: fork + exec of each job in its own session (so its
// process group is the job, and one killpg reaches everything it started),
// stdout/stderr appended to per-job log files, exits reaped by waitpid in
// Poll. Stop never blocks: it sends SIGTERM and leaves a deadline that Poll
// turns into SIGKILL. Processes adopted after a service restart are not our
// children: they are watched with kill(pid, 0) and /proc.
//
// Between fork and exec the child may only make async-signal-safe calls
// (the service is multithreaded), so the parent prepares everything: argv,
// envp and the open log files.

#include "launch/launcher.h"

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <optional>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "launch/subprocess.h"

namespace tessera::launch {
namespace {

using Clock = std::chrono::steady_clock;

struct ProcStat {
  char state = '?';        // field 3: R, S, D, Z (zombie), X (dead), ...
  int64_t start_time = 0;  // field 22: clock ticks since boot
};

// Fields 3 and 22 of /proc/<pid>/stat. The command name (field 2) is in
// parentheses and may itself hold spaces and ')': parse after the last ')'.
std::optional<ProcStat> ReadProcStat(int64_t pid) {
  if (pid <= 0) return std::nullopt;
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string text;
  if (!in || !std::getline(in, text)) return std::nullopt;
  const size_t paren = text.rfind(')');
  if (paren == std::string::npos) return std::nullopt;
  std::istringstream rest(text.substr(paren + 1));
  ProcStat s;
  std::string skip;
  if (!(rest >> s.state)) return std::nullopt;
  for (int field = 4; field < 22; ++field) {
    if (!(rest >> skip)) return std::nullopt;
  }
  if (!(rest >> s.start_time)) return std::nullopt;
  return s;
}

// Whether `pid` is the process that started at `start_time` and has not
// ended (a zombie has ended: it only waits for its parent to reap it).
bool SameLiveProcess(int64_t pid, int64_t start_time) {
  if (pid <= 0 || (kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH)) {
    return false;
  }
  const auto s = ReadProcStat(pid);
  return s && s->start_time == start_time && s->state != 'Z' && s->state != 'X';
}

std::string ErrnoText(int err) { return std::strerror(err); }

// Whether `spec` shares a GPU whose fractions MPS keeps apart.
bool NeedsMps(const LaunchSpec& spec) {
  return std::ranges::any_of(spec.parts, [](const LaunchPart& p) {
    return p.mps && !p.exclusive && !p.gpu_indices.empty();
  });
}

class LocalLauncher : public Launcher {
 public:
  LocalLauncher(std::string log_dir, std::optional<MpsOptions> mps)
      : log_dir_(std::move(log_dir)) {
    if (mps) mps_.emplace(std::move(*mps));
  }

  // Running jobs are left running: a restarted service adopts them.
  ~LocalLauncher() override = default;

  Result<Launched> Start(const LaunchSpec& given) override {
    if (given.command.empty() || given.command[0].empty()) {
      return BadInput("job " + std::to_string(given.id) + ": empty command");
    }
    Result<LaunchSpec> with_mps = WithMps(given);
    if (!with_mps) return with_mps.error();
    const LaunchSpec& spec = *with_mps;
    std::lock_guard lock(mu_);
    const std::string dir = spec.log_dir.empty() ? log_dir_ : spec.log_dir;
    if (dir != log_dir_) log_dirs_[spec.id] = dir;
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    if (ec)
      return Unavailable(dir +
                         ": cannot create the log directory: " + ec.message());
    if (spec.workers.empty()) {
      auto child = SpawnLocked(spec, dir, -1, spec.env);
      if (!child) return child.error();
      children_[spec.id] = *child;
      return Launched{child->pid, child->start_time};
    }
    // A per-worker elastic job: one process per worker; the first is the
    // job's pid (its pid file is the job's, for Reconcile).
    WorkerJob job;
    job.guaranteed = spec.guaranteed_workers;
    Launched first;
    for (const LaunchWorker& w : spec.workers) {
      auto child = SpawnLocked(spec, dir, w.id, WorkerEnv(spec, w));
      if (!child) {
        for (auto& [id, c] : job.workers) KillAndReap(c);
        return child.error();
      }
      if (job.workers.empty()) first = {child->pid, child->start_time};
      job.workers[w.id] = *child;
    }
    worker_jobs_[spec.id] = std::move(job);
    return first;
  }

  bool per_worker() const override { return true; }

  Status StartWorkers(const LaunchSpec& given) override {
    Result<LaunchSpec> with_mps = WithMps(given);
    if (!with_mps) return with_mps.error();
    const LaunchSpec& spec = *with_mps;
    std::lock_guard lock(mu_);
    auto it = worker_jobs_.find(spec.id);
    if (it == worker_jobs_.end()) {
      return BadInput("job " + std::to_string(spec.id) +
                      " runs no per-worker processes here");
    }
    const std::string dir = LogDirLocked(spec.id);
    for (const LaunchWorker& w : spec.workers) {
      if (it->second.workers.contains(w.id)) {
        return BadInput("job " + std::to_string(spec.id) + ": worker " +
                        std::to_string(w.id) + " runs already");
      }
    }
    std::vector<int> started;
    for (const LaunchWorker& w : spec.workers) {
      auto child = SpawnLocked(spec, dir, w.id, WorkerEnv(spec, w));
      if (!child) {
        for (const int s : started) {
          KillAndReap(it->second.workers.at(s));
          it->second.workers.erase(s);
        }
        return child.error();
      }
      it->second.workers[w.id] = *child;
      started.push_back(w.id);
    }
    return {};
  }

  void StopWorkers(JobId id, const std::vector<int>& workers,
                   double grace_s) override {
    std::lock_guard lock(mu_);
    auto it = worker_jobs_.find(id);
    if (it == worker_jobs_.end()) return;
    for (const int w : workers) {
      auto c = it->second.workers.find(w);
      if (c != it->second.workers.end()) Terminate(c->second, grace_s);
    }
  }

  std::vector<WorkerExited> TakeWorkerExits() override {
    std::lock_guard lock(mu_);
    return std::exchange(worker_exits_, {});
  }

  std::vector<int> AdoptWorkers(JobId id, const std::vector<int>& workers,
                                int guaranteed) override {
    std::lock_guard lock(mu_);
    children_.erase(id);  // Reconcile may have taken worker 0 as the job
    WorkerJob job;
    job.guaranteed = guaranteed;
    std::vector<int> adopted;
    for (const int w : workers) {
      std::ifstream in(PidPath(LogDirLocked(id), id, w));
      int64_t pid = 0;
      int64_t start = 0;
      if ((in >> pid >> start) && SameLiveProcess(pid, start)) {
        job.workers[w] = Child{pid, start, /*own=*/false, std::nullopt};
        adopted.push_back(w);
      } else if (w < guaranteed && !job.failure) {
        job.failure = Exited{id, std::nullopt,
                             "worker " + std::to_string(w) +
                                 " ended while the service was down; exit "
                                 "code unknown"};
      }
    }
    if (!adopted.empty()) worker_jobs_[id] = std::move(job);
    return adopted;
  }

  void Stop(JobId id, double grace_s) override {
    std::lock_guard lock(mu_);
    if (auto w = worker_jobs_.find(id); w != worker_jobs_.end()) {
      for (auto& [worker, c] : w->second.workers) Terminate(c, grace_s);
    }
    auto it = children_.find(id);
    if (it == children_.end()) return;
    Terminate(it->second, grace_s);
  }

  void Notify(JobId id, int sig) override {
    std::lock_guard lock(mu_);
    if (auto w = worker_jobs_.find(id); w != worker_jobs_.end()) {
      for (auto& [worker, c] : w->second.workers) Signal(c, sig);
    }
    auto it = children_.find(id);
    if (it != children_.end()) Signal(it->second, sig);
  }

  std::vector<Exited> Poll() override {
    std::lock_guard lock(mu_);
    std::vector<Exited> exited;
    const auto now = Clock::now();
    for (auto it = children_.begin(); it != children_.end();) {
      const JobId id = it->first;
      Child& c = it->second;
      std::optional<Exited> e = c.own ? Reap(id, c) : CheckAdopted(id, c);
      if (e) {
        exited.push_back(std::move(*e));
        it = children_.erase(it);
        continue;
      }
      if (c.kill_at && now >= *c.kill_at) {
        Signal(c, SIGKILL);
        c.kill_at.reset();
      }
      ++it;
    }
    for (auto it = worker_jobs_.begin(); it != worker_jobs_.end();) {
      const JobId id = it->first;
      WorkerJob& job = it->second;
      for (auto w = job.workers.begin(); w != job.workers.end();) {
        Child& c = w->second;
        std::optional<Exited> e = c.own ? Reap(id, c) : CheckAdopted(id, c);
        if (!e) {
          if (c.kill_at && now >= *c.kill_at) {
            Signal(c, SIGKILL);
            c.kill_at.reset();
          }
          ++w;
          continue;
        }
        const int worker = w->first;
        const bool ok = e->exit_code && *e->exit_code == 0;
        if (worker < job.guaranteed && !ok && !job.failure) {
          job.failure =
              Exited{id, e->exit_code,
                     "worker " + std::to_string(worker) +
                         (e->exit_code ? std::string() : ": " + e->reason)};
        }
        worker_exits_.push_back({id, worker, e->exit_code, e->reason});
        w = job.workers.erase(w);
      }
      if (!job.workers.empty()) {
        ++it;
        continue;
      }
      // The job's last worker: the job ends; its status is its
      // guaranteed workers'.
      exited.push_back(job.failure ? *job.failure : Exited{id, 0, ""});
      std::erase_if(worker_exits_,
                    [id](const WorkerExited& x) { return x.id == id; });
      it = worker_jobs_.erase(it);
    }
    return exited;
  }

  bool Adopt(JobId id, int64_t pid, int64_t start_time) override {
    std::lock_guard lock(mu_);
    // A replica that leads again keeps its own children (it reaps them),
    // also those that ended while it followed: Poll reports their exit.
    if (auto it = children_.find(id);
        it != children_.end() && it->second.pid == pid) {
      return true;
    }
    if (!SameLiveProcess(pid, start_time)) return false;
    children_[id] = Child{pid, start_time, /*own=*/false, std::nullopt};
    return true;
  }

  Reconciled Reconcile(JobId id) override {
    std::ifstream in(PidPath(log_dir_, id));
    int64_t pid = 0;
    int64_t start = 0;
    if (!(in >> pid >> start)) {
      return {Reconciled::Kind::kNotFound,
              {},
              "it never ran",
              /*never_ran=*/true};
    }
    std::unique_lock lock(mu_);
    // Our own child (a replica that leads again) stays ours: Poll reaps it
    // and reports its exit, even one that ended while the replica followed.
    if (auto it = children_.find(id);
        it != children_.end() && it->second.own && it->second.pid == pid) {
      return {Reconciled::Kind::kRunning, Launched{pid, start}, ""};
    }
    lock.unlock();
    if (!SameLiveProcess(pid, start)) {
      return {Reconciled::Kind::kNotFound,
              {},
              "it ran (pid " + std::to_string(pid) +
                  ") and ended while the service was down; exit status "
                  "unknown"};
    }
    lock.lock();
    children_[id] = Child{pid, start, /*own=*/false, std::nullopt};
    return {Reconciled::Kind::kRunning, Launched{pid, start}, ""};
  }

  std::string LogPath(JobId id, bool stderr_log) const override {
    std::lock_guard lock(mu_);
    return LogPathLocked(id, stderr_log);
  }

 private:
  // `spec` as a client of the MPS daemon when it needs one: the daemon
  // checked (and started) first.
  Result<LaunchSpec> WithMps(const LaunchSpec& spec) {
    if (!NeedsMps(spec)) return spec;
    const std::string job = "job " + std::to_string(spec.id);
    if (!mps_) {
      return Infeasible(job +
                        ": its node's isolation is mps, and this launcher "
                        "manages no MPS control daemon");
    }
    std::lock_guard lock(mps_mu_);
    if (Status ok = mps_->Ensure(); !ok.ok()) {
      return Unavailable(job + ": not started, " + ok.error().message);
    }
    LaunchSpec out = spec;
    for (const auto& [k, v] : mps_->ClientEnv()) out.env[k] = v;
    return out;
  }

  struct Child {
    int64_t pid = 0;
    int64_t start_time = 0;
    bool own = true;  // our child (waitpid) or adopted (kill(pid, 0))
    std::optional<Clock::time_point> kill_at;  // SIGKILL then, if alive
  };

  struct WorkerJob {
    int guaranteed = 0;
    std::map<int, Child> workers;   // running, by worker id
    std::optional<Exited> failure;  // the first guaranteed worker that failed
  };

  const std::string& LogDirLocked(JobId id) const {
    auto it = log_dirs_.find(id);
    return it == log_dirs_.end() ? log_dir_ : it->second;
  }

  std::string LogPathLocked(JobId id, bool stderr_log) const {
    return LogDirLocked(id) + "/" + std::to_string(id) +
           (stderr_log ? ".err" : ".out");
  }

  // The job's environment with the worker's on top.
  static std::map<std::string, std::string> WorkerEnv(const LaunchSpec& spec,
                                                      const LaunchWorker& w) {
    std::map<std::string, std::string> env = spec.env;
    for (const auto& [k, v] : w.env) env[k] = v;
    return env;
  }

  // SIGTERM now, SIGKILL after `grace_s` (Poll sends it).
  static void Terminate(Child& c, double grace_s) {
    Signal(c, SIGTERM);
    const auto deadline =
        Clock::now() + std::chrono::duration_cast<Clock::duration>(
                           std::chrono::duration<double>(grace_s));
    if (!c.kill_at || deadline < *c.kill_at) c.kill_at = deadline;
  }

  // A process started by a failed start of several: gone at once.
  static void KillAndReap(const Child& c) {
    Signal(c, SIGKILL);
    while (waitpid(static_cast<pid_t>(c.pid), nullptr, 0) < 0 &&
           errno == EINTR) {
    }
  }

  // Forks and execs spec.command with `env` (stdout and stderr appended to
  // the job's logs), in a new session, after its pid file (the job's for
  // worker -1 or 0, else the worker's) is written. Holds mu_.
  Result<Child> SpawnLocked(const LaunchSpec& spec, const std::string& dir,
                            int worker,
                            const std::map<std::string, std::string>& extra) {
    const int log_flags = O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC;
    Fd out(AboveStdio(
        open(LogPathLocked(spec.id, false).c_str(), log_flags, 0644)));
    if (out.get() < 0) return OpenError(LogPathLocked(spec.id, false));
    Fd err(AboveStdio(
        open(LogPathLocked(spec.id, true).c_str(), log_flags, 0644)));
    if (err.get() < 0) return OpenError(LogPathLocked(spec.id, true));
    Fd in(AboveStdio(open("/dev/null", O_RDONLY | O_CLOEXEC)));
    if (in.get() < 0) return OpenError("/dev/null");
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) != 0) {
      return Unavailable("pipe: " + ErrnoText(errno));
    }
    Fd report_read(fds[0]);
    Fd report_write(AboveStdio(fds[1]));
    if (report_write.get() < 0) return Unavailable("pipe: " + ErrnoText(errno));
    if (pipe2(fds, O_CLOEXEC) != 0) {
      return Unavailable("pipe: " + ErrnoText(errno));
    }
    Fd go_read(AboveStdio(fds[0]));
    Fd go_write(fds[1]);
    if (go_read.get() < 0) return Unavailable("pipe: " + ErrnoText(errno));

    std::vector<std::string> args = spec.command;
    std::vector<std::string> env = ChildEnvironment(extra);
    std::vector<char*> argv = CStrings(args);
    std::vector<char*> envp = CStrings(env);

    const pid_t pid = fork();
    if (pid < 0) return Unavailable("fork: " + ErrnoText(errno));
    if (pid == 0) {
      ExecChild(in.get(), out.get(), err.get(), report_write.get(), argv.data(),
                envp.data(), /*new_session=*/true, go_read.get(),
                go_write.get(), spec.ignore_sigusr1 ? SIGUSR1 : 0);
    }
    report_write.Reset();
    go_read.Reset();
    // The child waits for `go` until its pid file is written: a crash of
    // the service before that leaves no pid file and no job running.
    const int64_t start = ProcessStartTime(pid);
    if (Status s = WritePidFile(dir, spec.id, worker, pid, start); !s.ok()) {
      go_write.Reset();  // the child exits without running anything
      while (waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {
      }
      return s.error();
    }
    const char go = 1;
    if (write(go_write.get(), &go, 1) != 1) {
      const int e = errno;
      go_write.Reset();
      kill(pid, SIGKILL);
      while (waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {
      }
      return Unavailable("pipe: " + ErrnoText(e));
    }
    go_write.Reset();
    if (const std::optional<int> child_errno =
            AwaitExec(report_read.get(), pid)) {
      return BadInput("cannot run '" + spec.command[0] +
                      "': " + ErrnoText(*child_errno));
    }
    // The child is ours until Poll reaps it, so /proc/<pid> exists even if
    // it has exited already.
    return Child{pid, start, /*own=*/true, std::nullopt};
  }

  // Worker 0 of a per-worker job (or the job's one process, worker -1)
  // has the job's pid file; worker k >= 1 its own, <id>.w<k>.pid.
  static std::string PidPath(const std::string& dir, JobId id,
                             int worker = -1) {
    return dir + "/" + std::to_string(id) +
           (worker > 0 ? ".w" + std::to_string(worker) : std::string()) +
           ".pid";
  }

  // "PID START_TIME", written whole (a temporary file renamed over it).
  static Status WritePidFile(const std::string& dir, JobId id, int worker,
                             int64_t pid, int64_t start) {
    const std::string path = PidPath(dir, id, worker);
    const std::string tmp = path + ".tmp";
    {
      std::ofstream out(tmp, std::ios::trunc);
      out << pid << " " << start << "\n";
      out.flush();
      if (!out) return Unavailable(tmp + ": cannot write the pid file");
    }
    if (std::rename(tmp.c_str(), path.c_str()) != 0) {
      return Unavailable(path +
                         ": cannot write the pid file: " + ErrnoText(errno));
    }
    return {};
  }

  static Error OpenError(const std::string& path) {
    return Unavailable(path + ": cannot open: " + ErrnoText(errno));
  }

  // To the job's process group; to the process alone if the group is gone
  // (the leader has not called setsid yet, right after fork).
  static void Signal(const Child& c, int sig) {
    const auto pid = static_cast<pid_t>(c.pid);
    if (killpg(pid, sig) != 0 && errno == ESRCH) kill(pid, sig);
  }

  // The job ends with its leader: what it left running in its group is
  // killed, so that nothing keeps using the GPUs the queue hands on. The
  // leader is looked at (WNOWAIT) before it is reaped, so that its pid, and
  // with it the group id, cannot have been reused when killpg runs.
  static std::optional<Exited> Reap(JobId id, const Child& c) {
    const auto pid = static_cast<pid_t>(c.pid);
    siginfo_t info{};
    int r;
    do {
      r = waitid(P_PID, static_cast<id_t>(pid), &info,
                 WEXITED | WNOHANG | WNOWAIT);
    } while (r < 0 && errno == EINTR);
    if (r < 0) {  // ECHILD: someone else reaped it (SIGCHLD ignored?)
      return Exited{id, std::nullopt, "exit status lost: " + ErrnoText(errno)};
    }
    if (info.si_pid == 0) return std::nullopt;  // still running
    killpg(pid, SIGKILL);
    int status = 0;
    pid_t w;
    do {
      w = waitpid(pid, &status, 0);
    } while (w < 0 && errno == EINTR);
    if (w < 0) {
      return Exited{id, std::nullopt, "exit status lost: " + ErrnoText(errno)};
    }
    if (WIFEXITED(status)) return Exited{id, WEXITSTATUS(status), ""};
    return Exited{id, std::nullopt,
                  "signal " + std::to_string(WTERMSIG(status))};
  }

  static std::optional<Exited> CheckAdopted(JobId id, const Child& c) {
    if (SameLiveProcess(c.pid, c.start_time)) return std::nullopt;
    return Exited{id, std::nullopt,
                  "exited while the service was down or adopted; exit code "
                  "unknown"};
  }

  const std::string log_dir_;
  std::mutex mps_mu_;  // one check of the daemon at a time
  std::optional<MpsDaemon> mps_;
  mutable std::mutex mu_;                   // guards the maps below
  std::map<JobId, Child> children_;         // running, by job id
  std::map<JobId, std::string> log_dirs_;   // where not log_dir_
  std::map<JobId, WorkerJob> worker_jobs_;  // per-worker jobs, by job id
  std::vector<WorkerExited> worker_exits_;  // for TakeWorkerExits
};

}  // namespace

std::unique_ptr<Launcher> MakeLocalLauncher(std::string log_dir,
                                            std::optional<MpsOptions> mps) {
  return std::make_unique<LocalLauncher>(std::move(log_dir), std::move(mps));
}

int64_t ProcessStartTime(int64_t pid) {
  const auto s = ReadProcStat(pid);
  return s ? s->start_time : -1;
}

}  // namespace tessera::launch
