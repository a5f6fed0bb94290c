#ifndef TESSERA_LAUNCH_SLURM_SLURM_STATE_H_
#define TESSERA_LAUNCH_SLURM_SLURM_STATE_H_

// Reading Slurm's answers: `scontrol show job -o -d` (a job's state, exit
// code and the GPUs it holds), `scontrol show node -o` (a node's GPU,
// shard and mps GRES) and the error lines of its commands. Pure functions over
// text, so that the tests feed them captured output (Slurm 22.05).
// docs/slurm.md maps Slurm's states to tessera's.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"

namespace tessera::launch {

// One record of `scontrol show job -o -d` (one line per job; a
// heterogeneous job has one record per component, the leader's first).
struct SlurmJob {
  int64_t job_id = 0;
  int64_t het_job_id = 0;  // the leader's id; 0 when not heterogeneous
  std::string name;        // JobName
  std::string comment;     // Comment ("" when none)
  std::string state;       // JobState: PENDING, RUNNING, COMPLETED, ...
  std::string reason;      // Reason: None, Resources, NonZeroExitCode, ...
  int exit_code = 0;       // ExitCode=CODE:SIGNAL
  int exit_signal = 0;
  std::string nodes;  // NodeList
  // The GPU indices allocated on the job's node, from the detail's
  // GRES=gpu:1(IDX:0) / shard:25(IDX:2); empty once the job has ended.
  std::vector<int> gpu_indices;
};

// The records of `text`; "No jobs in the system" is none. A line without
// JobId= is an error (the output is not what this parser knows).
Result<std::vector<SlurmJob>> ParseScontrolJobs(std::string_view text);

// The indices in "gpu:idx1:1(IDX:1),gpu:idx3:1(IDX:3)" or
// "gpu:2(IDX:0-1)" or "shard:25(IDX:0)": {1, 3}, {0, 1}, {0}.
std::vector<int> ParseGresIndices(std::string_view gres);

// What a job's Slurm state means to tessera.
enum class SlurmPhase { kPending, kActive, kEnded };
struct SlurmOutcome {
  SlurmPhase phase = SlurmPhase::kActive;
  std::optional<int> exit_code;  // kEnded: the command's exit code if known
  bool cancelled = false;        // kEnded by scancel
  std::string reason;            // kEnded and not a clean exit: why
};
// PENDING (and REQUEUED, ...) is kPending; RUNNING, COMPLETING,
// SUSPENDED, CONFIGURING, ... are kActive; COMPLETED, FAILED, CANCELLED,
// TIMEOUT, NODE_FAIL, OUT_OF_MEMORY, PREEMPTED, BOOT_FAIL, DEADLINE are
// kEnded (an unknown state is kActive: tessera waits for one it knows).
SlurmOutcome ClassifySlurmJob(const SlurmJob& job);

// A node's GPUs as Slurm's GRES describes them. "Pinned": every GPU has
// its own type idx<N> (gres.conf `Name=gpu Type=idx2 File=/dev/nvidia2`,
// and `Name=shard Type=idx2 Count=100 File=/dev/nvidia2`), so that a job
// can ask for GPU N itself (--gres=gpu:idx2:1, shard:idx2:25). The mps
// GRES (gres/mps, the MPS-isolated fractions) is read like the shards.
struct SlurmNode {
  std::string name;
  std::string state;           // State=IDLE, MIXED, DOWN+DRAIN, ...
  int gpus = 0;                // gpu GRES count
  int64_t shards = 0;          // shard GRES count (all GPUs)
  bool gpus_pinned = false;    // gpu types idx0..idx<gpus-1>, count 1 each
  bool shards_pinned = false;  // shard types idx0..idx<gpus-1>, equal counts
  int64_t mps = 0;             // mps GRES count (all GPUs)
  bool mps_pinned = false;     // mps types idx0..idx<gpus-1>, equal counts
  int64_t shards_per_gpu() const { return gpus > 0 ? shards / gpus : 0; }
  int64_t mps_per_gpu() const { return gpus > 0 ? mps / gpus : 0; }
};
inline constexpr std::string_view kPinnedGpuTypePrefix = "idx";

// The nodes of `scontrol show node -o`, by name.
Result<std::map<std::string, SlurmNode>> ParseScontrolNodes(
    std::string_view text);

// Whether a failed command's message says the controller could not be
// reached or is busy (try again later) rather than that the request is
// wrong (fail the job).
bool IsTransientSlurmError(std::string_view message);

}  // namespace tessera::launch

#endif  // TESSERA_LAUNCH_SLURM_SLURM_STATE_H_
