// RenderSvg: a plain line chart. Layout: title and subtitle on top, the plot
// area with a grid at "nice" ticks, the legend to the right of the plot.
#include "cli/simulate/svg_chart.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <limits>
#include <sstream>
#include <tuple>

#include "common/strings.h"

namespace tessera::cli {
namespace {

// Tableau 10: distinct for up to ten series, readable in print.
constexpr const char* kColors[] = {"#4e79a7", "#f28e2b", "#e15759", "#76b7b2",
                                   "#59a14f", "#edc948", "#b07aa1", "#ff9da7",
                                   "#9c755f", "#bab0ac"};
constexpr int kLeft = 70, kTop = 64, kBottom = 56, kLegend = 190;

std::string Escape(const std::string& s) { return EscapeXml(s); }

std::string Num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f", v);
  return buf;
}

// A tick label: no trailing zeros.
std::string Label(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6g", std::abs(v) < 1e-9 ? 0.0 : v);
  return buf;
}

// About `n` ticks at 1, 2 or 5 times a power of ten covering [lo, hi].
std::vector<double> Ticks(double lo, double hi, int n) {
  const double raw = (hi - lo) / n;
  const double mag = std::pow(10.0, std::floor(std::log10(raw)));
  double step = mag;
  for (const double m : {1.0, 2.0, 5.0, 10.0}) {
    step = m * mag;
    if (raw <= step) break;
  }
  std::vector<double> ticks;
  for (double t = std::ceil(lo / step - 1e-9) * step; t <= hi + step * 1e-6;
       t += step) {
    ticks.push_back(t);
  }
  return ticks;
}

struct Range {
  double lo = std::numeric_limits<double>::infinity();
  double hi = -std::numeric_limits<double>::infinity();
  void Add(double v) {
    lo = std::min(lo, v);
    hi = std::max(hi, v);
  }
  void Pad() {
    if (!(lo <= hi)) {
      lo = 0;
      hi = 1;
    }
    if (hi - lo < 1e-9) {
      lo -= 1;
      hi += 1;
    }
  }
};

// The plot area: the ranges its axes cover, their ticks, its size, and
// where a value lands in the picture.
struct Plot {
  Range xr, yr;
  std::vector<double> xt, yt;
  int pw = 0, ph = 0;
  double px(double x) const {
    return kLeft + (x - xr.lo) / (xr.hi - xr.lo) * pw;
  }
  double py(double y) const {
    return kTop + ph - (y - yr.lo) / (yr.hi - yr.lo) * ph;
  }
};

// Fits the axes to every point, band and y mark (unless the chart fixes a
// range), then rounds the y axis out to its ticks.
Plot FitPlot(const LineChart& c) {
  Plot p;
  Range& xr = p.xr;
  Range& yr = p.yr;
  for (const ChartSeries& s : c.series) {
    for (const auto& [x, y] : s.points) {
      xr.Add(x);
      yr.Add(y);
    }
    for (const auto& [x, b] : s.band) {
      yr.Add(b.first);
      yr.Add(b.second);
    }
  }
  for (const double m : c.y_marks) yr.Add(m);
  xr.Pad();
  yr.Pad();
  if (c.x_range) std::tie(xr.lo, xr.hi) = *c.x_range;
  if (c.y_range) std::tie(yr.lo, yr.hi) = *c.y_range;
  p.xt = Ticks(xr.lo, xr.hi, 8);
  p.yt = Ticks(yr.lo, yr.hi, 6);
  if (!c.y_range) {  // round the y axis out to its ticks
    const double step = p.yt.size() > 1 ? p.yt[1] - p.yt[0] : 1;
    yr.lo = std::floor(yr.lo / step) * step;
    yr.hi = std::ceil(yr.hi / step) * step;
  }
  p.pw = c.width - kLeft - kLegend;
  p.ph = c.height - kTop - kBottom;
  return p;
}

// Grid and tick labels, the dotted marks, the frame and the axis labels.
void DrawAxes(const LineChart& c, const Plot& p, std::ostringstream& o) {
  const int pw = p.pw, ph = p.ph;
  for (const double t : p.yt) {
    if (t < p.yr.lo - 1e-9 || t > p.yr.hi + 1e-9) continue;
    o << "<line x1=\"" << kLeft << "\" x2=\"" << kLeft + pw << "\" y1=\""
      << Num(p.py(t)) << "\" y2=\"" << Num(p.py(t))
      << "\" stroke=\"#e5e5e5\"/>\n<text x=\"" << kLeft - 8 << "\" y=\""
      << Num(p.py(t) + 4) << "\" font-size=\"12\" text-anchor=\"end\">"
      << Label(t) << "</text>\n";
  }
  for (const double t : p.xt) {
    if (t < p.xr.lo - 1e-9 || t > p.xr.hi + 1e-9) continue;
    o << "<line y1=\"" << kTop << "\" y2=\"" << kTop + ph << "\" x1=\""
      << Num(p.px(t)) << "\" x2=\"" << Num(p.px(t))
      << "\" stroke=\"#f0f0f0\"/>\n<text x=\"" << Num(p.px(t)) << "\" y=\""
      << kTop + ph + 18 << "\" font-size=\"12\" text-anchor=\"middle\">"
      << Label(t) << "</text>\n";
  }
  for (const double m : c.x_marks) {
    o << "<line y1=\"" << kTop << "\" y2=\"" << kTop + ph << "\" x1=\""
      << Num(p.px(m)) << "\" x2=\"" << Num(p.px(m))
      << "\" stroke=\"#888\" stroke-dasharray=\"2,3\"/>\n";
  }
  for (const double m : c.y_marks) {
    o << "<line x1=\"" << kLeft << "\" x2=\"" << kLeft + pw << "\" y1=\""
      << Num(p.py(m)) << "\" y2=\"" << Num(p.py(m))
      << "\" stroke=\"#888\" stroke-dasharray=\"2,3\"/>\n";
  }
  o << "<rect x=\"" << kLeft << "\" y=\"" << kTop << "\" width=\"" << pw
    << "\" height=\"" << ph << "\" fill=\"none\" stroke=\"#333\"/>\n"
    << "<text x=\"" << kLeft + pw / 2 << "\" y=\"" << c.height - 14
    << "\" font-size=\"13\" text-anchor=\"middle\">" << Escape(c.x_label)
    << "</text>\n<text transform=\"translate(18," << kTop + ph / 2
    << ") rotate(-90)\" font-size=\"13\" text-anchor=\"middle\">"
    << Escape(c.y_label) << "</text>\n";
}

// Bands, then lines on top.
void DrawSeries(const LineChart& c, const Plot& p, std::ostringstream& o) {
  for (size_t i = 0; i < c.series.size(); ++i) {
    const ChartSeries& s = c.series[i];
    if (s.band.empty()) continue;
    o << "<path fill=\"" << kColors[i % 10] << "\" fill-opacity=\"0.15\" d=\"";
    for (size_t k = 0; k < s.band.size(); ++k) {
      o << (k ? "L" : "M") << Num(p.px(s.band[k].first)) << ","
        << Num(p.py(s.band[k].second.second));
    }
    for (size_t k = s.band.size(); k-- > 0;) {
      o << "L" << Num(p.px(s.band[k].first)) << ","
        << Num(p.py(s.band[k].second.first));
    }
    o << "Z\"/>\n";
  }
  for (size_t i = 0; i < c.series.size(); ++i) {
    const ChartSeries& s = c.series[i];
    if (s.points.empty()) continue;
    o << "<path fill=\"none\" stroke=\"" << kColors[i % 10]
      << "\" stroke-width=\"2\""
      << (s.dashed ? " stroke-dasharray=\"6,4\"" : "") << " d=\"";
    for (size_t k = 0; k < s.points.size(); ++k) {
      const auto& [x, y] = s.points[k];
      if (k > 0 && c.step) {
        o << "L" << Num(p.px(x)) << "," << Num(p.py(s.points[k - 1].second));
      }
      o << (k ? "L" : "M") << Num(p.px(x)) << "," << Num(p.py(y));
    }
    o << "\"/>\n";
  }
}

}  // namespace

