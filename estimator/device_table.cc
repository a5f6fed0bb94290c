// The built-in device table: DeviceCatalog::BuiltIn().
//
// Conventions for every figure below (the `sources` of each device name the
// documents they come from):
// - Throughput is DENSE peak at boost clock: NVIDIA datasheets print tensor
//   figures "with sparsity" (2:4 structured) marked by an asterisk; those are
//   halved here. Where the architecture whitepaper lists the dense value
//   (H100: 494.7 / 989.4 / 1978.9), that value is used.
// - FP16 and BF16 are tensor-core rates with FP32 accumulate, which is what
//   frameworks use for training and inference. GeForce parts are twice as
//   fast with FP16 accumulate; the whitepaper figure used is named.
// - A dtype class with no tensor-core path on the architecture gets the
//   rate of its fallback: TF32/BF16 on Volta and Turing run at the FP32 rate;
//   INT8 on Volta uses DP4A at 4x the FP32 rate.
// - Memory is the marketed capacity read as GiB (GPU memory comes in powers
//   of two: an A100 80GB reports 81920 MiB). What the driver reserves (ECC,
//   context) is left to the memory model's headroom.
// - Memory bandwidth is the datasheet's figure, in bytes/s (GB = 1e9).
// - NVLink and PCIe are PER DIRECTION: datasheets print the bidirectional
//   total ("NVLink 600 GB/s", "PCIe Gen4 64 GB/s"), halved here. NVLink is
//   all links of one GPU together; 0 when the part has none.

#include <cstdint>
#include <utility>
#include <vector>

#include "estimator/device_catalog.h"

