#ifndef TESSERA_LAUNCH_SLURM_SLURM_SBATCH_INTERNAL_H_
#define TESSERA_LAUNCH_SLURM_SLURM_SBATCH_INTERNAL_H_

// What tessera hands sbatch for a job: the options (one component per
// node, separated by ":", for a heterogeneous job) and the batch script
// that exports tessera's variables and runs the command (one `srun
// --het-group=K` per part when the job spans nodes). Pure functions of the
// job, the settings and Slurm's node GRES, for the tests.

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "launch/launcher.h"
#include "launch/slurm/slurm_launcher.h"
#include "launch/slurm/slurm_state.h"

namespace tessera::launch {

struct SbatchJob {
  std::vector<std::string> options;  // sbatch's arguments before the script
  std::string script;                // the batch script (bash)
};

// The options and script for `spec` (job name <prefix>-<id>, logs
// <log_dir>/<id>.out and .err appended to). A fraction is asked for as
// shard GRES, or as mps GRES where the part is LaunchPart::mps. kBadInput
// when Slurm cannot be asked for what tessera reserved: a node Slurm does
// not know, a GPU index past the node's gpu GRES, a fraction on a node
// without shard GRES (mps GRES for an mps part), a part holding fractions
// of several GPUs of a node whose shards are not pinned, an environment
// variable name a shell cannot export; kInfeasible for an mps part holding
// fractions of several GPUs (gres/mps gives a job one GPU per node).
// REQUIRES: spec.parts is not empty.
Result<SbatchJob> BuildSbatchJob(const LaunchSpec& spec,
                                 const SlurmOptions& options,
                                 const std::map<std::string, SlurmNode>& nodes);

// A fraction of a GPU as shards (or mps GRES, with the node's mps count
// per GPU): floor(milli x shards_per_gpu / 1000), at least 1 (so that
// fractions tessera fits on a GPU fit Slurm's count).
int64_t ShardsFor(int milli, int64_t shards_per_gpu);

// `text` in single quotes for a POSIX shell: it's -> 'it'\''s'.
std::string ShellQuote(std::string_view text);

}  // namespace tessera::launch

#endif  // TESSERA_LAUNCH_SLURM_SLURM_SBATCH_INTERNAL_H_
