// Placeholder until the timed mode lands.
#include "cli/output.h"
#include "cli/simulate.h"

namespace tessera::cli {

int RunSimulateTimed(const SimulateArgs& /*args*/) {
  return ReportError(Internal("--mode timed is not implemented yet"));
}

}  // namespace tessera::cli
