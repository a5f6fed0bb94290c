// The two pictures of the HTML plan report: the step's timeline and the op
// graph coloured by device. Both are plain SVG with a <title> on every shape
// (the browser shows it on hover); the tables next to them carry the same
// figures as text. Cost: O(events) and O(ops + edges) of the drawn part.

#include <algorithm>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "common/strings.h"
#include "placer/report/plan_io.h"
#include "placer/report/plan_report.h"
#include "placer/report/plan_report_internal.h"

namespace tessera::placer::report {
namespace {

using Json = nlohmann::json;

// Timeline geometry in pixels: the lane labels' column, a lane's height, the
// time axis above the lanes, and the width the lanes are drawn at before the
// page's script fits them to the window (the picture stretches with zoom).
constexpr int kLabelWidth = 220;
constexpr int kLaneHeight = 22;
constexpr int kAxisHeight = 20;
constexpr int kBaseWidth = 1000;
// Ticks on the time axis, at equal fractions of the step.
constexpr int kTicks = 20;

// Graph geometry in pixels: a box and the gaps between columns and rows.
constexpr int kBoxWidth = 14;
constexpr int kBoxHeight = 10;
constexpr int kColumnStep = 24;
constexpr int kRowStep = 14;
constexpr int kMargin = 8;

// Colours of what is not a device's op: transfers and gradients on links,
// and graph edges (between devices, within one).
constexpr const char* kTransferColour = "#CC3311";
constexpr const char* kGradientColour = "#EE7733";
constexpr const char* kCrossEdgeColour = "#CC3311";
constexpr const char* kLocalEdgeColour = "#999999";

std::string Num(double x) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.3f", x);
  return buf;
}

struct Lane {
  std::string name;
  std::vector<const Json*> events;
};

// The lanes of a Chrome trace, by thread id, and how many events it had.
std::map<int, Lane> LanesOf(const Json& timeline, size_t* total) {
  std::map<int, Lane> lanes;
  *total = 0;
  for (const Json& e : timeline.at("traceEvents")) {
    if (!e.contains("tid")) continue;
    const int tid = e["tid"].get<int>();
    if (e["ph"] == "M" && e["name"] == "thread_name") {
      lanes[tid].name = e["args"]["name"].get<std::string>();
    } else if (e["ph"] == "X") {
      if (++*total <= kReportTimelineEvents) lanes[tid].events.push_back(&e);
    }
  }
  return lanes;
}

std::string EventColour(const Json& e, int tid, size_t devices) {
  if (tid >= 1 && static_cast<size_t>(tid) <= devices) {
    return DeviceColour(static_cast<size_t>(tid - 1));
  }
  return e["cat"] == "gradient" ? kGradientColour : kTransferColour;
}

void WriteEvent(const Json& e, const std::string& lane, const std::string& fill,
                double step_us, int y, std::ostream& out) {
  const double ts = e["ts"].get<double>();
  const double dur = e["dur"].get<double>();
  const double x = step_us > 0 ? ts / step_us * kBaseWidth : 0;
  const double w = std::max(0.2, step_us > 0 ? dur / step_us * kBaseWidth : 0);
  out << "<rect x=\"" << Num(x) << "\" y=\"" << y + 3 << "\" width=\"" << Num(w)
      << "\" height=\"" << kLaneHeight - 6 << "\" fill=\"" << fill << "\""
      << (e["cat"] == "backward" ? " fill-opacity=\"0.6\"" : "") << "><title>"
      << Html(e["name"].get<std::string>()) << " on " << Html(lane) << ": "
      << Num(ts / 1e3) << " to " << Num((ts + dur) / 1e3) << " ms ("
      << Num(dur / 1e3) << " ms)";
  if (e["args"].contains("bytes")) {
    out << ", " << HumanBytes(e["args"]["bytes"].get<int64_t>());
  }
  out << "</title></rect>\n";
}

}  // namespace

