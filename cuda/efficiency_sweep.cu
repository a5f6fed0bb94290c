// calibrate's efficiency sweep: how close kernels come to the peaks the
// rest of calibrate measured, by size (docs/cli.md, "Calibration").
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "cuda/efficiency_sweep_internal.h"

namespace tessera::cuda {
namespace {

// --- Kernels. ---

__global__ void NothingKernel() {}

// y = a x + b over float4s, one per thread: the shape of a framework's
// elementwise kernel.
__global__ void AxpbKernel(const float4* __restrict__ in,
                           float4* __restrict__ out, size_t n, float a,
                           float b) {
  const size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
  if (i < n) {
    const float4 v = in[i];
    out[i] = make_float4(a * v.x + b, a * v.y + b, a * v.z + b, a * v.w + b);
  }
}

// An instantiated CUDA graph.
class GraphExec {
 public:
  GraphExec() = default;
  GraphExec(const GraphExec&) = delete;
  GraphExec& operator=(const GraphExec&) = delete;
  ~GraphExec() {
    if (exec_ != nullptr) cudaGraphExecDestroy(exec_);
  }
  // Captures `count` calls of `enqueue` on `stream`; false (and any error
  // cleared) when capture or instantiation fails.
  bool Capture(cudaStream_t stream, int count,
               const std::function<Status()>& enqueue) {
    if (cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal) !=
        cudaSuccess) {
      cudaGetLastError();
      return false;
    }
    bool ok = true;
    for (int i = 0; i < count && ok; ++i) ok = enqueue().ok();
    cudaGraph_t graph = nullptr;
    ok = cudaStreamEndCapture(stream, &graph) == cudaSuccess && ok &&
         graph != nullptr;
    if (ok) ok = cudaGraphInstantiate(&exec_, graph, 0) == cudaSuccess;
    if (graph != nullptr) cudaGraphDestroy(graph);
    if (!ok) {
      if (exec_ != nullptr) cudaGraphExecDestroy(exec_);
      exec_ = nullptr;
      cudaGetLastError();
    }
    return ok;
  }
  cudaGraphExec_t get() const { return exec_; }

