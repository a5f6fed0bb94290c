// RunIsolated: fork, run, answer through a pipe; the parent reads with a
// deadline and turns every way the child can end into a value.
#include "common/isolated.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <new>

namespace tessera {
namespace {

// The child's exit codes other than 0 (answered): chosen outside the range
// shells and sanitizers use (1, 2, 126-128+n).
constexpr int kExitOutOfMemory = 87;
constexpr int kExitException = 88;
constexpr int kExitWriteFailed = 89;

using Clock = std::chrono::steady_clock;

bool WriteAll(int fd, const std::string& bytes) {
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<size_t>(n);
  }
  return true;
}

// The process's address space now, in bytes (0 when /proc is unreadable).
int64_t AddressSpaceBytes() {
  FILE* f = std::fopen("/proc/self/statm", "r");
  if (f == nullptr) return 0;
  long long pages = 0;
  const int read = std::fscanf(f, "%lld", &pages);
  std::fclose(f);
  return read == 1 ? pages * sysconf(_SC_PAGESIZE) : 0;
}

// In the child: limits, signals, the work, the answer; never returns.
[[noreturn]] void RunChild(int fd, pid_t parent,
                           const std::function<std::string()>& work,
                           const IsolationLimits& limits) {
  // A crash kills the child by its signal, as in a plain build: a
  // sanitizer's or libFuzzer's handler inherited from the parent would
  // report the contained crash as the process's own.
  for (const int sig : {SIGSEGV, SIGBUS, SIGFPE, SIGILL}) {
    std::signal(sig, SIG_DFL);
  }
  // Dies with the thread that waits for it (a killed tessera leaves no
  // solver running).
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() != parent) _exit(kExitWriteFailed);  // it died already
  if (limits.memory_bytes > 0) {
    const int64_t cap = AddressSpaceBytes() + limits.memory_bytes;
    const rlimit r{static_cast<rlim_t>(cap), static_cast<rlim_t>(cap)};
    setrlimit(RLIMIT_AS, &r);
  }
  std::string answer;
  try {
    answer = work();
  } catch (const std::bad_alloc&) {
    _exit(kExitOutOfMemory);
  } catch (...) {
    _exit(kExitException);
  }
  _exit(WriteAll(fd, answer) ? 0 : kExitWriteFailed);
}

std::string Seconds(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", s);
  return buf;
}

// Why a child that ended with `status` gave no answer; empty when it
// answered.
std::string Failure(int status, bool killed, const IsolationLimits& limits,
                    const std::string& what) {
  if (killed) {
    return what + " ran past its deadline of " + Seconds(limits.deadline_s) +
           " s and was killed";
  }
  if (WIFSIGNALED(status)) {
    const int sig = WTERMSIG(status);
    std::string why = what + " crashed (" + strsignal(sig) + ")";
    if (sig == SIGKILL) why += "; the system may have run out of memory";
    return why;
  }
  if (!WIFEXITED(status)) return what + " ended abnormally";
  switch (WEXITSTATUS(status)) {
    case 0:
      return "";
    case kExitOutOfMemory:
      return what + " ran out of memory (cap " +
             std::to_string(limits.memory_bytes >> 20) + " MiB)";
    case kExitException:
      return what + " threw an exception";
    default:
      return what + " failed (exit code " +
             std::to_string(WEXITSTATUS(status)) + ")";
  }
}

}  // namespace

Result<std::string> RunIsolated(const std::function<std::string()>& work,
                                const IsolationLimits& limits,
                                const std::string& what,
                                std::string* fallback_note) {
  auto in_process = [&](const char* why) -> Result<std::string> {
    if (fallback_note != nullptr) {
      *fallback_note = what + " ran in tessera's own process (" + why + ": " +
                       std::strerror(errno) + ")";
    }
    return work();
  };
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) return in_process("no pipe");
  const Clock::time_point started = Clock::now();
  const pid_t parent = getpid();
  const pid_t pid = fork();
  if (pid < 0) {
    const int saved = errno;
    close(fds[0]);
    close(fds[1]);
    errno = saved;
    return in_process("no child process");
  }
  if (pid == 0) {
    close(fds[0]);
    RunChild(fds[1], parent, work, limits);
  }
  close(fds[1]);

  std::string bytes;
  bool killed = false;
  char buf[1 << 16];
  while (true) {
    int wait_ms = -1;
    if (limits.deadline_s > 0) {
      const double left =
          limits.deadline_s -
          std::chrono::duration<double>(Clock::now() - started).count();
      if (left <= 0) {
        kill(pid, SIGKILL);
        killed = true;
        break;
      }
      wait_ms = static_cast<int>(left * 1000) + 1;
    }
    pollfd p{fds[0], POLLIN, 0};
    const int ready = poll(&p, 1, wait_ms);
    if (ready < 0 && errno == EINTR) continue;
    if (ready == 0) continue;  // the deadline, checked above
    if (ready < 0) break;
    const ssize_t n = read(fds[0], buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;  // end of the answer (or a broken pipe)
    bytes.append(buf, static_cast<size_t>(n));
  }
  close(fds[0]);
  int status = 0;
  pid_t waited = 0;
  while ((waited = waitpid(pid, &status, 0)) < 0 && errno == EINTR) {
  }
  // ECHILD: reaped by someone else (SIGCHLD ignored by the embedding
  // program): how it ended is unknown, so the answer stands on its own
  // (the callers decode it strictly) unless it was killed here.
  if (waited < 0) status = 0;
  const std::string why = Failure(status, killed, limits, what);
  if (!why.empty()) return Internal(why);
  return bytes;
}

void ByteWriter::PutDoubles(const double* v, size_t n) {
  Put(static_cast<uint64_t>(n));
  if (n > 0)
    bytes_.append(reinterpret_cast<const char*>(v), n * sizeof(double));
}

bool ByteReader::GetDoubles(size_t n, std::vector<double>* out) {
  uint64_t count = 0;
  if (!Get(&count) || count != n ||
      (bytes_.size() - pos_) / sizeof(double) < n) {
    return ok_ = false;
  }
  out->resize(n);
  if (n > 0) {  // an empty vector's data() may be null
    std::memcpy(out->data(), bytes_.data() + pos_, n * sizeof(double));
  }
  pos_ += n * sizeof(double);
  return true;
}

}  // namespace tessera
