// `verify --format html` and `verdict --format html` (issue 14): self-contained pages checked as structure
// snapshots (every bar carries the figure it draws, equal to the results') and rendered by headless Chromium
// without any console message, as tests/report/bench_html_test.cc does for bench.
#include "report/verify_html.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>

#include "report/svg.h"
#include "report/test_xml.h"

namespace ppdeploy {
namespace {

using probes::VerifyResult;
using testing::Attr;
using testing::WithClass;
using testing::XmlWellFormedError;

constexpr std::int64_t kMiB = 1 << 20;

// The seed's two arms (docs/seed.md §6): pools 597,760 -> 729,280 (planned 597,632 / 729,664 by ppdeploy), nvidia-smi
// GPUs 0-3 / 4-7 72,430 / 80,118 -> 79,441 / 79,343 MiB of 81,920.
VerifyResult Arm(const std::string& label, std::int64_t planned, std::int64_t logged, std::int64_t pp0_mib,
                 std::int64_t pp1_mib, int degenerate) {
  VerifyResult r;
  r.label = label;
  r.kv_pool_predicted_tokens = planned;
  r.kv_pool_logged_tokens = logged;
  r.kv_pool_logged_source = "boot log vllm.log:1-18";
  r.memory_source = "nvidia-smi";
  for (int gpu = 0; gpu < 8; ++gpu) {
    const std::int64_t used = (gpu < 4 ? pp0_mib : pp1_mib) * kMiB;
    r.ranks.push_back({gpu, used, 81920 * kMiB - used, 81920 * kMiB});
  }
  for (int i = 0; i < 10; ++i) r.single_stream_tok_s.push_back(71.2 + 0.1 * (i % 3));
  r.degeneration = probes::DegenerationSection{40, degenerate, {}, 84};
  r.ready_s = 540;
  r.facts = {{"nvidia_smi", {{"source", "nvidia-smi"}, {"tightest_headroom_mib", 81920 - std::max(pp0_mib, pp1_mib)}}}};
  return r;
}

TEST(VerdictHtmlTest, MemoryBarsPerGpuPerArmAndPoolsCarryTheResultsFigures) {
  const VerifyResult a = Arm("control 39,39 <&>", 597'632, 597'760, 72430, 80118, 0);
  const VerifyResult b = Arm("41,37", 729'664, 729'280, 79441, 79343, 0);
  const probes::Verdict v = probes::Compare(a, b, 0.05);
  std::ostringstream os;
  RenderVerdictHtml(v, a, b, probes::JudgeNewArm(a, b, v), os);
  const std::string page = os.str();
  ASSERT_EQ(page.rfind("<!DOCTYPE html>\n", 0), 0u);
  ASSERT_EQ(XmlWellFormedError(page.substr(page.find('\n') + 1)), "");
  // Self-contained: no script, nothing fetched.
  EXPECT_EQ(page.find("<script"), std::string::npos);
  EXPECT_EQ(page.find("src=\""), std::string::npos);
  EXPECT_EQ(page.find("href=\"http"), std::string::npos);
  EXPECT_EQ(page.find("@import"), std::string::npos);
  // One used-memory bar per GPU per arm, each with its nvidia-smi figures.
  const auto bars = WithClass(page, "rect", "bar-used");
  ASSERT_EQ(bars.size(), 16u);
  int checked = 0;
  for (const auto& bar : bars) {
    const int gpu = std::stoi(Attr(bar, "data-gpu"));
    const int arm = std::stoi(Attr(bar, "data-arm"));
    const VerifyResult& r = arm == 0 ? a : b;
    EXPECT_EQ(Attr(bar, "data-used-mib"), SvgNumber(static_cast<double>(*r.ranks[gpu].used_bytes / kMiB)));
    EXPECT_EQ(Attr(bar, "data-total-mib"), "81920");
    if (gpu == 4 && arm == 0) {
      EXPECT_EQ(Attr(bar, "data-headroom-mib"), "1802");  // the seed's tightest headroom
      EXPECT_EQ(Attr(bar, "data-label"), "A: control 39,39 &lt;&amp;&gt;");
      ++checked;
    }
  }
  EXPECT_EQ(checked, 1);
  // The pools, planned beside measured, per arm.
  const auto pools = WithClass(page, "rect", "bar-pool");
  ASSERT_EQ(pools.size(), 4u);
  std::map<std::string, std::string> tokens;
  for (const auto& p : pools) tokens[Attr(p, "data-arm") + "/" + Attr(p, "data-kind")] = Attr(p, "data-tokens");
  EXPECT_EQ(tokens["0/predicted"], "597632");
  EXPECT_EQ(tokens["0/measured"], "597760");
  EXPECT_EQ(tokens["1/predicted"], "729664");
  EXPECT_EQ(tokens["1/measured"], "729280");
  // The A/B table has every verdict row; the judgement says B is not worse.
  EXPECT_EQ(WithClass(page, "table", "verdict").size(), 1u);
  const std::size_t from = page.find("<table class=\"verdict\"");
  const std::string table = page.substr(from, page.find("</table>", from) - from);
  std::size_t rows = 0;
  for (std::size_t i = table.find("<tr"); i != std::string::npos; i = table.find("<tr", i + 1)) ++rows;
  EXPECT_EQ(rows, v.rows.size() + 1);  // a header row and one per metric
  const auto judgement = WithClass(page, "p", "judgement");
  ASSERT_EQ(judgement.size(), 1u);
  EXPECT_FALSE(testing::HasClass(judgement[0], "worse"));
}

TEST(VerdictHtmlTest, AWorseNewArmIsMarked) {
  const VerifyResult a = Arm("39,39", 597'632, 597'760, 72430, 80118, 0);
  const VerifyResult b = Arm("41,37", 729'664, 729'280, 79441, 79343, 20);  // 20/40 degenerate
  const probes::Verdict v = probes::Compare(a, b, 0.05);
  std::ostringstream os;
  RenderVerdictHtml(v, a, b, probes::JudgeNewArm(a, b, v), os);
  const auto judgement = WithClass(os.str(), "p", "judgement");
  ASSERT_EQ(judgement.size(), 1u);
  EXPECT_TRUE(testing::HasClass(judgement[0], "worse"));
}

TEST(VerifyHtmlTest, OneArmsPageIsWellFormedAndHasItsBars) {
  const VerifyResult a = Arm("39,39", 597'632, 597'760, 72430, 80118, 0);
  std::ostringstream os;
  RenderVerifyHtml(a, os);
  const std::string page = os.str();
  ASSERT_EQ(XmlWellFormedError(page.substr(page.find('\n') + 1)), "");
  EXPECT_EQ(WithClass(page, "rect", "bar-used").size(), 8u);
  EXPECT_EQ(WithClass(page, "rect", "bar-pool").size(), 2u);
}

// The text of the facts table's cells in `page` (the value column is the fourth).
std::vector<std::string> FactCells(const std::string& page) {
  const std::size_t from = page.find("<table class=\"facts\"");
  const std::string table = page.substr(from, page.find("</table>", from) - from);
  std::vector<std::string> cells;
  for (std::size_t i = table.find("<td"); i != std::string::npos; i = table.find("<td", i + 1)) {
    const std::size_t start = table.find('>', i) + 1;
    cells.push_back(table.substr(start, table.find("</td>", start) - start));
  }
  return cells;
}

// Issue 23 item 9: the verdict page's server-facts table ran off the page with raw JSON in its cells. An object fact
// is "key: value" lines (nested keys dotted, list items indexed; keys in nlohmann::json's sorted order) in a cell
// that wraps.
TEST(VerdictHtmlTest, Issue23ServerFactsAreKeyValueLinesNotRawJson) {
  VerifyResult a = Arm("39,39", 597'632, 597'760, 72430, 80118, 0);
  a.facts["boot_log"] = {{"source", "boot log vllm.log"},
                         {"max_concurrency", {{"x", 1.14}, {"tokens_per_request", 524288}}},
                         {"ranks", {{{"pp_rank", 0}, {"available_kv_gib", 20.5}}, {{"pp_rank", 1}}}},
                         {"block_sizes", {64, 64}}};
  const VerifyResult b = Arm("41,37", 729'664, 729'280, 79441, 79343, 0);
  const probes::Verdict v = probes::Compare(a, b, 0.05);
  std::ostringstream os;
  RenderVerdictHtml(v, a, b, probes::JudgeNewArm(a, b, v), os);
  const std::string page = os.str();
  ASSERT_EQ(XmlWellFormedError(page.substr(page.find('\n') + 1)), "");
  const auto cells = FactCells(page);
  for (const auto& c : cells) EXPECT_EQ(c.find("{&quot;"), std::string::npos) << c;  // no raw JSON object
  EXPECT_NE(std::find(cells.begin(), cells.end(), "tokens_per_request: 524,288\nx: 1.14"), cells.end());
  EXPECT_NE(std::find(cells.begin(), cells.end(), "[0].available_kv_gib: 20.5\n[0].pp_rank: 0\n[1].pp_rank: 1"),
            cells.end());
  EXPECT_NE(std::find(cells.begin(), cells.end(), "64, 64"), cells.end());
  EXPECT_NE(page.find("table.facts td { white-space: pre-wrap; overflow-wrap: anywhere;"), std::string::npos);
}

// Issue 23 item 9: the verify page had no throughput figures. The bench step's levels (output tok/s, requests/s)
// and each request's decode speed are measurements of the page.
TEST(VerifyHtmlTest, Issue23VerifyPageShowsTheBenchThroughput) {
  VerifyResult a = Arm("39,39", 597'632, 597'760, 72430, 80118, 0);
  a.concurrent_tok_s[4] = {60.0, 62.0, 64.0};
  a.unknown["bench"] = {{"levels",
                         {{{"concurrency", 1},
                           {"requests", 8},
                           {"failed", 0},
                           {"output_tokens", 512},
                           {"duration_s", 8.0},
                           {"output_tok_s", 64.0},
                           {"request_throughput_rps", 1.0}},
                          {{"concurrency", 4},
                           {"requests", 8},
                           {"failed", 1},
                           {"output_tokens", 448},
                           {"duration_s", 2.0},
                           {"output_tok_s", 224.0},
                           {"request_throughput_rps", 3.5}}}}};
  a.requests["bench"] = {1, 16};
  std::ostringstream os;
  RenderVerifyHtml(a, os);
  const std::string page = os.str();
  ASSERT_EQ(XmlWellFormedError(page.substr(page.find('\n') + 1)), "");
  EXPECT_NE(page.find("bench throughput, concurrency 4</td><td class=\"num\">output 224.0 tok/s, 3.50 requests/s "
                      "(8 requests, 1 failed, 2.0 s)"),
            std::string::npos)
      << page;
  EXPECT_NE(page.find("output 64.0 tok/s, 1.00 requests/s"), std::string::npos);
  // Arm(): single-stream samples 71.2, 71.3, 71.4 repeating (10): median 71.3.
  EXPECT_NE(page.find("single-stream decode per request</td><td class=\"num\">median 71.3 tok/s (n=10)"),
            std::string::npos);
  EXPECT_NE(page.find("concurrency 4 decode per request</td><td class=\"num\">median 62.0 tok/s (n=3)"),
            std::string::npos);
  EXPECT_NE(page.find("request errors</td><td class=\"num\">1/16 failed"), std::string::npos);
}

// `ppdeploy verdict A.json B.json --format html` rendered by headless Chromium (Debian package `chromium`):
// no console message. Skipped when chromium is absent.
TEST(VerdictHtmlTest, ChromiumRendersTheVerdictPageWithoutConsoleMessages) {
  if (std::system("command -v chromium >/dev/null 2>&1") != 0)
    GTEST_SKIP() << "chromium is not installed (apt-get install chromium, or scripts/install-deps.sh --extra)";
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("ppdeploy_verdict_html_" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const fs::path fa = dir / "a.json", fb = dir / "b.json", page = dir / "ab.html", png = dir / "ab.png",
                 log = dir / "chromium.log";
  std::ofstream(fa) << probes::ToJson(Arm("39,39", 597'632, 597'760, 72430, 80118, 0)).dump(2);
  std::ofstream(fb) << probes::ToJson(Arm("41,37", 729'664, 729'280, 79441, 79343, 0)).dump(2);
  const std::string verdict = std::string(PPDEPLOY_BINARY) + " verdict " + fa.string() + " " + fb.string() +
                              " --format html >" + page.string() + " 2>" + (dir / "verdict.err").string();
  ASSERT_EQ(std::system(verdict.c_str()), 0);
  std::ifstream pf0(page);
  const std::string html((std::istreambuf_iterator<char>(pf0)), std::istreambuf_iterator<char>());
  ASSERT_EQ(XmlWellFormedError(html.substr(html.find('\n') + 1)), "");
  EXPECT_EQ(WithClass(html, "rect", "bar-used").size(), 16u);
  const std::string cmd =
      "timeout 120 chromium --headless --disable-gpu --no-sandbox --hide-scrollbars --no-first-run "
      "--disable-extensions --disable-background-networking --user-data-dir=" +
      (dir / "profile").string() +
      " --enable-logging=stderr --v=0 --window-size=1280,2400 --screenshot=" + png.string() + " file://" +
      page.string() + " >" + log.string() + " 2>&1";
  const int rc = std::system(cmd.c_str());
  std::ifstream lf(log);
  const std::string log_text((std::istreambuf_iterator<char>(lf)), std::istreambuf_iterator<char>());
  ASSERT_EQ(rc, 0) << log_text;
  EXPECT_EQ(log_text.find("Uncaught"), std::string::npos) << log_text;
  EXPECT_EQ(log_text.find(":CONSOLE"), std::string::npos) << log_text;
  ASSERT_TRUE(fs::exists(png)) << log_text;
  std::ifstream pf(png, std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(pf)), std::istreambuf_iterator<char>());
  ASSERT_GE(bytes.size(), 24u);
  EXPECT_EQ(bytes.substr(0, 8), std::string("\x89PNG\r\n\x1a\n", 8));
  EXPECT_GT(bytes.size(), 30000u);  // a blank page compresses to a few KB; bars and tables make it larger
  if (std::getenv("PPDEPLOY_KEEP_SCREENSHOT") == nullptr) fs::remove_all(dir);
}

}  // namespace
}  // namespace ppdeploy
