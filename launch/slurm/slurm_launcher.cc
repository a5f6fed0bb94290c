// The Slurm launcher. Start runs sbatch (the caller waits for it, bounded
// by command_timeout_s); everything else goes through a poller thread that
// runs `scontrol show job -o -d` every poll_interval_s and scancel for
// cancelled jobs, so that Poll and Stop never wait on Slurm. While the
// controller cannot be reached, Start fails at once with a transient error
// (the service retries) and the poller keeps asking.

#include "launch/slurm/slurm_launcher.h"

#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <thread>
#include <utility>

#include "launch/slurm/slurm_sbatch_internal.h"
#include "launch/slurm/slurm_state.h"
#include "launch/subprocess.h"

namespace tessera::launch {
namespace {

using Clock = std::chrono::steady_clock;

double Seconds(Clock::duration d) {
  return std::chrono::duration<double>(d).count();
}

// A job id at the start of sbatch --parsable's "123" or "123;cluster", or
// squeue's "123+0".
std::optional<int64_t> LeadingId(std::string_view text) {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\n')) {
    text.remove_prefix(1);
  }
  int64_t id = 0;
  size_t i = 0;
  for (; i < text.size() && text[i] >= '0' && text[i] <= '9'; ++i) {
    id = id * 10 + (text[i] - '0');
    if (id > (int64_t{1} << 50)) return std::nullopt;
  }
  if (i == 0) return std::nullopt;
  return id;
}

class SlurmLauncher : public Launcher {
 public:
  SlurmLauncher(SlurmOptions options, std::string log_dir)
      : options_(std::move(options)), log_dir_(std::move(log_dir)) {
    thread_ = std::thread([this] { PollLoop(); });
  }

  // Jobs keep running in Slurm: a restarted service adopts them.
  ~SlurmLauncher() override {
    {
      std::lock_guard lock(mu_);
      stopping_ = true;
    }
    wake_.notify_all();
    thread_.join();
  }

  Result<Launched> Start(const LaunchSpec& spec) override {
    if (spec.command.empty() || spec.command[0].empty()) {
      return BadInput("job " + std::to_string(spec.id) + ": empty command");
    }
    {
      std::lock_guard lock(mu_);
      if (unreachable_) return Unavailable(*unreachable_);
    }
    LaunchSpec s = spec;
    std::error_code ec;
    s.log_dir = std::filesystem::absolute(
                    spec.log_dir.empty() ? log_dir_ : spec.log_dir, ec)
                    .string();
    std::filesystem::create_directories(s.log_dir, ec);
    if (ec) {
      return Unavailable(s.log_dir +
                         ": cannot create the log directory: " + ec.message());
    }
    Result<SbatchJob> request = Request(s);
    TESSERA_RETURN_IF_ERROR(request);

    // A job of this id that a previous attempt left in Slurm (an sbatch
    // that timed out after Slurm took the job, or a service that died
    // before it recorded the start) is taken over, not submitted twice.
    Result<std::optional<int64_t>> orphan = FindLive(s.id);
    TESSERA_RETURN_IF_ERROR(orphan);
    int64_t slurm_id = 0;
    if (*orphan) {
      slurm_id = **orphan;
    } else {
      const std::string script_path =
          s.log_dir + "/" + std::to_string(s.id) + ".sbatch";
      {
        std::ofstream script(script_path, std::ios::trunc);
        script << request->script;
        if (!script) return Unavailable(script_path + ": cannot write");
      }
      std::vector<std::string> args = request->options;
      args.push_back(script_path);
      const CommandResult r = Run("sbatch", args);
      if (!r.ok()) return SlurmError("sbatch", r);
      const auto id = LeadingId(r.out);
      if (!id) {
        return Unavailable("sbatch printed no job id: '" +
                           r.out.substr(0, 200) + "'");
      }
      slurm_id = *id;
    }
    std::lock_guard lock(mu_);
    if (s.log_dir != log_dir_) log_dirs_[s.id] = s.log_dir;
    Tracked& t = jobs_[s.id];
    t = Tracked{};
    t.slurm_id = slurm_id;
    t.parts = s.parts;
    wake_.notify_all();
    return Launched{slurm_id, 0};
  }

