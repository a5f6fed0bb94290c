#ifndef TESSERA_ESTIMATOR_EFFICIENCY_FIT_H_
#define TESSERA_ESTIMATOR_EFFICIENCY_FIT_H_

// Fits the size curve of a kernel's efficiency, eff(W) = max x W / (W +
// half_flops) (device_catalog.h, KernelEfficiency), to measured (W, eff)
// points: `tessera calibrate`'s GEMM and convolution sweeps, or per-operator
// profiles. Plain C++17 (calibrate's CUDA code includes it), no GPU needed.

#include <vector>

#include "common/result.h"

namespace tessera::estimator {

// Upper bound of a kernel's `max` efficiency: above 1 because Winograd and
// FFT convolutions do fewer multiplications than the direct count the
// estimator charges (F(2x2, 3x3) Winograd: 2.25x fewer), so a 3x3
// convolution can beat the nominal peak; twice the peak is already beyond
// what cuDNN reaches in practice.
inline constexpr double kMaxKernelEfficiency = 2.0;

// One measured kernel: `flops` of work, done at `efficiency` x the device's
// peak (flops / (seconds x peak)).
struct EfficiencySample {
  double flops = 0;
  double efficiency = 0;
};

struct EfficiencyFit {
  double max = 0;         // in (0, kMaxKernelEfficiency]
  double half_flops = 0;  // >= 0; 0: the same efficiency at every size
  int points = 0;         // samples the fit used
  double rms_error = 0;   // of efficiency (absolute, not relative)
  double max_abs_error = 0;
};

// Least squares of the efficiencies: min over (max, half) of
// sum (eff_i - max W_i / (W_i + half))^2. For a fixed half the best max is
// linear (clamped to (0, kMaxKernelEfficiency]); half is searched on a log
// grid from 1e-3 x the smallest W to 1e3 x the largest (and 0), then
// refined by golden section. Deterministic. Errors (kBadInput): fewer than
// two distinct sizes, or a sample without positive, finite flops and
// efficiency.
Result<EfficiencyFit> FitEfficiencyCurve(
    const std::vector<EfficiencySample>& samples);

}  // namespace tessera::estimator

#endif  // TESSERA_ESTIMATOR_EFFICIENCY_FIT_H_
