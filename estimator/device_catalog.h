#ifndef TESSERA_ESTIMATOR_DEVICE_CATALOG_H_
#define TESSERA_ESTIMATOR_DEVICE_CATALOG_H_

// The device catalog: GPUs (and the CPU kind used for calibration) with the
// datasheet figures the time and memory models need. Built in
// (device_table.cc, which states the conventions for every figure) and
// extended or overridden from YAML (MergeYaml). Also the unit parsers that
// every YAML file of tessera shares ("80GiB", "25GB/s", "5us").

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/result.h"
#include "common/units.h"
#include "graph/graph.h"

namespace tessera::estimator {

enum class DeviceKind : uint8_t { kGpu, kCpu };
// "gpu" or "cpu".
std::string_view DeviceKindName(DeviceKind kind);

// How close the kernels of one kind come to a device's peak, by size: a
// kernel of W flops reaches peak x max x W / (W + half_flops) (small kernels
// do not fill the GPU). max 0: not measured, the runtime's default applies.
struct KernelEfficiency {
  double max = 0.0;
  double half_flops = 0.0;
};

// Kinds of compute-bound kernels the surface distinguishes.
enum class KernelKind : uint8_t {
  kGemm,          // Gemm, MatMul, linear layers, batched matmuls
  kConv,          // 1x1 and grouped convolutions (implicit GEMM)
  kSpatialConv,   // dense k x k convolutions (cuDNN may use Winograd/FFT)
  kDepthwiseConv  // one channel per group
};
inline constexpr size_t kNumKernelKinds = 4;
// "gemm", "conv", "spatial_conv", "depthwise_conv".
std::string_view KernelKindName(KernelKind kind);

// A device's measured efficiency: per kernel kind, on CUDA cores (fp32)
// and on tensor cores (tf32, fp16, bf16); per memory-bound class, the
// fraction of memory bandwidth it streams at; and the GPU time every kernel
// takes beyond the roofline (launch latency, tail). Fitted or measured by
// `tessera calibrate`; `measured` false: the runtime's defaults apply.
struct EfficiencySurface {
  bool measured = false;
  std::array<KernelEfficiency, kNumKernelKinds> cuda_cores{};
  std::array<KernelEfficiency, kNumKernelKinds> tensor_cores{};
  double elementwise_bandwidth = 0.0;  // fractions of memory_bandwidth
  double normalization_bandwidth = 0.0;
  double reduction_bandwidth = 0.0;
  double data_movement_bandwidth = 0.0;
  double kernel_s = 0.0;
  // CPU time one eager framework operator takes to dispatch (PyTorch), as
  // measured on the host of this GPU; 0: the runtime's default.
  double eager_op_s = 0.0;
};

// One device model. Throughputs are dense peaks (no structured sparsity) in
// operations per second; bandwidths are bytes per second in ONE direction.
// For a dtype class the device has no tensor-core path for (TF32/BF16 before
// Ampere, ...), the figure is the rate of its fallback path, so every figure
// is positive and usable as is.
struct DeviceSpec {
  std::string name;          // catalog key, e.g. "a100-80gb"
  std::string display_name;  // e.g. "NVIDIA A100 80GB SXM"
  DeviceKind kind = DeviceKind::kGpu;
  int64_t memory_bytes = 0;     // the marketed "GB" read as GiB
  double fp32_flops = 0;        // FP32 on CUDA cores / SIMD, no tensor cores
  double tf32_flops = 0;        // FP32 matmul/conv through TF32 tensor cores
  double fp16_flops = 0;        // FP16 tensor cores, FP32 accumulate
  double bf16_flops = 0;        // BF16 tensor cores, FP32 accumulate
  double int8_ops = 0;          // INT8 tensor cores, OPS
  double memory_bandwidth = 0;  // device memory, bytes/s
  // All NVLinks of one GPU together, per direction; 0 when it has none.
  double nvlink_bandwidth = 0;
  double pcie_bandwidth = 0;     // host link, per direction
  double launch_overhead_s = 0;  // fixed cost of one kernel / operator
  // The throughputs and the memory bandwidth above are what `tessera
  // calibrate` measured on this device (cuBLAS at m = n = k = 8192, a
  // 512 MiB copy), not datasheet peaks: the runtime model takes them as
  // they are (estimator/runtime/runtime.h, Achievable). YAML: `peaks:
  // measured`; also set for an entry whose `sources` say "measured by tessera
  // calibrate", as calibrate's own files do.
  bool peaks_measured = false;
  std::string sources;             // the datasheets the figures come from
  EfficiencySurface efficiency{};  // docs/estimator.md, "Runtimes"
};

// FP64 has no field of its own: ONNX models almost never compute in fp64.
// Datacenter GPUs (V100, A100, H100) run it at 1/2 the FP32 rate; consumer
// parts are 1/32-1/64, so this is optimistic for them.
inline constexpr double kFp64SlowdownFallback = 2.0;

// Peak operations per second of `device` for arithmetic in `dtype`.
// tensor_cores: the operator is a matmul/conv that may use tensor cores (for
// fp32 that means TF32 is allowed). Without them every dtype runs at the
// fp32 figure. fp64 uses the fp32 figure / kFp64SlowdownFallback; integer
// types other than 8-bit, bool and undefined use the fp32 figure.
double PeakFlops(const DeviceSpec& device, graph::DataType dtype,
                 bool tensor_cores);

// Fixed cost of one kernel on a GPU: cudaLaunchKernel takes 2-4 us of host
// time and frameworks add their dispatch; 5 us is the usual middle figure.
inline constexpr double kGpuLaunchOverheadSeconds = 5e-6;
// Per-node cost of ONNX Runtime's CPU provider outside the kernel (a few us
// on small ops); nominal, calibration refits the time model around it.
inline constexpr double kCpuOpOverheadSeconds = 2e-6;

// A catalog of device models keyed by name. Copyable value; not safe for
// concurrent mutation (MergeYaml), safe for concurrent readers.
class DeviceCatalog {
 public:
  DeviceCatalog() = default;

