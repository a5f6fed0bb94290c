#ifndef TESSERA_CUDA_EFFICIENCY_SWEEP_INTERNAL_H_
#define TESSERA_CUDA_EFFICIENCY_SWEEP_INTERNAL_H_

// calibrate's efficiency sweep (the results: cuda/kernel_sweep.h). Include
// from .cu files only.

#include <cuda_runtime.h>

#include <functional>
#include <string>

#include "common/result.h"
#include "cuda/calibration_yaml.h"
#include "cuda/cuda_internal.h"

namespace tessera::cuda {

using Progress = std::function<void(const std::string&)>;

// Runs the sweep on the current device into r->efficiency: the empty
// kernel's time, an elementwise kernel, cuBLAS GEMMs (fp32 without TF32,
// bf16 on tensor cores), cuDNN convolutions when built with cuDNN, and
// PyTorch's eager dispatch when python3 has torch. Needs r's peaks
// (fp32_flops, bf16_flops, memory_bandwidth). What fails or is missing
// becomes a note in r->notes, never an error: the sweep is optional.
void SweepEfficiency(int gpu, bool quick, const Progress& progress,
                     CalibrationResult* r);

// GPU seconds of one call of `enqueue` (a `Status()` callable that enqueues
// one kernel or library call on `stream`): `burst` calls back to back,
// captured in a CUDA graph so that host launch costs do not hide short
// kernels, median of `reps` graph launches. One plain call first (a library
// picks its kernel and workspace outside the capture). When capture is not
// possible the burst runs as plain launches and *captured is false.
Result<double> BurstSeconds(cudaStream_t stream, Reps reps, int burst,
                            const std::function<Status()>& enqueue,
                            bool* captured);

#if TESSERA_HAVE_CUDNN
// The convolution sweeps through cuDNN (conv_sweep.cu): 1x1, k x k and
// depthwise in fp32 (FMA math, no TF32), 1x1 and k x k in bf16 on tensor
// cores, fastest algorithm by cudnnFind (as cudnn.benchmark), appended to
// r->efficiency.sweeps unfitted. Per-shape failures are notes.
Status SweepConvolutions(cudaStream_t stream, bool quick,
                         const Progress& progress, CalibrationResult* r);
#endif

}  // namespace tessera::cuda

#endif  // TESSERA_CUDA_EFFICIENCY_SWEEP_INTERNAL_H_
