// `tessera calibrate`'s micro-benchmarks. Straightforward on purpose: every
// figure is the median of a few timed runs (cudaEvents) after warm-ups.
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <ctime>
#include <string>
#include <utility>
#include <vector>

#include "cuda/calibrate.h"
#include "cuda/cuda_internal.h"
#include "cuda/efficiency_sweep_internal.h"

namespace tessera::cuda {
namespace {

// --- Kernels. ---

__global__ void EmptyKernel() {}

__global__ void CopyKernel(const float4* __restrict__ in,
                           float4* __restrict__ out, size_t n) {
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
       i < n; i += static_cast<size_t>(gridDim.x) * blockDim.x) {
    out[i] = in[i];
  }
}

// --- GEMM. ---

enum class GemmKind { kFp32, kTf32, kFp16, kBf16, kInt8 };

const char* GemmName(GemmKind kind) {
  switch (kind) {
    case GemmKind::kFp32:
      return "fp32 SGEMM";
    case GemmKind::kTf32:
      return "tf32 SGEMM";
    case GemmKind::kFp16:
      return "fp16 GemmEx";
    case GemmKind::kBf16:
      return "bf16 GemmEx";
    case GemmKind::kInt8:
      return "int8 GemmEx";
  }
  return "?";
}

// Buffers A, B, C of n x n elements of up to 4 bytes each.
struct GemmBuffers {
  DeviceBuffer a, b, c;
  int n = 0;
};

// Enqueues one n x n x n GEMM of `kind`; returns the cuBLAS status.
cublasStatus_t EnqueueGemm(cublasHandle_t handle, GemmKind kind,
                           const GemmBuffers& buf) {
  const int n = buf.n;
  const float alpha = 1.0f, beta = 0.0f;
  switch (kind) {
    case GemmKind::kFp32:
    case GemmKind::kTf32: {
      const cublasStatus_t s = cublasSetMathMode(
          handle, kind == GemmKind::kTf32 ? CUBLAS_TF32_TENSOR_OP_MATH
                                          : CUBLAS_DEFAULT_MATH);
      if (s != CUBLAS_STATUS_SUCCESS) return s;
      return cublasSgemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &alpha,
                         static_cast<const float*>(buf.a.get()), n,
                         static_cast<const float*>(buf.b.get()), n, &beta,
                         static_cast<float*>(buf.c.get()), n);
    }
    case GemmKind::kFp16:
    case GemmKind::kBf16: {
      const cudaDataType_t t =
          kind == GemmKind::kFp16 ? CUDA_R_16F : CUDA_R_16BF;
      return cublasGemmEx(handle, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &alpha,
                          buf.a.get(), t, n, buf.b.get(), t, n, &beta,
                          buf.c.get(), t, n, CUBLAS_COMPUTE_32F,
                          CUBLAS_GEMM_DEFAULT);
    }
    case GemmKind::kInt8: {
      // Integer GEMM wants integer scalars and the "TN" layout.
      const int32_t ialpha = 1, ibeta = 0;
      return cublasGemmEx(handle, CUBLAS_OP_T, CUBLAS_OP_N, n, n, n, &ialpha,
                          buf.a.get(), CUDA_R_8I, n, buf.b.get(), CUDA_R_8I, n,
                          &ibeta, buf.c.get(), CUDA_R_32I, n,
                          CUBLAS_COMPUTE_32I, CUBLAS_GEMM_DEFAULT);
    }
  }
  return CUBLAS_STATUS_INVALID_VALUE;
}

Status FillGemmInputs(GemmKind kind, const GemmBuffers& buf,
                      cudaStream_t stream) {
  const size_t elems = static_cast<size_t>(buf.n) * buf.n;
  for (const DeviceBuffer* m : {&buf.a, &buf.b}) {
    switch (kind) {
      case GemmKind::kFp32:
      case GemmKind::kTf32:
        TESSERA_RETURN_IF_ERROR(Fill<float>(m->get(), elems, stream));
        break;
      case GemmKind::kFp16:
        TESSERA_RETURN_IF_ERROR(Fill<__half>(m->get(), elems, stream));
        break;
      case GemmKind::kBf16:
        TESSERA_RETURN_IF_ERROR(Fill<__nv_bfloat16>(m->get(), elems, stream));
        break;
      case GemmKind::kInt8:
        TESSERA_RETURN_IF_ERROR(Fill<int8_t>(m->get(), elems, stream));
        break;
    }
  }
  TESSERA_CUDA_TRY(cudaMemsetAsync(buf.c.get(), 0, elems * 4, stream));
  return {};
}