  // The built-in devices, in the order `tessera devices` lists them.
  static DeviceCatalog BuiltIn();
  // The built-in devices merged with the YAML file at `path` ("" for none):
  // what every command's --devices option means.
  static Result<DeviceCatalog> BuiltInWith(const std::string& path);

  // nullptr when `name` is unknown. The pointer is valid until the next
  // MergeYaml or until the catalog is destroyed.
  const DeviceSpec* Find(std::string_view name) const;
  // As Find, but an unknown name is a kBadInput error listing known names.
  Result<const DeviceSpec*> Get(std::string_view name) const;

  std::vector<std::string> Names() const;
  const std::vector<DeviceSpec>& devices() const { return devices_; }

  // Adds or overrides devices from the YAML file at `path`:
  //
  //   devices:
  //     - name: a100-80gb-pcie    # required; new name or existing one
  //       base: a100-80gb         # optional: start from a copy of this one
  //       display_name: "NVIDIA A100 80GB PCIe"
  //       kind: gpu               # gpu | cpu
  //       memory: 80GiB           # B, KB, MB, GB, TB, KiB, MiB, GiB, TiB
  //       memory_bandwidth: 1935GB/s   # B/s, KB/s, ... TB/s, KiB/s ... TiB/s
  //       fp32_tflops: 19.5       # plain numbers, 10^12 per second
  //       tf32_tflops: 156
  //       fp16_tflops: 312
  //       bf16_tflops: 312
  //       int8_tops: 624
  //       nvlink_bandwidth: 300GB/s    # per direction; 0 for none
  //       pcie_bandwidth: 32GB/s       # per direction
  //       launch_overhead: 5us    # ns, us, µs, ms, s
  //       peaks: measured         # or datasheet (the default): what the
  //                               # throughputs and bandwidth above are
  //       sources: "where the figures come from"
  //       efficiency:             # optional: EfficiencySurface, any key
  //         kernel_time: 2.5us    # GPU time of an empty kernel (> 0)
  //         eager_op: 20us        # PyTorch dispatch per operator (> 0)
  //         bandwidth: {elementwise: 0.8, normalization: 0.7,
  //                     reduction: 0.6, data_movement: 0.6}   # (0, 1]
  //         cuda_cores:           # fp32 without tensor cores
  //           gemm: {max: 0.8, half_gflop: 2.0}
  //           conv: ...           # also spatial_conv, depthwise_conv
  //         tensor_cores:         # tf32 / fp16 / bf16
  //           gemm: {max: 0.6, half_gflop: 20}
  //
  // In `efficiency`, `max` is in (0, kMaxKernelEfficiency] (above 1:
  // Winograd convolutions beat the nominal flops), `half_gflop` >= 0 in
  // 10^9 flops; a kind given only `half_gflop` must already have a `max`.
  // Any value given sets `measured`; keys not given keep their value.
  //
  // An entry naming an existing device without `base` overrides only the
  // fields it gives. A new device without `base` must give memory,
  // memory_bandwidth, fp32_tflops and pcie_bandwidth; its other throughputs
  // default to fp32_tflops (no tensor cores), nvlink to 0, launch overhead
  // to the GPU/CPU default. Entries apply in order, so `base` may name a
  // device defined earlier in the same file. On any error the catalog is
  // left unchanged and the message names the file, line, entry and field.
  Status MergeYaml(const std::string& path);

 private:
  explicit DeviceCatalog(std::vector<DeviceSpec> devices)
      : devices_(std::move(devices)) {}
  DeviceSpec* FindMutable(std::string_view name);

  std::vector<DeviceSpec> devices_;
};

// Unit parsers (common/units.h), here for the catalog's readers.
using tessera::ParseBandwidth;
using tessera::ParseBytes;
using tessera::ParseSeconds;

}  // namespace tessera::estimator

#endif  // TESSERA_ESTIMATOR_DEVICE_CATALOG_H_
