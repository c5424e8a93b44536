// The session report (core/report/session_report.h): well-formed XHTML with no external resources, whose
// numbers are the engine's and the run report's; the core run-report reader and the charts.
#include <fstream>
#include <regex>
#include <sstream>

#include <gtest/gtest.h>

#include "core/graph/content_hash.h"
#include "core/report/run_report.h"
#include "core/report/session_report.h"
#include "core/report/svg_chart.h"
#include "core/report/xml_text.h"
#include "tests/core/fusion_test_util.h"
#include "tests/core/xml_check.h"

namespace fx {
namespace {

using testing::sample;

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

RunReport relu_mul_add_run() {
  auto run = read_run_report(read_file(std::string(FX_SOURCE_DIR) + "/tests/data/run-reports/relu_mul_add.h100.json"));
  EXPECT_TRUE(run.ok()) << (run.ok() ? "" : format_diagnostics(run.errors()));
  return std::move(run).value();
}

// Every resource a browser would fetch: src attributes, hrefs that are not in-page anchors, url(...) in CSS,
// and any http(s) address other than an XML namespace name.
std::vector<std::string> external_references(const std::string& html) {
  std::vector<std::string> out;
  const std::regex refs(R"((src\s*=\s*"[^"]*")|(href\s*=\s*"[^#][^"]*")|(url\s*\()|(@import))");
  for (auto it = std::sregex_iterator(html.begin(), html.end(), refs); it != std::sregex_iterator(); ++it)
    out.push_back(it->str());
  const std::regex address(R"(https?:[^"\s<]*)");
  for (auto it = std::sregex_iterator(html.begin(), html.end(), address); it != std::sregex_iterator(); ++it) {
    const std::string a = it->str();
    if (a != "http://www.w3.org/1999/xhtml" && a != "http://www.w3.org/2000/svg" && a != "http://www.w3.org/1999/xlink")
      out.push_back(a);
  }
  return out;
}

struct Report {
  std::shared_ptr<FusionEngine> engine;
  Plan unfused;
  std::string html;
};

Report report_of(const Graph& g, const DeviceDescription& d, const RunReport* run, std::string before = {},
                 std::string after = {}) {
  Report r{std::make_shared<FusionEngine>(g, d), {}, {}};
  r.unfused = r.engine->plan();
  r.engine->auto_fuse();
  SessionReportInput in{r.engine.get(), &r.unfused, "auto-fuse", std::move(before), std::move(after), "no pictures",
                        run};
  r.html = session_report_html(in);
  return r;
}

TEST(SessionReport, IsWellFormedAndSelfContained) {
  const RunReport run = relu_mul_add_run();
  const Report r = report_of(sample("relu_mul_add.json"), DeviceDescription::h100_sxm(), &run);
  EXPECT_EQ(test::xml_error(r.html), "");
  EXPECT_EQ(external_references(r.html), std::vector<std::string>{});
  EXPECT_EQ(r.html.find("<script"), std::string::npos);
  // Two charts, each one SVG root that is itself well-formed.
  for (const char* id : {"<figure id=\"times\">", "<figure id=\"roofline\">"}) {
    const std::size_t at = r.html.find(id);
    ASSERT_NE(at, std::string::npos) << id;
    const std::size_t start = r.html.find("<svg", at), end = r.html.find("</svg>", at);
    ASSERT_LT(start, end);
    EXPECT_EQ(test::xml_error(r.html.substr(start, end + 6 - start)), "") << id;
  }
}

TEST(SessionReport, NumbersAreTheEnginesAndTheRunReports) {
  const RunReport run = relu_mul_add_run();
  const Report r = report_of(sample("relu_mul_add.json"), DeviceDescription::h100_sxm(), &run);
  const Plan& fused = r.engine->plan();
  for (const auto& [name, plan] : {std::pair{"unfused", &r.unfused}, std::pair{"fused", &fused}}) {
    const std::string row = "<tr data-plan=\"" + std::string(name) + "\" data-kernels=\"" +
                            std::to_string(plan->kernel_count()) + "\" data-bytes=\"" +
                            std::to_string(plan->bytes_moved()) + "\" data-predicted-us=\"" +
                            exact_number(plan->predicted_time_s() * 1e6) + "\">";
    EXPECT_NE(r.html.find(row), std::string::npos) << row;
  }
  EXPECT_EQ(r.unfused.kernel_count(), 3);
  EXPECT_EQ(fused.kernel_count(), 1);
  for (const Group& g : fused.groups())
    EXPECT_NE(r.html.find("<tr data-group=\"" + g.id + "\" data-bytes=\"" + std::to_string(g.cost.bytes_moved())),
              std::string::npos);
  // The measured table carries the run report's own numbers, exactly.
  for (const PlanReport* p : run.plans()) {
    const std::string row = "<tr data-plan=\"" + p->name + "\" data-kernels=\"" + std::to_string(p->kernels.size()) +
                            "\" data-measured-ms=\"" + exact_number(p->total_ms) + "\"";
    EXPECT_NE(r.html.find(row), std::string::npos) << row;
  }
  EXPECT_NE(r.html.find("Measured on <b>NVIDIA H100 80GB HBM3</b>"), std::string::npos);
  // Every decision the engine logged is a row with its reason code.
  ASSERT_FALSE(r.engine->log().empty());
  for (const LogEntry& l : r.engine->log())
    EXPECT_NE(r.html.find("data-candidate=\"" + l.candidate_id + "\" data-reason=\"" + std::string(to_string(l.reason))),
              std::string::npos);
}

// A kernel whose bytes were measured in an identical step's window names that step; its own row claims nothing.
TEST(SessionReport, BytesMeasuredOnceNameTheStepMeasured) {
  RunReport run = relu_mul_add_run();
  const SharedCounterWindow w{"unfused", 1, "fx_g1_add", 2};
  run.unfused.kernels[1].measured->shared_window = w;
  run.fused.kernels[0].measured->shared_window = w;
  const Report r = report_of(sample("relu_mul_add.json"), DeviceDescription::h100_sxm(), &run);
  EXPECT_EQ(test::xml_error(r.html), "");
  const std::string bytes = format_bytes(*run.fused.kernels[0].measured_bytes());
  EXPECT_NE(r.html.find("<td class=\"n\" title=\"bytes measured once for 2 identical steps: same as step 1 of the "
                        "unfused plan (fx_g1_add)\">" + bytes + " (as unfused #1)</td>"),
            std::string::npos);
  EXPECT_NE(r.html.find("this step&#39;s window, shared by the others"), std::string::npos);
  EXPECT_EQ(r.html.find("(as unfused #0)"), std::string::npos);
}

TEST(SessionReport, PairsLeftApartCarryTheirReasons) {
  const Report r = report_of(sample("swiglu_bf16.json"), DeviceDescription::h100_sxm(), nullptr);
  EXPECT_EQ(test::xml_error(r.html), "");
  EXPECT_NE(r.html.find("data-reason=\"EPILOGUE_NOT_EXPRESSIBLE\""), std::string::npos);
  EXPECT_NE(r.html.find("No run report was given"), std::string::npos);
  EXPECT_NE(r.html.find("no pictures"), std::string::npos);
}

TEST(SessionReport, PicturesAreInlinedWithoutTheirPrologue) {
  const std::string svg = "<?xml version=\"1.0\"?>\n<!DOCTYPE svg PUBLIC \"-//W3C//DTD SVG 1.1//EN\"\n"
                          " \"http://www.w3.org/Graphics/SVG/1.1/DTD/svg11.dtd\">\n<!-- Generated by graphviz -->\n"
                          "<svg xmlns=\"http://www.w3.org/2000/svg\"><!-- g --><g class=\"node\"/></svg>\n";
  EXPECT_EQ(inline_svg(svg), "<svg xmlns=\"http://www.w3.org/2000/svg\"><g class=\"node\"/></svg>");
  const Report r = report_of(sample("relu_mul_add.json"), DeviceDescription::h100_sxm(), nullptr, svg, svg);
  EXPECT_EQ(test::xml_error(r.html), "");
  EXPECT_EQ(external_references(r.html), std::vector<std::string>{});
  EXPECT_NE(r.html.find("<figure id=\"before\">"), std::string::npos);
}

TEST(SessionReport, NamesWithMarkupAreEscaped) {
  auto g = testing::graph_from(testing::graph_json(
      R"([{"name": "x<&\"'>", "dtype": "f32", "shape": [4]}])",
      R"([{"name": "a<b>&c", "op": "relu", "inputs": ["x<&\"'>"]}, {"name": "y]]>", "op": "exp", "inputs": ["a<b>&c"]}])",
      R"(["y]]>"])"));
  const Report r = report_of(g, DeviceDescription::h100_sxm(), nullptr);
  EXPECT_EQ(test::xml_error(r.html), "");
  EXPECT_EQ(r.html.find("a<b>"), std::string::npos);
}

