#ifndef TESSERA_CLI_QUEUE_QUEUE_COMMANDS_H_
#define TESSERA_CLI_QUEUE_QUEUE_COMMANDS_H_

// The queue service's client commands: submit, jobs, job, logs, cancel,
// cluster, drain. Each talks to `tessera serve` through client/, prints a table
// (or the API's JSON with --json) and returns the exit code: 2 for a request
// the service refused (4xx), 1 for a server error or no service at the URL.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace tessera::cli {

struct ClientArgs {
  std::string url;    // "" = $TESSERA_URL or client::kDefaultUrl
  std::string token;  // "" = $TESSERA_TOKEN
  bool json = false;
};

struct SubmitArgs {
  ClientArgs client;
  std::string name, pool;
  std::optional<int> priority;
  bool preemptible = false;
  std::string on_oom;   // "" = the pool's default
  std::string queue;    // --queue: the queue tree's queue ("" = the team's)
  std::string gpus;     // whole GPUs: "N", or elastic "MIN:MAX"
  std::string workers;  // elastic fractional workers "MIN:MAX"
  std::string elastic_mode;      // "one-process" (default) or "per-worker"
  std::optional<int> gpu_milli;  // or a fraction of one
  std::string gpu_memory;        // with gpu_milli, e.g. "8GiB"
  std::optional<long long> cpu_milli;
  std::string memory;      // host memory, e.g. "16GiB"
  std::string model;       // or sized by the estimator: a local file, uploaded
  std::string model_path;  // or a file on the service's machine
  std::optional<long long> batch;
  bool train = false;
  std::string dtype;
  std::vector<std::string> inputs;  // NAME=DIMS
  bool no_split = false;
  std::optional<double> time_limit_s;
  std::optional<long long> steps;    // a model job's work
  std::vector<std::string> env;      // K=V
  std::vector<std::string> command;  // after --
};

struct ProgressArgs {
  ClientArgs client;
  int64_t id = 0;
  long long steps = 0;
};

struct JobsArgs {
  ClientArgs client;
  std::string state, user, pool;
  std::optional<long long> limit;
};

struct JobArgs {
  ClientArgs client;
  int64_t id = 0;
  bool events = false;  // `tessera job ID --events`: the audit trail
};

struct LogsArgs {
  ClientArgs client;
  int64_t id = 0;
  bool stderr_log = false;
  bool follow = false;
};

int RunSubmit(const SubmitArgs& args);
int RunJobs(const JobsArgs& args);
int RunJob(const JobArgs& args);
int RunProgress(const ProgressArgs& args);
int RunLogs(const LogsArgs& args);
int RunCancel(const JobArgs& args);
int RunCluster(const ClientArgs& args);

struct QueueArgs {
  ClientArgs client;
  std::string pool, user;
};
// Per pool, the queued jobs in the policy's order with why each waits and
// when it could start, then the running ones.
int RunQueue(const QueueArgs& args);

struct DrainArgs {
  ClientArgs client;
  std::string node;
  bool undo = false;  // undrain
};
// Admins: a drained node admits nothing new; its running jobs continue.
int RunDrain(const DrainArgs& args);

}  // namespace tessera::cli

#endif  // TESSERA_CLI_QUEUE_QUEUE_COMMANDS_H_
