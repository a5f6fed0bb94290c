#ifndef TESSERA_ESTIMATOR_TIME_MODEL_H_
#define TESSERA_ESTIMATOR_TIME_MODEL_H_

// Time per operator: a roofline with per-class efficiencies plus a launch
// overhead. Defaults and their reasons are in docs/estimator.md; calibration
// (--calibration) refits the efficiencies from measured times.

#include <array>

#include "estimator/device_catalog.h"
#include "estimator/op_cost.h"

namespace tessera::estimator {

inline constexpr size_t kNumOpClasses = 9;  // OpClass values

// The fractions of a device's peak compute and memory bandwidth that one
// class of operators reaches in practice.
struct ClassEfficiency {
  double compute = 1.0;
  double memory = 1.0;
};

struct TimeModel {
  std::array<ClassEfficiency, kNumOpClasses> efficiency{};
  // Cache spill: the bytes an operator moves beyond `spill_bytes` run
  // `spill_slowdown` times slower (a cache-resident working set streams
  // faster than DRAM). spill_slowdown 1 (the default) turns this off;
  // calibration fits both.
  double spill_bytes = 0.0;
  double spill_slowdown = 1.0;
  // How compute and memory time combine: 0 (the default), the roofline's
  // max; p > 0, a smooth roofline (compute^p + memory^p)^(1/p), which
  // calibration uses (partial overlap of the two near the ridge).
  double roofline_p = 0.0;
  // The documented defaults (docs/estimator.md, "Time model").
  static TimeModel Defaults();
  const ClassEfficiency& of(OpClass c) const {
    return efficiency[static_cast<size_t>(c)];
  }
};

// Matrix and convolution classes (dense and spatial) can use tensor cores;
// depthwise convolutions cannot.
inline bool UsesTensorCores(OpClass c) {
  return c == OpClass::kMatrix || c == OpClass::kConvolution ||
         c == OpClass::kSpatialConvolution;
}

// bytes / (bandwidth x memory eff), the bytes beyond model.spill_bytes
// counted model.spill_slowdown times. `bytes_s`: bytes / bandwidth.
double MemorySeconds(double bytes, double bytes_s, double memory_efficiency,
                     const TimeModel& model);

// max(compute_s, memory_s), or their model.roofline_p-norm when > 0.
double RooflineSeconds(double compute_s, double memory_s,
                       const TimeModel& model);

// Seconds for one run of an operator of cost `cost` computing in `dtype` on
// `device`: RooflineSeconds(flops / (peak x compute eff), MemorySeconds) +
// the device's launch overhead. Operators that move no data and do no
// arithmetic (views, Constant) launch no kernel and take 0.
double OpSeconds(const OpCost& cost, graph::DataType dtype,
                 const DeviceSpec& device, const TimeModel& model);

}  // namespace tessera::estimator

#endif  // TESSERA_ESTIMATOR_TIME_MODEL_H_
