#ifndef TESSERA_CLI_SIMULATE_SIMULATE_FLAGS_H_
#define TESSERA_CLI_SIMULATE_SIMULATE_FLAGS_H_

// The flags of simulate: each Add* adds its command to
// `app`, parsed into `args`. CLI11 is included only by main.cc and the
// *_flags.cc files (it costs ~4 s per translation unit).

#include "cli/simulate/simulate.h"

namespace CLI {
class App;
}  // namespace CLI

namespace tessera::cli {

void AddSimulate(CLI::App& app, SimulateArgs& args);

}  // namespace tessera::cli

#endif  // TESSERA_CLI_SIMULATE_SIMULATE_FLAGS_H_
