#ifndef TESSERA_CUDA_CALIBRATION_YAML_H_
#define TESSERA_CUDA_CALIBRATION_YAML_H_

// What `tessera calibrate` measures on one GPU, and the device YAML it
// writes from it (the format of estimator::DeviceCatalog::MergeYaml). Plain
// C++17, no CUDA: testable on machines without a GPU.

#include <cstdint>
#include <string>
#include <vector>

#include "cuda/kernel_sweep.h"
#include "cuda/transfer_fit.h"

namespace tessera::cuda {

struct CalibrationResult {
  int gpu_index = 0;
  std::string gpu_name;  // cudaDeviceProp::name, e.g. "NVIDIA A100-SXM4-80GB"
  int compute_major = 0, compute_minor = 0;
  int64_t memory_bytes = 0;  // total device memory
  std::string date;          // UTC, YYYY-MM-DD

  // Dense GEMM throughput through cuBLAS, operations per second (2 m n k /
  // time); 0 = not measured (the reason is in `notes`).
  int64_t gemm_size = 0;  // m = n = k
  double fp32_flops = 0;  // SGEMM, default math (no TF32)
  double tf32_flops = 0;  // SGEMM with CUBLAS_TF32_TENSOR_OP_MATH
  double fp16_flops = 0;  // cublasGemmEx fp16 in, fp32 accumulate
  double bf16_flops = 0;  // cublasGemmEx bf16 in, fp32 accumulate
  double int8_ops = 0;    // cublasGemmEx int8 in, int32 accumulate

  // Device memory: bytes read + written per second by the best of a copy
  // kernel and cudaMemcpy device-to-device.
  double memory_bandwidth = 0;
  int64_t memory_test_bytes = 0;  // size of the buffer copied

  // Pinned host <-> device transfers, latency + bytes / bandwidth.
  TransferFit host_to_device;
  TransferFit device_to_host;
  // Peer to peer to `p2p_peer` (-1: not measured: one GPU or no access).
  int p2p_peer = -1;
  TransferFit peer_to_peer;

  double launch_overhead_s = 0;  // empty kernel, averaged over many launches

  // The efficiency sweep (optional; `ran` false when skipped).
  EfficiencyCalibration efficiency;

  std::vector<std::string> notes;  // what was skipped and why
};

// The device YAML for `result`: one entry named `name` (a valid catalog
// name), starting from catalog device `base` when it is not empty. Figures
// that were not measured are left out (so they come from `base`, or default
// to fp32 for a new device); the fits and notes are written as comments.
// pcie_bandwidth is the slower of host->device and device->host;
// nvlink_bandwidth is the peer-to-peer bandwidth when it was measured.
// The efficiency sweep's results, where there are any, become the entry's
// `efficiency:` block: kernel_time, eager_op, bandwidth.elementwise and a
// {max, half_gflop} curve per fitted sweep (cuda_cores for fp32,
// tensor_cores for bf16), with each fit's error as a comment.
std::string CalibrationYaml(const CalibrationResult& result,
                            const std::string& name, const std::string& base);

}  // namespace tessera::cuda

#endif  // TESSERA_CUDA_CALIBRATION_YAML_H_
