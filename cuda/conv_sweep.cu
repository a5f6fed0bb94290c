// calibrate's convolution sweep through cuDNN's legacy API: for each shape
// the fastest forward algorithm by cudnnFindConvolutionForwardAlgorithm
// (what PyTorch's cudnn.benchmark picks), timed as cuBLAS GEMMs are.
// Built only when cudnn.h is found (cuda/CMakeLists.txt).
#include <cudnn.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "cuda/efficiency_sweep_internal.h"

namespace tessera::cuda {
namespace {

Error CudnnFailed(const std::string& what, cudnnStatus_t s) {
  return Error{ErrorCode::kInternal,
               what + ": " + cudnnGetErrorString(s) + " (cuDNN status " +
                   std::to_string(static_cast<int>(s)) + ")"};
}

#define TESSERA_CUDNN_TRY(expr)                      \
  do {                                               \
    const cudnnStatus_t tessera_cudnn_st_ = (expr);  \
    if (tessera_cudnn_st_ != CUDNN_STATUS_SUCCESS) { \
      return CudnnFailed(#expr, tessera_cudnn_st_);  \
    }                                                \
  } while (false)

// A cuDNN handle or descriptor, destroyed with `Destroy`.
template <typename T, cudnnStatus_t (*Destroy)(T)>
class CudnnObject {
 public:
  CudnnObject() = default;
  CudnnObject(const CudnnObject&) = delete;
  CudnnObject& operator=(const CudnnObject&) = delete;
  ~CudnnObject() {
    if (object_ != nullptr) Destroy(object_);
  }
  T* out() { return &object_; }
  T get() const { return object_; }

 private:
  T object_ = nullptr;
};

using CudnnHandle = CudnnObject<cudnnHandle_t, cudnnDestroy>;
using TensorDesc =
    CudnnObject<cudnnTensorDescriptor_t, cudnnDestroyTensorDescriptor>;
using FilterDesc =
    CudnnObject<cudnnFilterDescriptor_t, cudnnDestroyFilterDescriptor>;
using ConvDesc = CudnnObject<cudnnConvolutionDescriptor_t,
                             cudnnDestroyConvolutionDescriptor>;

struct ConvShape {
  const char* kind;  // an estimator::KernelKindName
  int n, c, h, w, k, r, s, stride, pad, groups;
};

// ResNet-50-, MobileNetV2- and VGG-like layers at batch 32, 8 and 1; the
// quick sweep takes every other one.
std::vector<ConvShape> ConvShapes(bool quick) {
  const std::vector<ConvShape> all = {
      {"spatial_conv", 32, 64, 56, 56, 64, 3, 3, 1, 1, 1},
      {"spatial_conv", 32, 128, 28, 28, 128, 3, 3, 1, 1, 1},
      {"spatial_conv", 32, 256, 14, 14, 256, 3, 3, 1, 1, 1},
      {"spatial_conv", 32, 512, 7, 7, 512, 3, 3, 1, 1, 1},
      {"spatial_conv", 8, 128, 28, 28, 128, 3, 3, 1, 1, 1},
      {"spatial_conv", 1, 64, 56, 56, 64, 3, 3, 1, 1, 1},
      {"spatial_conv", 32, 3, 224, 224, 64, 7, 7, 2, 3, 1},
      {"conv", 32, 256, 56, 56, 64, 1, 1, 1, 0, 1},
      {"conv", 32, 64, 56, 56, 256, 1, 1, 1, 0, 1},
      {"conv", 32, 1024, 14, 14, 256, 1, 1, 1, 0, 1},
      {"conv", 32, 2048, 7, 7, 512, 1, 1, 1, 0, 1},
      {"conv", 8, 512, 28, 28, 128, 1, 1, 1, 0, 1},
      {"conv", 1, 256, 56, 56, 64, 1, 1, 1, 0, 1},
      {"depthwise_conv", 32, 32, 112, 112, 32, 3, 3, 1, 1, 32},
      {"depthwise_conv", 32, 144, 56, 56, 144, 3, 3, 1, 1, 144},
      {"depthwise_conv", 32, 384, 14, 14, 384, 3, 3, 1, 1, 384},
      {"depthwise_conv", 32, 960, 7, 7, 960, 3, 3, 1, 1, 960},
      {"depthwise_conv", 8, 192, 28, 28, 192, 3, 3, 1, 1, 192},
      {"depthwise_conv", 1, 96, 112, 112, 96, 3, 3, 1, 1, 96}};
  if (!quick) return all;
  std::vector<ConvShape> some;
  for (size_t i = 0; i < all.size(); i += 2) some.push_back(all[i]);
  return some;
}

// Workspace cuDNN may use per algorithm; PyTorch's caching allocator
// offers what is free, this keeps the sweep's footprint bounded.
constexpr size_t kMaxWorkspaceBytes = size_t{1} << 30;

// Times one convolution in NCHW (PyTorch's default layout) with the
// fastest algorithm of the wanted math type.
Result<KernelSample> TimeConvolution(cudnnHandle_t handle, cudaStream_t stream,
                                     const ConvShape& shape, bool bf16,
                                     Reps reps, double peak) {
  const cudnnDataType_t type = bf16 ? CUDNN_DATA_BFLOAT16 : CUDNN_DATA_FLOAT;
  TensorDesc x_desc, y_desc;
  FilterDesc w_desc;
  ConvDesc conv_desc;
  TESSERA_CUDNN_TRY(cudnnCreateTensorDescriptor(x_desc.out()));
  TESSERA_CUDNN_TRY(cudnnCreateTensorDescriptor(y_desc.out()));
  TESSERA_CUDNN_TRY(cudnnCreateFilterDescriptor(w_desc.out()));
  TESSERA_CUDNN_TRY(cudnnCreateConvolutionDescriptor(conv_desc.out()));
  TESSERA_CUDNN_TRY(cudnnSetTensor4dDescriptor(x_desc.get(), CUDNN_TENSOR_NCHW,
                                               type, shape.n, shape.c, shape.h,
                                               shape.w));
  TESSERA_CUDNN_TRY(
      cudnnSetFilter4dDescriptor(w_desc.get(), type, CUDNN_TENSOR_NCHW, shape.k,
                                 shape.c / shape.groups, shape.r, shape.s));
  TESSERA_CUDNN_TRY(cudnnSetConvolution2dDescriptor(
      conv_desc.get(), shape.pad, shape.pad, shape.stride, shape.stride, 1, 1,
      CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT));
  TESSERA_CUDNN_TRY(
      cudnnSetConvolutionGroupCount(conv_desc.get(), shape.groups));
  // fp32: FMA kernels only (TF32 off, as the fp32 peak was measured).
  const cudnnMathType_t math = bf16 ? CUDNN_TENSOR_OP_MATH : CUDNN_FMA_MATH;
  TESSERA_CUDNN_TRY(cudnnSetConvolutionMathType(conv_desc.get(), math));
  int n = 0, c = 0, h = 0, w = 0;
  TESSERA_CUDNN_TRY(cudnnGetConvolution2dForwardOutputDim(
      conv_desc.get(), x_desc.get(), w_desc.get(), &n, &c, &h, &w));
  TESSERA_CUDNN_TRY(cudnnSetTensor4dDescriptor(y_desc.get(), CUDNN_TENSOR_NCHW,
                                               type, n, c, h, w));
  const size_t element = bf16 ? 2 : 4;
  const size_t x_elems = size_t(shape.n) * shape.c * shape.h * shape.w;
  const size_t w_elems =
      size_t(shape.k) * (shape.c / shape.groups) * shape.r * shape.s;
  const size_t y_elems = size_t(n) * c * h * w;
  DeviceBuffer x, wt, y;
  TESSERA_RETURN_IF_ERROR(x.Allocate(x_elems * element));
  TESSERA_RETURN_IF_ERROR(wt.Allocate(w_elems * element));
  TESSERA_RETURN_IF_ERROR(y.Allocate(y_elems * element));
  for (const auto& [buffer, elems] : {std::pair{&x, x_elems}, {&wt, w_elems}}) {
    if (bf16) {
      TESSERA_RETURN_IF_ERROR(
          Fill<__nv_bfloat16>(buffer->get(), elems, stream));
    } else {
      TESSERA_RETURN_IF_ERROR(Fill<float>(buffer->get(), elems, stream));
    }
  }
  TESSERA_CUDA_TRY(cudaStreamSynchronize(stream));

  cudnnConvolutionFwdAlgoPerf_t perf[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
  int returned = 0;
  TESSERA_CUDNN_TRY(cudnnFindConvolutionForwardAlgorithm(
      handle, x_desc.get(), w_desc.get(), conv_desc.get(), y_desc.get(),
      CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &returned, perf));
  const cudnnConvolutionFwdAlgoPerf_t* best = nullptr;
  for (int i = 0; i < returned; ++i) {  // fastest first
    if (perf[i].status != CUDNN_STATUS_SUCCESS ||
        perf[i].memory > kMaxWorkspaceBytes) {
      continue;
    }
    if (!bf16 && perf[i].mathType != CUDNN_FMA_MATH &&
        perf[i].mathType != CUDNN_DEFAULT_MATH) {
      continue;
    }
    best = &perf[i];
    break;
  }
  if (best == nullptr) {
    return Internal("no cuDNN algorithm runs it with " +
                    std::string(bf16 ? "tensor-op" : "FMA") + " math");
  }
  // bf16: the math type the fastest algorithm wants; fp32 stays FMA-only
  // (on Ampere and later the default math type would allow TF32).
  if (bf16) {
    TESSERA_CUDNN_TRY(
        cudnnSetConvolutionMathType(conv_desc.get(), best->mathType));
  }
  DeviceBuffer workspace;
  if (best->memory > 0) {
    TESSERA_RETURN_IF_ERROR(workspace.Allocate(best->memory));
  }
  const double flops =
      2.0 * n * c * h * w * (shape.c / shape.groups) * shape.r * shape.s;
  const float alpha = 1.0f, beta = 0.0f;
  bool captured = false;
  Result<double> seconds = BurstSeconds(
      stream, reps,
      std::clamp(static_cast<int>(peak * 1e-3 / flops) + 1, 1, 50),
      [&]() -> Status {
        TESSERA_CUDNN_TRY(cudnnConvolutionForward(
            handle, &alpha, x_desc.get(), x.get(), w_desc.get(), wt.get(),
            conv_desc.get(), best->algo, workspace.get(), best->memory, &beta,
            y_desc.get(), y.get()));
        return {};
      },
      &captured);
  TESSERA_RETURN_IF_ERROR(seconds);
  KernelSample sample;
  sample.shape = std::to_string(shape.n) + "x" + std::to_string(shape.c) + "x" +
                 std::to_string(shape.h) + "x" + std::to_string(shape.w) +
                 " k" + std::to_string(shape.k) + " " +
                 std::to_string(shape.r) + "x" + std::to_string(shape.s) +
                 (shape.stride > 1 ? " s" + std::to_string(shape.stride) : "") +
                 (shape.groups > 1 ? " g" + std::to_string(shape.groups) : "");
  sample.flops = flops;
  sample.seconds = *seconds;
  return sample;
}

}  // namespace

Status SweepConvolutions(cudaStream_t stream, bool quick,
                         const Progress& progress, CalibrationResult* r) {
  CudnnHandle handle;
  TESSERA_CUDNN_TRY(cudnnCreate(handle.out()));
  TESSERA_CUDNN_TRY(cudnnSetStream(handle.get(), stream));
  const Reps reps = quick ? Reps{1, 3} : Reps{2, 5};
  for (const bool bf16 : {false, true}) {
    const double peak = bf16 ? r->bf16_flops : r->fp32_flops;
    const std::string dtype = bf16 ? "bf16" : "fp32";
    if (!(peak > 0)) {
      r->notes.push_back("convolution " + dtype +
                         " efficiency not measured: no " + dtype + " peak");
      continue;
    }
    if (progress) progress("efficiency: cuDNN convolution sweep, " + dtype);
    // Depthwise convolutions get no tensor cores in the time model: fp32
    // only.
    for (const char* kind : {"conv", "spatial_conv", "depthwise_conv"}) {
      if (bf16 && std::string(kind) == "depthwise_conv") continue;
      KernelSweep sweep;
      sweep.kind = kind;
      sweep.tensor_cores = bf16;
      sweep.dtype = dtype;
      sweep.peak_flops = peak;
      int failed = 0;
      std::string first_error;
      for (const ConvShape& shape : ConvShapes(quick)) {
        if (sweep.kind != shape.kind) continue;
        Result<KernelSample> sample =
            TimeConvolution(handle.get(), stream, shape, bf16, reps, peak);
        if (!sample) {
          cudaGetLastError();
          if (failed++ == 0) first_error = sample.error().message;
          continue;
        }
        sweep.samples.push_back(*sample);
      }
      if (failed > 0) {
        r->notes.push_back(sweep.kind + " " + dtype + ": " +
                           std::to_string(failed) + " shape(s) not timed (" +
                           first_error + ")");
      }
      r->efficiency.sweeps.push_back(std::move(sweep));
    }
  }
  return {};
}

}  // namespace tessera::cuda