std::string RenderSvg(const LineChart& c) {
  const Plot plot = FitPlot(c);
  const int pw = plot.pw, ph = plot.ph;
  std::ostringstream o;
  o << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << c.width
    << "\" height=\"" << c.height << "\" viewBox=\"0 0 " << c.width << " "
    << c.height << "\" font-family=\"Helvetica, Arial, sans-serif\">\n"
    << "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
    << "<text x=\"" << kLeft << "\" y=\"26\" font-size=\"17\" "
    << "font-weight=\"bold\">" << Escape(c.title) << "</text>\n";
  if (!c.subtitle.empty()) {
    o << "<text x=\"" << kLeft << "\" y=\"46\" font-size=\"12\" "
      << "fill=\"#555\">" << Escape(c.subtitle) << "</text>\n";
  }
  o << "<clipPath id=\"plot\"><rect x=\"" << kLeft << "\" y=\"" << kTop
    << "\" width=\"" << pw << "\" height=\"" << ph << "\"/></clipPath>\n";
  DrawAxes(c, plot, o);
  o << "<g clip-path=\"url(#plot)\">\n";
  DrawSeries(c, plot, o);
  o << "</g>\n";
  // Legend.
  const int lx = kLeft + pw + 16;
  for (size_t i = 0; i < c.series.size(); ++i) {
    const int ly = kTop + 10 + static_cast<int>(i) * 22;
    o << "<line x1=\"" << lx << "\" x2=\"" << lx + 22 << "\" y1=\"" << ly
      << "\" y2=\"" << ly << "\" stroke=\"" << kColors[i % 10]
      << "\" stroke-width=\"3\""
      << (c.series[i].dashed ? " stroke-dasharray=\"6,4\"" : "")
      << "/>\n<text x=\"" << lx + 28 << "\" y=\"" << ly + 4
      << "\" font-size=\"12\">" << Escape(c.series[i].name) << "</text>\n";
  }
  o << "</svg>\n";
  return o.str();
}

Status WriteSvg(const std::string& path, const LineChart& chart) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) return BadInput(path + ": cannot write the chart");
  out << RenderSvg(chart);
  out.close();
  if (!out) return BadInput(path + ": cannot write the chart");
  return {};
}

}  // namespace tessera::cli
