// Building sbatch's request. GPUs: a node whose GPUs are pinned (each its
// own GRES type idx<N>) is asked for exactly the GPUs tessera reserved;
// another is asked for a count and Slurm picks (docs/slurm.md). Fractions
// are shard GRES, or mps GRES on a node of isolation mps.

#include "launch/slurm/slurm_sbatch_internal.h"

#include <algorithm>
#include <cctype>
#include <functional>
#include <numeric>

#include "scheduler/mps.h"

namespace tessera::launch {

using scheduler::MpsLimits;
using scheduler::MpsLimitsFor;

namespace {

// Set per part by the script, or left to Slurm (CUDA_VISIBLE_DEVICES).
constexpr std::string_view kPerPartVariables[] = {
    "CUDA_VISIBLE_DEVICES", "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE",
    "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT", "TESSERA_NODE", "TESSERA_PART"};

bool IsShellName(std::string_view name) {
  if (name.empty() || std::isdigit(static_cast<unsigned char>(name[0]))) {
    return false;
  }
  return std::ranges::all_of(name, [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
  });
}

// sbatch expands %j, %u, ... in --output and --error: a literal % is %%.
std::string FilenamePattern(std::string_view path) {
  std::string out;
  for (char c : path) {
    out += c;
    if (c == '%') out += '%';
  }
  return out;
}

std::string Joined(const std::vector<std::string>& words) {
  std::string out;
  for (const std::string& w : words) out += (out.empty() ? "" : " ") + w;
  return out;
}

// The part's GPU positions in index order (the order of Slurm's
// CUDA_VISIBLE_DEVICES).
std::vector<size_t> IndexOrder(const LaunchPart& part) {
  std::vector<size_t> order(part.gpu_indices.size());
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return part.gpu_indices[a] < part.gpu_indices[b];
  });
  return order;
}

// "<name>:idx<N>:<count>" per GPU of the part, in index order.
std::string PinnedGres(const LaunchPart& part, std::string_view name,
                       const std::function<int64_t(size_t)>& count) {
  std::string gres;
  for (size_t i : IndexOrder(part)) {
    gres += (gres.empty() ? "" : ",") + std::string(name) + ":" +
            std::string(kPinnedGpuTypePrefix) +
            std::to_string(part.gpu_indices[i]) + ":" +
            std::to_string(count(i));
  }
  return gres;
}

// Whole GPUs: gpu:<n>, or each GPU by its type where they are pinned.
std::string WholeGpuGres(const LaunchPart& part, const SlurmNode& node) {
  if (!node.gpus_pinned) {
    return "gpu:" + std::to_string(part.gpu_indices.size());
  }
  return PinnedGres(part, "gpu", [](size_t) { return int64_t{1}; });
}

// Fractions as shards (they count, they do not isolate).
Result<std::string> ShardGres(const LaunchPart& part, const SlurmNode& node,
                              const SlurmOptions& options,
                              const std::string& where) {
  const int64_t per_gpu = options.shards_per_gpu > 0 ? options.shards_per_gpu
                                                     : node.shards_per_gpu();
  if (node.shards == 0 || per_gpu <= 0) {
    return BadInput(where +
                    " has no shard GRES in Slurm, so a fraction of a GPU "
                    "cannot be asked for (GresTypes=gpu,shard and "
                    "Name=shard Count=... in gres.conf)");
  }
  if (per_gpu > node.shards_per_gpu()) {
    return BadInput(where + " has " + std::to_string(node.shards_per_gpu()) +
                    " shards per GPU in Slurm, fewer than shards_per_gpu " +
                    std::to_string(per_gpu) + " in the config");
  }
  if (node.shards_pinned) {
    return PinnedGres(part, "shard", [&](size_t i) {
      return ShardsFor(part.gpu_milli[i], per_gpu);
    });
  }
  if (part.gpu_indices.size() > 1) {
    return BadInput(
        where + ": the job holds fractions of " +
        std::to_string(part.gpu_indices.size()) +
        " of its GPUs, which untyped shard GRES cannot express (Slurm "
        "takes a job's shards on a node from one GPU); give each GPU "
        "its own type (Name=shard Type=idx0 Count=... File=/dev/nvidia0 "
        "in gres.conf; docs/slurm.md)");
  }
  return "shard:" + std::to_string(ShardsFor(part.gpu_milli[0], per_gpu));
}

