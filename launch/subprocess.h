#ifndef TESSERA_LAUNCH_SUBPROCESS_H_
#define TESSERA_LAUNCH_SUBPROCESS_H_

// Running a short-lived command (sbatch, squeue, scontrol, scancel) with a
// bounded wait: fork + exec of an argv vector (no shell), stdout and stderr
// captured, the command's process group killed when it overruns. Safe to
// call from several threads at once. Also the fork + exec building blocks
// it shares with the local launcher (launcher.cc).

#include <sys/types.h>

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace tessera::launch {

struct CommandResult {
  int exit_code = -1;       // -1: killed by a signal, timed out or not run
  bool timed_out = false;   // killed after the time limit
  std::string start_error;  // exec failed: "cannot run 'x': No such file..."
  std::string out, err;     // what it wrote (each capped at kMaxCommandOutput)
  bool ok() const {
    return start_error.empty() && !timed_out && exit_code == 0;
  }
  // One line for messages: the first line of stderr, or what went wrong.
  std::string Summary() const;
};

// Output past this is dropped: `scontrol show job` lists every job in the
// controller's memory, about 1.5 KB each, so 64 MiB is ~40,000 jobs.
inline constexpr size_t kMaxCommandOutput = size_t{64} << 20;

// Runs `argv` (argv[0] searched in PATH) with the service's environment
// plus `env`, stdin `input` (/dev/null when empty), in its own process
// group. After `timeout_s` the group gets SIGKILL and the result says
// timed_out. REQUIRES: !argv.empty(), input.size() <= kMaxCommandInput.
CommandResult RunCommand(const std::vector<std::string>& argv,
                         const std::map<std::string, std::string>& env,
                         double timeout_s, const std::string& input = "");
// What a pipe takes at once (POSIX's PIPE_BUF at least): `input` is
// written before the command starts, so it never waits on the reader.
inline constexpr size_t kMaxCommandInput = 4096;

// fork + exec building blocks. Between fork and exec the child of a
// multithreaded process may only make async-signal-safe calls, so the
// parent prepares argv, envp and the descriptors with these first.

// A file descriptor closed with its owner.
class Fd {
 public:
  explicit Fd(int fd = -1) : fd_(fd) {}
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd() { Reset(); }
  int get() const { return fd_; }
  void Reset();

 private:
  int fd_;
};

// "NAME=value" for the service's environment with `extra` on top.
std::vector<std::string> ChildEnvironment(
    const std::map<std::string, std::string>& extra);

// Pointers into `strings`, null-terminated, for exec.
std::vector<char*> CStrings(std::vector<std::string>& strings);

// `fd` moved above 0..2 (which are closed when the service runs detached),
// so that the child's dup2 onto 0..2 cannot overwrite one of its sources;
// `fd` itself is closed. -1 stays -1.
int AboveStdio(int fd);

// In the child, after fork: makes it the leader of a new session
// (`new_session`) or only of a new process group, puts `in`, `out`, `err`
// on 0..2, restores default signal handling, closes every other descriptor
// but `report` (O_CLOEXEC) and execs argv[0] (searched in the service's
// PATH). If exec fails it writes "tessera: cannot run ..." to `err` and
// errno to `report`, and exits 127. With `go` (a pipe's read end, >= 0) it
// first closes its copy of the write end (`go_write`) and waits for one
// byte, and exits 127 without running anything if the pipe closes empty
// (the parent died or gave up). `ignored` (> 0): a signal the child starts
// with ignored instead (an elastic job's SIGUSR1). Only async-signal-safe
// calls.
[[noreturn]] void ExecChild(int in, int out, int err, int report, char** argv,
                            char** envp, bool new_session, int go = -1,
                            int go_write = -1, int ignored = 0);

// In the parent, after fork, with its copy of the report pipe's write end
// closed: errno of the child's failed exec (the child then reaped), or
// nullopt once the exec succeeded (the pipe closed empty).
std::optional<int> AwaitExec(int report, pid_t pid);

}  // namespace tessera::launch

#endif  // TESSERA_LAUNCH_SUBPROCESS_H_