 private:
  cudaGraphExec_t exec_ = nullptr;
};

// Calls of a kernel of `flops` per burst: about a millisecond of work at
// `peak`, at most 100.
int BurstFor(double flops, double peak) {
  return static_cast<int>(
      std::clamp(std::ceil(peak * 1e-3 / flops), 1.0, 100.0));
}

// --- Kernel time. ---

Status MeasureKernelTime(cudaStream_t stream, bool quick,
                         CalibrationResult* r) {
  bool captured = false;
  Result<double> seconds = BurstSeconds(
      stream, quick ? Reps{1, 3} : Reps{2, 7}, quick ? 200 : 1000,
      [&]() -> Status {
        NothingKernel<<<1, 1, 0, stream>>>();
        TESSERA_CUDA_TRY(cudaGetLastError());
        return {};
      },
      &captured);
  TESSERA_RETURN_IF_ERROR(seconds);
  if (!captured) {
    r->notes.push_back(
        "kernel_time not measured: CUDA graph capture failed, and plain "
        "launches would time the host");
    return {};
  }
  r->efficiency.kernel_s = *seconds;
  return {};
}

// --- Elementwise bandwidth. ---

Status MeasureElementwise(cudaStream_t stream, bool quick,
                          CalibrationResult* r) {
  if (!(r->memory_bandwidth > 0)) {
    return Internal("no memory bandwidth to relate it to");
  }
  size_t free_bytes = 0, total_bytes = 0;
  TESSERA_CUDA_TRY(cudaMemGetInfo(&free_bytes, &total_bytes));
  // From 128 MiB up: the 50 MB L2 cache of an H100 would hold part of
  // smaller buffers across the back-to-back calls of a burst.
  size_t max_bytes = (quick ? size_t{256} : size_t{512}) << 20;
  while (max_bytes > (size_t{128} << 20) && 2.5 * max_bytes > free_bytes) {
    max_bytes /= 2;
  }
  DeviceBuffer in, out;
  TESSERA_RETURN_IF_ERROR(in.Allocate(max_bytes));
  TESSERA_RETURN_IF_ERROR(out.Allocate(max_bytes));
  TESSERA_RETURN_IF_ERROR(Fill<float>(in.get(), max_bytes / 4, stream));
  std::vector<TransferSample> samples;
  for (size_t bytes = size_t{128} << 20; bytes <= max_bytes; bytes *= 2) {
    const size_t n4 = bytes / sizeof(float4);
    const unsigned blocks = static_cast<unsigned>((n4 + 255) / 256);
    bool captured = false;
    Result<double> seconds = BurstSeconds(
        stream, quick ? Reps{1, 3} : Reps{2, 7}, 4,
        [&]() -> Status {
          AxpbKernel<<<blocks, 256, 0, stream>>>(
              static_cast<const float4*>(in.get()),
              static_cast<float4*>(out.get()), n4, 1.0009765625f, 0.5f);
          TESSERA_CUDA_TRY(cudaGetLastError());
          return {};
        },
        &captured);
    TESSERA_RETURN_IF_ERROR(seconds);
    samples.push_back({2.0 * static_cast<double>(bytes), *seconds});
  }
  if (samples.size() < 2) {
    return Internal("too little free memory for buffers beyond the cache");
  }
  Result<TransferFit> fit = FitTransfer(samples);
  if (!fit) return Internal(fit.error().message);
  r->efficiency.elementwise = *fit;
  r->efficiency.elementwise_bandwidth =
      std::min(1.0, fit->bytes_per_second / r->memory_bandwidth);
  return {};
}

// --- GEMMs. ---

struct GemmShape {
  int m, n, k;
};

// Square GEMMs across sizes, and the skinny ones of linear layers (batch-1
// token x hidden, BERT-base and GPT-2 projections at 4096 tokens).
std::vector<GemmShape> GemmShapes(bool quick) {
  if (quick) {
    return {{256, 256, 256},
            {1024, 1024, 1024},
            {4096, 4096, 4096},
            {64, 4096, 4096},
            {4096, 768, 768}};
  }
  return {{256, 256, 256},    {512, 512, 512},    {1024, 1024, 1024},
          {2048, 2048, 2048}, {4096, 4096, 4096}, {8192, 8192, 8192},
          {64, 4096, 4096},   {512, 4096, 1024},  {4096, 768, 768},
          {4096, 3072, 768},  {8192, 1024, 4096}, {32, 1000, 2048}};
}

cublasStatus_t EnqueueGemm(cublasHandle_t handle, bool bf16, const GemmShape& g,
                           void* a, void* b, void* c) {
  const float alpha = 1.0f, beta = 0.0f;
  if (!bf16) {
    return cublasSgemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, g.m, g.n, g.k, &alpha,
                       static_cast<const float*>(a), g.m,
                       static_cast<const float*>(b), g.k, &beta,
                       static_cast<float*>(c), g.m);
  }
  return cublasGemmEx(handle, CUBLAS_OP_N, CUBLAS_OP_N, g.m, g.n, g.k, &alpha,
                      a, CUDA_R_16BF, g.m, b, CUDA_R_16BF, g.k, &beta, c,
                      CUDA_R_16BF, g.m, CUBLAS_COMPUTE_32F,
                      CUBLAS_GEMM_DEFAULT);
}

