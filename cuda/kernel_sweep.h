#ifndef TESSERA_CUDA_KERNEL_SWEEP_H_
#define TESSERA_CUDA_KERNEL_SWEEP_H_

// `tessera calibrate`'s efficiency sweep: what it measured (GEMM and
// convolution shapes, an empty kernel, an elementwise kernel, PyTorch's
// eager dispatch) and the efficiency curves fitted to it, the
// `efficiency:` block of the device YAML (estimator::EfficiencySurface).
// Plain C++17: the fits are tested without a GPU.

#include <string>
#include <vector>

#include "common/result.h"
#include "cuda/transfer_fit.h"
#include "estimator/efficiency_fit.h"

namespace tessera::cuda {

// One timed kernel of a sweep.
struct KernelSample {
  std::string shape;   // e.g. "256x256x256" (m x n x k), "32x64x56x56 k64 3x3"
  double flops = 0;    // 2 x multiply-adds
  double seconds = 0;  // GPU time of one kernel, launched back to back
};

// The sweep of one kernel kind at one precision.
struct KernelSweep {
  // An estimator::KernelKindName: "gemm", "conv", "spatial_conv" or
  // "depthwise_conv".
  std::string kind;
  // true: bf16 on tensor cores (the YAML's tensor_cores); false: fp32 with
  // TF32 off (cuda_cores).
  bool tensor_cores = false;
  std::string dtype;      // "fp32", "bf16"
  double peak_flops = 0;  // the YAML's figure the efficiencies are relative to
  std::vector<KernelSample> samples;
  estimator::EfficiencyFit fit;  // points 0: not fitted
  int dropped = 0;  // samples left out: time within kKernelTimeMargin
};

// What the sweep found; 0 or empty = not measured (the reason is a note).
struct EfficiencyCalibration {
  bool ran = false;  // false: skipped (--skip-efficiency)
  // GPU time of an empty kernel in a CUDA graph of many (launch gaps on the
  // GPU, no host cost): what every kernel costs beyond its work.
  double kernel_s = 0;
  // An elementwise kernel (y = a x + b, fp32) over buffers beyond the L2
  // cache: time = latency + bytes moved / bandwidth, and that bandwidth as
  // a fraction of the result's memory_bandwidth (clamped to 1).
  TransferFit elementwise;
  double elementwise_bandwidth = 0;
  // Host time of one small PyTorch operator on this GPU (a loop of eager
  // ops whose GPU work is trivial), from an embedded python3 snippet.
  double eager_op_s = 0;
  std::vector<KernelSweep> sweeps;
};

// A sample whose time is less than this multiple of kernel_s is all fixed
// cost: its efficiency says nothing about the kernel and stays out of the
// fit.
inline constexpr double kKernelTimeMargin = 1.5;

// Fits sweep->fit: efficiency = flops / ((seconds - kernel_s) x
// peak_flops), the curve a model then adds kernel_s to once per kernel
// (kernel_s 0: the raw times). Errors (kBadInput): no positive peak, or
// fewer than two usable sizes (estimator::FitEfficiencyCurve).
Status FitKernelSweep(double kernel_s, KernelSweep* sweep);

// The eager dispatch time from the output of the python snippet (its last
// line, "eager_op_s <seconds>"), or why there is none.
Result<double> ParseEagerOutput(const std::string& output);

// Runs `python3` with the snippet on GPU `gpu` (quick: fewer ops) and
// returns the eager dispatch time; an error (kUnavailable) says why not:
// no python3, no torch, torch without CUDA, a failure. Takes a few
// seconds; no GPU needed to call it (it fails cleanly).
Result<double> MeasureEagerOverhead(int gpu, bool quick);

}  // namespace tessera::cuda

#endif  // TESSERA_CUDA_KERNEL_SWEEP_H_