TEST(SessionReport, TheCheckCatchesMalformedText) {
  EXPECT_NE(test::xml_error("<html><p>x</html>"), "");
  EXPECT_NE(test::xml_error("<html a=b></html>"), "");
  EXPECT_NE(test::xml_error("<html>&nbsp;</html>"), "");
  EXPECT_NE(test::xml_error("<html></html><p/>"), "");
  EXPECT_EQ(test::xml_error("<!DOCTYPE html>\n<html a=\"1\"><br/>&amp;&#39;</html>\n"), "");
}

TEST(SessionReport, AReportOfAnotherGraphIsRecognised) {
  RunReport run = relu_mul_add_run();
  EXPECT_EQ(run_mismatch(run, sample("relu_mul_add.json")), "");
  EXPECT_NE(run_mismatch(run, sample("sin_cos.json")), "");
  run.graph_hash = "0000000000000000";
  EXPECT_NE(run_mismatch(run, sample("relu_mul_add.json")), "");
  run.graph_hash = graph_content_hash(sample("relu_mul_add.json"));
  EXPECT_EQ(run_mismatch(run, sample("relu_mul_add.json")), "");
}

// With a run report, the roofline has each group again where the GPU put it: the model's FLOPs over the
// measured bytes and time (squares), beside the prediction (circles).
TEST(SessionReport, RooflineShowsMeasuredPointsBesideThePredicted) {
  const RunReport run = relu_mul_add_run();
  const Report with_run = report_of(sample("relu_mul_add.json"), DeviceDescription::h100_sxm(), &run);
  const Report without = report_of(sample("relu_mul_add.json"), DeviceDescription::h100_sxm(), nullptr);
  auto roofline = [](const std::string& html) {
    const std::size_t at = html.find("<figure id=\"roofline\">");
    return html.substr(at, html.find("</figure>", at) - at);
  };
  auto count = [](const std::string& text, const std::string& what) {
    std::size_t n = 0;
    for (std::size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
    return n;
  };
  const std::string measured = roofline(with_run.html);
  // relu_mul_add: three unfused groups and one fused, each measured in the test report.
  EXPECT_EQ(count(measured, ", measured: "), 4u);
  EXPECT_EQ(count(measured, ", predicted: "), 4u);
  EXPECT_EQ(count(roofline(without.html), ", measured: "), 0u);
  const Group& g = with_run.engine->plan().groups().front();
  EXPECT_NE(measured.find(g.id + " (fused plan), measured: "), std::string::npos);
  EXPECT_EQ(count(measured, "<rect x="), 4u + count(roofline(without.html), "<rect x="));
  EXPECT_NE(with_run.html.find("Squares: the same groups as measured on NVIDIA H100 80GB HBM3."), std::string::npos);
}

TEST(SvgCharts, RooflineAndBarsAreWellFormed) {
  const std::string roof = roofline_svg({3.35e12, 67e12, "H100 <SXM> & co"}, {{"g:a", 0.25, 8e11, false},
                                                                            {"g:b", 100, 6e13, true},
                                                                            {"skipped", 0, 0, true}});
  EXPECT_EQ(test::xml_error(roof), "");
  EXPECT_NE(roof.find("H100 &lt;SXM&gt; &amp; co"), std::string::npos);
  EXPECT_EQ(roof.find("skipped"), std::string::npos);
  EXPECT_NE(roof.find("g:b (fused plan)"), std::string::npos);
  const std::string bars = time_bars_svg({{"unfused", 650, 714.48}, {"fused", 323.5, std::nullopt}});
  EXPECT_EQ(test::xml_error(bars), "");
  EXPECT_NE(bars.find(">714 us<"), std::string::npos);
  EXPECT_NE(bars.find(">324 us<"), std::string::npos);
}

}  // namespace
}  // namespace fx
