// RunIsolated: fork, run, answer through a pipe; the parent reads with a
// deadline and turns every way the child can end into a value. RunSpawned:
// the same with a fresh start of the program, its input through a socket.
#include "common/isolated.h"

#include <fcntl.h>
#include <poll.h>
#include <spawn.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>

namespace tessera {
namespace {

// The child's exit codes other than 0 (answered): chosen outside the range
// shells and sanitizers use (1, 2, 126-128+n).
constexpr int kExitOutOfMemory = 87;
constexpr int kExitException = 88;
constexpr int kExitWriteFailed = 89;
// A spawned child asked for an entry this program does not register.
constexpr int kExitNoEntry = 90;

// A spawned child's arguments: kSpawnFlag, the entry's name, the parent's
// pid and the memory cap in bytes. Its socket to the parent is fd 3; the
// first byte it sends is kReady (it serves the entry), then the answer.
constexpr char kSpawnFlag[] = "--tessera-spawned-entry";
constexpr int kSpawnArgc = 5;
constexpr int kSpawnFd = 3;
constexpr char kReady = 'T';

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

// What a child sent and whether it was killed at its deadline.
struct Exchanged {
  std::string bytes;
  bool killed = false;
};

// Sends `*input` (when non-null; `fd` is then a socket, shut for writing
// once it is sent) and reads the child's bytes until it closes `fd`,
// killing it once `deadline_s` (<= 0: none) has passed since `started`.
Exchanged Exchange(int fd, pid_t pid, Clock::time_point started,
                   double deadline_s, const std::string* input) {
  Exchanged ex;
  size_t sent = 0;
  bool sending = input != nullptr;
  if (sending && input->empty()) {
    shutdown(fd, SHUT_WR);
    sending = false;
  }
  char buf[1 << 16];
  while (true) {
    int wait_ms = -1;
    if (deadline_s > 0) {
      const double left =
          deadline_s -
          std::chrono::duration<double>(Clock::now() - started).count();
      if (left <= 0) {
        kill(pid, SIGKILL);
        ex.killed = true;
        break;
      }
      wait_ms = static_cast<int>(left * 1000) + 1;
    }
    pollfd p{fd, static_cast<short>(POLLIN | (sending ? POLLOUT : 0)), 0};
    const int ready = poll(&p, 1, wait_ms);
    if (ready < 0 && errno == EINTR) continue;
    if (ready == 0) continue;  // the deadline, checked above
    if (ready < 0) break;
    if (sending && (p.revents & POLLOUT) != 0) {
      const ssize_t n = send(fd, input->data() + sent, input->size() - sent,
                             MSG_NOSIGNAL | MSG_DONTWAIT);
      if (n > 0) sent += static_cast<size_t>(n);
      // All sent, or the child stopped reading (it ended): read what it
      // answered.
      if (sent == input->size() || (n < 0 && errno != EAGAIN &&
                                    errno != EWOULDBLOCK && errno != EINTR)) {
        shutdown(fd, SHUT_WR);
        sending = false;
      }
    }
    if ((p.revents & (POLLIN | POLLHUP | POLLERR)) == 0) continue;
    const ssize_t n = read(fd, buf, sizeof buf);
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (n <= 0) break;  // end of the answer (or a broken pipe)
    ex.bytes.append(buf, static_cast<size_t>(n));
  }
  return ex;
}

// The child's wait status once it has ended. ECHILD: reaped by someone
// else (SIGCHLD ignored by the embedding program): how it ended is
// unknown, so the answer stands on its own (the callers decode it
// strictly) unless it was killed here.
int Reap(pid_t pid) {
  int status = 0;
  pid_t waited = 0;
  while ((waited = waitpid(pid, &status, 0)) < 0 && errno == EINTR) {
  }
  return waited < 0 ? 0 : status;
}

// The entries a spawned child can run: a table of plain pointers, zero
// before any constructor runs, filled by TESSERA_SPAWN_ENTRY's.
constexpr int kMaxSpawnEntries = 16;
const SpawnEntry* g_spawn_entries[kMaxSpawnEntries];
int g_num_spawn_entries = 0;
// Set once this program, started again, did not serve spawned entries at
// all: later calls fork at once.
std::atomic<bool> g_spawn_fails{false};

const SpawnEntry* FindSpawnEntry(const char* name) {
  for (int i = 0; i < g_num_spawn_entries; ++i) {
    if (std::strcmp(g_spawn_entries[i]->name, name) == 0) {
      return g_spawn_entries[i];
    }
  }
  return nullptr;
}

// In a spawned child: everything the parent sends, until it shuts the
// socket for writing.
bool ReadAll(int fd, std::string* out) {
  char buf[1 << 16];
  while (true) {
    const ssize_t n = read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return false;
    if (n == 0) return true;
    out->append(buf, static_cast<size_t>(n));
  }
}

// Before main and before any static object of the program: when this
// start is a spawned child (RunSpawned), serve its entry and exit; else
// return at once. glibc passes a constructor the program's arguments.
__attribute__((constructor(202))) void ServeSpawnedEntry(int argc, char** argv,
                                                         char** /*env*/) {
  if (argc != kSpawnArgc || std::strcmp(argv[1], kSpawnFlag) != 0) return;
  const SpawnEntry* entry = FindSpawnEntry(argv[2]);
  if (entry == nullptr) _exit(kExitNoEntry);
  std::string input;
  if (!WriteAll(kSpawnFd, std::string(1, kReady)) ||
      !ReadAll(kSpawnFd, &input)) {
    _exit(kExitWriteFailed);
  }
  IsolationLimits limits;
  limits.memory_bytes = std::strtoll(argv[4], nullptr, 10);
  const auto parent = static_cast<pid_t>(std::strtol(argv[3], nullptr, 10));
  RunChild(
      kSpawnFd, parent, [&] { return entry->run(input); }, limits);
}

// Starts this program again as a child serving `entry` on a socket whose
// other end is `*fd`; false (with errno's reason in `*why`) when it could
// not be started.
bool Spawn(const SpawnEntry& entry, int64_t memory_bytes, pid_t* pid, int* fd,
           std::string* why) {
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) {
    *why = std::string("no socket: ") + std::strerror(errno);
    return false;
  }
  // Above the descriptors the child's dup2s write (0, 1, 3).
  const int child_end = fcntl(sv[1], F_DUPFD_CLOEXEC, 10);
  const int dup_errno = errno;
  close(sv[1]);
  if (child_end < 0) {
    close(sv[0]);
    *why = std::string("no descriptor: ") + std::strerror(dup_errno);
    return false;
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, child_end, kSpawnFd);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, 2, 1);
  std::string flag = kSpawnFlag, name = entry.name,
              parent = std::to_string(getpid()),
              cap = std::to_string(memory_bytes), program = "tessera-spawned";
  char* args[] = {program.data(), flag.data(), name.data(),
                  parent.data(),  cap.data(),  nullptr};
  const int rc =
      posix_spawn(pid, "/proc/self/exe", &actions, nullptr, args, environ);
  posix_spawn_file_actions_destroy(&actions);
  close(child_end);
  if (rc != 0) {
    close(sv[0]);
    *why = std::string("it could not be started again: ") + std::strerror(rc);
    return false;
  }
  *fd = sv[0];
  return true;
}
}  // namespace