  // scancel (by the poller thread): Slurm sends SIGTERM, then SIGKILL
  // after its KillWait; `grace_s` is Slurm's to decide.
  void Stop(JobId id, double /*grace_s*/) override {
    std::lock_guard lock(mu_);
    auto it = jobs_.find(id);
    if (it == jobs_.end()) return;
    to_cancel_.insert(it->second.slurm_id);
    wake_.notify_all();
  }

  std::vector<Exited> Poll() override {
    std::lock_guard lock(mu_);
    return std::exchange(exited_, {});
  }

  // `pid` is the Slurm job id (start_time 0). False when Slurm says the
  // job is someone else's; a job Slurm no longer knows, or one that ended
  // meanwhile, is reported by the next Poll.
  bool Adopt(JobId id, int64_t pid, int64_t start_time) override {
    if (pid <= 0 || start_time != 0) return false;
    const std::optional<SlurmJob> job = AdoptLookup(pid);
    if (job && !Owns(*job, id)) return false;
    std::lock_guard lock(mu_);
    Tracked& t = jobs_[id];
    t = Tracked{};
    t.slurm_id = pid;
    wake_.notify_all();
    return true;
  }

  // The Slurm job named for `id` (with this service's instance tag), if
  // Slurm still runs or queues it.
  Reconciled Reconcile(JobId id) override {
    Result<std::optional<int64_t>> live = FindLive(id);
    if (!live) return {Reconciled::Kind::kUnknown, {}, live.error().message};
    if (!*live) {
      return {Reconciled::Kind::kNotFound,
              {},
              "Slurm has no live job named " + JobName(id)};
    }
    {
      std::lock_guard lock(mu_);
      Tracked& t = jobs_[id];
      t = Tracked{};
      t.slurm_id = **live;
      wake_.notify_all();
    }
    return {Reconciled::Kind::kRunning, Launched{**live, 0}, ""};
  }

  std::string LogPath(JobId id, bool stderr_log) const override {
    std::lock_guard lock(mu_);
    auto it = log_dirs_.find(id);
    const std::string& dir = it == log_dirs_.end() ? log_dir_ : it->second;
    return dir + "/" + std::to_string(id) + (stderr_log ? ".err" : ".out");
  }

  bool multi_node() const override { return true; }

 private:
  struct Tracked {
    int64_t slurm_id = 0;
    std::vector<LaunchPart> parts;  // what tessera reserved; none if adopted
    std::optional<Clock::time_point> pending_since;
    bool gpus_checked = false;
  };

  std::string JobName(JobId id) const {
    return options_.job_prefix + "-" + std::to_string(id);
  }

  bool Owns(const SlurmJob& job, JobId id) const {
    return Owns(job.name, job.comment, id);
  }
  bool Owns(std::string_view name, std::string_view comment, JobId id) const {
    return name == JobName(id) && (options_.instance.empty() ||
                                   comment.find("[" + options_.instance +
                                                "]") != std::string_view::npos);
  }

  CommandResult Run(const std::string& tool,
                    const std::vector<std::string>& args) const {
    std::vector<std::string> argv = {
        options_.bin_dir.empty() ? tool : options_.bin_dir + "/" + tool};
    argv.insert(argv.end(), args.begin(), args.end());
    std::map<std::string, std::string> env;
    if (!options_.slurm_conf.empty()) env["SLURM_CONF"] = options_.slurm_conf;
    return RunCommand(argv, env, options_.command_timeout_s);
  }

  // A failed command as the service's error convention has it: transient
  // (kUnavailable: retried) when Slurm could not be reached, else kBadInput.
  Error SlurmError(const std::string& tool, const CommandResult& r) {
    const std::string what = tool + ": " + r.Summary();
    if (!r.start_error.empty() || r.timed_out || IsTransientSlurmError(r.err)) {
      std::lock_guard lock(mu_);
      unreachable_ = "Slurm unreachable: " + what;
      wake_.notify_all();
      return Unavailable(*unreachable_);
    }
    return BadInput("Slurm refused the job: " + what);
  }

