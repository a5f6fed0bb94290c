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

#include "scheduler/launcher.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
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

extern char** environ;

namespace tessera::scheduler {
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

// A file descriptor closed with its owner.
class Fd {
 public:
  explicit Fd(int fd = -1) : fd_(fd) {}
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd() { Reset(); }
  int get() const { return fd_; }
  void Reset() {
    if (fd_ >= 0) close(fd_);
    fd_ = -1;
  }

 private:
  int fd_;
};

std::string ErrnoText(int err) { return std::strerror(err); }

// "NAME=value" for the service's environment with `extra` on top.
std::vector<std::string> ChildEnvironment(
    const std::map<std::string, std::string>& extra) {
  std::map<std::string, std::string> env;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    const std::string_view entry(*e);
    const size_t eq = entry.find('=');
    if (eq == std::string_view::npos) continue;
    env[std::string(entry.substr(0, eq))] = std::string(entry.substr(eq + 1));
  }
  for (const auto& [k, v] : extra) env[k] = v;
  std::vector<std::string> out;
  for (const auto& [k, v] : env) out.push_back(k + "=" + v);
  return out;
}

std::vector<char*> CStrings(std::vector<std::string>& strings) {
  std::vector<char*> out;
  for (std::string& s : strings) out.push_back(s.data());
  out.push_back(nullptr);
  return out;
}

// `fd` moved above 0..2 (which are closed when the service runs detached),
// so that the child's dup2 onto 0..2 cannot overwrite one of its sources.
int AboveStdio(int fd) {
  if (fd < 0 || fd > STDERR_FILENO) return fd;
  const int moved = fcntl(fd, F_DUPFD_CLOEXEC, STDERR_FILENO + 1);
  close(fd);
  return moved;
}

// Async-signal-safe write of a whole buffer.
void WriteAll(int fd, const char* p, size_t n) {
  while (n > 0) {
    const ssize_t w = write(fd, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return;
    p += w;
    n -= static_cast<size_t>(w);
  }
}

// In the child, after fork: only async-signal-safe calls. Never returns.
[[noreturn]] void RunChild(int in, int out, int err, int report, char** argv,
                           char** envp) {
  setsid();
  dup2(in, STDIN_FILENO);
  dup2(out, STDOUT_FILENO);
  dup2(err, STDERR_FILENO);
  // Ignored signals and the blocked mask survive exec: give the job the
  // defaults, whatever the service set (SIGPIPE ignored by the HTTP server).
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  for (int sig = 1; sig < NSIG; ++sig) sigaction(sig, &dfl, nullptr);
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);
  // Descriptors other threads opened without O_CLOEXEC stay out of the job
  // (the report pipe is O_CLOEXEC and must stay open until exec).
  if (report > 3) close_range(3, static_cast<unsigned>(report - 1), 0);
  close_range(static_cast<unsigned>(report) + 1, ~0U, 0);
  // execvpe searches the service's PATH, not a PATH in the job's env.
  execvpe(argv[0], argv, envp);
  const int e = errno;
  const char* why = strerrordesc_np(e);
  static constexpr char kPrefix[] = "tessera: cannot run '";
  WriteAll(STDERR_FILENO, kPrefix, sizeof kPrefix - 1);
  WriteAll(STDERR_FILENO, argv[0], strlen(argv[0]));
  WriteAll(STDERR_FILENO, "': ", 3);
  WriteAll(STDERR_FILENO, why, strlen(why));
  WriteAll(STDERR_FILENO, "\n", 1);
  WriteAll(report, reinterpret_cast<const char*>(&e), sizeof e);
  _exit(127);
}

class LocalLauncher : public Launcher {
 public:
  explicit LocalLauncher(std::string log_dir) : log_dir_(std::move(log_dir)) {}

  // Running jobs are left running: a restarted service adopts them.
  ~LocalLauncher() override = default;

