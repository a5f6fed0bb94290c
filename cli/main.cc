// The `tessera` executable: argument parsing only; each command's work and
// printing lives in its own file, each family's flags in its *_flags.cc
// (cli/model/, cli/plan/, cli/queue/, cli/simulate/). CLI11 is included
// here and in those files only (it costs ~4 s per translation unit).
#include <CLI/CLI.hpp>
#include <exception>
#include <string>

#include "cli/model/model_flags.h"
#include "cli/output.h"
#include "cli/plan/plan_flags.h"
#include "cli/queue/queue_flags.h"
#include "cli/simulate/simulate_flags.h"

int main(int argc, char** argv) {
  CLI::App app{
      "tessera: split ML models across the residual capacity of "
      "shared GPU clusters"};
  app.set_version_flag("--version", "tessera 0.1.0");
  app.require_subcommand(1);
  app.footer(
      "\nRun 'tessera COMMAND --help' for a command's options and "
      "examples.");
  tessera::cli::InspectArgs inspect;
  tessera::cli::AddInspect(app, inspect);
  tessera::cli::ProfileArgs profile;
  tessera::cli::AddProfile(app, profile);
  tessera::cli::DevicesArgs devices;
  tessera::cli::AddDevices(app, devices);
  tessera::cli::PlanArgs plan;
  tessera::cli::AddPlan(app, plan);
  tessera::cli::SplitArgs split;
  tessera::cli::AddSplit(app, split);
  tessera::cli::ServeArgs serve;
  tessera::cli::AddServe(app, serve);
  tessera::cli::SubmitArgs submit;
  tessera::cli::AddSubmit(app, submit);
  tessera::cli::JobsArgs jobs;
  tessera::cli::AddJobs(app, jobs);
  tessera::cli::JobArgs job;
  tessera::cli::AddJob(app, job);
  tessera::cli::ProgressArgs progress;
  tessera::cli::AddProgress(app, progress);
  tessera::cli::LogsArgs logs;
  tessera::cli::AddLogs(app, logs);
  tessera::cli::JobArgs cancel;
  tessera::cli::AddCancel(app, cancel);
  tessera::cli::ClientArgs cluster;
  tessera::cli::AddCluster(app, cluster);
  tessera::cli::QueueArgs queue;
  tessera::cli::AddQueue(app, queue);
  tessera::cli::DrainArgs drain;
  tessera::cli::AddDrain(app, drain);
  tessera::cli::SimulateArgs simulate;
  tessera::cli::AddSimulate(app, simulate);
#ifdef TESSERA_HAVE_CUDA
  tessera::cli::CalibrateArgs calibrate;
  tessera::cli::AddCalibrate(app, calibrate);
#endif
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);
    return code == 0 ? 0 : tessera::ExitCodeFor(tessera::ErrorCode::kBadInput);
  }
  try {
    if (app.got_subcommand("inspect")) return tessera::cli::RunInspect(inspect);
    if (app.got_subcommand("profile")) return tessera::cli::RunProfile(profile);
    if (app.got_subcommand("devices")) return tessera::cli::RunDevices(devices);
    if (app.got_subcommand("plan")) return tessera::cli::RunPlan(plan);
    if (app.got_subcommand("split")) return tessera::cli::RunSplit(split);
    if (app.got_subcommand("serve")) return tessera::cli::RunServe(serve);
    if (app.got_subcommand("submit")) return tessera::cli::RunSubmit(submit);
    if (app.got_subcommand("jobs")) return tessera::cli::RunJobs(jobs);
    if (app.got_subcommand("job")) return tessera::cli::RunJob(job);
    if (app.got_subcommand("progress")) {
      return tessera::cli::RunProgress(progress);
    }
    if (app.got_subcommand("logs")) return tessera::cli::RunLogs(logs);
    if (app.got_subcommand("cancel")) return tessera::cli::RunCancel(cancel);
    if (app.got_subcommand("cluster")) return tessera::cli::RunCluster(cluster);
    if (app.got_subcommand("queue")) return tessera::cli::RunQueue(queue);
    if (app.got_subcommand("drain")) return tessera::cli::RunDrain(drain);
    if (app.got_subcommand("simulate")) {
      return tessera::cli::RunSimulate(simulate);
    }
#ifdef TESSERA_HAVE_CUDA
    if (app.got_subcommand("calibrate")) {
      return tessera::cli::RunCalibrate(calibrate);
    }
#endif
  } catch (const std::exception& e) {
    return tessera::cli::ReportError(
        tessera::Internal(std::string("unexpected failure: ") + e.what()));
  }
  return 0;
}
