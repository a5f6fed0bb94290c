#ifndef TESSERA_CLI_MODEL_CALIBRATE_H_
#define TESSERA_CLI_MODEL_CALIBRATE_H_

// `tessera calibrate`, built only when the CUDA toolkit is found
// (TESSERA_HAVE_CUDA).

#include <string>

namespace tessera::cli {

struct CalibrateArgs {
  int gpu = 0;
  std::string name;    // "" = calibrated-gpu<N>
  std::string base;    // catalog device the entry starts from; "" = none
  std::string output;  // -o FILE; "" or "-" = stdout
  bool json = false;   // the raw measurements as JSON on stdout
  bool quick = false;  // smaller problems, fewer repetitions
  bool skip_efficiency = false;  // no efficiency sweep
};

// Measures the GPU and writes a device YAML for `--devices`. Exit codes: 0,
// 2 (no CUDA device, --gpu out of range, bad --name / --base / -o), 1 (a
// benchmark failed).
int RunCalibrate(const CalibrateArgs& args);

}  // namespace tessera::cli

#endif  // TESSERA_CLI_MODEL_CALIBRATE_H_
