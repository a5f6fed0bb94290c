// RunCommand: fork + exec with pipes for stdout and stderr, read with poll()
// against a deadline; and the fork + exec building blocks it shares with
// the local launcher. The child makes only async-signal-safe calls between
// fork and exec (the service is multithreaded): argv, envp and the
// descriptors are prepared before fork.

#include "launch/subprocess.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstring>
#include <string_view>
#include <thread>

namespace tessera::launch {
namespace {

using Clock = std::chrono::steady_clock;

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

}  // namespace

void Fd::Reset() {
  if (fd_ >= 0) close(fd_);
  fd_ = -1;
}

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
  out.reserve(env.size());
  for (const auto& [k, v] : env) out.push_back(k + "=" + v);
  return out;
}

std::vector<char*> CStrings(std::vector<std::string>& strings) {
  std::vector<char*> out;
  out.reserve(strings.size());
  for (std::string& s : strings) out.push_back(s.data());
  out.push_back(nullptr);
  return out;
}

int AboveStdio(int fd) {
  if (fd < 0 || fd > STDERR_FILENO) return fd;
  const int moved = fcntl(fd, F_DUPFD_CLOEXEC, STDERR_FILENO + 1);
  close(fd);
  return moved;
}

[[noreturn]] void ExecChild(int in, int out, int err, int report, char** argv,
                            char** envp, bool new_session, int go, int go_write,
                            int ignored) {
  if (go >= 0) {
    // Else the child itself keeps the pipe open: no EOF when the parent dies.
    if (go_write >= 0) close(go_write);
    char byte = 0;
    ssize_t n;
    do {
      n = read(go, &byte, 1);
    } while (n < 0 && errno == EINTR);
    if (n != 1) _exit(127);
    close(go);
  }
  if (new_session) {
    setsid();
  } else {
    setpgid(0, 0);
  }
  dup2(in, STDIN_FILENO);
  dup2(out, STDOUT_FILENO);
  dup2(err, STDERR_FILENO);
  // Ignored signals and the blocked mask survive exec: give the child the
  // defaults, whatever the service set (SIGPIPE ignored by the HTTP server).
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  for (int sig = 1; sig < NSIG; ++sig) sigaction(sig, &dfl, nullptr);
  if (ignored > 0) {
    struct sigaction ign {};
    ign.sa_handler = SIG_IGN;
    sigaction(ignored, &ign, nullptr);
  }
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);
  // Descriptors other threads opened without O_CLOEXEC stay out of the
  // child (the report pipe is O_CLOEXEC and must stay open until exec).
  if (report > 3) close_range(3, static_cast<unsigned>(report - 1), 0);
  close_range(static_cast<unsigned>(report) + 1, ~0U, 0);
  // execvpe searches the service's PATH, not a PATH in the child's env.
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

std::optional<int> AwaitExec(int report, pid_t pid) {
  int child_errno = 0;
  ssize_t n;
  do {
    n = read(report, &child_errno, sizeof child_errno);
  } while (n < 0 && errno == EINTR);
  if (n != static_cast<ssize_t>(sizeof child_errno)) return std::nullopt;
  while (waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {
  }
  return child_errno;
}

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

namespace {

// The command's stdin: /dev/null, or a pipe holding `input` whole (it fits
// the pipe's buffer) and closed for writing, so the command reads it and
// then end of file. -1 (errno set) on failure.
int InputFd(const std::string& input) {
  if (input.empty()) return AboveStdio(open("/dev/null", O_RDONLY | O_CLOEXEC));
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) return -1;
  const Fd write_end(fds[1]);
  if (write(write_end.get(), input.data(), input.size()) !=
      static_cast<ssize_t>(input.size())) {
    close(fds[0]);
    return -1;
  }
  return AboveStdio(fds[0]);
}

}  // namespace

CommandResult RunCommand(const std::vector<std::string>& argv,
                         const std::map<std::string, std::string>& env,
                         double timeout_s, const std::string& input) {
  CommandResult result;
  const auto deadline =
      Clock::now() + std::chrono::duration_cast<Clock::duration>(
                         std::chrono::duration<double>(timeout_s));
  auto fail = [&](const std::string& what) {
    result.start_error =
        "cannot run '" + argv[0] + "': " + what + ": " + std::strerror(errno);
    return result;
  };
  if (input.size() > kMaxCommandInput) {
    errno = E2BIG;
    return fail("its input");
  }
  Fd in(InputFd(input));
  if (in.get() < 0) return fail(input.empty() ? "/dev/null" : "its input");
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) return fail("pipe");
  Fd out_read(fds[0]);
  Fd out_write(AboveStdio(fds[1]));
  if (pipe2(fds, O_CLOEXEC) != 0) return fail("pipe");
  Fd err_read(fds[0]);
  Fd err_write(AboveStdio(fds[1]));
  if (pipe2(fds, O_CLOEXEC) != 0) return fail("pipe");
  Fd report_read(fds[0]);
  Fd report_write(AboveStdio(fds[1]));
  if (out_write.get() < 0 || err_write.get() < 0 || report_write.get() < 0) {
    return fail("pipe");
  }

  std::vector<std::string> args = argv;
  std::vector<std::string> envs = ChildEnvironment(env);
  std::vector<char*> c_argv = CStrings(args);
  std::vector<char*> c_envp = CStrings(envs);
  const pid_t pid = fork();
  if (pid < 0) return fail("fork");
  if (pid == 0) {
    ExecChild(in.get(), out_write.get(), err_write.get(), report_write.get(),
              c_argv.data(), c_envp.data(), /*new_session=*/false);
  }
  out_write.Reset();
  err_write.Reset();
  report_write.Reset();
  if (const std::optional<int> child_errno =
          AwaitExec(report_read.get(), pid)) {
    result.start_error =
        "cannot run '" + argv[0] + "': " + std::strerror(*child_errno);
    return result;
  }

  bool out_open = true;
  bool err_open = true;
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

}  // namespace tessera::launch