// Fractions on a node of isolation mps as gres/mps: Slurm's MPS isolates
// them, and gives a job one GPU per node (docs/slurm.md, "Isolation").
Result<std::string> MpsGres(const LaunchPart& part, const SlurmNode& node,
                            const std::string& where) {
  const int64_t per_gpu = node.mps_per_gpu();
  if (node.mps == 0 || per_gpu <= 0) {
    return BadInput(
        where +
        " is isolation: mps in the config, but Slurm lists no mps GRES on "
        "it, so its fractions cannot be asked for as MPS clients; configure "
        "gres/mps (GresTypes=gpu,mps in slurm.conf, mps:<count> in the "
        "node's Gres=, Name=mps Count=... in gres.conf, usually 100 per "
        "GPU, and a Prolog that starts the MPS server) or declare the node "
        "isolation: none (docs/slurm.md, \"Isolation\")");
  }
  if (part.gpu_indices.size() > 1) {
    return Infeasible(
        where + ": the job holds fractions of " +
        std::to_string(part.gpu_indices.size()) +
        " of its GPUs, but Slurm's gres/mps gives a job one GPU per node; "
        "give the job whole GPUs or a fraction of one GPU there, or split "
        "it over nodes (docs/slurm.md, \"Isolation\")");
  }
  if (node.mps_pinned) {
    return PinnedGres(part, "mps", [&](size_t i) {
      return ShardsFor(part.gpu_milli[i], per_gpu);
    });
  }
  return "mps:" + std::to_string(ShardsFor(part.gpu_milli[0], per_gpu));
}

// --gres for one part; kBadInput (kInfeasible) when Slurm cannot be asked
// for it.
Result<std::string> PartGres(const LaunchPart& part, const SlurmNode& node,
                             const SlurmOptions& options, JobId id) {
  if (part.gpu_indices.empty()) return std::string();
  const std::string where =
      "job " + std::to_string(id) + ": node '" + part.node + "'";
  for (int index : part.gpu_indices) {
    if (index < 0 || index >= node.gpus) {
      return BadInput(where + " has " + std::to_string(node.gpus) +
                      " GPUs in Slurm's gpu GRES, but tessera reserved its "
                      "GPU " +
                      std::to_string(index) +
                      " (the config's nodes must match Slurm's)");
    }
  }
  if (part.exclusive) return WholeGpuGres(part, node);
  if (part.mps) return MpsGres(part, node, where);
  return ShardGres(part, node, options, where);
}

// The part's own variables: its index and node and, for fractions, the
// MPS limits over its GPUs in index order (the order of Slurm's
// CUDA_VISIBLE_DEVICES).
std::vector<std::pair<std::string, std::string>> PartEnv(const LaunchPart& part,
                                                         size_t k) {
  std::vector<std::pair<std::string, std::string>> env = {
      {"TESSERA_PART", std::to_string(k)}, {"TESSERA_NODE", part.node}};
  if (part.exclusive || part.gpu_indices.empty()) return env;
  std::vector<int> milli;
  std::vector<int64_t> memory_mib;
  for (const size_t j : IndexOrder(part)) {
    milli.push_back(part.gpu_milli[j]);
    memory_mib.push_back(part.gpu_memory_mib[j]);
  }
  const MpsLimits mps = MpsLimitsFor(milli, memory_mib);
  env.emplace_back("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE",
                   mps.active_thread_percentage);
  env.emplace_back("CUDA_MPS_PINNED_DEVICE_MEM_LIMIT",
                   mps.pinned_device_mem_limit);
  return env;
}

std::string Script(const LaunchSpec& spec,
                   const std::vector<std::string>& part_envs) {
  std::string s =
      "#!/bin/bash\n"
      "# tessera job " +
      std::to_string(spec.id) +
      ", written by tessera's Slurm launcher and submitted with sbatch\n"
      "# (docs/slurm.md). Slurm sets the GPUs each part sees.\n";
  for (const auto& [k, v] : spec.env) {
    if (std::ranges::find(kPerPartVariables, k) !=
        std::end(kPerPartVariables)) {
      continue;
    }
    s += "export " + k + "=" + ShellQuote(v) + "\n";
  }
  std::string command;
  for (const std::string& word : spec.command) {
    command += (command.empty() ? "" : " ") + ShellQuote(word);
  }
  if (part_envs.size() == 1) {
    return s + "export " + part_envs[0] + "\nexec " + command + "\n";
  }
  // One step per part; the first part to fail ends the others, and the
  // job's exit code is the first non-zero one.
  for (size_t k = 0; k < part_envs.size(); ++k) {
    s += "srun --het-group=" + std::to_string(k) + " env " + part_envs[k] +
         " " + command + " &\n";
  }
  s += "rc=0\n"
       "for _ in $(seq " +
       std::to_string(part_envs.size()) +
       "); do\n"
       "  wait -n\n"
       "  r=$?\n"
       "  if [ \"$r\" -ne 0 ] && [ \"$rc\" -eq 0 ]; then\n"
       "    rc=$r\n"
       "    kill $(jobs -p) 2>/dev/null\n"
       "  fi\n"
       "done\n"
       "exit $rc\n";
  return s;
}

}  // namespace

