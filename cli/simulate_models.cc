// Placeholder until the models mode lands.
#include "cli/output.h"
#include "cli/simulate.h"

namespace tessera::cli {

int RunSimulateModels(const SimulateArgs& /*args*/) {
  return ReportError(Internal("--mode models is not implemented yet"));
}

}  // namespace tessera::cli
