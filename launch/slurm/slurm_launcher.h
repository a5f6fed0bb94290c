#ifndef TESSERA_LAUNCH_SLURM_SLURM_LAUNCHER_H_
#define TESSERA_LAUNCH_SLURM_SLURM_LAUNCHER_H_

// The Slurm launcher: every admitted job becomes a Slurm batch job on the
// node tessera chose (--nodelist), whole GPUs as `gpu` GRES, fractions as
// `shard` GRES (`mps` GRES on a node of isolation mps), a split job over
// several nodes as one heterogeneous job; its state follows Slurm's
// (scontrol), cancel is scancel. Design, configuration and limits:
// docs/slurm.md.

#include <memory>
#include <string>
#include <vector>

#include "common/result.h"
#include "launch/launcher.h"

namespace tessera::launch {

// `launcher:` settings of kind slurm (examples/serve-slurm.yaml).
struct SlurmOptions {
  std::string partition;  // "" = Slurm's default partition
  std::string account;    // "" = the submitting user's default
  // Added to every component's options, e.g. {"--qos=normal"}.
  std::vector<std::string> sbatch_args;
  // Shards per GPU; 0 = read from Slurm's node GRES (shard count / gpu
  // count). A job's shards = floor(milli x this / 1000), at least 1. Not
  // for mps GRES: that count per GPU is always Slurm's.
  int shards_per_gpu = 0;
  double poll_interval_s = 2;
  // A Slurm command running longer is killed and counts as "controller
  // unreachable" (the job is retried, the service never hangs on it).
  double command_timeout_s = 15;
  // A job Slurm keeps PENDING this long is cancelled there and fails:
  // tessera's view of the node and Slurm's disagree. 0 = wait forever.
  double pending_timeout_s = 600;
  std::string bin_dir;     // where sbatch, scontrol, scancel are; "" = PATH
  std::string slurm_conf;  // SLURM_CONF for those commands; "" = default
  // Slurm job name: <prefix>-<tessera job id>; how a restarted service
  // recognizes its jobs.
  std::string job_prefix = "tessera";
  // Not a config key: set from the database's path by MakeLauncher, and
  // written into every job's --comment ("tessera job 5 of alice [ID]"), so
  // that a service on another database never takes a job for its own.
  std::string instance;
};

// The launcher; its poller thread starts at once and asks Slurm every
// poll_interval_s about the jobs it tracks. Jobs keep running in Slurm
// when it is destroyed (a restarted service adopts them).
std::unique_ptr<Launcher> MakeSlurmLauncher(SlurmOptions options,
                                            std::string log_dir);

// Checks that sbatch, scontrol and scancel can be found (in bin_dir, or
// PATH); kBadInput naming the missing one.
Status CheckSlurmCommands(const SlurmOptions& options);

}  // namespace tessera::launch

#endif  // TESSERA_LAUNCH_SLURM_SLURM_LAUNCHER_H_
