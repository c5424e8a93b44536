// The session report: one self-contained XHTML file (no scripts, no external resources) with the graph before
// and after fusion, the plan, every decision with its reason, predicted vs measured tables and the charts. For
// workshop handouts and for attaching to a bug report about a model that did not fuse. Shared by
// `fusion-cli report` and the GUI's File > Export report; the graph pictures are rendered by the caller
// (Graphviz lives in app/) and passed in as SVG text.
#pragma once

#include <string>
#include <string_view>

#include "core/fusion/engine.h"
#include "core/report/run_report.h"

namespace fx {

struct SessionReportInput {
  const FusionEngine* engine = nullptr;  // the graph, the plan shown as "after", its decision log
  const Plan* unfused = nullptr;         // the plan shown as "before"
  std::string plan_how;                  // where the plan came from: "auto-fuse", "the fusion section of FILE"
  std::string before_svg, after_svg;     // Graphviz SVG documents of the two plans; "" when not rendered
  std::string pictures_note;             // why there are no pictures, when there are none
  const RunReport* run = nullptr;       // a run report of this graph (see run_mismatch), or none
};

// "" when the report measured this graph: the same name, and the same content hash where the report has one.
// Otherwise why its numbers must not be shown with this graph.
std::string run_mismatch(const RunReport& run, const Graph& graph);

// An SVG document made fit to sit inside XHTML: its XML declaration, DOCTYPE and comments removed.
std::string inline_svg(std::string_view svg_document);

std::string session_report_html(const SessionReportInput& input);

}  // namespace fx
