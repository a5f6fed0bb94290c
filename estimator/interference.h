#ifndef TESSERA_ESTIMATOR_INTERFERENCE_H_
#define TESSERA_ESTIMATOR_INTERFERENCE_H_

// Co-location slowdown: how much longer a job's step takes when k jobs
// share its GPU, by how the GPU is shared (time-slicing or MPS) and by how
// much of the GPU the job keeps busy alone. A pure function of fitted
// constants; docs/estimator.md ("Co-location slowdown") gives the model,
// the fit and its error per measured job.

#include <string_view>

#include "common/result.h"

namespace tessera::estimator {

// How the processes on one GPU share it.
enum class GpuSharing {
  kTimeslice,  // CUDA's default: one context at a time, taking turns
  kMps,        // NVIDIA's Multi-Process Service: kernels of all overlap
};
// "timeslice", "mps"; else kBadInput "sharing 'TEXT': ...".
Result<GpuSharing> ParseGpuSharing(std::string_view text);
std::string_view GpuSharingName(GpuSharing s);

// Both constants are least-squares fits to the slowdown ratios of
// data/gpu-truth/h100_interference.json (one H100 SXM, PyTorch eager; 1-4
// identical processes of ResNet-50 and BERT-base training b32, GPT-2
// inference b1 and MobileNetV2 inference b8), with the busy fractions
// docs/estimator.md derives from h100_pytorch_eager.json;
// tests/estimator/interference_test.cc refits them from those files.
//
// Time-slicing: GPU time per unit of busy work when contexts take turns.
// Above 1 by the cost of the context switches (e.g. ResNet-50 training
// runs 2.17x slower with two jobs, not 2x).
inline constexpr double kTimesliceCost = 1.169;
// MPS: the share of each co-runner's GPU-busy time that lands on a job's
// step (1 would be time-slicing without the switches; the rest overlaps).
inline constexpr double kMpsOverlapCost = 0.871;

// A training job's GPU busy fraction where the estimator gives none
// (RuntimeEstimate::gpu_busy_fraction does): ResNet-50 and BERT-base
// training at batch 32 on the H100 keep the GPU busy 93% and 95% of their
// step (h100_pytorch_eager.json's profiles).
inline constexpr double kTrainingBusyFraction = 0.94;

// A job's step time when `k` jobs share its GPU, over its step time alone:
//   k = 1:      1
//   timeslice:  1 + u (kTimesliceCost k - 1)   (the others' busy time,
//               and its own, pass through one context at a time)
//   mps:        1 + kMpsOverlapCost (k - 1) u
// where u = `busy_fraction`, the fraction of its step alone during which
// the GPU is busy, clamped to [0, 1]. The co-runners are taken to be like
// the job (what was measured). At least 1, non-decreasing in k and u, and
// never more under MPS than under time-slicing. REQUIRES: k >= 1.
double CoLocationSlowdown(GpuSharing sharing, double busy_fraction, int k);

}  // namespace tessera::estimator

#endif  // TESSERA_ESTIMATOR_INTERFERENCE_H_