// Operations per second of `kind`, or 0 with a note when cuBLAS does not
// support it here (fp32 must work).
Result<double> GemmThroughput(cublasHandle_t handle, cudaStream_t stream,
                              GemmKind kind, const GemmBuffers& buf, Reps reps,
                              std::vector<std::string>* notes) {
  TESSERA_RETURN_IF_ERROR(FillGemmInputs(kind, buf, stream));
  // One untimed call tells whether this GPU and cuBLAS support the case.
  const cublasStatus_t probe = EnqueueGemm(handle, kind, buf);
  if (probe != CUBLAS_STATUS_SUCCESS) {
    if (kind == GemmKind::kFp32) {
      return CublasFailed(GemmName(kind), probe);
    }
    notes->push_back(std::string(GemmName(kind)) +
                     " skipped: " + CublasText(probe));
    return 0.0;
  }
  Result<double> seconds = MedianSeconds(stream, reps, [&]() -> Status {
    TESSERA_CUBLAS_TRY(EnqueueGemm(handle, kind, buf));
    return {};
  });
  TESSERA_RETURN_IF_ERROR(seconds);
  const double n = buf.n;
  return 2.0 * n * n * n / *seconds;
}

Status MeasureGemms(cudaStream_t stream, bool quick, CalibrationResult* r,
                    const std::function<void(const std::string&)>& progress) {
  size_t free_bytes = 0, total_bytes = 0;
  TESSERA_CUDA_TRY(cudaMemGetInfo(&free_bytes, &total_bytes));
  int n = quick ? 4096 : 8192;
  // A, B and C of 4-byte elements, with a margin for cuBLAS's workspace.
  while (n > 1024 && 3.0 * n * n * 4 * 1.2 > static_cast<double>(free_bytes)) {
    n /= 2;
  }
  GemmBuffers buf;
  buf.n = n;
  const size_t bytes = static_cast<size_t>(n) * n * 4;
  TESSERA_RETURN_IF_ERROR(buf.a.Allocate(bytes));
  TESSERA_RETURN_IF_ERROR(buf.b.Allocate(bytes));
  TESSERA_RETURN_IF_ERROR(buf.c.Allocate(bytes));
  CublasHandle handle;
  TESSERA_RETURN_IF_ERROR(handle.Create(stream));
  r->gemm_size = n;
  const Reps reps = quick ? Reps{1, 3} : Reps{3, 7};
  const std::pair<GemmKind, double*> cases[] = {
      {GemmKind::kFp32, &r->fp32_flops},
      {GemmKind::kTf32, &r->tf32_flops},
      {GemmKind::kFp16, &r->fp16_flops},
      {GemmKind::kBf16, &r->bf16_flops},
      {GemmKind::kInt8, &r->int8_ops}};
  for (const auto& [kind, out] : cases) {
    if (progress) {
      progress(std::string(GemmName(kind)) + " " + std::to_string(n) + "^3");
    }
    Result<double> ops =
        GemmThroughput(handle.get(), stream, kind, buf, reps, &r->notes);
    TESSERA_RETURN_IF_ERROR(ops);
    *out = *ops;
  }
  return {};
}

// --- Device memory bandwidth. ---

Status MeasureMemory(cudaStream_t stream, bool quick, int sm_count,
                     CalibrationResult* r) {
  size_t free_bytes = 0, total_bytes = 0;
  TESSERA_CUDA_TRY(cudaMemGetInfo(&free_bytes, &total_bytes));
  size_t bytes = (quick ? size_t{128} : size_t{512}) << 20;
  while (bytes > (size_t{16} << 20) && 2.5 * bytes > free_bytes) bytes /= 2;
  bytes -= bytes % sizeof(float4);
  DeviceBuffer src, dst;
  TESSERA_RETURN_IF_ERROR(src.Allocate(bytes));
  TESSERA_RETURN_IF_ERROR(dst.Allocate(bytes));
  TESSERA_RETURN_IF_ERROR(Fill<float>(src.get(), bytes / 4, stream));
  const Reps reps = quick ? Reps{1, 5} : Reps{3, 11};
  const size_t n4 = bytes / sizeof(float4);
  const int blocks = static_cast<int>(
      std::min<size_t>((n4 + 255) / 256, static_cast<size_t>(sm_count) * 32));
  Result<double> kernel = MedianSeconds(stream, reps, [&]() -> Status {
    CopyKernel<<<blocks, 256, 0, stream>>>(
        static_cast<const float4*>(src.get()), static_cast<float4*>(dst.get()),
        n4);
    TESSERA_CUDA_TRY(cudaGetLastError());
    return {};
  });
  TESSERA_RETURN_IF_ERROR(kernel);
  Result<double> memcpy = MedianSeconds(stream, reps, [&]() -> Status {
    TESSERA_CUDA_TRY(cudaMemcpyAsync(dst.get(), src.get(), bytes,
                                     cudaMemcpyDeviceToDevice, stream));
    return {};
  });
  TESSERA_RETURN_IF_ERROR(memcpy);
  r->memory_test_bytes = static_cast<int64_t>(bytes);
  r->memory_bandwidth = 2.0 * bytes / std::min(*kernel, *memcpy);
  return {};
}

