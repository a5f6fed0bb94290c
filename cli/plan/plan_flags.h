#ifndef TESSERA_CLI_PLAN_PLAN_FLAGS_H_
#define TESSERA_CLI_PLAN_PLAN_FLAGS_H_

// The flags of plan and split: each Add* adds its command to
// `app`, parsed into `args`. CLI11 is included only by main.cc and the
// *_flags.cc files (it costs ~4 s per translation unit).

#include "cli/plan/plan.h"
#include "cli/plan/split.h"

namespace CLI {
class App;
}  // namespace CLI

namespace tessera::cli {

void AddPlan(CLI::App& app, PlanArgs& args);
void AddSplit(CLI::App& app, SplitArgs& args);

}  // namespace tessera::cli

#endif  // TESSERA_CLI_PLAN_PLAN_FLAGS_H_
