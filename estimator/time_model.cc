#include "estimator/time_model.h"

#include <algorithm>
#include <cmath>

namespace tessera::estimator {

TimeModel TimeModel::Defaults() {
  TimeModel m;
  auto set = [&m](OpClass c, double compute, double memory) {
    m.efficiency[static_cast<size_t>(c)] = {compute, memory};
  };
  // Large cuBLAS GEMMs sustain 70-80% of tensor-core peak; streaming reads of
  // big operands reach ~80% of DRAM bandwidth.
  set(OpClass::kMatrix, 0.70, 0.80);
  // cuDNN implicit-GEMM convolutions: smaller tiles and halo loads, ~55%.
  set(OpClass::kConvolution, 0.55, 0.75);
  // Element-wise kernels are bandwidth-bound and stream at ~80%.
  set(OpClass::kElementwise, 0.50, 0.80);
  // Reductions and normalizations make two passes and synchronize blocks.
  set(OpClass::kReduction, 0.50, 0.65);
  set(OpClass::kNormalization, 0.50, 0.65);
  // Transpose, gather, concat: strided or indexed access, ~60%.
  set(OpClass::kDataMovement, 0.50, 0.60);
  // Control-flow bodies: a mix of the above.
  set(OpClass::kControlFlow, 0.50, 0.65);
  // Depthwise convolutions: a handful of MACs per loaded weight, no reuse
  // across channels and no tensor cores; cuDNN's depthwise kernels reach a
  // small fraction of peak and stream at ~60% of bandwidth.
  set(OpClass::kDepthwiseConvolution, 0.15, 0.60);
  // Spatial (k x k, group 1) convolutions: cuDNN's implicit GEMM (or
  // Winograd) runs them as well as 1x1 ones, so the convolution figures; on
  // CPUs the im2col copy makes them slower, which calibration fits.
  set(OpClass::kSpatialConvolution, 0.55, 0.75);
  return m;
}

double MemorySeconds(double bytes, double bytes_s, double memory_efficiency,
                     const TimeModel& model) {
  double s = bytes_s / memory_efficiency;
  if (model.spill_slowdown != 1.0 && bytes > model.spill_bytes && bytes > 0) {
    s += s * (model.spill_slowdown - 1.0) * (bytes - model.spill_bytes) / bytes;
  }
  return s;
}

double RooflineSeconds(double compute_s, double memory_s,
                       const TimeModel& model) {
  const double hi = std::max(compute_s, memory_s);
  if (model.roofline_p <= 0.0 || hi <= 0.0) return hi;
  const double p = model.roofline_p;
  return hi * std::pow(std::pow(compute_s / hi, p) + std::pow(memory_s / hi, p),
                       1.0 / p);
}

double OpSeconds(const OpCost& cost, graph::DataType dtype,
                 const DeviceSpec& device, const TimeModel& model) {
  const int64_t bytes = cost.bytes_read + cost.bytes_written;
  if (cost.flops == 0 && bytes == 0) return 0.0;
  const ClassEfficiency& e = model.of(cost.op_class);
  const bool tensor_cores = UsesTensorCores(cost.op_class);
  const double peak = PeakFlops(device, dtype, tensor_cores);
  const double compute =
      peak > 0 ? static_cast<double>(cost.flops) / (peak * e.compute) : 0.0;
  const double memory =
      device.memory_bandwidth > 0
          ? MemorySeconds(static_cast<double>(bytes),
                          static_cast<double>(bytes) / device.memory_bandwidth,
                          e.memory, model)
          : 0.0;
  return RooflineSeconds(compute, memory, model) + device.launch_overhead_s;
}

}  // namespace tessera::estimator