int64_t ShardsFor(int milli, int64_t shards_per_gpu) {
  const int64_t shards = int64_t{milli} * shards_per_gpu / 1000;
  return std::clamp<int64_t>(shards, 1, std::max<int64_t>(1, shards_per_gpu));
}

std::string ShellQuote(std::string_view text) {
  std::string out = "'";
  for (char c : text) {
    if (c == '\'') {
      out += "'\\''";
    } else {
      out += c;
    }
  }
  return out + "'";
}

Result<SbatchJob> BuildSbatchJob(
    const LaunchSpec& spec, const SlurmOptions& options,
    const std::map<std::string, SlurmNode>& nodes) {
  const std::string job = "job " + std::to_string(spec.id);
  if (spec.command.empty() || spec.command[0].empty()) {
    return BadInput(job + ": empty command");
  }
  if (spec.parts.empty()) return BadInput(job + ": no node to run on");
  for (const auto& [k, v] : spec.env) {
    if (!IsShellName(k)) {
      return BadInput(job + ": env: '" + k +
                      "' is not a variable name the batch script can export "
                      "(letters, digits and '_', not starting with a digit)");
    }
  }
  SbatchJob out;
  const std::string log = spec.log_dir + "/" + std::to_string(spec.id);
  out.options = {
      "--parsable",
      "--job-name=" + options.job_prefix + "-" + std::to_string(spec.id),
      "--comment=tessera job " + std::to_string(spec.id) +
          (spec.user.empty() ? "" : " of " + spec.user) +
          (options.instance.empty() ? "" : " [" + options.instance + "]"),
      "--output=" + FilenamePattern(log + ".out"),
      "--error=" + FilenamePattern(log + ".err"),
      "--open-mode=append"};
  std::vector<std::string> part_envs;
  for (size_t k = 0; k < spec.parts.size(); ++k) {
    const LaunchPart& part = spec.parts[k];
    auto node = nodes.find(part.node);
    if (node == nodes.end()) {
      std::string known;
      for (const auto& [name, n] : nodes) {
        known += (known.empty() ? "" : ", ") + name;
      }
      return BadInput(job + ": node '" + part.node +
                      "' is not a Slurm node (Slurm has " +
                      (known.empty() ? std::string("none") : known) +
                      "); the config's node names must be Slurm's NodeNames");
    }
    Result<std::string> gres = PartGres(part, node->second, options, spec.id);
    TESSERA_RETURN_IF_ERROR(gres);
    if (k > 0) out.options.emplace_back(":");
    out.options.push_back("--nodelist=" + part.node);
    out.options.emplace_back("--nodes=1");
    out.options.emplace_back("--ntasks=1");
    out.options.push_back(
        "--cpus-per-task=" +
        std::to_string(std::max<int64_t>(1, (part.cpu_milli + 999) / 1000)));
    // Without --mem Slurm applies its default (DefMemPerCPU/Node).
    if (part.memory_mib > 0) {
      out.options.push_back("--mem=" + std::to_string(part.memory_mib) + "M");
    }
    if (!gres->empty()) out.options.push_back("--gres=" + *gres);
    if (!options.partition.empty()) {
      out.options.push_back("--partition=" + options.partition);
    }
    if (!options.account.empty()) {
      out.options.push_back("--account=" + options.account);
    }
    for (const std::string& a : options.sbatch_args) out.options.push_back(a);
    std::vector<std::string> assignments;
    for (const auto& [k2, v] : PartEnv(part, k)) {
      assignments.push_back(k2 + "=" + ShellQuote(v));
    }
    part_envs.push_back(Joined(assignments));
  }
  out.script = Script(spec, part_envs);
  return out;
}

}  // namespace tessera::launch