// --- Transfers. ---

// Sizes 4 KiB, 16 KiB, ... up to `max_bytes`, each timed; the fit of
// latency + bytes / bandwidth over them. `copy(bytes)` enqueues one copy.
template <typename Copy>
Result<TransferFit> MeasureTransfer(cudaStream_t stream, size_t max_bytes,
                                    bool quick, Copy&& copy) {
  std::vector<TransferSample> samples;
  for (size_t size = 4096; size <= max_bytes; size *= 4) {
    Reps reps = size <= (size_t{1} << 20)    ? Reps{3, 21}
                : size <= (size_t{16} << 20) ? Reps{2, 11}
                                             : Reps{1, 5};
    if (quick) reps.timed = reps.timed / 2 + 1;
    Result<double> seconds =
        MedianSeconds(stream, reps, [&]() -> Status { return copy(size); });
    TESSERA_RETURN_IF_ERROR(seconds);
    samples.push_back({static_cast<double>(size), *seconds});
  }
  Result<TransferFit> fit = FitTransfer(samples);
  if (!fit) return Error{ErrorCode::kInternal, fit.error().message};
  return fit;
}

Status MeasureHostTransfers(cudaStream_t stream, bool quick,
                            CalibrationResult* r) {
  const size_t max_bytes = (quick ? size_t{64} : size_t{256}) << 20;
  PinnedBuffer host;
  DeviceBuffer device;
  TESSERA_RETURN_IF_ERROR(host.Allocate(max_bytes));
  TESSERA_RETURN_IF_ERROR(device.Allocate(max_bytes));
  for (const bool to_device : {true, false}) {
    Result<TransferFit> fit =
        MeasureTransfer(stream, max_bytes, quick, [&](size_t size) -> Status {
          TESSERA_CUDA_TRY(cudaMemcpyAsync(
              to_device ? device.get() : host.get(),
              to_device ? host.get() : device.get(), size,
              to_device ? cudaMemcpyHostToDevice : cudaMemcpyDeviceToHost,
              stream));
          return {};
        });
    TESSERA_RETURN_IF_ERROR(fit);
    (to_device ? r->host_to_device : r->device_to_host) = *fit;
  }
  return {};
}

// Peer to peer from `gpu` to `peer`; the caller turns a failure into a note.
Status MeasurePeer(cudaStream_t stream, int gpu, int peer, bool quick,
                   CalibrationResult* r) {
  bool enabled_here = false;
  const cudaError_t enable = cudaDeviceEnablePeerAccess(peer, 0);
  if (enable == cudaErrorPeerAccessAlreadyEnabled) {
    cudaGetLastError();  // clears the (non-sticky) error
  } else if (enable != cudaSuccess) {
    return Failed("cudaDeviceEnablePeerAccess", enable);
  } else {
    enabled_here = true;
  }
  const size_t max_bytes = (quick ? size_t{64} : size_t{256}) << 20;
  Status status = [&]() -> Status {
    DeviceBuffer src, dst;
    TESSERA_RETURN_IF_ERROR(src.Allocate(max_bytes));
    TESSERA_CUDA_TRY(cudaSetDevice(peer));
    const Status allocated = dst.Allocate(max_bytes);
    TESSERA_CUDA_TRY(cudaSetDevice(gpu));
    TESSERA_RETURN_IF_ERROR(allocated);
    Result<TransferFit> fit =
        MeasureTransfer(stream, max_bytes, quick, [&](size_t size) -> Status {
          TESSERA_CUDA_TRY(cudaMemcpyPeerAsync(dst.get(), peer, src.get(), gpu,
                                               size, stream));
          return {};
        });
    TESSERA_RETURN_IF_ERROR(fit);
    r->peer_to_peer = *fit;
    r->p2p_peer = peer;
    return {};
  }();
  if (enabled_here) cudaDeviceDisablePeerAccess(peer);
  return status;
}