Status SweepGemms(cudaStream_t stream, bool quick, const Progress& progress,
                  CalibrationResult* r) {
  size_t free_bytes = 0, total_bytes = 0;
  TESSERA_CUDA_TRY(cudaMemGetInfo(&free_bytes, &total_bytes));
  // A, B and C of 4-byte elements each as large as the largest operand that
  // fits, with a margin for cuBLAS's workspace.
  std::vector<GemmShape> shapes;
  size_t elems = 0;
  for (const GemmShape& g : GemmShapes(quick)) {
    const size_t most =
        std::max({size_t(g.m) * g.k, size_t(g.k) * g.n, size_t(g.m) * g.n});
    if (3.0 * std::max(elems, most) * 4 * 1.2 >
        static_cast<double>(free_bytes)) {
      continue;
    }
    elems = std::max(elems, most);
    shapes.push_back(g);
  }
  DeviceBuffer a, b, c, workspace;
  TESSERA_RETURN_IF_ERROR(a.Allocate(elems * 4));
  TESSERA_RETURN_IF_ERROR(b.Allocate(elems * 4));
  TESSERA_RETURN_IF_ERROR(c.Allocate(elems * 4));
  // A workspace of our own: cuBLAS must not allocate inside a capture.
  const size_t workspace_bytes = size_t{32} << 20;
  TESSERA_RETURN_IF_ERROR(workspace.Allocate(workspace_bytes));
  CublasHandle handle;
  TESSERA_RETURN_IF_ERROR(handle.Create(stream));
  TESSERA_CUBLAS_TRY(
      cublasSetWorkspace(handle.get(), workspace.get(), workspace_bytes));
  // TF32 off: fp32 is measured on CUDA cores, as the fp32 peak was.
  TESSERA_CUBLAS_TRY(cublasSetMathMode(handle.get(), CUBLAS_DEFAULT_MATH));
  for (const bool bf16 : {false, true}) {
    KernelSweep sweep;
    sweep.kind = "gemm";
    sweep.tensor_cores = bf16;
    sweep.dtype = bf16 ? "bf16" : "fp32";
    sweep.peak_flops = bf16 ? r->bf16_flops : r->fp32_flops;
    if (!(sweep.peak_flops > 0)) {
      r->notes.push_back("gemm " + sweep.dtype +
                         " efficiency not measured: no " + sweep.dtype +
                         " peak");
      continue;
    }
    if (progress) progress("efficiency: cuBLAS GEMM sweep, " + sweep.dtype);
    for (DeviceBuffer* m : {&a, &b}) {
      if (bf16) {
        TESSERA_RETURN_IF_ERROR(Fill<__nv_bfloat16>(m->get(), elems, stream));
      } else {
        TESSERA_RETURN_IF_ERROR(Fill<float>(m->get(), elems, stream));
      }
    }
    for (const GemmShape& g : shapes) {
      const double flops = 2.0 * g.m * g.n * g.k;
      bool captured = false;
      Result<double> seconds = BurstSeconds(
          stream, quick ? Reps{1, 3} : Reps{2, 5},
          BurstFor(flops, sweep.peak_flops),
          [&]() -> Status {
            TESSERA_CUBLAS_TRY(
                EnqueueGemm(handle.get(), bf16, g, a.get(), b.get(), c.get()));
            return {};
          },
          &captured);
      TESSERA_RETURN_IF_ERROR(seconds);
      sweep.samples.push_back({std::to_string(g.m) + "x" + std::to_string(g.n) +
                                   "x" + std::to_string(g.k),
                               flops, *seconds});
    }
    r->efficiency.sweeps.push_back(std::move(sweep));
  }
  return {};
}

// A failed part of the sweep becomes a note (and CUDA's last error is
// cleared).
void Try(const std::string& what, const Status& status, CalibrationResult* r) {
  if (status) return;
  cudaGetLastError();
  r->notes.push_back(what + " skipped: " + status.error().message);
}

}  // namespace

Result<double> BurstSeconds(cudaStream_t stream, Reps reps, int burst,
                            const std::function<Status()>& enqueue,
                            bool* captured) {
  TESSERA_RETURN_IF_ERROR(enqueue());
  TESSERA_CUDA_TRY(cudaStreamSynchronize(stream));
  GraphExec graph;
  *captured = graph.Capture(stream, burst, enqueue);
  Result<double> seconds = MedianSeconds(stream, reps, [&]() -> Status {
    if (*captured) {
      TESSERA_CUDA_TRY(cudaGraphLaunch(graph.get(), stream));
      return {};
    }
    for (int i = 0; i < burst; ++i) TESSERA_RETURN_IF_ERROR(enqueue());
    return {};
  });
  TESSERA_RETURN_IF_ERROR(seconds);
  return *seconds / burst;
}

void SweepEfficiency(int gpu, bool quick, const Progress& progress,
                     CalibrationResult* r) {
  r->efficiency.ran = true;
  Stream stream;
  if (const Status s = stream.Create(); !s) {
    Try("efficiency sweep", s, r);
    return;
  }
  if (progress) progress("efficiency: empty kernel time (CUDA graph)");
  Try("kernel_time", MeasureKernelTime(stream.get(), quick, r), r);
  if (progress) progress("efficiency: elementwise kernel bandwidth");
  Try("elementwise bandwidth", MeasureElementwise(stream.get(), quick, r), r);
  Try("GEMM efficiency sweep", SweepGemms(stream.get(), quick, progress, r), r);
#if TESSERA_HAVE_CUDNN
  Try("convolution efficiency sweep",
      SweepConvolutions(stream.get(), quick, progress, r), r);
#else
  r->notes.push_back(
      "convolution efficiency not measured: built without cuDNN (cudnn.h "
      "not found at configure time)");
#endif
  for (KernelSweep& sweep : r->efficiency.sweeps) {
    if (const Status s = FitKernelSweep(r->efficiency.kernel_s, &sweep); !s) {
      r->notes.push_back("efficiency fit skipped: " + s.error().message);
    }
  }
  if (progress) progress("efficiency: PyTorch eager dispatch (python3)");
  Result<double> eager = MeasureEagerOverhead(gpu, quick);
  if (eager) {
    r->efficiency.eager_op_s = *eager;
  } else {
    r->notes.push_back("eager_op not measured: " + eager.error().message);
  }
}

}  // namespace tessera::cuda
