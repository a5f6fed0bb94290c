#ifndef TESSERA_CLI_QUEUE_QUEUE_FLAGS_H_
#define TESSERA_CLI_QUEUE_QUEUE_FLAGS_H_

// The flags of serve and the queue's client commands (submit, progress, jobs,
// job, logs, cancel, drain, queue, cluster): each Add* adds its command to
// `app`, parsed into `args`. CLI11 is included only by main.cc and the
// *_flags.cc files (it costs ~4 s per translation unit).

#include "cli/queue/queue_commands.h"
#include "cli/queue/serve.h"

namespace CLI {
class App;
}  // namespace CLI

namespace tessera::cli {

void AddServe(CLI::App& app, ServeArgs& args);
void AddSubmit(CLI::App& app, SubmitArgs& args);
void AddProgress(CLI::App& app, ProgressArgs& args);
void AddJobs(CLI::App& app, JobsArgs& args);
void AddJob(CLI::App& app, JobArgs& args);
void AddLogs(CLI::App& app, LogsArgs& args);
void AddCancel(CLI::App& app, JobArgs& args);
void AddDrain(CLI::App& app, DrainArgs& args);
void AddQueue(CLI::App& app, QueueArgs& args);
void AddCluster(CLI::App& app, ClientArgs& args);

}  // namespace tessera::cli

#endif  // TESSERA_CLI_QUEUE_QUEUE_FLAGS_H_
