#ifndef TESSERA_ESTIMATOR_CALIBRATION_H_
#define TESSERA_ESTIMATOR_CALIBRATION_H_

// Calibration of the time model from measured per-operator times: reads
// ONNX Runtime's profiling output or a `name,ms` CSV, matches measurements
// to nodes by name and fits the per-class efficiencies and the per-operator
// overhead. The fit sees only the training set; errors are reported on it
// and, honestly, on a held-out set it never saw.

#include <array>
#include <string>
#include <utility>
#include <vector>

#include "common/result.h"
#include "estimator/device_catalog.h"
#include "estimator/time_model.h"
#include "graph/graph.h"

namespace tessera::estimator {

// One operator's measured time: the mean over the runs in the file.
struct Measurement {
  std::string node;  // the ONNX node name
  double seconds = 0.0;
};

// Reads measured times from `path`, in the order nodes first appear:
// - ONNX Runtime's profile (enableProfiling): a Chrome-trace JSON array
//   (or an object with "traceEvents") whose "cat":"Node" events named
//   NODE_kernel_time give "dur" in microseconds;
// - a CSV of `name,ms` lines (a header line, blank lines and lines starting
//   with '#' are skipped).
// Repeated names are averaged. Errors (kBadInput) name the file and the line
// (CSV) or what is wrong with the JSON.
Result<std::vector<Measurement>> ReadMeasurements(const std::string& path);

// Measurements of one model. `model` must outlive the calibration.
struct CalibrationSet {
  std::string name;  // for the report, e.g. the model's file
  const graph::Model* model = nullptr;
  std::vector<Measurement> measurements;
};

// Splits `set` at the operator level: of the measurements that name a node
// of the model, every `every`-th one (the 1st, every+1-th, ...) goes to the
// second set, the others to the first. Deterministic; unmatched ones are
// dropped. REQUIRES: every >= 2.
std::pair<CalibrationSet, CalibrationSet> SplitEveryNth(
    const CalibrationSet& set, int every);

// Predicted against measured time of one set's matched operators.
struct SetTotals {
  std::string name;
  int ops = 0;
  double measured_s = 0.0;
  double predicted_before_s = 0.0, predicted_after_s = 0.0;
};

struct CalibrationReport {
  TimeModel fitted;
  double overhead_s = 0.0;  // fitted per-operator overhead: apply it to a
                            // DeviceSpec copy's launch_overhead_s
  // Mean absolute percentage error (in %) over the operators the time model
  // gives a kernel (see free_ops) with a measured time > 0.
  double mape_before = 0.0, mape_after = 0.0;  // training operators
  double heldout_mape_before = 0.0, heldout_mape_after = 0.0;
  int matched_ops = 0;  // training measurements naming a node
  int unmatched = 0;    // training measurements naming none
  int heldout_ops = 0;  // held-out operators in the held-out MAPE
  // Matched operators the model treats as free (views, Constant): predicted
  // 0, kept out of the fit and of the MAPE, counted in the totals.
  int free_ops = 0;
  std::array<int, kNumOpClasses> class_ops{};  // training ops per class
  std::vector<SetTotals> training_totals, heldout_totals;
};

// Fits `start`'s per-class efficiencies (compute and memory), its cache
// spill (spill_bytes, spill_slowdown), the device's per-operator overhead
// and, from a smooth roofline, its p, to the training measurements,
// minimizing their mean absolute percentage error by coordinate descent in
// log space (deterministic); it descends from `start`'s roofline and from a
// smooth one and keeps the lower MAPE. Only classes with at least 5
// training operators with a kernel change; depthwise and spatial
// convolutions with fewer share the dense convolutions' fit. kBadInput
// when no training measurement names a node with a kernel.
Result<CalibrationReport> Calibrate(const std::vector<CalibrationSet>& training,
                                    const std::vector<CalibrationSet>& heldout,
                                    const DeviceSpec& device,
                                    const TimeModel& start);

}  // namespace tessera::estimator

#endif  // TESSERA_ESTIMATOR_CALIBRATION_H_
