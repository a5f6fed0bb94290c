#ifndef TESSERA_ESTIMATOR_TIME_MODEL_H_
#define TESSERA_ESTIMATOR_TIME_MODEL_H_

// Time per operator: a roofline with per-class efficiencies plus a launch
// overhead. Defaults and their reasons are in docs/estimator.md; calibration
// (--calibration) refits the efficiencies from measured times.

#include <array>

#include "estimator/device_catalog.h"
#include "estimator/op_cost.h"

namespace tessera::estimator {

inline constexpr size_t kNumOpClasses = 7;  // OpClass values

// The fractions of a device's peak compute and memory bandwidth that one
// class of operators reaches in practice.
struct ClassEfficiency {
  double compute = 1.0;
  double memory = 1.0;
};

struct TimeModel {
  std::array<ClassEfficiency, kNumOpClasses> efficiency{};
  // The documented defaults (docs/estimator.md, "Time model").
  static TimeModel Defaults();
  const ClassEfficiency& of(OpClass c) const {
    return efficiency[static_cast<size_t>(c)];
  }
};

// Seconds for one run of an operator of cost `cost` computing in `dtype` on
// `device`: max(flops / (peak x compute eff), bytes / (bandwidth x memory
// eff)) + the device's launch overhead. Operators that move no data and do
// no arithmetic (views, Constant) launch no kernel and take 0.
double OpSeconds(const OpCost& cost, graph::DataType dtype,
                 const DeviceSpec& device, const TimeModel& model);

}  // namespace tessera::estimator

#endif  // TESSERA_ESTIMATOR_TIME_MODEL_H_
