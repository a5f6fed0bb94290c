// `launcher:` of the serve config, and MakeLauncher.

#include "launch/launcher_config.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>

#include "common/strings.h"

namespace tessera::launch {
namespace {

using Field = YamlReader::Field;
using Fields = YamlReader::Fields;

constexpr std::string_view kKinds[] = {"local", "slurm"};
constexpr std::string_view kKeys[] = {"kind",
                                      "partition",
                                      "account",
                                      "sbatch_args",
                                      "shards_per_gpu",
                                      "poll_interval_s",
                                      "command_timeout_s",
                                      "pending_timeout_s",
                                      "bin_dir",
                                      "slurm_conf",
                                      "job_prefix",
                                      "mps_control"};
// sbatch options tessera sets from the job: a user's would contradict it.
constexpr std::string_view kOwnOptions[] = {
    "-J",        "--job-name",  "-o",          "--output",   "-e",
    "--error",   "--open-mode", "-w",          "--nodelist", "-N",
    "--nodes",   "-n",          "--ntasks",    "-c",         "--cpus-per-task",
    "--mem",     "--gres",      "--gpus",      "-G",         "--parsable",
    "--comment", "-p",          "--partition", "-A",         "--account",
    "--wrap"};
constexpr std::string_view kLabel = "launcher";

bool IsSlurmName(std::string_view text) {
  return !text.empty() && std::ranges::all_of(text, [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '-' ||
           c == '_' || c == '.' || c == ',';
  });
}

class Parser {
 public:
  explicit Parser(const YamlReader& reader) : r_(reader) {}

  Status Parse(const Field& field, LauncherConfig* out) const {
    const std::string label(kLabel);
    if (field.value.IsScalar()) {  // launcher: slurm
      Result<std::string> kind = Kind(field, "");
      TESSERA_RETURN_IF_ERROR(kind);
      out->kind = *kind;
      return {};
    }
    Result<Fields> fields = r_.MapFields(field.value, label, kKeys);
    TESSERA_RETURN_IF_ERROR(fields);
    if (const Field* f = YamlReader::Find(*fields, "kind")) {
      Result<std::string> kind = Kind(*f, label);
      TESSERA_RETURN_IF_ERROR(kind);
      out->kind = *kind;
    }
    if (const Field* f = YamlReader::Find(*fields, "mps_control")) {
      if (out->kind != "local") {
        return r_.Fail(*f, label,
                       "applies only to kind local (under Slurm, the nodes' "
                       "Prolog starts the daemons for gres/mps jobs)");
      }
      Result<std::string> text = r_.Text(*f, label);
      TESSERA_RETURN_IF_ERROR(text);
      if (text->empty()) return r_.Fail(*f, label, "must not be empty");
      out->mps_control = *text;
    }
    for (const Field& f : *fields) {
      if (f.key != "kind" && f.key != "mps_control" && out->kind != "slurm") {
        return r_.Fail(f, label,
                       "applies only to kind slurm (this launcher's kind is '" +
                           out->kind + "')");
      }
    }
    return ParseSlurm(*fields, &out->slurm);
  }

 private:
  Result<std::string> Kind(const Field& f, const std::string& label) const {
    Result<std::string> text = r_.Text(f, label);
    TESSERA_RETURN_IF_ERROR(text);
    if (std::ranges::find(kKinds, *text) == std::end(kKinds)) {
      return r_.Fail(f, label,
                     "unknown launcher kind '" + *text + "' (" +
                         DidYouMean(*text, kKinds) +
                         "known: " + JoinNames(kKinds) + ")");
    }
    return text;
  }

  Result<double> Seconds(const Field& f, double lo, bool lo_open,
                         double hi) const {
    const std::string label(kLabel);
    Result<std::string> text = r_.Text(f, label);
    TESSERA_RETURN_IF_ERROR(text);
    double value = 0;
    if (!ParseFiniteDouble(*text, &value) || value < lo ||
        (lo_open && value == lo) || value > hi) {
      char range[96];
      std::snprintf(range, sizeof range, "a number of seconds %s %g and <= %g",
                    lo_open ? ">" : ">=", lo, hi);
      return r_.Fail(f, label, "'" + *text + "' must be " + range);
    }
    return value;
  }

