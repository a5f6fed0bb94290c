#ifndef TESSERA_LAUNCH_LAUNCHER_CONFIG_H_
#define TESSERA_LAUNCH_LAUNCHER_CONFIG_H_

// The `launcher:` section of the serve config and the launcher it makes:
// `launcher: {kind: local}` (the default) or `{kind: slurm, partition: gpu,
// ...}` (examples/serve-slurm.yaml lists every key).

#include <memory>
#include <string>

#include "common/result.h"
#include "common/yaml_reader.h"
#include "launch/launcher.h"
#include "launch/slurm/slurm_launcher.h"

namespace tessera::launch {

// Which launcher starts the jobs (`launcher:` in the config): "local"
// (processes on this machine) or "slurm" (Slurm jobs). Slurm's own settings
// live here too.
struct LauncherConfig {
  std::string kind = "local";
  // Kind local: the MPS control program that runs the daemon of the nodes
  // of `isolation: mps` (searched in PATH); its pipe and log directories
  // are <log_dir>/mps/pipe and /log.
  std::string mps_control = "nvidia-cuda-mps-control";
  SlurmOptions slurm;  // kind slurm (ParseLauncherConfig)
};

// Parses `launcher:` (a map, or just the kind: `launcher: slurm`) into
// `out`. Errors as ParseServeConfig's ("SOURCE:LINE: launcher.KEY: ..."):
// an unknown kind or key (with a suggestion), a Slurm key under kind
// local, a number out of range, an sbatch argument tessera sets itself.
Status ParseLauncherConfig(const YamlReader& reader,
                           const YamlReader::Field& field, LauncherConfig* out);

// The launcher `config` asks for, writing logs to `log_dir`; `db_path`
// identifies the service to its Slurm jobs (SlurmOptions::instance).
// kBadInput when Slurm's commands or its slurm_conf cannot be found.
Result<std::unique_ptr<Launcher>> MakeLauncher(const LauncherConfig& config,
                                               const std::string& log_dir,
                                               const std::string& db_path);

}  // namespace tessera::launch

#endif  // TESSERA_LAUNCH_LAUNCHER_CONFIG_H_
