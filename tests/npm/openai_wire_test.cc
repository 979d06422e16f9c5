// Runs tests/npm/openai_wire_test.mjs (the official `openai` npm client) against `ppdeploy sim`.
// The package is installed once into <build>/npm-openai with `npm install`; the test is skipped, saying why,
// only when that install fails (no network / no npm).
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>

#include "subprocess_util.h"

namespace ppdeploy {
namespace {

namespace fs = std::filesystem;
using testing::Child;
using testing::SimUrl;

TEST(OpenAiNpmWire, ChatAndResponsesStreamFromSim) {
  fs::path dir = fs::path(PPDEPLOY_BINARY).parent_path() / "npm-openai";
  fs::create_directories(dir);
  if (!fs::exists(dir / "node_modules" / "openai" / "package.json")) {
    if (std::system("command -v npm >/dev/null 2>&1") != 0) GTEST_SKIP() << "npm is not installed";
    std::string cmd = "cd '" + dir.string() +
                      "' && (test -f package.json || echo '{\"private\":true}' > package.json) && "
                      "timeout 180 npm install --no-audit --no-fund --silent openai > npm-install.log 2>&1";
    if (std::system(cmd.c_str()) != 0)
      GTEST_SKIP() << "npm install openai failed (no network?): see " << (dir / "npm-install.log").string();
  }
  fs::copy_file(fs::path(PPDEPLOY_SOURCE_DIR) / "tests/npm/openai_wire_test.mjs", dir / "openai_wire_test.mjs",
                fs::copy_options::overwrite_existing);
  Child sim({PPDEPLOY_BINARY, "sim", "--port", "0", "--itl-ms", "1"}, (dir / "sim.out").string(), (dir / "sim.err").string());
  std::string url = SimUrl(sim.WaitForOutput("listening on", 10));
  ASSERT_FALSE(url.empty()) << sim.Err();
  std::string node = "/usr/bin/env";
  Child js({node, "node", (dir / "openai_wire_test.mjs").string(), url}, (dir / "node.out").string(),
           (dir / "node.err").string());
  int rc = js.Wait(60);
  EXPECT_EQ(rc, 0) << "stdout: " << js.Out() << "\nstderr: " << js.Err();
  EXPECT_NE(js.Out().find("\"ok\":true"), std::string::npos) << js.Out();
  sim.Signal(SIGTERM);
  EXPECT_EQ(sim.Wait(10), 0);
}

}  // namespace
}  // namespace ppdeploy
