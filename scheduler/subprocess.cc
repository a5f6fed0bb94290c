// RunCommand: fork + exec with pipes for stdout and stderr, read with poll()
// against a deadline. As in launcher.cc, the child makes only
// async-signal-safe calls between fork and exec (the service is
// multithreaded): argv, envp and the descriptors are prepared before fork.

#include "scheduler/subprocess.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <string_view>
#include <thread>

extern char** environ;

namespace tessera::scheduler {
namespace {

using Clock = std::chrono::steady_clock;

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

// `fd` moved above 0..2 (closed when the service runs detached), so that
// the child's dup2 onto 0..2 cannot overwrite one of its sources.
int AboveStdio(int fd) {
  if (fd < 0 || fd > STDERR_FILENO) return fd;
  const int moved = fcntl(fd, F_DUPFD_CLOEXEC, STDERR_FILENO + 1);
  close(fd);
  return moved;
}

std::vector<std::string> Environment(
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

// In the child, after fork: only async-signal-safe calls. Never returns.
[[noreturn]] void RunChild(int in, int out, int err, int report, char** argv,
                           char** envp) {
  setpgid(0, 0);
  dup2(in, STDIN_FILENO);
  dup2(out, STDOUT_FILENO);
  dup2(err, STDERR_FILENO);
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  for (int sig = 1; sig < NSIG; ++sig) sigaction(sig, &dfl, nullptr);
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);
  if (report > 3) close_range(3, static_cast<unsigned>(report - 1), 0);
  close_range(static_cast<unsigned>(report) + 1, ~0U, 0);
  execvpe(argv[0], argv, envp);
  const int e = errno;
  ssize_t w;
  do {
    w = write(report, &e, sizeof e);
  } while (w < 0 && errno == EINTR);
  _exit(127);
}

// Reads what is available on `fd` into `sink` (up to the cap); false at
// end of file or on an error.
bool Drain(int fd, std::string* sink) {
  char buf[65536];
  const ssize_t n = read(fd, buf, sizeof buf);
  if (n < 0) return errno == EINTR || errno == EAGAIN;
  if (n == 0) return false;
  const size_t room =
      kMaxCommandOutput - std::min(kMaxCommandOutput, sink->size());
  sink->append(buf, std::min(room, static_cast<size_t>(n)));
  return true;
}

int Status(int status) { return WIFEXITED(status) ? WEXITSTATUS(status) : -1; }

}  // namespace

std::string CommandResult::Summary() const {
  if (!start_error.empty()) return start_error;
  if (timed_out) return "timed out";
  std::string_view text = err.empty() ? std::string_view(out) : err;
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) {
    text.remove_suffix(1);
  }
  // The last line says what failed ("sbatch: error: Batch job submission
  // failed: ..."); earlier ones are often warnings.
  const size_t nl = text.rfind('\n');
  if (nl != std::string_view::npos) text = text.substr(nl + 1);
  if (text.empty()) return "exit code " + std::to_string(exit_code);
  return std::string(text);
}

CommandResult RunCommand(const std::vector<std::string>& argv,
                         const std::map<std::string, std::string>& env,
                         double timeout_s) {
  CommandResult result;
  const auto deadline =
      Clock::now() + std::chrono::duration_cast<Clock::duration>(
                         std::chrono::duration<double>(timeout_s));
  auto fail = [&](const std::string& what) {
    result.start_error =
        "cannot run '" + argv[0] + "': " + what + ": " + std::strerror(errno);
    return result;
  };
  Fd in(AboveStdio(open("/dev/null", O_RDONLY | O_CLOEXEC)));
  if (in.get() < 0) return fail("/dev/null");
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) return fail("pipe");
  Fd out_read(fds[0]), out_write(AboveStdio(fds[1]));
  if (pipe2(fds, O_CLOEXEC) != 0) return fail("pipe");
  Fd err_read(fds[0]), err_write(AboveStdio(fds[1]));
  if (pipe2(fds, O_CLOEXEC) != 0) return fail("pipe");
  Fd report_read(fds[0]), report_write(AboveStdio(fds[1]));
  if (out_write.get() < 0 || err_write.get() < 0 || report_write.get() < 0) {
    return fail("pipe");
  }

  std::vector<std::string> args = argv;
  std::vector<std::string> envs = Environment(env);
  std::vector<char*> c_argv = CStrings(args), c_envp = CStrings(envs);
  const pid_t pid = fork();
  if (pid < 0) return fail("fork");
  if (pid == 0) {
    RunChild(in.get(), out_write.get(), err_write.get(), report_write.get(),
             c_argv.data(), c_envp.data());
  }
  out_write.Reset();
  err_write.Reset();
  report_write.Reset();
  int child_errno = 0;
  ssize_t n;
  do {
    n = read(report_read.get(), &child_errno, sizeof child_errno);
  } while (n < 0 && errno == EINTR);
  if (n == static_cast<ssize_t>(sizeof child_errno)) {
    while (waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {
    }
    result.start_error =
        "cannot run '" + argv[0] + "': " + std::strerror(child_errno);
    return result;
  }

  bool out_open = true, err_open = true;
  while ((out_open || err_open) && Clock::now() < deadline) {
    pollfd p[2] = {{out_open ? out_read.get() : -1, POLLIN, 0},
                   {err_open ? err_read.get() : -1, POLLIN, 0}};
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - Clock::now());
    const int ready = poll(p, 2, static_cast<int>(left.count()) + 1);
    if (ready < 0 && errno != EINTR) break;
    if (ready <= 0) continue;
    if (p[0].revents != 0) out_open = Drain(out_read.get(), &result.out);
    if (p[1].revents != 0) err_open = Drain(err_read.get(), &result.err);
  }
  int status = 0;
  while (true) {
    const pid_t w = waitpid(pid, &status, WNOHANG);
    if (w == pid) {
      result.exit_code = Status(status);
      return result;
    }
    if (w < 0 && errno != EINTR) return result;
    if (Clock::now() >= deadline) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  result.timed_out = true;
  killpg(pid, SIGKILL);
  kill(pid, SIGKILL);  // before its setpgid, the group may not exist yet
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return result;
}

}  // namespace tessera::scheduler
