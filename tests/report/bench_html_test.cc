// `ppdeploy bench --format html` (issue 17): a self-contained page, checked as a structure snapshot (every
// chart element carries the figure it draws, equal to the BenchResult's) and rendered by headless Chromium
// without any console message, as tests/report/plan_html_test.cc does for the plan.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>

#include "report/bench_report.h"
#include "report/svg.h"
#include "report/test_xml.h"
#include "subprocess_util.h"

namespace ppdeploy {
namespace {

using testing::Attr;
using testing::WithClass;
using testing::XmlWellFormedError;

RequestResult Answer(double ttft, double tpot, int n) {
  RequestResult r;
  r.ttft_ms = ttft;
  r.tpot_ms = tpot;
  r.last_token_ms = ttft + tpot * (n - 1);
  r.e2el_ms = r.last_token_ms + 0.5;
  r.output_tokens = n;
  r.output_tokens_source = TokenCountSource::kUsage;
  for (int i = 1; i < n; ++i) {
    r.itl_ms.push_back(tpot);
    r.chunk_itl_ms.push_back(tpot);
  }
  return r;
}

// Two levels as a closed-loop run against a server with TTFT 100 + 10 i ms and TPOT 10 + i / 10 ms would give.
BenchResult TwoLevels() {
  BenchResult r;
  r.url = "http://127.0.0.1:8000";
  r.model = "m <&> \"x\"";  // escaped everywhere
  r.endpoint = "chat";
  r.input_len_method = "tokenize (8 of 8 sampled prompts exact)";
  for (int level = 0; level < 2; ++level) {
    LoadSpec load;
    load.concurrency = level == 0 ? 1 : 8;
    LevelAccumulator acc(load, ParseSlo({"ttft:150"}));
    for (int i = 0; i < 50; ++i) acc.Add(Answer(100 + 10 * i * (level + 1) / 5.0, 10 + i / 10.0, 16));
    r.levels.push_back(acc.Finish(level == 0 ? 10000 : 2000));
  }
  return r;
}

TEST(BenchHtml, PageIsSelfContainedAndChartsCarryTheResultsFigures) {
  BenchResult r = TwoLevels();
  std::ostringstream os;
  RenderBenchHtml(r, os);
  const std::string page = os.str();
  ASSERT_EQ(page.rfind("<!DOCTYPE html>\n", 0), 0u);
  ASSERT_EQ(XmlWellFormedError(page), "");
  for (const char* banned : {"<script", "<link", "@import", "src=", "href=\"http", "url(http", "<img"})
    EXPECT_EQ(page.find(banned), std::string::npos) << banned;
  EXPECT_NE(page.find("m &lt;&amp;&gt; &quot;x&quot;"), std::string::npos);
  // Three CDF charts (TTFT, TPOT, ITL), one polyline per level with 101 points and the level's quantiles.
  auto charts = WithClass(page, "svg", "cdf-chart");
  ASSERT_EQ(charts.size(), 3u);
  EXPECT_EQ(Attr(charts[0], "data-metric"), "ttft");
  EXPECT_EQ(Attr(charts[1], "data-metric"), "tpot");
  EXPECT_EQ(Attr(charts[2], "data-metric"), "itl");
  auto lines = WithClass(page, "polyline", "cdf");
  ASSERT_EQ(lines.size(), 6u);
  for (int c = 0; c < 3; ++c) {
    for (int level = 0; level < 2; ++level) {
      const std::string& tag = lines[c * 2 + level];
      const auto& q = c == 0 ? r.levels[level].ttft_q : c == 1 ? r.levels[level].tpot_q : r.levels[level].itl_q;
      EXPECT_EQ(Attr(tag, "data-level"), std::to_string(level));
      EXPECT_EQ(Attr(tag, "data-label"), r.levels[level].load.Label());
      EXPECT_EQ(Attr(tag, "data-p50"), SvgNumber(q[50]));
      EXPECT_EQ(Attr(tag, "data-p99"), SvgNumber(q[99]));
      std::string pts = Attr(tag, "points");
      EXPECT_EQ(std::count(pts.begin(), pts.end(), ','), 101) << pts;
    }
  }
  // TTFT medians of the two levels: np.percentile of 100 + 2 i (i < 50) = 149, of 100 + 4 i = 198.
  EXPECT_EQ(Attr(lines[0], "data-p50"), "149");
  EXPECT_EQ(Attr(lines[1], "data-p50"), "198");
  // Throughput and goodput bars: 50 ok / 10 s = 5 req/s; 50 / 2 s = 25 req/s; goodput = TTFT <= 150 ms.
  auto groups = WithClass(page, "g", "level");
  ASSERT_EQ(groups.size(), 2u);
  EXPECT_EQ(Attr(groups[0], "data-rps"), "5");
  EXPECT_EQ(Attr(groups[1], "data-rps"), "25");
  EXPECT_EQ(Attr(groups[0], "data-goodput-rps"), SvgNumber(26 / 10.0));  // i <= 25: 26 of 50
  EXPECT_EQ(Attr(groups[1], "data-goodput-rps"), SvgNumber(13 / 2.0));   // i <= 12: 13 of 50
  EXPECT_EQ(WithClass(page, "rect", "bar-goodput").size(), 2u);
  // Every definition is on the page.
  for (const auto& [k, v] : BenchMetricDefinitions()) EXPECT_NE(page.find(XmlEscape(v)), std::string::npos) << k;
  EXPECT_EQ(WithClass(page, "table", "levels").size(), 1u);
}

// Renders a real run's page (bench against ppdeploy sim) with headless Chromium (Debian package `chromium`)
// and fails on any console message. Skipped when chromium is absent.
TEST(BenchHtml, ChromiumRendersARealRunWithoutConsoleMessages) {
  if (std::system("command -v chromium >/dev/null 2>&1") != 0)
    GTEST_SKIP() << "chromium is not installed (apt-get install chromium, or scripts/install-deps.sh --extra)";
  namespace fs = std::filesystem;
  fs::path dir = fs::temp_directory_path() / ("ppdeploy_bench_html_" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const fs::path page = dir / "bench.html", png = dir / "bench.png", log = dir / "chromium.log";
  testing::Child sim({PPDEPLOY_BINARY, "sim", "--port", "0", "--ttft-ms", "20", "--ttft-std-ms", "5", "--itl-ms", "2"},
                     (dir / "sim.out").string(), (dir / "sim.err").string());
  std::string url = testing::SimUrl(sim.WaitForOutput("listening on", 20));
  ASSERT_FALSE(url.empty()) << sim.Err();
  testing::Child bench({PPDEPLOY_BINARY, "bench", "--url", url, "--concurrency", "1,4", "--requests", "24",
                        "--output-len", "8", "--goodput", "ttft:25", "--out-jsonl", "none", "--format", "html"},
                       page.string(), (dir / "bench.err").string());
  ASSERT_EQ(bench.Wait(120), 0) << bench.Err();
  sim.Signal(SIGTERM);
  sim.Wait(10);
  std::ifstream pf0(page);
  std::string html((std::istreambuf_iterator<char>(pf0)), std::istreambuf_iterator<char>());
  ASSERT_EQ(XmlWellFormedError(html), "");
  EXPECT_EQ(WithClass(html, "polyline", "cdf").size(), 6u);
  std::string cmd =
      "timeout 120 chromium --headless --disable-gpu --no-sandbox --hide-scrollbars --no-first-run "
      "--disable-extensions --disable-background-networking --user-data-dir=" +
      (dir / "profile").string() +
      " --enable-logging=stderr --v=0 --window-size=1280,2400 --screenshot=" + png.string() + " file://" +
      page.string() + " >" + log.string() + " 2>&1";
  int rc = std::system(cmd.c_str());
  std::ifstream lf(log);
  std::string log_text((std::istreambuf_iterator<char>(lf)), std::istreambuf_iterator<char>());
  ASSERT_EQ(rc, 0) << log_text;
  EXPECT_EQ(log_text.find("Uncaught"), std::string::npos) << log_text;
  // The page has no script: any console message (a failed resource load, a CSP report) is a defect.
  EXPECT_EQ(log_text.find(":CONSOLE"), std::string::npos) << log_text;
  ASSERT_TRUE(fs::exists(png)) << log_text;
  std::ifstream pf(png, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(pf)), std::istreambuf_iterator<char>());
  ASSERT_GE(bytes.size(), 24u);
  EXPECT_EQ(bytes.substr(0, 8), std::string("\x89PNG\r\n\x1a\n", 8));
  // A blank 1280 x 2400 page compresses to a few KB; charts and tables make it much larger.
  EXPECT_GT(bytes.size(), 60000u);
  if (std::getenv("PPDEPLOY_KEEP_SCREENSHOT") == nullptr) fs::remove_all(dir);
}

}  // namespace
}  // namespace ppdeploy
