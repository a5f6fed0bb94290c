#include "estimator/time_model.h"

#include <algorithm>

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
  return m;
}

double OpSeconds(const OpCost& cost, graph::DataType dtype,
                 const DeviceSpec& device, const TimeModel& model) {
  const int64_t bytes = cost.bytes_read + cost.bytes_written;
  if (cost.flops == 0 && bytes == 0) return 0.0;
  const ClassEfficiency& e = model.of(cost.op_class);
  const bool tensor_cores = cost.op_class == OpClass::kMatrix ||
                            cost.op_class == OpClass::kConvolution;
  const double peak = PeakFlops(device, dtype, tensor_cores);
  const double compute =
      peak > 0 ? static_cast<double>(cost.flops) / (peak * e.compute) : 0.0;
  const double memory =
      device.memory_bandwidth > 0
          ? static_cast<double>(bytes) / (device.memory_bandwidth * e.memory)
          : 0.0;
  return std::max(compute, memory) + device.launch_overhead_s;
}

}  // namespace tessera::estimator