  Status ParseSlurm(const Fields& fields, SlurmOptions* s) const {
    const std::string label(kLabel);
    for (auto [key, target] : {std::pair{"partition", &s->partition},
                               std::pair{"account", &s->account},
                               std::pair{"job_prefix", &s->job_prefix}}) {
      const Field* f = YamlReader::Find(fields, key);
      if (f == nullptr) continue;
      Result<std::string> text = r_.Text(*f, label);
      TESSERA_RETURN_IF_ERROR(text);
      const bool prefix = std::string_view(key) == "job_prefix";
      if (!IsSlurmName(*text) ||
          (prefix && text->find(',') != std::string::npos)) {
        return r_.Fail(*f, label,
                       "'" + *text +
                           "' may use only letters, digits, '-', "
                           "'_' and '.'" +
                           (prefix ? "" : " (',' between several)"));
      }
      *target = *text;
    }
    for (auto [key, target] : {std::pair{"bin_dir", &s->bin_dir},
                               std::pair{"slurm_conf", &s->slurm_conf}}) {
      if (const Field* f = YamlReader::Find(fields, key)) {
        Result<std::string> text = r_.Text(*f, label);
        TESSERA_RETURN_IF_ERROR(text);
        *target = *text;
      }
    }
    if (const Field* f = YamlReader::Find(fields, "shards_per_gpu")) {
      Result<std::string> text = r_.Text(*f, label);
      TESSERA_RETURN_IF_ERROR(text);
      int64_t value = 0;
      if (!ParseInt64(*text, &value) || value > 100000) {
        return r_.Fail(*f, label,
                       "'" + *text +
                           "' must be a whole number from 0 to 100000 (0: "
                           "read it from Slurm's node GRES)");
      }
      s->shards_per_gpu = static_cast<int>(value);
    }
    struct Limit {
      const char* key;
      double* target;
      double lo;
      bool lo_open;
      double hi;
    };
    for (const Limit& l :
         {Limit{"poll_interval_s", &s->poll_interval_s, 0, true, 3600},
          Limit{"command_timeout_s", &s->command_timeout_s, 0, true, 3600},
          Limit{"pending_timeout_s", &s->pending_timeout_s, 0, false, 1e9}}) {
      if (const Field* f = YamlReader::Find(fields, l.key)) {
        Result<double> v = Seconds(*f, l.lo, l.lo_open, l.hi);
        TESSERA_RETURN_IF_ERROR(v);
        *l.target = *v;
      }
    }
    if (const Field* f = YamlReader::Find(fields, "sbatch_args")) {
      TESSERA_RETURN_IF_ERROR(ParseArgs(*f, s));
    }
    return {};
  }

  Status ParseArgs(const Field& f, SlurmOptions* s) const {
    const std::string label = YamlReader::Join(std::string(kLabel), f.key);
    if (!f.value.IsSequence()) {
      return r_.Fail(f, std::string(kLabel),
                     "expected a list of sbatch options ([--qos=high, "
                     "--time=24:00:00]), got " +
                         YamlReader::TypeName(f.value));
    }
    for (size_t i = 0; i < f.value.size(); ++i) {
      const YAML::Node item = f.value[i];
      const std::string at = label + "[" + std::to_string(i) + "]";
      if (!item.IsScalar() || item.Scalar().empty() ||
          item.Scalar()[0] != '-') {
        return r_.Fail(item, at,
                       "expected an sbatch option such as --qos=high, got " +
                           YamlReader::TypeName(item));
      }
      const std::string& arg = item.Scalar();
      const std::string name = arg.substr(0, arg.find('='));
      const bool own =
          std::ranges::find(kOwnOptions, name) != std::end(kOwnOptions) ||
          (name.size() > 2 && name[1] != '-' &&
           std::ranges::find(kOwnOptions, name.substr(0, 2)) !=
               std::end(kOwnOptions));
      if (own || arg == ":") {
        return r_.Fail(item, at,
                       "'" + arg +
                           "' is set by tessera from the job (node, GPUs, "
                           "CPU, memory, name, logs) or by launcher keys "
                           "(partition, account)");
      }
      s->sbatch_args.push_back(arg);
    }
    return {};
  }

  const YamlReader& r_;
};

// FNV-1a of the database's absolute path (or its URL: replicas of one
// service share it): the same service (database) gets the same instance
// across restarts, builds and replicas.
std::string InstanceOf(const std::string& db_path) {
  std::error_code ec;
  const bool url = db_path.find("://") != std::string::npos ||
                   db_path.find('=') != std::string::npos;
  const std::string path =
      url ? db_path : std::filesystem::absolute(db_path, ec).string();
  uint32_t h = 2166136261U;
  for (unsigned char c : path) {
    h ^= c;
    h *= 16777619U;
  }
  char hex[9];
  std::snprintf(hex, sizeof hex, "%08x", h);
  return hex;
}

}  // namespace

Status ParseLauncherConfig(const YamlReader& reader, const Field& field,
                           LauncherConfig* out) {
  return Parser(reader).Parse(field, out);
}

Result<std::unique_ptr<Launcher>> MakeLauncher(const LauncherConfig& config,
                                               const std::string& log_dir,
                                               const std::string& db_path) {
  if (config.kind == "local") {
    MpsOptions mps;
    mps.control = config.mps_control;
    // Absolute: a job that changes directory still finds the daemon.
    std::error_code ec;
    const std::filesystem::path logs = std::filesystem::absolute(log_dir, ec);
    mps.dir = ((ec ? std::filesystem::path(log_dir) : logs) / "mps").string();
    return MakeLocalLauncher(log_dir, std::move(mps));
  }
  if (config.kind != "slurm") {
    return BadInput("launcher.kind: unknown kind '" + config.kind + "'");
  }
  SlurmOptions options = config.slurm;
  TESSERA_RETURN_IF_ERROR(CheckSlurmCommands(options));
  if (!options.slurm_conf.empty() &&
      !std::filesystem::is_regular_file(options.slurm_conf)) {
    return BadInput("launcher.slurm_conf: " + options.slurm_conf +
                    ": no such file");
  }
  if (options.instance.empty()) options.instance = InstanceOf(db_path);
  return MakeSlurmLauncher(std::move(options), log_dir);
}

}  // namespace tessera::launch
