#ifndef TESSERA_SCHEDULER_SUBPROCESS_H_
#define TESSERA_SCHEDULER_SUBPROCESS_H_

// Running a short-lived command (sbatch, squeue, scontrol, scancel) with a
// bounded wait: fork + exec of an argv vector (no shell), stdout and stderr
// captured, the command's process group killed when it overruns. Safe to
// call from several threads at once.

#include <map>
#include <string>
#include <vector>

namespace tessera::scheduler {

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
// plus `env`, stdin from /dev/null, in its own process group. After
// `timeout_s` the group gets SIGKILL and the result says timed_out.
// REQUIRES: !argv.empty().
CommandResult RunCommand(const std::vector<std::string>& argv,
                         const std::map<std::string, std::string>& env,
                         double timeout_s);

}  // namespace tessera::scheduler

#endif  // TESSERA_SCHEDULER_SUBPROCESS_H_