// --- Launch overhead. ---

Result<double> LaunchOverhead(cudaStream_t stream, bool quick) {
  for (int i = 0; i < 100; ++i) EmptyKernel<<<1, 1, 0, stream>>>();
  TESSERA_CUDA_TRY(cudaGetLastError());
  TESSERA_CUDA_TRY(cudaStreamSynchronize(stream));
  const int launches = quick ? 2000 : 20000;
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < launches; ++i) EmptyKernel<<<1, 1, 0, stream>>>();
  TESSERA_CUDA_TRY(cudaGetLastError());
  TESSERA_CUDA_TRY(cudaStreamSynchronize(stream));
  const std::chrono::duration<double> elapsed =
      std::chrono::steady_clock::now() - start;
  return elapsed.count() / launches;
}

std::string TodayUtc() {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char buf[16];
  std::strftime(buf, sizeof(buf), "%Y-%m-%d", &tm);
  return buf;
}

}  // namespace

Result<CalibrationResult> Calibrate(const CalibrateOptions& options) {
  int count = 0;
  const cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess) {
    return Error{ErrorCode::kBadInput, std::string("no CUDA device found (") +
                                           cudaGetErrorString(err) + ")"};
  }
  if (count <= 0) {
    return Error{ErrorCode::kBadInput,
                 "no CUDA device found (the driver reports 0 devices)"};
  }
  if (options.gpu < 0 || options.gpu >= count) {
    return Error{ErrorCode::kBadInput,
                 "GPU " + std::to_string(options.gpu) +
                     " does not exist: this machine has " +
                     std::to_string(count) + " CUDA device" +
                     (count == 1 ? "" : "s") + " (valid: 0.." +
                     std::to_string(count - 1) + ")"};
  }
  const int gpu = options.gpu;
  const bool quick = options.quick;
  auto progress = [&](const std::string& what) {
    if (options.progress) options.progress(what);
  };

  TESSERA_CUDA_TRY(cudaSetDevice(gpu));
  cudaDeviceProp prop{};
  TESSERA_CUDA_TRY(cudaGetDeviceProperties(&prop, gpu));
  CalibrationResult r;
  r.gpu_index = gpu;
  r.gpu_name = prop.name;
  r.compute_major = prop.major;
  r.compute_minor = prop.minor;
  r.memory_bytes = static_cast<int64_t>(prop.totalGlobalMem);
  r.date = TodayUtc();

  Stream stream;
  TESSERA_RETURN_IF_ERROR(stream.Create());

  progress("kernel launch overhead");
  Result<double> launch = LaunchOverhead(stream.get(), quick);
  TESSERA_RETURN_IF_ERROR(launch);
  r.launch_overhead_s = *launch;

  TESSERA_RETURN_IF_ERROR(
      MeasureGemms(stream.get(), quick, &r, options.progress));

  progress("device memory bandwidth");
  TESSERA_RETURN_IF_ERROR(
      MeasureMemory(stream.get(), quick, prop.multiProcessorCount, &r));

  progress("host <-> device transfers (pinned)");
  TESSERA_RETURN_IF_ERROR(MeasureHostTransfers(stream.get(), quick, &r));

  if (count > 1) {
    const int peer = gpu == 0 ? 1 : 0;
    int can_access = 0;
    TESSERA_CUDA_TRY(cudaDeviceCanAccessPeer(&can_access, gpu, peer));
    if (!can_access) {
      r.notes.push_back("peer to peer skipped: gpu " + std::to_string(gpu) +
                        " cannot access gpu " + std::to_string(peer));
    } else {
      progress("peer to peer transfers to gpu " + std::to_string(peer));
      const Status p2p = MeasurePeer(stream.get(), gpu, peer, quick, &r);
      if (!p2p) {
        r.p2p_peer = -1;
        r.notes.push_back("peer to peer skipped: " + p2p.error().message);
        cudaGetLastError();
        TESSERA_CUDA_TRY(cudaSetDevice(gpu));
      }
    }
  } else {
    r.notes.push_back("peer to peer not measured: one GPU");
  }
  if (options.efficiency) {
    SweepEfficiency(gpu, quick, options.progress, &r);
  } else {
    r.notes.push_back("efficiency sweep skipped (--skip-efficiency)");
  }
  TESSERA_CUDA_TRY(cudaDeviceSynchronize());
  return r;
}

}  // namespace tessera::cuda
