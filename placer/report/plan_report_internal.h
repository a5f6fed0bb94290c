#ifndef TESSERA_PLACER_REPORT_PLAN_REPORT_INTERNAL_H_
#define TESSERA_PLACER_REPORT_PLAN_REPORT_INTERNAL_H_

// The pieces of the HTML plan report (placer/report/plan_report.h): the page
// and its tables in plan_report.cc, the two SVG pictures in plan_report_svg.cc.

#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "placer/core/place.h"
#include "placer/core/problem.h"

namespace tessera::placer::report {

// `s` with &, <, >, " and ' escaped for HTML text and attribute values.
std::string Html(std::string_view s);

// The step as lanes of rectangles: one lane per thread of `timeline`
// (TimelineJson: devices, then links), time across, zoom controls above.
// Threads 1..`devices` are devices, drawn in DeviceColour; `step_ms` is
// the width of the time axis.
void WriteTimelineSvg(const nlohmann::json& timeline, double step_ms,
                      size_t devices, std::ostream& out);

// The op graph in layers (an op one column right of its latest producer),
// ops as boxes in their device's colour, at most kReportGraphOps of them in
// topological order; plus a table of the same placement.
void WriteGraphSvg(const Problem& problem, const Plan& plan,
                   const std::vector<std::string>& device_ids,
                   std::ostream& out);

}  // namespace tessera::placer::report

#endif  // TESSERA_PLACER_REPORT_PLAN_REPORT_INTERNAL_H_