namespace tessera::estimator {
namespace {

constexpr double kTera = 1e12;
constexpr double kGBps = 1e9;
constexpr int64_t kGiB = int64_t{1} << 30;

// PyTorch's eager dispatch per operator on the hosts of data/gpu-truth:
// the H200's as its `tessera calibrate` measured it (h200_calibrate.yaml),
// the H100's (not measured there) fitted to its runs relative to it
// (bench/estimator/gpu_truth_bench --fit, docs/estimator.md).
constexpr double kH200HostEagerOpS = 7.558e-6;
constexpr double kH100HostEagerOpS = 8.82e-6;

// Halves a bidirectional link figure from a datasheet.
constexpr double PerDirection(double bidirectional_gbps) {
  return bidirectional_gbps * kGBps / 2;
}

// Hopper SXM compute (H100 SXM and H200 share the GH100 SXM5 rates).
// `eager_op_s`: PyTorch's dispatch per operator on the host the GPU was
// measured with (data/gpu-truth), what the runtime model's host costs scale
// with; `tessera calibrate` measures yours.
DeviceSpec HopperSxm(std::string name, std::string display, int64_t gib,
                     double bandwidth_tbps, double eager_op_s,
                     std::string sources) {
  DeviceSpec d{.name = std::move(name),
               .display_name = std::move(display),
               .kind = DeviceKind::kGpu,
               .memory_bytes = gib * kGiB,
               .fp32_flops = 67 * kTera,
               .tf32_flops = 494.7 * kTera,
               .fp16_flops = 989.4 * kTera,
               .bf16_flops = 989.4 * kTera,
               .int8_ops = 1978.9 * kTera,
               .memory_bandwidth = bandwidth_tbps * kTera,
               .nvlink_bandwidth = PerDirection(900),
               .pcie_bandwidth = PerDirection(128),
               .launch_overhead_s = kGpuLaunchOverheadSeconds,
               .sources = std::move(sources)};
  d.efficiency.eager_op_s = eager_op_s;
  return d;
}

// A100 SXM compute (40GB and 80GB differ in memory only).
DeviceSpec A100Sxm(std::string name, std::string display, int64_t gib,
                   double bandwidth_gbps, std::string sources) {
  return DeviceSpec{.name = std::move(name),
                    .display_name = std::move(display),
                    .kind = DeviceKind::kGpu,
                    .memory_bytes = gib * kGiB,
                    .fp32_flops = 19.5 * kTera,
                    .tf32_flops = 156 * kTera,
                    .fp16_flops = 312 * kTera,
                    .bf16_flops = 312 * kTera,
                    .int8_ops = 624 * kTera,
                    .memory_bandwidth = bandwidth_gbps * kGBps,
                    .nvlink_bandwidth = PerDirection(600),
                    .pcie_bandwidth = PerDirection(64),
                    .launch_overhead_s = kGpuLaunchOverheadSeconds,
                    .sources = std::move(sources)};
}

// V100 SXM2 compute (16GB and 32GB differ in memory only).
DeviceSpec V100Sxm2(std::string name, std::string display, int64_t gib) {
  return DeviceSpec{
      .name = std::move(name),
      .display_name = std::move(display),
      .kind = DeviceKind::kGpu,
      .memory_bytes = gib * kGiB,
      .fp32_flops = 15.7 * kTera,
      .tf32_flops = 15.7 * kTera,
      .fp16_flops = 125 * kTera,
      .bf16_flops = 15.7 * kTera,
      .int8_ops = 62.8 * kTera,
      .memory_bandwidth = 900 * kGBps,
      .nvlink_bandwidth = PerDirection(300),
      .pcie_bandwidth = PerDirection(32),
      .launch_overhead_s = kGpuLaunchOverheadSeconds,
      .sources =
          "NVIDIA Tesla V100 datasheet (2020), SXM2 column: 15.7 "
          "TFLOPS FP32, 125 TFLOPS tensor, 900 GB/s, NVLink 300 GB/s, "
          "PCIe Gen3 32 GB/s; no TF32/BF16 on Volta (FP32 rate), INT8 "
          "by DP4A at 4x FP32"};
}

std::vector<DeviceSpec> Table() {
  // tessera: long-table (one entry a device)
  std::vector<DeviceSpec> t;
  t.push_back(HopperSxm(
      "h200", "NVIDIA H200 SXM 141GB", 141, 4.8, kH200HostEagerOpS,
      "NVIDIA H200 Tensor Core GPU datasheet (2024), SXM column: sparse "
      "tensor figures halved (dense as in the H100 whitepaper), 4.8 TB/s, "
      "NVLink 900 GB/s, PCIe Gen5 128 GB/s"));
  t.push_back(HopperSxm(
      "h100-sxm", "NVIDIA H100 SXM5 80GB", 80, 3.35, kH100HostEagerOpS,
      "NVIDIA H100 Tensor Core GPU datasheet (2023), SXM column, and H100 "
      "architecture whitepaper (dense figures); 3.35 TB/s, NVLink 900 GB/s, "
      "PCIe Gen5 128 GB/s"));
  t.push_back(DeviceSpec{
      .name = "h100-pcie",
      .display_name = "NVIDIA H100 PCIe 80GB",
      .kind = DeviceKind::kGpu,
      .memory_bytes = 80 * kGiB,
      .fp32_flops = 51 * kTera,
      .tf32_flops = 378 * kTera,
      .fp16_flops = 756 * kTera,
      .bf16_flops = 756 * kTera,
      .int8_ops = 1513 * kTera,
      .memory_bandwidth = 2000 * kGBps,
      .nvlink_bandwidth = PerDirection(600),
      .pcie_bandwidth = PerDirection(128),
      .launch_overhead_s = kGpuLaunchOverheadSeconds,
      .sources = "NVIDIA H100 Tensor Core GPU datasheet (2023), PCIe column: "
                 "sparse tensor figures halved, 2 TB/s, NVLink bridge 600 "
                 "GB/s (pairs of cards), PCIe Gen5 128 GB/s"});
  t.push_back(A100Sxm("a100-40gb", "NVIDIA A100 40GB SXM", 40, 1555,
                      "NVIDIA A100 Tensor Core GPU datasheet (2021), 40GB "
                      "SXM column, non-sparse figures; 1,555 GB/s, NVLink "
                      "600 GB/s, PCIe Gen4 64 GB/s"));
  t.push_back(A100Sxm("a100-80gb", "NVIDIA A100 80GB SXM", 80, 2039,
                      "NVIDIA A100 Tensor Core GPU datasheet (2021), 80GB "
                      "SXM column, non-sparse figures; 2,039 GB/s, NVLink "
                      "600 GB/s, PCIe Gen4 64 GB/s"));
  t.push_back(V100Sxm2("v100-16gb", "NVIDIA Tesla V100 SXM2 16GB", 16));
  t.push_back(V100Sxm2("v100-32gb", "NVIDIA Tesla V100 SXM2 32GB", 32));
  t.push_back(DeviceSpec{
      .name = "a10",
      .display_name = "NVIDIA A10",
      .kind = DeviceKind::kGpu,
      .memory_bytes = 24 * kGiB,
      .fp32_flops = 31.2 * kTera,
      .tf32_flops = 62.5 * kTera,
      .fp16_flops = 125 * kTera,
      .bf16_flops = 125 * kTera,
      .int8_ops = 250 * kTera,
      .memory_bandwidth = 600 * kGBps,
      .nvlink_bandwidth = 0,
      .pcie_bandwidth = PerDirection(64),
      .launch_overhead_s = kGpuLaunchOverheadSeconds,
      .sources = "NVIDIA A10 Tensor Core GPU datasheet (2021), non-sparse "
                 "figures; 600 GB/s, PCIe Gen4 64 GB/s, no NVLink"});
  t.push_back(DeviceSpec{
      .name = "l4",
      .display_name = "NVIDIA L4",
      .kind = DeviceKind::kGpu,
      .memory_bytes = 24 * kGiB,
      .fp32_flops = 30.3 * kTera,
      .tf32_flops = 60 * kTera,
      .fp16_flops = 121 * kTera,
      .bf16_flops = 121 * kTera,
      .int8_ops = 242.5 * kTera,
      .memory_bandwidth = 300 * kGBps,
      .nvlink_bandwidth = 0,
      .pcie_bandwidth = PerDirection(64),
      .launch_overhead_s = kGpuLaunchOverheadSeconds,
      .sources = "NVIDIA L4 Tensor Core GPU datasheet (2023): sparse tensor "
                 "figures (120/242/485) halved; 300 GB/s, PCIe Gen4 x16, no "
                 "NVLink"});
  t.push_back(DeviceSpec{
      .name = "t4",
      .display_name = "NVIDIA T4",
      .kind = DeviceKind::kGpu,
      .memory_bytes = 16 * kGiB,
      .fp32_flops = 8.1 * kTera,
      .tf32_flops = 8.1 * kTera,
      .fp16_flops = 65 * kTera,
      .bf16_flops = 8.1 * kTera,
      .int8_ops = 130 * kTera,
      .memory_bandwidth = 320 * kGBps,
      .nvlink_bandwidth = 0,
      .pcie_bandwidth = PerDirection(32),
      .launch_overhead_s = kGpuLaunchOverheadSeconds,
      .sources = "NVIDIA T4 Tensor Core GPU datasheet (2019): 8.1 TFLOPS "
                 "FP32, 65 TFLOPS FP16/FP32 mixed, 130 TOPS INT8, 320 GB/s, "
                 "PCIe Gen3 x16; no TF32/BF16 on Turing (FP32 rate)"});
  t.push_back(DeviceSpec{
      .name = "rtx3090",
      .display_name = "NVIDIA GeForce RTX 3090",
      .kind = DeviceKind::kGpu,
      .memory_bytes = 24 * kGiB,
      .fp32_flops = 35.6 * kTera,
      .tf32_flops = 35.6 * kTera,
      .fp16_flops = 71 * kTera,
      .bf16_flops = 71 * kTera,
      .int8_ops = 284 * kTera,
      .memory_bandwidth = 936 * kGBps,
      .nvlink_bandwidth = PerDirection(112.5),
      .pcie_bandwidth = PerDirection(64),
      .launch_overhead_s = kGpuLaunchOverheadSeconds,
      .sources = "NVIDIA Ampere GA102 GPU architecture whitepaper (2020), "
                 "RTX 3090 column, dense; FP16/BF16 with FP32 accumulate "
                 "(142 TFLOPS with FP16 accumulate); 936 GB/s; NVLink bridge "
                 "112.5 GB/s total; PCIe Gen4 x16"});
  t.push_back(DeviceSpec{
      .name = "rtx4090",
      .display_name = "NVIDIA GeForce RTX 4090",
      .kind = DeviceKind::kGpu,
      .memory_bytes = 24 * kGiB,
      .fp32_flops = 82.6 * kTera,
      .tf32_flops = 82.6 * kTera,
      .fp16_flops = 165.2 * kTera,
      .bf16_flops = 165.2 * kTera,
      .int8_ops = 660.6 * kTera,
      .memory_bandwidth = 1008 * kGBps,
      .nvlink_bandwidth = 0,
      .pcie_bandwidth = PerDirection(64),
      .launch_overhead_s = kGpuLaunchOverheadSeconds,
      .sources = "NVIDIA Ada Lovelace architecture whitepaper (2022), RTX "
                 "4090 column, dense; FP16/BF16 with FP32 accumulate (330.3 "
                 "TFLOPS with FP16 accumulate); 1,008 GB/s; PCIe Gen4 x16, "
                 "no NVLink"});
  // Not a datasheet part: the kind used to calibrate the time model with
  // ONNX Runtime on a CPU. Nominal 4 cores x 3.0 GHz x 32 FP32 FLOP/cycle
  // (AVX2, two FMA units); ORT runs fp16/bf16 at about the FP32 rate; INT8
  // through VPMADDUBSW at about twice it. Calibration replaces all of this.
  t.push_back(DeviceSpec{
      .name = "cpu",
      .display_name = "Generic x86-64 CPU (nominal)",
      .kind = DeviceKind::kCpu,
      .memory_bytes = 16 * kGiB,
      .fp32_flops = 384e9,
      .tf32_flops = 384e9,
      .fp16_flops = 384e9,
      .bf16_flops = 384e9,
      .int8_ops = 768e9,
      .memory_bandwidth = 51.2 * kGBps,
      .nvlink_bandwidth = 0,
      .pcie_bandwidth = PerDirection(64),
      .launch_overhead_s = kCpuOpOverheadSeconds,
      .sources = "nominal, not a datasheet: 4 cores x 3.0 GHz x 32 FP32 "
                 "FLOP/cycle (AVX2 FMA), dual-channel DDR4-3200 (51.2 GB/s), "
                 "a PCIe Gen4 x16 slot; meant to be calibrated"});
  return t;
}

}  // namespace

DeviceCatalog DeviceCatalog::BuiltIn() { return DeviceCatalog(Table()); }

}  // namespace tessera::estimator
