#ifndef TESSERA_CUDA_CUDA_INTERNAL_H_
#define TESSERA_CUDA_CUDA_INTERNAL_H_

// What calibrate's CUDA sources share: errors as values, RAII holders of
// CUDA and cuBLAS objects, input fills and the median timer. Include from
// .cu files only (it declares kernels).

#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "common/result.h"

namespace tessera::cuda {

inline Error Failed(const std::string& what, cudaError_t err) {
  return Error{ErrorCode::kInternal,
               what + ": " + cudaGetErrorString(err) + " (CUDA error " +
                   std::to_string(static_cast<int>(err)) + ")"};
}

inline std::string CublasText(cublasStatus_t s) {
  return std::string(cublasGetStatusName(s)) + ": " + cublasGetStatusString(s);
}

inline Error CublasFailed(const std::string& what, cublasStatus_t s) {
  return Error{ErrorCode::kInternal, what + ": " + CublasText(s)};
}

#define TESSERA_CUDA_TRY(expr)                    \
  do {                                            \
    const cudaError_t tessera_cuda_err_ = (expr); \
    if (tessera_cuda_err_ != cudaSuccess) {       \
      return Failed(#expr, tessera_cuda_err_);    \
    }                                             \
  } while (false)

#define TESSERA_CUBLAS_TRY(expr)                       \
  do {                                                 \
    const cublasStatus_t tessera_cublas_st_ = (expr);  \
    if (tessera_cublas_st_ != CUBLAS_STATUS_SUCCESS) { \
      return CublasFailed(#expr, tessera_cublas_st_);  \
    }                                                  \
  } while (false)

// --- RAII holders; their destructors ignore errors (nothing to do then). ---

class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  ~DeviceBuffer() {
    if (ptr_ == nullptr) return;
    int current = 0;
    if (cudaGetDevice(&current) == cudaSuccess && current != device_) {
      cudaSetDevice(device_);
      cudaFree(ptr_);
      cudaSetDevice(current);
    } else {
      cudaFree(ptr_);
    }
  }
  // Allocates on the current device.
  Status Allocate(size_t bytes) {
    TESSERA_CUDA_TRY(cudaGetDevice(&device_));
    TESSERA_CUDA_TRY(cudaMalloc(&ptr_, bytes));
    return {};
  }
  void* get() const { return ptr_; }

 private:
  void* ptr_ = nullptr;
  int device_ = 0;
};

class PinnedBuffer {
 public:
  PinnedBuffer() = default;
  PinnedBuffer(const PinnedBuffer&) = delete;
  PinnedBuffer& operator=(const PinnedBuffer&) = delete;
  ~PinnedBuffer() {
    if (ptr_ != nullptr) cudaFreeHost(ptr_);
  }
  Status Allocate(size_t bytes) {
    TESSERA_CUDA_TRY(cudaMallocHost(&ptr_, bytes));
    return {};
  }
  void* get() const { return ptr_; }

 private:
  void* ptr_ = nullptr;
};

class Stream {
 public:
  Stream() = default;
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  ~Stream() {
    if (stream_ != nullptr) cudaStreamDestroy(stream_);
  }
  Status Create() {
    TESSERA_CUDA_TRY(
        cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
    return {};
  }
  cudaStream_t get() const { return stream_; }

 private:
  cudaStream_t stream_ = nullptr;
};

class Event {
 public:
  Event() = default;
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
  ~Event() {
    if (event_ != nullptr) cudaEventDestroy(event_);
  }
  Status Create() {
    TESSERA_CUDA_TRY(cudaEventCreate(&event_));
    return {};
  }
  cudaEvent_t get() const { return event_; }

 private:
  cudaEvent_t event_ = nullptr;
};

class CublasHandle {
 public:
  CublasHandle() = default;
  CublasHandle(const CublasHandle&) = delete;
  CublasHandle& operator=(const CublasHandle&) = delete;
  ~CublasHandle() {
    if (handle_ != nullptr) cublasDestroy(handle_);
  }
  Status Create(cudaStream_t stream) {
    TESSERA_CUBLAS_TRY(cublasCreate(&handle_));
    TESSERA_CUBLAS_TRY(cublasSetStream(handle_, stream));
    return {};
  }
  cublasHandle_t get() const { return handle_; }

 private:
  cublasHandle_t handle_ = nullptr;
};

// --- Kernels. ---

__device__ inline float Pattern(size_t i) {
  const uint32_t h = static_cast<uint32_t>(i) * 2654435761u;
  return static_cast<float>((h >> 16) & 0xff) / 256.0f - 0.5f;
}

template <typename T>
__device__ T FromFloat(float v);
template <>
__device__ inline float FromFloat<float>(float v) {
  return v;
}
template <>
__device__ inline __half FromFloat<__half>(float v) {
  return __float2half(v);
}
template <>
__device__ inline __nv_bfloat16 FromFloat<__nv_bfloat16>(float v) {
  return __float2bfloat16(v);
}
template <>
__device__ inline int8_t FromFloat<int8_t>(float v) {
  return static_cast<int8_t>(v * 16.0f);
}

// Non-trivial data: zeros would understate the power, and so the time, of a
// tensor-core GEMM.
template <typename T>
__global__ void FillKernel(T* data, size_t n) {
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
       i < n; i += static_cast<size_t>(gridDim.x) * blockDim.x) {
    data[i] = FromFloat<T>(Pattern(i));
  }
}

template <typename T>
Status Fill(void* data, size_t n, cudaStream_t stream) {
  FillKernel<T><<<1024, 256, 0, stream>>>(static_cast<T*>(data), n);
  TESSERA_CUDA_TRY(cudaGetLastError());
  return {};
}
// --- Timing. ---

struct Reps {
  int warmup = 2;
  int timed = 5;
};

// Median seconds of `reps.timed` runs of `body` (which enqueues work on
// `stream` and returns a Status), after `reps.warmup` untimed runs.
template <typename Body>
Result<double> MedianSeconds(cudaStream_t stream, Reps reps, Body&& body) {
  Event start, stop;
  TESSERA_RETURN_IF_ERROR(start.Create());
  TESSERA_RETURN_IF_ERROR(stop.Create());
  for (int i = 0; i < reps.warmup; ++i) TESSERA_RETURN_IF_ERROR(body());
  TESSERA_CUDA_TRY(cudaStreamSynchronize(stream));
  std::vector<double> seconds;
  for (int i = 0; i < reps.timed; ++i) {
    TESSERA_CUDA_TRY(cudaEventRecord(start.get(), stream));
    TESSERA_RETURN_IF_ERROR(body());
    TESSERA_CUDA_TRY(cudaEventRecord(stop.get(), stream));
    TESSERA_CUDA_TRY(cudaEventSynchronize(stop.get()));
    float ms = 0;
    TESSERA_CUDA_TRY(cudaEventElapsedTime(&ms, start.get(), stop.get()));
    seconds.push_back(ms * 1e-3);
  }
  std::sort(seconds.begin(), seconds.end());
  const size_t n = seconds.size();
  if (n == 0) return Error{ErrorCode::kInternal, "no timed repetitions"};
  return n % 2 == 1 ? seconds[n / 2]
                    : 0.5 * (seconds[n / 2 - 1] + seconds[n / 2]);
}

}  // namespace tessera::cuda

#endif  // TESSERA_CUDA_CUDA_INTERNAL_H_