void WriteTimelineSvg(const Json& timeline, double step_ms, size_t devices,
                      std::ostream& out) {
  size_t total = 0;
  const std::map<int, Lane> lanes = LanesOf(timeline, &total);
  const int lanes_height = static_cast<int>(lanes.size()) * kLaneHeight;
  const int height = kAxisHeight + lanes_height;
  const double step_us = step_ms * 1e3;
  out << "<div class=\"tl\">\n<svg class=\"tl-labels\" width=\"" << kLabelWidth
      << "\" height=\"" << height << "\" aria-hidden=\"true\">\n";
  int row = 0;
  for (const auto& [tid, lane] : lanes) {
    out << "<text x=\"4\" y=\"" << kAxisHeight + row++ * kLaneHeight + 15
        << "\">" << Html(lane.name) << "</text>\n";
  }
  out << "</svg>\n<div class=\"tl-scroll\" id=\"tl-scroll\" tabindex=\"0\" "
         "role=\"group\" aria-label=\"Timeline of the step; + and - zoom, 0 "
         "resets, arrow keys scroll\">\n<svg id=\"tl-svg\" width=\""
      << kBaseWidth << "\" height=\"" << height
      << "\" role=\"img\" aria-labelledby=\"tl-title\">\n<title "
         "id=\"tl-title\">Timeline: "
      << lanes.size() << " lanes, " << total
      << " ops and transfers over a step of " << Num(step_ms)
      << " ms; the tables list the same figures</title>\n";
  // Ticks at percentages of the width, so they move with the zoom and their
  // text keeps its size.
  for (int i = 0; i <= kTicks; ++i) {
    const double pct = 100.0 * i / kTicks;
    out << "<line class=\"tick\" x1=\"" << Num(pct) << "%\" x2=\"" << Num(pct)
        << "%\" y1=\"" << kAxisHeight - 4 << "\" y2=\"" << height << "\"/>";
    if (i < kTicks) {
      out << "<text class=\"tick\" x=\"" << Num(pct) << "%\" dx=\"2\" y=\"12\">"
          << Num(step_ms * i / kTicks) << "</text>";
    }
    out << "\n";
  }
  out << "<svg y=\"" << kAxisHeight << "\" width=\"100%\" height=\""
      << lanes_height << "\" viewBox=\"0 0 " << kBaseWidth << " "
      << lanes_height << "\" preserveAspectRatio=\"none\">\n";
  row = 0;
  for (const auto& [tid, lane] : lanes) {
    const int y = row++ * kLaneHeight;
    out << "<rect class=\"lane\" x=\"0\" y=\"" << y << "\" width=\""
        << kBaseWidth << "\" height=\"" << kLaneHeight << "\"/>\n";
    for (const Json* e : lane.events) {
      WriteEvent(*e, lane.name, EventColour(*e, tid, devices), step_us, y, out);
    }
  }
  out << "</svg>\n</svg>\n</div>\n</div>\n";
  if (total > kReportTimelineEvents) {
    out << "<p class=\"note\">The timeline draws the first "
        << kReportTimelineEvents << " of " << total
        << " ops and transfers (--timeline writes them all).</p>\n";
  }
}