  // sbatch's request for `spec` over Slurm's view of the nodes; a request
  // that view refuses is built again over a fresh view (GRES configured
  // in Slurm since, e.g. after the error's advice).
  Result<SbatchJob> Request(const LaunchSpec& spec) {
    Result<std::map<std::string, SlurmNode>> nodes = Nodes(spec.parts, false);
    TESSERA_RETURN_IF_ERROR(nodes);
    Result<SbatchJob> request = BuildSbatchJob(spec, options_, *nodes);
    if (request) return request;
    nodes = Nodes(spec.parts, true);
    TESSERA_RETURN_IF_ERROR(nodes);
    return BuildSbatchJob(spec, options_, *nodes);
  }

  // Slurm's view of the nodes of `parts`, asked once and again when one is
  // missing (a node added to Slurm since) or when `fresh`.
  Result<std::map<std::string, SlurmNode>> Nodes(
      const std::vector<LaunchPart>& parts, bool fresh) {
    if (!fresh) {
      std::lock_guard lock(mu_);
      const bool known = std::ranges::all_of(
          parts, [&](const LaunchPart& p) { return nodes_.count(p.node); });
      if (known) return nodes_;
    }
    const CommandResult r = Run("scontrol", {"show", "node", "-o"});
    if (!r.ok()) return SlurmError("scontrol show node", r);
    Result<std::map<std::string, SlurmNode>> nodes = ParseScontrolNodes(r.out);
    TESSERA_RETURN_IF_ERROR(nodes);
    std::lock_guard lock(mu_);
    nodes_ = *nodes;
    return nodes;
  }

  // The live (not ended) Slurm job named for `id`, if any.
  Result<std::optional<int64_t>> FindLive(JobId id) {
    const CommandResult r = Run(
        "squeue", {"--noheader", "--name=" + JobName(id), "--format=%i|%j|%k"});
    if (!r.ok()) return SlurmError("squeue", r);
    std::lock_guard lock(mu_);
    size_t pos = 0;
    while (pos < r.out.size()) {
      size_t end = r.out.find('\n', pos);
      if (end == std::string::npos) end = r.out.size();
      const std::string_view line =
          std::string_view(r.out).substr(pos, end - pos);
      pos = end + 1;
      const size_t bar1 = line.find('|');
      const size_t bar2 = line.find('|', bar1 + 1);
      if (bar1 == std::string_view::npos || bar2 == std::string_view::npos) {
        continue;
      }
      const auto found = LeadingId(line);
      if (found && !ended_.contains(*found) &&
          Owns(line.substr(bar1 + 1, bar2 - bar1 - 1), line.substr(bar2 + 1),
               id)) {
        return std::optional<int64_t>(*found);
      }
    }
    return std::optional<int64_t>();
  }

  // Slurm's record of job `slurm_id` for Adopt (one listing of every job
  // serves the adoptions of a restart); nullopt when it cannot be had.
  std::optional<SlurmJob> AdoptLookup(int64_t slurm_id) {
    if (!adopt_listing_ ||
        Seconds(Clock::now() - adopt_listing_at_) > kAdoptListingS) {
      const CommandResult r = Run("scontrol", {"show", "job", "-o", "-d"});
      adopt_listing_at_ = Clock::now();
      adopt_listing_.reset();
      if (r.ok()) {
        if (auto jobs = ParseScontrolJobs(r.out)) adopt_listing_ = *jobs;
      }
    }
    if (!adopt_listing_) return std::nullopt;
    for (const SlurmJob& j : *adopt_listing_) {
      if (j.job_id == slurm_id) return j;
    }
    return std::nullopt;
  }

  void PollLoop() {
    std::unique_lock lock(mu_);
    while (!stopping_) {
      const bool work = !jobs_.empty() || !to_cancel_.empty() || unreachable_;
      if (work) {
        lock.unlock();
        PollOnce();
        lock.lock();
        if (stopping_) break;
      }
      wake_.wait_for(lock,
                     std::chrono::duration<double>(options_.poll_interval_s));
    }
  }

