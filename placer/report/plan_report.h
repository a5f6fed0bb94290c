#ifndef TESSERA_PLACER_REPORT_PLAN_REPORT_H_
#define TESSERA_PLACER_REPORT_PLAN_REPORT_H_

// One plan as a single self-contained HTML page (docs/plan_report.md): the
// summary and device table that `tessera plan` prints, the simulated step as
// a zoomable SVG timeline, the transfers, and the graph coloured by device.
// CSS, JS and SVG are inline; the page fetches nothing.

#include <cstddef>
#include <ostream>
#include <string>

#include "placer/core/cluster.h"
#include "placer/core/place.h"
#include "placer/core/problem.h"
#include "placer/report/plan_io.h"

namespace tessera::placer {

// Caps that keep the page quick to open in a browser; the page says how
// much each one left out.
// Ops drawn in the graph picture and listed in its placement table.
inline constexpr size_t kReportGraphOps = 3000;
// Rectangles (ops and transfers) drawn in the timeline.
inline constexpr size_t kReportTimelineEvents = 20000;
// Rows of the transfers table.
inline constexpr size_t kReportTransferRows = 2000;

struct PlanReportOptions {
  std::string note;  // a line under the title, e.g. "best of 6 algorithms"
};

// Writes the page to `out`. The summary comes from PlanJson and the
// timeline and transfers from TimelineJson, so the page shows the figures
// plan.json and --timeline hold. REQUIRES: plan.sim simulated with
// record_ops (as for TimelineJson).
void WritePlanHtml(const Problem& problem, const Cluster& cluster,
                   const Plan& plan, const PlanContext& context,
                   const PlanReportOptions& options, std::ostream& out);

// The report's two pictures as HTML fragments, for pages that bring their
// own styles and script (the web console's job page): the timeline (a div
// of SVG lanes, class "tl", zoomed by setting #tl-svg's width) and the
// graph coloured by device (class "graph-scroll", then its placement
// table). Names are escaped; the fragments hold no script. REQUIRES as
// WritePlanHtml.
struct PlanPictures {
  std::string timeline_html;
  std::string graph_html;
};
PlanPictures RenderPlanPictures(const Problem& problem, const Cluster& cluster,
                                const Plan& plan);

}  // namespace tessera::placer

#endif  // TESSERA_PLACER_REPORT_PLAN_REPORT_H_
