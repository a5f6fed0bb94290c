#ifndef TESSERA_CLI_SIMULATE_SVG_CHART_H_
#define TESSERA_CLI_SIMULATE_SVG_CHART_H_

// Line charts as standalone SVG files (no dependencies): one line per
// series with an optional min/max band, axes with round ticks, a legend.
// `tessera simulate --plot` draws with it.

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/result.h"

namespace tessera::cli {

struct ChartSeries {
  std::string name;
  std::vector<std::pair<double, double>> points;  // (x, y), x ascending
  // Optional band around the line: (x, low, high), e.g. min and max over
  // seeds; drawn translucent in the series' colour.
  std::vector<std::pair<double, std::pair<double, double>>> band;
  bool dashed = false;
};

struct LineChart {
  std::string title;
  std::string subtitle;  // a smaller second line, e.g. the inputs
  std::string x_label, y_label;
  std::vector<ChartSeries> series;
  std::optional<std::pair<double, double>> x_range, y_range;  // else fitted
  std::vector<double> x_marks;  // dotted vertical reference lines
  std::vector<double> y_marks;  // dotted horizontal reference lines
  bool step = false;            // draw lines as steps (utilization over time)
  int width = 880, height = 520;
};

// The chart as an SVG document.
std::string RenderSvg(const LineChart& chart);
// Writes RenderSvg(chart) to `path`; kBadInput naming the path on failure.
Status WriteSvg(const std::string& path, const LineChart& chart);

}  // namespace tessera::cli

#endif  // TESSERA_CLI_SIMULATE_SVG_CHART_H_
