#ifndef TESSERA_CLI_MODEL_MODEL_FLAGS_H_
#define TESSERA_CLI_MODEL_MODEL_FLAGS_H_

// The flags of inspect, profile, devices and calibrate: each Add* adds its
// command to `app`, parsed into `args`. CLI11 is included only by main.cc and
// the
// *_flags.cc files (it costs ~4 s per translation unit).

#include "cli/model/inspect.h"
#include "cli/model/profile.h"
#ifdef TESSERA_HAVE_CUDA
#include "cli/model/calibrate.h"
#endif

namespace CLI {
class App;
}  // namespace CLI

namespace tessera::cli {

void AddInspect(CLI::App& app, InspectArgs& args);
void AddProfile(CLI::App& app, ProfileArgs& args);
void AddDevices(CLI::App& app, DevicesArgs& args);
#ifdef TESSERA_HAVE_CUDA
void AddCalibrate(CLI::App& app, CalibrateArgs& args);
#endif

}  // namespace tessera::cli

#endif  // TESSERA_CLI_MODEL_MODEL_FLAGS_H_