void RegisterSpawnEntry(const SpawnEntry* entry) {
  if (g_num_spawn_entries == kMaxSpawnEntries) {
    std::fputs("tessera: more than 16 spawn entries (common/isolated.cc)\n",
               stderr);
    std::abort();
  }
  g_spawn_entries[g_num_spawn_entries++] = entry;
}

Result<std::string> RunSpawned(const SpawnEntry& entry,
                               const std::string& input,
                               const IsolationLimits& limits,
                               const std::string& what,
                               std::string* fallback_note) {
  auto in_fork = [&](const std::string& why) {
    std::string note;
    Result<std::string> r =
        RunIsolated([&] { return entry.run(input); }, limits, what, &note);
    if (fallback_note != nullptr) {
      *fallback_note = note.empty()
                           ? what + " ran in a fork of tessera (" + why + ")"
                           : note;
    }
    return r;
  };
  if (g_spawn_fails.load(std::memory_order_relaxed)) {
    return in_fork("this program could not serve it before");
  }
  const Clock::time_point started = Clock::now();
  pid_t pid = 0;
  int fd = -1;
  std::string why;
  if (!Spawn(entry, limits.memory_bytes, &pid, &fd, &why)) return in_fork(why);
  Exchanged ex = Exchange(fd, pid, started, limits.deadline_s, &input);
  close(fd);
  const int status = Reap(pid);
  if (!ex.killed && (ex.bytes.empty() || ex.bytes[0] != kReady)) {
    // Started, but not as a program that serves spawned entries (tessera
    // in a shared library another program loaded): it never will. One that
    // only lacks this entry (kExitNoEntry: not registered) may serve others.
    const bool lacks_entry =
        WIFEXITED(status) && WEXITSTATUS(status) == kExitNoEntry;
    if (!lacks_entry) g_spawn_fails.store(true, std::memory_order_relaxed);
    const std::string ended = Failure(status, false, limits, "it");
    return in_fork("this program does not serve it" +
                   (ended.empty() ? std::string() : ": " + ended));
  }
  const std::string failed = Failure(status, ex.killed, limits, what);
  if (!failed.empty()) return Internal(failed);
  ex.bytes.erase(0, 1);
  return std::move(ex.bytes);
}

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
  const Exchanged ex =
      Exchange(fds[0], pid, started, limits.deadline_s, nullptr);
  close(fds[0]);
  const int status = Reap(pid);
  const std::string why = Failure(status, ex.killed, limits, what);
  if (!why.empty()) return Internal(why);
  return ex.bytes;
}

}  // namespace tessera
