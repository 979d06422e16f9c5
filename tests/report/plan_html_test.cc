// Pictures of a plan (issue 7): snapshot tests of the SVG/HTML structure (not pixels) for the
// embedded default deployment (data/deployments/default.toml: the seed's GLM-5.3 W4A16 on
// 8 x A100-80GB, TP4 PP2 split 41,37), the CLI's html/svg output against its JSON, and a
// headless-Chromium render of the page.
#include "report/plan_html.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "cli_runner.h"
#include "core/error.h"
#include "core/units.h"
#include "deploy/plan.h"
#include "deploy_test_util.h"
#include "layout/index_share.h"
#include "layout/optimizer.h"
#include "report/plan_render.h"
#include "report/svg.h"
#include "report/test_xml.h"
#include "test_util.h"

namespace ppdeploy {
namespace {

using testing::Attr;
using testing::HasClass;
using testing::StartTags;
using testing::WithClass;
using testing::XmlWellFormedError;

// The report `ppdeploy plan` builds with no flags: every layout, the default deployment's layout
// in detail, the split optimiser for it.
PlanReport DefaultReport() { return PlanDeployment(testing::ResolvedWith(), PlanChoices{}); }

const PlanReport& Report() {
  static const PlanReport rep = DefaultReport();
  return rep;
}

// The text of the <svg ...>...</svg> element of `doc` whose start tag has class `cls` (the n-th one).
std::string SvgWithClass(const std::string& doc, const std::string& cls, int n = 0) {
  for (size_t i = doc.find("<svg"); i != std::string::npos; i = doc.find("<svg", i + 1)) {
    std::string tag = doc.substr(i, doc.find('>', i) + 1 - i);
    if (HasClass(tag, cls) && n-- == 0) return doc.substr(i, doc.find("</svg>", i) + 6 - i);
  }
  return "";
}

TEST(SvgWriterTest, EscapesTextAndAttributes) {
  EXPECT_EQ(XmlEscape("a<b & \"c\" 'd'>"), "a&lt;b &amp; &quot;c&quot; &apos;d&apos;&gt;");
  EXPECT_EQ(XmlEscape(std::string("x\x01y")), "x\xEF\xBF\xBDy") << "control characters are not allowed in XML 1.0";
  EXPECT_EQ(XmlEscape("GiB \xC3\x97 2"), "GiB \xC3\x97 2") << "UTF-8 passes through";
  SvgWriter w(100, 50, "t", {{"data-name", "<x & y>"}});
  w.Open("g", {{"class", "a\"b"}});
  w.Text(1, 2, "</svg><script>alert(1)</script>");
  w.Rect(0, 0, 10, -5);
  std::string s = w.Finish();
  EXPECT_EQ(XmlWellFormedError(s), "") << s;
  EXPECT_EQ(s.find("<script"), std::string::npos);
  EXPECT_NE(s.find("&lt;/svg&gt;&lt;script&gt;"), std::string::npos);
  EXPECT_NE(s.find("data-name=\"&lt;x &amp; y&gt;\""), std::string::npos);
  EXPECT_NE(s.find("height=\"0\""), std::string::npos) << "negative lengths are clamped";
  EXPECT_EQ(SvgNumber(12.5), "12.5");
  EXPECT_EQ(SvgNumber(3), "3");
  EXPECT_EQ(SvgNumber(0.126), "0.13");
  EXPECT_EQ(SvgNumber(-0.001), "0");
  SvgWriter w2(1, 1, "t");
  EXPECT_EQ(testing::ErrorOf([&] { w2.Close(); }), "SvgWriter::Close: no element open besides <svg>");
}

TEST(XmlCheckTest, CatchesBrokenDocuments) {
  EXPECT_EQ(XmlWellFormedError("<a><b/></a>"), "");
  EXPECT_NE(XmlWellFormedError("<a><b></a>"), "");
  EXPECT_NE(XmlWellFormedError("<a x=\"1 & 2\"/>"), "");
  EXPECT_NE(XmlWellFormedError("<a>1 < 2</a>"), "");
  EXPECT_NE(XmlWellFormedError("<a x=\"1\" x=\"2\"/>"), "");
  EXPECT_NE(XmlWellFormedError("<a/><b/>"), "");
}

// docs/seed.md §2: budget = 0.95 x 79.25 GiB = 75.29 GiB; the default plan details TP4 PP2 41,37.
TEST(PlanHtmlTest, MemoryBarsHaveOneGroupPerStageAndTheBudgetLine) {
  const PlanReport& rep = Report();
  ASSERT_EQ(rep.detailed.size(), 1u);
  const LayoutPlan& l = rep.detailed[0];
  ASSERT_EQ(SplitText(l), "41,37");
  std::string svg = MemoryBarsSvg(rep.deployment, l, "m");
  ASSERT_EQ(XmlWellFormedError(svg), "") << svg;
  auto stages = WithClass(svg, "g", "stage");
  ASSERT_EQ(stages.size(), 2u);
  int binding = 0;
  for (int r = 0; r < 2; ++r) {
    const RankPlan& rp = l.ranks[r];
    EXPECT_EQ(Attr(stages[r], "data-pp-rank"), std::to_string(r));
    EXPECT_EQ(Attr(stages[r], "data-gib"), PlanGiBText(rp.nvidia_smi_used_bytes));
    EXPECT_EQ(Attr(stages[r], "data-blocks"), std::to_string(rp.num_blocks));
    EXPECT_EQ(Attr(stages[r], "data-binding"), rp.binding ? "true" : "false");
    binding += rp.binding;
    if (rp.binding) {
      EXPECT_TRUE(HasClass(stages[r], "binding"));
      EXPECT_EQ(r, l.pool.binding_rank);
    }
  }
  EXPECT_EQ(binding, 1) << "exactly one stage binds the pool";
  EXPECT_EQ(WithClass(svg, "rect", "binding-outline").size(), 1u);
  EXPECT_NE(svg.find("binds the pool: " + WithThousands(l.pool.num_gpu_blocks) + " blocks"), std::string::npos);

  // 7 segments per stage; the budget part (weights .. idle KV) sums to the budget.
  auto segs = WithClass(svg, "rect", "seg");
  ASSERT_EQ(segs.size(), 14u);
  for (int r = 0; r < 2; ++r) {
    std::int64_t budget = 0;
    for (int k = 0; k < 5; ++k) budget += std::stoll(Attr(segs[r * 7 + k], "data-bytes"));
    EXPECT_EQ(budget, l.ranks[r].requested_bytes) << "rank " << r;
    EXPECT_TRUE(HasClass(segs[r * 7], "seg-weights"));
    EXPECT_EQ(Attr(segs[r * 7], "data-gib"), PlanGiBText(l.ranks[r].weights.bytes));
    EXPECT_TRUE(HasClass(segs[r * 7 + 3], "seg-kv"));
    EXPECT_EQ(Attr(segs[r * 7 + 3], "data-gib"), PlanGiBText(l.ranks[r].kv_allocated_bytes));
    EXPECT_TRUE(HasClass(segs[r * 7 + 4], "seg-idle-kv"));
    EXPECT_EQ(Attr(segs[r * 7 + 4], "data-bytes"), std::to_string(l.ranks[r].kv_unusable_bytes));
    EXPECT_TRUE(HasClass(segs[r * 7 + 6], "seg-free"));
  }
  auto budget = WithClass(svg, "line", "budget-line");
  ASSERT_EQ(budget.size(), 1u);
  EXPECT_EQ(Attr(budget[0], "data-gib"), "75.29");
  EXPECT_NE(svg.find(">budget 75.29 GiB<"), std::string::npos);
  EXPECT_NE(svg.find(">= gpu_memory_utilization 0.95<"), std::string::npos);
  EXPECT_NE(svg.find(">x 79.25 GiB (torch total)<"), std::string::npos);
  // Horizontal, below the nvidia-smi total (A100-80GB: 81,920 MiB = 80.00 GiB), above 0.
  auto smi = WithClass(svg, "line", "smi-total-line");
  ASSERT_EQ(smi.size(), 1u);
  EXPECT_EQ(Attr(smi[0], "data-gib"), "80.00");
  EXPECT_EQ(Attr(budget[0], "y1"), Attr(budget[0], "y2"));
  EXPECT_GT(std::stod(Attr(budget[0], "y1")), std::stod(Attr(smi[0], "y1")));
  // y = top + plot_h x (1 - 75.29 / axis max 80): 64 + 470 x (1 - 75.2875 / 80) = 91.69 px.
  EXPECT_NEAR(std::stod(Attr(budget[0], "y1")), 64 + 470 * (1 - ToGiB(l.ranks[0].requested_bytes) / 80), 0.01);
  // Grayscale: hatching patterns exist and are referenced.
  EXPECT_NE(svg.find("<pattern id=\"m-act\""), std::string::npos);
  EXPECT_NE(svg.find("url(#m-idle)"), std::string::npos);
}

TEST(PlanHtmlTest, OptimizerChartHasOneBarPerCandidate) {
  const PlanReport& rep = Report();
  ASSERT_EQ(rep.optimizations.size(), 1u);
  const OptimizeResult& o = rep.optimizations[0];
  std::string svg = OptimizerSvg(o, "o");
  ASSERT_EQ(XmlWellFormedError(svg), "") << svg;
  auto bars = WithClass(svg, "g", "candidate");
  ASSERT_EQ(bars.size(), o.table.size());
  ASSERT_GE(bars.size(), 3u);
  int optimum = 0, dflt = 0;
  for (size_t i = 0; i < bars.size(); ++i) {
    EXPECT_EQ(Attr(bars[i], "data-split"), FormatPartition(o.table[i].partition));
    EXPECT_EQ(Attr(bars[i], "data-kv-tokens"), std::to_string(o.table[i].kv_tokens));
    if (Attr(bars[i], "data-optimum") == "true") {
      ++optimum;
      EXPECT_EQ(Attr(bars[i], "data-split"), "41,37") << "docs/seed.md §6: the best split is 41,37";
      EXPECT_EQ(Attr(bars[i], "data-forced"), "41");
    }
    if (Attr(bars[i], "data-default") == "true") {
      ++dflt;
      EXPECT_EQ(Attr(bars[i], "data-split"), "39,39") << "vLLM get_pp_indices: 78 / 2";
    }
  }
  EXPECT_EQ(optimum, 1);
  EXPECT_EQ(dflt, 1);
  // Forced layers annotated under each bar that has some.
  for (const auto& c : o.table) {
    if (c.forced_layers.empty()) continue;
    EXPECT_TRUE(svg.find(">forced " + FormatPartition(c.forced_layers) + "<") != std::string::npos ||
                svg.find(">" + FormatPartition(c.forced_layers) + "<") != std::string::npos)
        << FormatPartition(c.partition);
  }
  EXPECT_NE(svg.find(">optimum<"), std::string::npos);
  EXPECT_NE(svg.find(">vLLM default<"), std::string::npos);
}

TEST(PlanHtmlTest, LayerMapHas78PlusOneCellsAndLayer41Forced) {
  const PlanReport& rep = Report();
  const LayoutPlan& l = rep.detailed[0];
  std::string svg = LayerMapSvg(rep.deployment, {&l}, "map");
  ASSERT_EQ(XmlWellFormedError(svg), "") << svg;
  auto strips = WithClass(svg, "g", "layer-strip");
  ASSERT_EQ(strips.size(), 1u);
  EXPECT_EQ(Attr(strips[0], "data-split"), "41,37");
  auto cells = WithClass(svg, "rect", "cell");
  ASSERT_EQ(cells.size(), 78u + 1u) << "GLM-5.3: num_hidden_layers 78 + 1 MTP layer";
  EXPECT_EQ(WithClass(svg, "rect", "mtp").size(), 1u);
  EXPECT_EQ(Attr(cells[78], "data-layer"), "78");
  EXPECT_EQ(Attr(cells[78], "data-pp-rank"), "1");
  ModelConfig m = EffectiveModel(rep.deployment);
  int forced = 0;
  for (int i = 0; i < 78; ++i) {
    EXPECT_EQ(Attr(cells[i], "data-layer"), std::to_string(i));
    EXPECT_EQ(Attr(cells[i], "data-pp-rank"), i < 41 ? "0" : "1");
    EXPECT_EQ(Attr(cells[i], "data-full"), LayerIsFull(m, i) ? "true" : "false") << i;
    if (Attr(cells[i], "data-forced") == "true") {
      ++forced;
      EXPECT_EQ(i, 41) << "split 41,37: stage 1 starts at shared layer 41 (docs/seed.md §7)";
      EXPECT_TRUE(HasClass(cells[i], "forced"));
    }
  }
  EXPECT_EQ(forced, 1);
  EXPECT_NE(svg.find(">forced 41 (fix B applied)<"), std::string::npos);
}

TEST(PlanHtmlTest, PageIsSelfContainedWellFormedAndComplete) {
  const PlanReport& rep = Report();
  std::ostringstream os;
  RenderPlan(rep, OutputFormat::kHtml, os);
  const std::string page = os.str();
  ASSERT_EQ(page.rfind("<!DOCTYPE html>\n", 0), 0u);
  ASSERT_EQ(XmlWellFormedError(page), "");
  // Self-contained: no script, no external resource.
  EXPECT_EQ(page.find("<script"), std::string::npos);
  EXPECT_EQ(page.find("<link"), std::string::npos);
  EXPECT_EQ(page.find("@import"), std::string::npos);
  EXPECT_EQ(page.find("https://"), std::string::npos);
  size_t http = 0;
  for (size_t i = page.find("http://"); i != std::string::npos; i = page.find("http://", i + 1)) {
    EXPECT_EQ(page.compare(i, 26, "http://www.w3.org/2000/svg"), 0) << page.substr(i, 60);
    ++http;
  }
  EXPECT_EQ(http, 3u) << "the SVG namespace of the three charts";
  for (size_t i = page.find("url("); i != std::string::npos; i = page.find("url(", i + 1))
    EXPECT_EQ(page.compare(i, 5, "url(#"), 0) << "only fragment references";
  // Unique ids across the inline charts.
  std::set<std::string> ids;
  for (const char* tag : {"pattern", "svg", "g", "rect", "section"})
    for (const auto& t : StartTags(page, tag)) {
      std::string id = Attr(t, "id");
      if (!id.empty()) {
        EXPECT_TRUE(ids.insert(id).second) << "duplicate id " << id;
      }
    }
  EXPECT_EQ(StartTags(page, "svg").size(), 3u) << "memory bars, layer map, optimiser";
  EXPECT_NE(SvgWithClass(page, "memory-chart"), "");
  EXPECT_NE(SvgWithClass(page, "layer-map"), "");
  EXPECT_NE(SvgWithClass(page, "optimizer-chart"), "");
  // Tables: the summary (one row per layout, the best one marked), the ranks, the other dimensions.
  std::string layouts = page.substr(page.find("<table class=\"layouts\">"));
  layouts = layouts.substr(0, layouts.find("</table>"));
  EXPECT_EQ(StartTags(layouts, "tr").size(), rep.layouts.size() + 1);
  EXPECT_EQ(WithClass(layouts, "tr", "best").size(), 1u);
  EXPECT_NE(page.find("<table class=\"dims\">"), std::string::npos);
  EXPECT_NE(page.find("<table class=\"ranks\">"), std::string::npos);
  EXPECT_NE(page.find("<table class=\"splits\">"), std::string::npos);
  for (const auto& n : rep.notes) EXPECT_NE(page.find(XmlEscape(n)), std::string::npos) << n;
  for (const auto& dn : rep.dimensions) EXPECT_NE(page.find(XmlEscape(dn.verdict)), std::string::npos) << dn.dimension;
  // Print rules.
  EXPECT_NE(page.find("@media print"), std::string::npos);
  EXPECT_NE(page.find("size: A4"), std::string::npos);
  EXPECT_NE(page.find("break-inside: avoid"), std::string::npos);
  // The text output's capacity log line appears verbatim.
  EXPECT_NE(page.find(XmlEscape(rep.detailed[0].capacity_log)), std::string::npos);
}

TEST(PlanHtmlTest, HostileNamesAreEscaped) {
  PlanReport rep = Report();
  rep.deployment.model_name = "glm <b>\"5\"</b> & 'x'";
  rep.notes.push_back("note with </style><script>x</script> & more");
  std::ostringstream os;
  RenderPlan(rep, OutputFormat::kHtml, os);
  EXPECT_EQ(XmlWellFormedError(os.str()), "");
  EXPECT_EQ(os.str().find("<script"), std::string::npos);
  EXPECT_EQ(os.str().find("<b>"), std::string::npos);
  std::ostringstream svg;
  RenderPlan(rep, OutputFormat::kSvg, svg);
  EXPECT_EQ(XmlWellFormedError(svg.str()), "");
}

TEST(PlanHtmlTest, SvgFormatDrawsTheBestLayoutWhenNoneIsDetailed) {
  PlanReport rep = Report();
  rep.detailed.clear();
  ASSERT_GE(rep.best, 0);
  std::ostringstream os;
  RenderPlan(rep, OutputFormat::kSvg, os);
  EXPECT_EQ(XmlWellFormedError(os.str()), "");
  auto svg = StartTags(os.str(), "svg");
  ASSERT_EQ(svg.size(), 1u);
  EXPECT_EQ(Attr(svg[0], "data-split"), SplitText(rep.layouts[rep.best]));
  rep.best = -1;
  std::ostringstream none;
  EXPECT_NE(testing::ErrorOf([&] { RenderPlan(rep, OutputFormat::kSvg, none); }).find("--format svg"),
            std::string::npos);
  std::ostringstream page;
  RenderPlan(rep, OutputFormat::kHtml, page);
  EXPECT_EQ(XmlWellFormedError(page.str()), "") << "a page without detailed layouts is still well-formed";
}

// The binary's html/svg output carries the JSON output's figures, formatted from the same bytes.
TEST(PlanHtmlCliTest, HtmlAndSvgMatchTheJson) {
  auto json = testing::RunPpdeploy("plan --format json", false);
  ASSERT_EQ(json.exit_code, 0);
  auto j = nlohmann::json::parse(json.output);
  auto html = testing::RunPpdeploy("plan --format html", false);
  ASSERT_EQ(html.exit_code, 0);
  auto svg = testing::RunPpdeploy("plan --format svg", false);
  ASSERT_EQ(svg.exit_code, 0);
  ASSERT_EQ(svg.output.rfind("<?xml", 0), 0u);
  ASSERT_EQ(XmlWellFormedError(svg.output), "");
  ASSERT_EQ(XmlWellFormedError(html.output), "");
  for (const std::string* doc : {&html.output, &svg.output}) {
    std::string chart = SvgWithClass(*doc, "memory-chart");
    auto stages = WithClass(chart, "g", "stage");
    const auto& ranks = j["detailed"][0]["ranks"];
    ASSERT_EQ(stages.size(), ranks.size());
    for (size_t r = 0; r < ranks.size(); ++r) {
      EXPECT_EQ(Attr(stages[r], "data-used-bytes"),
                std::to_string(ranks[r]["nvidia_smi_used_bytes"].get<std::int64_t>()));
      EXPECT_EQ(Attr(stages[r], "data-gib"), PlanGiBText(ranks[r]["nvidia_smi_used_bytes"].get<std::int64_t>()));
      EXPECT_EQ(Attr(stages[r], "data-binding"), ranks[r]["binding"].get<bool>() ? "true" : "false");
    }
    auto budget = WithClass(chart, "line", "budget-line");
    ASSERT_EQ(budget.size(), 1u);
    EXPECT_EQ(Attr(budget[0], "data-bytes"), std::to_string(ranks[0]["requested_bytes"].get<std::int64_t>()));
  }
  std::string opt = SvgWithClass(html.output, "optimizer-chart");
  auto cands = WithClass(opt, "g", "candidate");
  const auto& jc = j["split_optimizer"][0]["candidates"];
  ASSERT_EQ(cands.size(), jc.size());
  for (size_t i = 0; i < cands.size(); ++i)
    EXPECT_EQ(Attr(cands[i], "data-kv-tokens"), std::to_string(jc[i]["kv_tokens"].get<std::int64_t>()));
  auto bad = testing::RunPpdeploy("plan --format pdf");
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_NE(bad.output.find("html, svg"), std::string::npos) << bad.output;
}

// Renders the default page with headless Chromium (Debian package `chromium`,
// scripts/install-deps.sh --extra) and fails on page errors. Skipped when chromium is absent.
TEST(PlanHtmlCliTest, ChromiumRendersThePageWithoutConsoleErrors) {
  if (std::system("command -v chromium >/dev/null 2>&1") != 0)
    GTEST_SKIP() << "chromium is not installed (apt-get install chromium, or scripts/install-deps.sh --extra)";
  namespace fs = std::filesystem;
  fs::path dir = fs::temp_directory_path() / ("ppdeploy_html_test_" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const fs::path page = dir / "plan.html", png = dir / "plan.png", log = dir / "chromium.log";
  auto html = testing::RunPpdeploy("plan --format html", false);
  ASSERT_EQ(html.exit_code, 0);
  { std::ofstream(page) << html.output; }
  std::string cmd =
      "timeout 120 chromium --headless --disable-gpu --no-sandbox --hide-scrollbars --no-first-run "
      "--disable-extensions --disable-background-networking --user-data-dir=" +
      (dir / "profile").string() +
      " --enable-logging=stderr --v=0 --window-size=1280,2000 --screenshot=" + png.string() + " file://" +
      page.string() + " >" + log.string() + " 2>&1";
  int rc = std::system(cmd.c_str());
  std::ifstream lf(log);
  std::string log_text((std::istreambuf_iterator<char>(lf)), std::istreambuf_iterator<char>());
  ASSERT_EQ(rc, 0) << log_text;
  EXPECT_EQ(log_text.find("Uncaught"), std::string::npos) << log_text;
  EXPECT_EQ(log_text.find("ERROR:CONSOLE"), std::string::npos) << log_text;
  // The page has no script: any console message (a failed resource load, a CSP report) is a defect.
  EXPECT_EQ(log_text.find(":CONSOLE"), std::string::npos) << log_text;
  ASSERT_TRUE(fs::exists(png)) << log_text;
  std::ifstream pf(png, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(pf)), std::istreambuf_iterator<char>());
  ASSERT_GE(bytes.size(), 24u);
  EXPECT_EQ(bytes.substr(0, 8), std::string("\x89PNG\r\n\x1a\n", 8));
  auto be32 = [&](size_t o) {
    return (static_cast<unsigned>(static_cast<unsigned char>(bytes[o])) << 24) |
           (static_cast<unsigned>(static_cast<unsigned char>(bytes[o + 1])) << 16) |
           (static_cast<unsigned>(static_cast<unsigned char>(bytes[o + 2])) << 8) |
           static_cast<unsigned>(static_cast<unsigned char>(bytes[o + 3]));
  };
  EXPECT_EQ(be32(16), 1280u) << "IHDR width";
  EXPECT_EQ(be32(20), 2000u) << "IHDR height";
  // A blank 1280 x 2000 page compresses to a few KB; charts and tables make it much larger.
  EXPECT_GT(bytes.size(), 60000u);
  if (std::getenv("PPDEPLOY_KEEP_SCREENSHOT") == nullptr) fs::remove_all(dir);
}

}  // namespace
}  // namespace ppdeploy
