// The HTML plan report: one page, nothing fetched. Its figures come from
// PlanJson (the summary, devices, links) and TimelineJson (the timeline,
// transfers), never recomputed here, so the page agrees with plan.json and
// --timeline. The pictures are in plan_report_svg.cc; docs/plan_report.md
// says what the page holds.

#include "placer/report/plan_report.h"

#include <cstdio>
#include <sstream>
#include <string>
#include <vector>

#include "common/strings.h"
#include "placer/report/plan_report_internal.h"

namespace tessera::placer {
namespace report {

std::string Html(std::string_view s) { return EscapeXml(s); }

}  // namespace report

namespace {

using Json = nlohmann::json;
using report::Html;

constexpr const char* kStyle = R"(
body{font:14px/1.4 system-ui,sans-serif;margin:1.5em;color:#222;max-width:1400px}
h1{font-size:1.4em}h2{font-size:1.15em;margin-top:1.6em}
table{border-collapse:collapse;margin:.5em 0}
caption{text-align:left;font-weight:600;padding:.2em 0}
th,td{border:1px solid #ccc;padding:2px 8px;text-align:left}
td.n{text-align:right;font-variant-numeric:tabular-nums}
.swatch{display:inline-block;width:.9em;height:.9em;border:1px solid #333;margin-right:.4em;vertical-align:middle}
.note{color:#555}.warn{color:#a00;font-weight:600}
.tl{display:flex;border:1px solid #ccc}
.tl-labels{flex:none;font-size:12px;background:#fafafa}
.tl-scroll,.graph-scroll{overflow:auto;flex:1;max-height:70vh}
.graph-scroll{border:1px solid #ccc}
.tl-scroll:focus,.graph-scroll:focus,button:focus{outline:2px solid #0057b8}
rect.lane{fill:#fff;stroke:#eee}line.tick{stroke:#ddd}text.tick{font-size:10px;fill:#555}
button{font:inherit;padding:2px 10px;margin-right:.3em}
)";

// Zoom: the lanes stretch with the timeline's width; ticks sit at
// percentages. The time under the pointer (or the middle) stays put.
constexpr const char* kScript = R"(
(function(){
var box=document.getElementById('tl-scroll'),svg=document.getElementById('tl-svg');
var level=document.getElementById('tl-zoom');if(!box||!svg)return;
var base=Math.max(box.clientWidth-2,200),k=1;
function set(nk,at){var x=at===undefined?box.clientWidth/2:at;
var t=(box.scrollLeft+x)/(base*k);k=Math.min(Math.max(nk,1),4096);
svg.setAttribute('width',base*k);box.scrollLeft=t*base*k-x;
level.textContent='zoom '+Math.round(k*100)/100+'x';}
document.getElementById('zoom-in').addEventListener('click',function(){set(k*2);});
document.getElementById('zoom-out').addEventListener('click',function(){set(k/2);});
document.getElementById('zoom-reset').addEventListener('click',function(){set(1);});
box.addEventListener('wheel',function(e){if(e.shiftKey)return;e.preventDefault();
var r=box.getBoundingClientRect();set(e.deltaY<0?k*1.25:k/1.25,e.clientX-r.left);},{passive:false});
box.addEventListener('keydown',function(e){
if(e.key==='+'||e.key==='='){set(k*2);e.preventDefault();}
else if(e.key==='-'){set(k/2);e.preventDefault();}
else if(e.key==='0'){set(1);e.preventDefault();}});
set(1);})();
)";

std::string Fixed(double x, const char* format) {
  char buf[48];
  std::snprintf(buf, sizeof(buf), format, x);
  return buf;
}

std::string Ms(const Json& ms) { return Fixed(ms.get<double>(), "%.3f"); }

void Row(std::ostream& out, const std::string& key, const std::string& value,
         const std::string& attrs = "") {
  out << "<tr><th scope=\"row\">" << Html(key) << "</th><td" << attrs << ">"
      << value << "</td></tr>\n";
}

void WriteSummary(const Json& j, std::ostream& out) {
  int64_t transfers = 0;
  for (const Json& l : j["links"]) transfers += l["transfers"].get<int64_t>();
  const size_t devices = j["devices"].size();
  out << "<section aria-labelledby=\"s-summary\"><h2 "
         "id=\"s-summary\">Summary</h2>\n<table>\n";
  Row(out, "model",
      Html(j["model"].get<std::string>()) + ", batch " +
          std::to_string(j["batch"].get<int64_t>()) + ", " +
          j["mode"].get<std::string>());
  Row(out, "cluster",
      Html(j["cluster"].get<std::string>()) + " (" + std::to_string(devices) +
          (devices == 1 ? " device)" : " devices)"));
  Row(out, "algorithm", Html(j["algorithm"].get<std::string>()));
  const int microbatches = j["microbatches"].get<int>();
  Row(out, "step time",
      Ms(j["step_time_ms"]) + " ms" +
          (microbatches > 1
               ? " (" + std::to_string(microbatches) + " microbatches)"
               : std::string()),
      " id=\"step-time\" data-step-time-ms=\"" + j["step_time_ms"].dump() +
          "\"");
  const Json& ratio = j["ratio_to_lower_bound"];
  Row(out, "lower bound",
      Ms(j["lower_bound_ms"]) + " ms (step / bound = " +
          (ratio.is_number() ? Fixed(ratio.get<double>(), "%.2f") : "-") + ")");
  Row(out, "transfers",
      WithThousands(transfers) + ", " +
          HumanBytes(j["transfer_bytes"].get<int64_t>()) + " over " +
          std::to_string(j["links"].size()) +
          (j["links"].size() == 1 ? " link" : " links"));
  Row(out, "placement", Ms(j["placement_time_ms"]) + " ms");
  if (j.contains("ilp")) {
    const Json& ilp = j["ilp"];
    std::string text;
    if (ilp["objective_ms"].is_number()) {
      text = "objective " + Ms(ilp["objective_ms"]) + " ms";
    }
    if (ilp["gap"].is_number()) {
      text += (text.empty() ? "gap " : ", gap ") +
              Fixed(100 * ilp["gap"].get<double>(), "%.1f") + "%";
    }
    if (ilp["optimal"].get<bool>()) text += ", optimal";
    Row(out, "ilp", Html(text));
  }
  for (size_t i = 0; i < j["notes"].size(); ++i) {
    Row(out, i == 0 ? "notes" : "", Html(j["notes"][i].get<std::string>()));
  }
  out << "</table>\n";
  if (!j["fits"].get<bool>()) {
    out << "<p class=\"warn\">The simulator shows a device over its memory "
           "in this plan.</p>\n";
  }
  out << "</section>\n";
}

std::string Percent(double part, double whole) {
  return whole > 0 ? Fixed(100 * part / whole, "%.1f") + "%" : "0.0%";
}

void WriteDevices(const Json& j, std::ostream& out) {
  const double step_ms = j["step_time_ms"].get<double>();
  out << "<section aria-labelledby=\"s-devices\"><h2 "
         "id=\"s-devices\">Devices</h2>\n<table><caption>Each device, its "
         "colour in the pictures, memory and busy time</caption>\n<thead><tr>";
  for (const char* h : {"device", "kind", "share", "ops",
                        "memory peak / usable", "used", "busy ms", "busy"}) {
    out << "<th scope=\"col\">" << h << "</th>";
  }
  out << "</tr></thead><tbody>\n";
  size_t d = 0;
  for (const Json& dev : j["devices"]) {
    const auto peak = dev["memory_peak_bytes"].get<int64_t>();
    const auto usable = dev["memory_capacity_bytes"].get<int64_t>();
    const double busy = dev["busy_ms"].get<double>();
    out << "<tr><th scope=\"row\"><span class=\"swatch\" style=\"background:"
        << DeviceColour(d++) << "\" aria-hidden=\"true\"></span>"
        << Html(dev["id"].get<std::string>()) << "</th><td>"
        << Html(dev["kind"].get<std::string>()) << "</td><td class=\"n\">"
        << Fixed(dev["compute_share"].get<double>(), "%.2f")
        << "</td><td class=\"n\">" << dev["ops"].get<int>()
        << "</td><td class=\"n\">" << HumanBytes(peak) << " / "
        << HumanBytes(usable) << "</td><td class=\"n\">"
        << Percent(static_cast<double>(peak), static_cast<double>(usable))
        << "</td><td class=\"n\">" << Fixed(busy, "%.3f")
        << "</td><td class=\"n\">" << Percent(busy, step_ms) << "</td></tr>\n";
  }
  out << "</tbody></table>\n";
  if (!j["links"].empty()) {
    out << "<table><caption>Links that carried data</caption><thead><tr><th "
           "scope=\"col\">link</th><th scope=\"col\">transfers</th><th "
           "scope=\"col\">bytes</th><th scope=\"col\">busy "
           "ms</th></tr></thead><tbody>\n";
    for (const Json& l : j["links"]) {
      out << "<tr><th scope=\"row\">" << Html(l["from"].get<std::string>())
          << " &rarr; " << Html(l["to"].get<std::string>())
          << "</th><td class=\"n\">"
          << WithThousands(l["transfers"].get<int64_t>())
          << "</td><td class=\"n\">" << HumanBytes(l["bytes"].get<int64_t>())
          << "</td><td class=\"n\">" << Ms(l["busy_ms"]) << "</td></tr>\n";
    }
    out << "</tbody></table>\n";
  }
  out << "</section>\n";
}

// Every transfer of the step, in the timeline's order (start time).
void WriteTransfers(const Json& timeline, std::ostream& out) {
  out << "<section aria-labelledby=\"s-transfers\"><h2 "
         "id=\"s-transfers\">Transfers</h2>\n";
  size_t total = 0;
  std::string rows;
  for (const Json& e : timeline["traceEvents"]) {
    if (e["ph"] != "X" || (e["cat"] != "transfer" && e["cat"] != "gradient")) {
      continue;
    }
    if (++total > kReportTransferRows) continue;
    const Json& a = e["args"];
    rows +=
        "<tr><td>" + Html(e["name"].get<std::string>()) + "</td><td>" +
        Html(a["from"].get<std::string>()) + "</td><td>" +
        Html(a["to"].get<std::string>()) + "</td><td class=\"n\">" +
        HumanBytes(a["bytes"].get<int64_t>()) + "</td><td class=\"n\">" +
        Fixed(e["ts"].get<double>() / 1e3, "%.3f") + "</td><td class=\"n\">" +
        Fixed(e["dur"].get<double>() / 1e3, "%.3f") + "</td><td class=\"n\">" +
        std::to_string(a["microbatch"].get<int>()) + "</td></tr>\n";
  }
  if (total == 0) {
    out << "<p>No transfers: the plan keeps every tensor on its device.</p>\n";
  } else {
    out << "<table id=\"transfers\"><caption>" << total
        << " transfers, by start time</caption><thead><tr>";
    for (const char* h : {"tensor", "from", "to", "bytes", "start ms",
                          "time ms", "microbatch"}) {
      out << "<th scope=\"col\">" << h << "</th>";
    }
    out << "</tr></thead><tbody>\n" << rows << "</tbody></table>\n";
    if (total > kReportTransferRows) {
      out << "<p class=\"note\">The table lists the first "
          << kReportTransferRows << " of " << total
          << " transfers (--timeline writes them all).</p>\n";
    }
  }
  out << "</section>\n";
}

}  // namespace

void WritePlanHtml(const Problem& problem, const Cluster& cluster,
                   const Plan& plan, const PlanContext& context,
                   const PlanReportOptions& options, std::ostream& out) {
  const Json j = PlanJson(problem, cluster, plan, context);
  const Json timeline = TimelineJson(problem, cluster, plan);
  std::vector<std::string> device_ids;
  for (const ClusterDevice& d : cluster.devices) device_ids.push_back(d.id);
  out << "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta "
         "charset=\"utf-8\">\n<meta name=\"viewport\" "
         "content=\"width=device-width, initial-scale=1\">\n<title>tessera "
         "plan: "
      << Html(context.model) << "</title>\n<style>" << kStyle
      << "</style>\n</head>\n<body>\n<main>\n<h1>tessera plan: "
      << Html(context.model) << "</h1>\n";
  if (!options.note.empty()) {
    out << "<p class=\"note\">" << Html(options.note) << "</p>\n";
  }
  WriteSummary(j, out);
  WriteDevices(j, out);
  out << "<section aria-labelledby=\"s-timeline\"><h2 id=\"s-timeline\">The "
         "step</h2>\n<p class=\"note\">One lane per device and per link; hover "
         "a rectangle for its op or transfer. Zoom with the buttons, the "
         "mouse wheel, or + and - on the focused timeline; Shift+wheel "
         "scrolls.</p>\n<div role=\"toolbar\" aria-label=\"Timeline "
         "zoom\"><button type=\"button\" id=\"zoom-in\" aria-label=\"Zoom "
         "in\">+</button><button type=\"button\" id=\"zoom-out\" "
         "aria-label=\"Zoom out\">&minus;</button><button type=\"button\" "
         "id=\"zoom-reset\" aria-label=\"Fit the whole step\">Fit</button> "
         "<span id=\"tl-zoom\" aria-live=\"polite\">zoom 1x</span></div>\n";
  report::WriteTimelineSvg(timeline, j["step_time_ms"].get<double>(),
                           cluster.size(), out);
  out << "</section>\n";
  WriteTransfers(timeline, out);
  out << "<section aria-labelledby=\"s-graph\"><h2 id=\"s-graph\">The graph "
         "by device</h2>\n<p class=\"note\">Columns are layers (an op sits "
         "right of its inputs); colours are the devices' above; red lines "
         "cross devices.</p>\n";
  report::WriteGraphSvg(problem, plan, device_ids, out);
  out << "</section>\n</main>\n<script>" << kScript
      << "</script>\n</body>\n</html>\n";
}

PlanPictures RenderPlanPictures(const Problem& problem, const Cluster& cluster,
                                const Plan& plan) {
  const Json timeline = TimelineJson(problem, cluster, plan);
  std::vector<std::string> device_ids;
  for (const ClusterDevice& d : cluster.devices) device_ids.push_back(d.id);
  std::ostringstream tl, graph;
  report::WriteTimelineSvg(timeline, plan.sim.step_s * 1e3, cluster.size(), tl);
  report::WriteGraphSvg(problem, plan, device_ids, graph);
  return {tl.str(), graph.str()};
}

}  // namespace tessera::placer