  // One round: cancels, then every tracked job's state.
  void PollOnce() {
    std::set<int64_t> cancels;
    std::map<JobId, Tracked> jobs;
    {
      std::lock_guard lock(mu_);
      cancels = to_cancel_;
      jobs = jobs_;
    }
    for (int64_t slurm_id : cancels) {
      const CommandResult r = Run("scancel", {std::to_string(slurm_id)});
      const bool gone =
          r.err.find("Invalid job id") != std::string::npos ||
          r.err.find("already completing or completed") != std::string::npos;
      if (r.ok() || gone) {
        std::lock_guard lock(mu_);
        to_cancel_.erase(slurm_id);
      }
    }
    const CommandResult r = Run("scontrol", {"show", "job", "-o", "-d"});
    Result<std::vector<SlurmJob>> listing =
        r.ok() ? ParseScontrolJobs(r.out)
               : Result<std::vector<SlurmJob>>(Unavailable(
                     "Slurm unreachable: scontrol show job: " + r.Summary()));
    if (!listing) {
      std::lock_guard lock(mu_);
      unreachable_ = listing.error().message;
      return;
    }
    std::map<int64_t, const SlurmJob*> by_id;
    for (const SlurmJob& j : *listing) by_id[j.job_id] = &j;
    std::vector<Exited> ended;
    const auto now = Clock::now();
    for (auto& [id, t] : jobs) {
      auto it = by_id.find(t.slurm_id);
      std::optional<Exited> e =
          Judge(id, t, it == by_id.end() ? nullptr : it->second, now);
      if (e) ended.push_back(std::move(*e));
    }
    std::lock_guard lock(mu_);
    unreachable_.reset();
    for (Exited& e : ended) {
      auto it = jobs_.find(e.id);
      // Untracked or started again since the snapshot: not this one.
      if (it == jobs_.end() || it->second.slurm_id != jobs.at(e.id).slurm_id) {
        continue;
      }
      ended_.insert(it->second.slurm_id);
      if (ended_.size() > kEndedKept) ended_.erase(ended_.begin());
      jobs_.erase(it);
      exited_.push_back(std::move(e));
    }
    for (auto& [id, t] : jobs) {  // pending_since, gpus_checked
      auto it = jobs_.find(id);
      if (it != jobs_.end() && it->second.slurm_id == t.slurm_id) {
        it->second.pending_since = t.pending_since;
        it->second.gpus_checked = t.gpus_checked;
      }
    }
  }

  // What Slurm's record `job` (null: Slurm does not know the job) means
  // for tracked job `id`: an exit, or nullopt while it is alive.
  std::optional<Exited> Judge(JobId id, Tracked& t, const SlurmJob* job,
                              Clock::time_point now) {
    const std::string slurm = "Slurm job " + std::to_string(t.slurm_id);
    if (job == nullptr) {
      return Exited{id, std::nullopt,
                    "lost: unknown to Slurm (" + slurm +
                        " left the controller's memory, MinJobAge, before "
                        "tessera saw it end)"};
    }
    if (!Owns(*job, id)) {
      return Exited{id, std::nullopt,
                    "lost: " + slurm + " is now '" + job->name +
                        "', not tessera's " + JobName(id)};
    }
    const SlurmOutcome o = ClassifySlurmJob(*job);
    if (o.phase == SlurmPhase::kEnded) {
      Exited e{id, o.exit_code, o.reason};
      e.cancelled = o.cancelled;
      return e;
    }
    if (o.phase == SlurmPhase::kPending) {
      if (!t.pending_since) t.pending_since = now;
      const double waited = Seconds(now - *t.pending_since);
      if (options_.pending_timeout_s > 0 &&
          waited >= options_.pending_timeout_s) {
        std::lock_guard lock(mu_);
        to_cancel_.insert(t.slurm_id);
        return Exited{id, std::nullopt,
                      "never started: Slurm kept " + slurm + " pending for " +
                          std::to_string(static_cast<int>(waited)) +
                          " s (Reason=" + job->reason +
                          "); tessera's view of the node and Slurm's differ "
                          "(pending_timeout_s)"};
      }
      return std::nullopt;
    }
    t.pending_since.reset();
    if (!t.gpus_checked && !job->gpu_indices.empty() && !t.parts.empty()) {
      t.gpus_checked = true;
      std::vector<int> planned = t.parts[0].gpu_indices;
      std::sort(planned.begin(), planned.end());
      if (planned != job->gpu_indices) NoteGpuChoice(id, t, *job, planned);
    }
    return std::nullopt;
  }