  Result<Launched> Start(const LaunchSpec& spec) override {
    if (spec.command.empty() || spec.command[0].empty()) {
      return BadInput("job " + std::to_string(spec.id) + ": empty command");
    }
    std::lock_guard lock(mu_);
    const std::string dir = spec.log_dir.empty() ? log_dir_ : spec.log_dir;
    if (dir != log_dir_) log_dirs_[spec.id] = dir;
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    if (ec)
      return Internal(dir +
                      ": cannot create the log directory: " + ec.message());
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
      return Internal("pipe: " + ErrnoText(errno));
    }
    Fd report_read(fds[0]), report_write(AboveStdio(fds[1]));
    if (report_write.get() < 0) return Internal("pipe: " + ErrnoText(errno));

    std::vector<std::string> args = spec.command;
    std::vector<std::string> env = ChildEnvironment(spec.env);
    std::vector<char*> argv = CStrings(args), envp = CStrings(env);

    const pid_t pid = fork();
    if (pid < 0) return Internal("fork: " + ErrnoText(errno));
    if (pid == 0) {
      RunChild(in.get(), out.get(), err.get(), report_write.get(), argv.data(),
               envp.data());
    }
    report_write.Reset();
    // The pipe closes at exec (O_CLOEXEC) with nothing written, or carries
    // errno from a failed exec.
    int child_errno = 0;
    ssize_t n;
    do {
      n = read(report_read.get(), &child_errno, sizeof child_errno);
    } while (n < 0 && errno == EINTR);
    if (n == static_cast<ssize_t>(sizeof child_errno)) {
      while (waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {
      }
      return BadInput("cannot run '" + spec.command[0] +
                      "': " + ErrnoText(child_errno));
    }
    // The child is ours until Poll reaps it, so /proc/<pid> exists even if
    // it has exited already.
    const int64_t start = ProcessStartTime(pid);
    children_[spec.id] = Child{pid, start, /*own=*/true, std::nullopt};
    return Launched{pid, start};
  }

  void Stop(JobId id, double grace_s) override {
    std::lock_guard lock(mu_);
    auto it = children_.find(id);
    if (it == children_.end()) return;
    Child& c = it->second;
    Signal(c, SIGTERM);
    const auto deadline =
        Clock::now() + std::chrono::duration_cast<Clock::duration>(
                           std::chrono::duration<double>(grace_s));
    if (!c.kill_at || deadline < *c.kill_at) c.kill_at = deadline;
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
    return exited;
  }

  bool Adopt(JobId id, int64_t pid, int64_t start_time) override {
    if (!SameLiveProcess(pid, start_time)) return false;
    std::lock_guard lock(mu_);
    children_[id] = Child{pid, start_time, /*own=*/false, std::nullopt};
    return true;
  }

  std::string LogPath(JobId id, bool stderr_log) const override {
    std::lock_guard lock(mu_);
    return LogPathLocked(id, stderr_log);
  }

 private:
  struct Child {
    int64_t pid = 0;
    int64_t start_time = 0;
    bool own = true;  // our child (waitpid) or adopted (kill(pid, 0))
    std::optional<Clock::time_point> kill_at;  // SIGKILL then, if alive
  };

  std::string LogPathLocked(JobId id, bool stderr_log) const {
    auto it = log_dirs_.find(id);
    const std::string& dir = it == log_dirs_.end() ? log_dir_ : it->second;
    return dir + "/" + std::to_string(id) + (stderr_log ? ".err" : ".out");
  }

  static Error OpenError(const std::string& path) {
    return Internal(path + ": cannot open: " + ErrnoText(errno));
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
  mutable std::mutex mu_;                  // guards the maps below
  std::map<JobId, Child> children_;        // running, by job id
  std::map<JobId, std::string> log_dirs_;  // where not log_dir_
};

}  // namespace

std::unique_ptr<Launcher> MakeLocalLauncher(std::string log_dir) {
  return std::make_unique<LocalLauncher>(std::move(log_dir));
}

int64_t ProcessStartTime(int64_t pid) {
  const auto s = ReadProcStat(pid);
  return s ? s->start_time : -1;
}

}  // namespace tessera::scheduler