void WriteGraphSvg(const Problem& problem, const Plan& plan,
                   const std::vector<std::string>& device_ids,
                   std::ostream& out) {
  const size_t n = std::min(problem.topo.size(), kReportGraphOps);
  const std::vector<uint16_t>& device = plan.placement.device;
  auto device_of = [&](OpId op) -> int {
    return op < device.size() ? device[op] : -1;
  };
  // Column: one right of the latest drawn producer; row: order in column.
  std::vector<int> column(problem.num_ops(), -1), row(problem.num_ops(), 0);
  std::vector<int> rows_in_column;
  int columns = 0, rows = 0;
  for (size_t i = 0; i < n; ++i) {
    const OpId op = problem.topo[i];
    int c = 0;
    for (const uint32_t t : problem.inputs(op)) {
      const OpId p = problem.tensors[t].producer;
      if (p != kNoOp && p < column.size() && column[p] >= 0) {
        c = std::max(c, column[p] + 1);
      }
    }
    column[op] = c;
    if (static_cast<size_t>(c) >= rows_in_column.size()) {
      rows_in_column.resize(c + 1, 0);
    }
    row[op] = rows_in_column[c]++;
    columns = std::max(columns, c + 1);
    rows = std::max(rows, row[op] + 1);
  }
  auto x_of = [&](OpId op) { return kMargin + column[op] * kColumnStep; };
  auto y_of = [&](OpId op) { return kMargin + row[op] * kRowStep; };
  out << "<div class=\"graph-scroll\" tabindex=\"0\" role=\"group\" "
         "aria-label=\"Graph coloured by device, scrollable\">\n<svg "
         "width=\""
      << 2 * kMargin + columns * kColumnStep << "\" height=\""
      << 2 * kMargin + rows * kRowStep
      << "\" role=\"img\" aria-labelledby=\"graph-title\">\n<title "
         "id=\"graph-title\">The op graph in layers, "
      << n
      << " ops coloured by device; the placement table lists the "
         "same</title>\n";
  for (size_t i = 0; i < n; ++i) {
    const OpId op = problem.topo[i];
    for (const uint32_t t : problem.outputs(op)) {
      for (const uint32_t to : problem.consumers(t)) {
        if (to >= column.size() || column[to] < 0) continue;
        const bool cross = device_of(op) != device_of(to);
        out << "<line x1=\"" << x_of(op) + kBoxWidth << "\" y1=\""
            << y_of(op) + kBoxHeight / 2 << "\" x2=\"" << x_of(to) << "\" y2=\""
            << y_of(to) + kBoxHeight / 2 << "\" stroke=\""
            << (cross ? kCrossEdgeColour : kLocalEdgeColour)
            << "\" stroke-width=\"" << (cross ? "1.5" : "0.6") << "\"/>\n";
      }
    }
  }
  for (size_t i = 0; i < n; ++i) {
    const OpId op = problem.topo[i];
    const int d = device_of(op);
    const bool known = d >= 0 && static_cast<size_t>(d) < device_ids.size();
    out << "<rect x=\"" << x_of(op) << "\" y=\"" << y_of(op) << "\" width=\""
        << kBoxWidth << "\" height=\"" << kBoxHeight << "\" fill=\""
        << (known ? DeviceColour(static_cast<size_t>(d)) : "#FFFFFF")
        << "\" stroke=\"#333333\" stroke-width=\"0.5\"><title>"
        << Html(problem.names[op]) << " (" << Html(problem.op_types[op])
        << ") on " << (known ? Html(device_ids[d]) : "?")
        << "</title></rect>\n";
  }
  out << "</svg>\n</div>\n";
  if (problem.num_ops() > n) {
    out << "<p class=\"note\">The graph draws the first " << n << " of "
        << problem.num_ops()
        << " ops in topological order (--dot writes them all).</p>\n";
  }
  out << "<details><summary>Placement of each op (table)</summary>\n"
         "<table><caption>Placement</caption><thead><tr><th "
         "scope=\"col\">op</th><th scope=\"col\">type</th><th "
         "scope=\"col\">device</th></tr></thead><tbody>\n";
  for (size_t i = 0; i < n; ++i) {
    const OpId op = problem.topo[i];
    const int d = device_of(op);
    out << "<tr><td>" << Html(problem.names[op]) << "</td><td>"
        << Html(problem.op_types[op]) << "</td><td>"
        << (d >= 0 && static_cast<size_t>(d) < device_ids.size()
                ? Html(device_ids[d])
                : "?")
        << "</td></tr>\n";
  }
  out << "</tbody></table>\n</details>\n";
}

}  // namespace tessera::placer::report
