// ppdeploy verify: one pass of every check against a running server, written as a ppdeploy.verify/1 result
// that `ppdeploy verdict` compares (the work is RunVerify, src/cli/verify_run.h). The server is --url, else the
// one `ppdeploy start` started; the result records the server's facts with their sources (boot log, /metrics,
// nvidia-smi, run state). The file is rewritten after every step, so a server that dies mid-way or Ctrl-C leaves
// a partial result whose "verify.missing" lists the steps not done; --resume continues it.
#include <fmt/format.h>

#include <memory>

#include "cli/command.h"
#include "cli/target.h"
#include "cli/verify_run.h"
#include "core/error.h"
#include "report/verify_html.h"

namespace ppdeploy::cli {
namespace {

struct VerifyCommandOptions {
  VerifyOptions verify;
  std::string format = "text";
};

}  // namespace

RunFunction DeclareVerify(CLI::App* sub) {
  auto o = std::make_shared<VerifyCommandOptions>();
  AddTargetOptions(sub, o->verify.url, o->verify.run_dir);
  sub->add_option("--out", o->verify.out,
                  "Result file (ppdeploy.verify/1 JSON), rewritten after every step (default: <run-dir>/verify.json "
                  "for the server ppdeploy started)");
  sub->add_option("--label", o->verify.label, "Label of this arm in the verdict (default: the URL)");
  sub->add_option("--plan-json", o->verify.plan_json,
                  "Output of `ppdeploy plan --format json`: the predicted KV pool (default: the one `start` recorded)");
  sub->add_flag("--resume", o->verify.resume,
                "Continue the result in --out: keep the steps it finished (ok, problem, skipped), run the others");
  sub->add_option("--format", o->format, "What to print: the step table, the result JSON, or an HTML page")
      ->capture_default_str()
      ->check(CLI::IsMember({"text", "json", "html"}));
  AddVerifyCheckOptions(sub, o->verify);
  return [o](CommandIo& io) -> ExitCode {
    const VerifyOutcome r = RunVerify(o->verify, io);
    if (o->format == "json") {
      io.out << probes::ToJson(r.result).dump(2) << "\n";
    } else if (o->format == "html") {
      RenderVerifyHtml(r.result, io.out);
    } else {
      io.out << VerifyStepTable(r.result);
      if (r.interrupted) io.out << "interrupted: the finished steps are in the result; --resume continues\n";
    }
    return r.code;
  };
}

}  // namespace ppdeploy::cli