  // Slurm picked other GPUs than tessera reserved (the node's GPUs are not
  // pinned): said once on the service's log.
  static void NoteGpuChoice(JobId id, const Tracked& t, const SlurmJob& job,
                            const std::vector<int>& planned) {
    auto list = [](const std::vector<int>& v) {
      std::string s;
      for (int i : v) s += (s.empty() ? "" : ",") + std::to_string(i);
      return s;
    };
    std::cerr << "tessera: job " << id << " (Slurm job " << t.slurm_id
              << ") on " << t.parts[0].node << ": Slurm gave GPU "
              << list(job.gpu_indices) << ", tessera reserved GPU "
              << list(planned)
              << " (the node's GPUs are not pinned; docs/slurm.md)"
              << std::endl;
  }

  // Slurm ids grow: the oldest ended ones are forgotten first; a job
  // restarted after preemption needs only its last one.
  static constexpr size_t kEndedKept = 10000;
  // A listing of every job serves the Adopt calls of one restart.
  static constexpr double kAdoptListingS = 5;

  const SlurmOptions options_;
  const std::string log_dir_;
  mutable std::mutex mu_;  // guards everything below but the adopt cache
  std::condition_variable wake_;
  bool stopping_ = false;
  std::map<JobId, Tracked> jobs_;  // by tessera id: those not yet ended
  std::vector<Exited> exited_;     // ended since the last Poll
  std::set<int64_t> to_cancel_;    // Slurm ids to scancel
  std::set<int64_t> ended_;        // Slurm ids reported ended
  std::map<std::string, SlurmNode> nodes_;
  // Set while the controller cannot be reached: why (Start fails fast).
  std::optional<std::string> unreachable_;
  std::map<JobId, std::string> log_dirs_;  // where not log_dir_
  // Adopt runs before the service's thread starts: no lock needed.
  std::optional<std::vector<SlurmJob>> adopt_listing_;
  Clock::time_point adopt_listing_at_;
  std::thread thread_;
};

bool Executable(const std::string& path) {
  return access(path.c_str(), X_OK) == 0 &&
         std::filesystem::is_regular_file(path);
}

}  // namespace

std::unique_ptr<Launcher> MakeSlurmLauncher(SlurmOptions options,
                                            std::string log_dir) {
  return std::make_unique<SlurmLauncher>(std::move(options),
                                         std::move(log_dir));
}

Status CheckSlurmCommands(const SlurmOptions& options) {
  for (const char* tool : {"sbatch", "squeue", "scontrol", "scancel"}) {
    if (!options.bin_dir.empty()) {
      if (!Executable(options.bin_dir + "/" + tool)) {
        return BadInput("launcher.bin_dir: no '" + std::string(tool) +
                        "' program in " + options.bin_dir);
      }
      continue;
    }
    const char* path = std::getenv("PATH");
    bool found = false;
    std::string_view dirs = path ? path : "";
    while (!found && !dirs.empty()) {
      const size_t colon = dirs.find(':');
      const std::string dir(dirs.substr(0, colon));
      dirs = colon == std::string_view::npos ? "" : dirs.substr(colon + 1);
      found = !dir.empty() && Executable(dir + "/" + tool);
    }
    if (!found) {
      return BadInput("launcher: kind slurm needs Slurm's '" +
                      std::string(tool) +
                      "' command, which is not in PATH (install Slurm's "
                      "client commands, e.g. Debian's slurm-client, or set "
                      "launcher.bin_dir)");
    }
  }
  return {};
}

}  // namespace tessera::launch
