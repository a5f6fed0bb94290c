#ifndef TESSERA_CUDA_CALIBRATE_H_
#define TESSERA_CUDA_CALIBRATE_H_

// Micro-benchmarks of one GPU for `tessera calibrate`: cuBLAS GEMM
// throughput per dtype, device memory bandwidth, pinned host <-> device and
// peer-to-peer transfers (latency + bytes / bandwidth) and kernel launch
// overhead; then, optionally, the efficiency sweep (cuda/kernel_sweep.h).
// Every CUDA / cuBLAS error becomes an Error, never an abort.

#include <functional>
#include <string>

#include "common/result.h"
#include "cuda/calibration_yaml.h"

namespace tessera::cuda {

struct CalibrateOptions {
  int gpu = 0;
  // Smaller problems and fewer repetitions: faster, figures a few percent
  // lower.
  bool quick = false;
  // The efficiency sweep (GEMM and convolution shapes, kernel time,
  // elementwise bandwidth, PyTorch's eager dispatch): optional, a failure
  // in it is a note.
  bool efficiency = true;
  // Called with a short description before each benchmark (may be empty).
  std::function<void(const std::string&)> progress;
};

// kBadInput "no CUDA device found (<reason>)" when CUDA reports an error or
// no device (any error counts as "no GPU"); kBadInput naming the valid range
// when options.gpu is not a device; kInternal when a benchmark fails. An
// optional benchmark that is not supported (int8 GEMM, bf16 before Ampere,
// peer to peer) is skipped with a note instead.
Result<CalibrationResult> Calibrate(const CalibrateOptions& options);

}  // namespace tessera::cuda

#endif  // TESSERA_CUDA_CALIBRATE_H_
