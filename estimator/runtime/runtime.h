#ifndef TESSERA_ESTIMATOR_RUNTIME_RUNTIME_H_
#define TESSERA_ESTIMATOR_RUNTIME_RUNTIME_H_

// What a job costs depends on what runs it. A runtime model lowers the ONNX
// graph to the operators a framework really dispatches (PyTorch eager runs
// nn.GELU as one kernel where the export has five nodes, a Linear as one
// addmm, reshapes of transposed tensors as copies), then
// - times a step as the framework's host thread and the GPU's stream
//   overlap: every operator costs host time to dispatch and GPU time to run,
//   and the GPU waits for the host when kernels are short (batch 1);
// - follows memory as the framework does: outputs allocated when an operator
//   runs and freed after their last use, in training the tensors autograd
//   really saves for backward (per operator type), gradients and optimizer
//   state, library workspaces, all through a simulation of the caching
//   allocator, which gives both the live peak and what the allocator holds
//   from the GPU (the reserved peak another job cannot use).
// docs/estimator.md ("Runtimes") states every rule and the fitted constants.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "estimator/device_catalog.h"
#include "estimator/memory_model.h"
#include "estimator/op_cost.h"
#include "graph/graph.h"

namespace tessera::estimator {

enum class Runtime : uint8_t {
  kRoofline,     // "none": the plain per-operator roofline (no framework)
  kPyTorch,      // "pytorch": eager mode, caching allocator, autograd
  kOnnxRuntime,  // "onnxruntime": the CUDA execution provider, inference
};
// "none", "pytorch", "onnxruntime"; else kBadInput "runtime 'TEXT': ...".
Result<Runtime> ParseRuntime(std::string_view text);
std::string_view RuntimeName(Runtime r);

// Mixed precision. kBf16/kFp16: autocast semantics (matrix products and
// convolutions in the low precision, softmax/layer norm/reductions in fp32,
// everything else in its inputs' type; weights and optimizer in fp32).
enum class Amp : uint8_t { kNone, kBf16, kFp16 };
// "none", "bf16", "fp16"; else kBadInput "amp 'TEXT': ...".
Result<Amp> ParseAmp(std::string_view text);
std::string_view AmpName(Amp a);

// How attention (MatMul -> scale -> [mask] -> Softmax -> MatMul) runs.
// kAuto: fused (scaled_dot_product_attention, no score matrix kept) when the
// pattern has no mask, as nn.MultiheadAttention runs it; unfused when a mask
// is applied by hand (Hugging Face's eager attention, hand-written blocks).
enum class Attention : uint8_t { kAuto, kFused, kUnfused };
// "auto", "fused", "unfused"; else kBadInput "attention 'TEXT': ...".
Result<Attention> ParseAttention(std::string_view text);
std::string_view AttentionName(Attention a);

// The framework's costs on the host and its allocator's rules. Defaults are
// PyTorch 2.x eager, fitted on data/gpu-truth (docs/estimator.md).
struct RuntimeCosts {
  double op_s = 0;               // host time to dispatch one module-level op
  double view_s = 0;             // a view (reshape, transpose, split)
  double cast_s = 0;             // an autocast-inserted cast
  double amp_op_s = 0;           // autocast's extra dispatch, per op
  double record_s = 0;           // training: autograd recording per op
  double backward_op_s = 0;      // the autograd engine, per backward node
  double optimizer_op_s = 0;     // the optimizer, per weight tensor
  double optimizer_fixed_s = 0;  // the optimizer step's fixed cost
  double step_fixed_s = 0;       // per step (Python loop, loss, zero_grad)
  // The optimizer's GPU work: its traffic as a multiple of the parameters'
  // bytes (Adam's foreach kernels read and write weights, gradients, both
  // moments and temporaries) plus a time per parameter tensor.
  double adam_traffic = 16.0;
  double optimizer_tensor_gpu_s = 0;
  // GPU time per kernel beyond the roofline (launch latency, tail effect);
  // the device's efficiency surface overrides it when measured.
  double kernel_s = 0;
  // Backward time as a multiple of the forward time, per kernel kind
  // (gemm, conv, spatial_conv, depthwise_conv) and for memory-bound ops.
  double backward_gemm = 2.0;
  double backward_conv = 2.0;
  double backward_spatial_conv = 2.0;
  double backward_depthwise = 2.0;
  double backward_memory = 1.5;
  // Library workspaces: cuBLAS keeps one per handle and API (32 MiB on
  // Hopper); convolutions take a transient workspace of this fraction of
  // their larger operand (spatial ones only).
  int64_t blas_workspace_bytes = 0;
  double conv_workspace_fraction = 0;
  // cuDNN's benchmark (cudnn.benchmark, PyTorch's default for training
  // scripts and the measurements') tries the algorithms of each new
  // convolution shape once, each with its workspace; the caching allocator
  // keeps the largest trial's segment, so the reserved peak carries it
  // while the live peak does not. A trial takes at least
  // `conv_trial_bytes`; an fp32 spatial convolution tries FFT, whose
  // workspace holds the input and output transformed to the padded
  // spatial size in complex fp32: `conv_fft_factor` x 8 bytes x
  // (H+kh-1)(W+kw-1) x N x (Cin + Cout) (unit strides only).
  int64_t conv_trial_bytes = 0;
  double conv_fft_factor = 0;
  // In fp32 without TF32 the benchmark often keeps FFT for such a
  // convolution: its steady workspace is the larger of
  // conv_workspace_fraction x its larger operand and this x the FFT size
  // above (without conv_fft_factor).
  double conv_fft_steady = 0;
  // ... and its time: the benchmark keeps FFT when it beats the direct
  // kernel. FFT multiplies the transformed planes as one complex GEMM over
  // the channels per frequency (of the planes padded to powers of two;
  // half of them: the input is real), 8 flops per complex multiply-add;
  // those GEMMs reach conv_fft_efficiency x f / (f + conv_fft_half_flops)
  // of the fp32 peak, f the flops of one frequency's GEMM (small channel
  // counts make small GEMMs). The transforms stream the planes and the
  // filters' spectra through memory. 0: no FFT path.
  double conv_fft_efficiency = 0;
  double conv_fft_half_flops = 1e7;
  // Autocast convolutions on NCHW tensors (PyTorch's default layout): the
  // fast bf16/fp16 cuDNN kernels take NHWC, so cuDNN transposes the input
  // in and the output back, two more kernels whose traffic is this
  // multiple of the convolution's activations (input and output, in the
  // low precision; 2 would be each read once and written once, the fit
  // gives 1.44). Depthwise convolutions run PyTorch's own NCHW kernels and
  // pay none. 0: none.
  double conv_layout_traffic = 0;
  // The caching allocator: requests round up to `round_bytes`; requests up
  // to `small_limit` come from `small_segment` segments, larger ones below
  // `mid_limit` from `mid_segment` ones, the rest from segments rounded up
  // to `large_round`.
  int64_t round_bytes = 512;
  int64_t small_limit = int64_t{1} << 20;
  int64_t small_segment = int64_t{2} << 20;
  int64_t mid_limit = int64_t{10} << 20;
  int64_t mid_segment = int64_t{20} << 20;
  int64_t large_round = int64_t{2} << 20;
};

// The documented constants of `runtime` (kRoofline: all zero). Host times
// are those of the reference host (kReferenceEagerOpS).
RuntimeCosts DefaultCosts(Runtime runtime);

// What a GPU's kernels can reach, the units of every efficiency below: the
// throughput of a large cuBLAS GEMM per precision and of a large copy, as
// `tessera calibrate` measures them. A device with measured peaks
// (DeviceSpec::peaks_measured) gives its own; for a datasheet entry they
// are its peaks times the fractions measured on the H100 and the H200 of
// data/gpu-truth (the same on both within 3%: kAchievableFraction), so a
// calibrated device and the catalog speak the same units.
struct AchievablePeaks {
  double fp32 = 0, tf32 = 0, fp16 = 0, bf16 = 0;  // flop/s
  double memory_bandwidth = 0;                    // bytes/s
};
AchievablePeaks Achievable(const DeviceSpec& device);

// Achievable / datasheet on those GPUs (h100_calibrate.yaml,
// h200_calibrate.yaml against the catalog; tests/estimator recomputes
// them): fp32, tf32, fp16, bf16, memory bandwidth.
inline constexpr double kAchievableFraction[5] = {0.761, 0.890, 0.830, 0.811,
                                                  0.866};

// The host the fitted host costs are expressed for: PyTorch's eager
// dispatch of one operator as `tessera calibrate` measures it (the H200
// host of data/gpu-truth). A device whose efficiency gives `eager_op`
// scales every host cost by eager_op / this.
inline constexpr double kReferenceEagerOpS = 7.558e-6;

// PyTorch's kernel efficiencies on NVIDIA's Hopper GPUs, fractions of the
// achievable peaks and bandwidth, fitted on the H100 and H200 runs of
// data/gpu-truth with DefaultCosts (docs/estimator.md, "Runtimes"): a
// property of the kernels and the SM design, not of one GPU.
EfficiencySurface DefaultSurface();

// The kernel-efficiency sweeps `tessera calibrate` measured on the H200 of
// data/gpu-truth (h200_calibrate.yaml): a device's own sweeps correct the
// fitted surface by their ratio to these at the same size, so calibrating
// that GPU changes nothing and another GPU moves by what differs.
EfficiencySurface ReferenceSweeps();

struct RuntimeOptions {
  Runtime runtime = Runtime::kPyTorch;
  Amp amp = Amp::kNone;
  bool tf32 = false;  // fp32 products on TF32 tensor cores
  bool training = false;
  Optimizer optimizer = Optimizer::kAdam;
  Attention attention = Attention::kAuto;
  RuntimeCosts costs = DefaultCosts(Runtime::kPyTorch);
  EfficiencySurface surface = DefaultSurface();  // what a fit varies
  // The share of the GPU's SMs the job may use (a fraction under MPS's
  // CUDA_MPS_ACTIVE_THREAD_PERCENTAGE / 100; 1 = the whole GPU). Compute-
  // bound kernels slow by at most 1 / share (the efficiency curve is read
  // at the work per SM, so kernels too small to fill the GPU lose less);
  // memory-bound ones keep the full
  // bandwidth down to kBandwidthShare of the SMs and slow in proportion
  // below it; the host's dispatch does not change, so a host-bound step
  // barely slows (fitted on data/gpu-truth/h200_mps_fraction.json).
  double compute_share = 1.0;
};

// The share of a Hopper GPU's SMs that reaches its whole memory bandwidth
// (RuntimeOptions::compute_share).
inline constexpr double kBandwidthShare = 0.5;

// What one step costs under a runtime.
struct RuntimeEstimate {
  double step_s = 0;      // wall time per step
  double gpu_busy_s = 0;  // GPU kernel time per step
  double host_s = 0;      // host dispatch time per step
  double forward_s = 0, backward_s = 0, optimizer_s = 0;  // GPU time
  // GPU time of matrix products (linear layers, batched matmuls, fused
  // attention), of convolutions and of normalizations, forward and
  // backward: what the per-operator profiles of data/gpu-truth measure.
  double gemm_forward_s = 0, gemm_backward_s = 0;
  double conv_forward_s = 0, conv_backward_s = 0;
  double norm_forward_s = 0, norm_backward_s = 0;
  int dispatched_ops = 0;  // framework operators per step
  int kernels = 0;         // GPU kernels per step
  // Memory (bytes): the live peak of tensors (what the framework's
  // max_memory_allocated reports) and what the allocator holds from the GPU
  // at its peak (max_memory_reserved).
  int64_t live_peak_bytes = 0;
  int64_t reserved_peak_bytes = 0;
  int64_t weights = 0, gradients = 0, optimizer_state = 0;
  int64_t saved_activations = 0;  // training: kept for backward at the peak
  int64_t workspace = 0;          // library workspaces held
  // GPU seconds of each ONNX node per step (forward plus backward), indexed
  // by NodeId; a fused operator's time goes to its first node.
  std::vector<double> node_seconds;
  // The same split for a placer: GPU seconds of each node's forward, and
  // the host seconds its dispatch takes (forward plus backward).
  std::vector<double> node_forward_seconds;
  std::vector<double> node_host_seconds;
  double gpu_busy_fraction() const {
    return step_s > 0 ? gpu_busy_s / step_s : 0.0;
  }
};

// Estimates one step of `model` under `options.runtime` on `device`.
// `costs` are CostAll(*model.graph). kBadInput for kRoofline (use
// ProfileModel) and for training under kOnnxRuntime.
Result<RuntimeEstimate> EstimateRuntime(const graph::Model& model,
                                        std::span<const OpCost> costs,
                                        const DeviceSpec& device,
                                        const RuntimeOptions& options);

}  // namespace tessera::estimator

#endif  // TESSERA_ESTIMATOR_RUNTIME_RUNTIME_H_
