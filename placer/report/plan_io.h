#ifndef TESSERA_PLACER_REPORT_PLAN_IO_H_
#define TESSERA_PLACER_REPORT_PLAN_IO_H_

// What a plan looks like outside: plan.json (a stable contract, keys never
// renamed), the simulated step as a Chrome Trace Event timeline (Perfetto,
// chrome://tracing) and the graph coloured by device (Graphviz DOT).

#include <ostream>
#include <string>

#include <nlohmann/json.hpp>

#include "placer/core/cluster.h"
#include "placer/core/place.h"
#include "placer/core/problem.h"

namespace tessera::placer {

struct PlanContext {
  std::string model;  // the model's path as given
  int64_t batch = 1;  // the batch the model was bound to (1 if unbound)
  // What priced the ops (ProblemOptions::runtime): "pytorch",
  // "onnxruntime" or "none"; and the autocast, "none", "bf16" or "fp16".
  std::string runtime = "none";
  std::string amp = "none";
};

// {"model", "algorithm", "mode", "batch", "step_time_ms", "lower_bound_ms",
//  "placement_time_ms", "devices": [...], "placement": {...},
//  "transfers": [...]} and more keys (docs/formats.md, "plan.json").
nlohmann::json PlanJson(const Problem& problem, const Cluster& cluster,
                        const Plan& plan, const PlanContext& context);

// Chrome Trace Event format: one track (thread) per device and per link
// that carried data; ops and transfers as complete ("X") events in
// microseconds. REQUIRES: plan.sim simulated with record_ops.
nlohmann::json TimelineJson(const Problem& problem, const Cluster& cluster,
                            const Plan& plan);

// The fill colour of device `d` in pictures of a plan (DOT, the HTML
// report), "#RRGGBB"; black text reads on it. Wraps past 16 devices.
const char* DeviceColour(size_t d);

// The op graph with every op filled in its device's colour and a legend.
void WritePlanDot(const Problem& problem, const Cluster& cluster,
                  const Plan& plan, std::ostream& out);

}  // namespace tessera::placer

#endif  // TESSERA_PLACER_REPORT_PLAN_IO_H_
