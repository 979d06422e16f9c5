// ppdeploy probe: 12 quality prompts, 10 Responses-API round trips, 20 tool-call round trips.
#include <algorithm>
#include <memory>

#include "cli/backend_factory.h"
#include "cli/command.h"
#include "cli/interrupt.h"
#include "cli/progress.h"
#include "cli/target.h"
#include "core/error.h"
#include "io/jsonl.h"
#include "probes/quality.h"
#include "report/probe_report.h"

namespace ppdeploy::cli {
namespace {

struct ProbeOptions {
  std::string url, run_dir, model;
  std::vector<std::string> only;
  probes::ProbeConfig config;
  bool no_arg_check = false;
  std::string out_jsonl, format = "md";
};

}  // namespace

RunFunction DeclareProbe(CLI::App* sub) {
  auto o = std::make_shared<ProbeOptions>();
  AddTargetOptions(sub, o->url, o->run_dir);
  sub->add_option("--model", o->model, "Served model name (default: the first of /v1/models)");
  sub->add_option("--only", o->only, "Probe kinds to run (default all)")
      ->delimiter(',')
      ->check(CLI::IsMember({"quality", "responses", "tools"}));
  sub->add_option("--max-tokens", o->config.max_tokens, "Output cap per request")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  sub->add_option("--concurrency", o->config.concurrency, "Requests in flight")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  sub->add_flag("--no-arg-check", o->no_arg_check,
                "Do not require the expected tool arguments (ppdeploy sim sends placeholders)");
  sub->add_option("--out-jsonl", o->out_jsonl, "Write one JSON line per probe, flushed as each probe finishes");
  sub->add_option("--format", o->format, "Output format")->capture_default_str()->check(CLI::IsMember({"md", "json"}));
  return [o](CommandIo& io) -> ExitCode {
    probes::ProbeConfig cfg = o->config;
    cfg.check_tool_arguments = !o->no_arg_check;
    if (!o->only.empty()) {
      auto has = [&](const char* k) { return std::find(o->only.begin(), o->only.end(), k) != o->only.end(); };
      cfg.quality = has("quality");
      cfg.responses = has("responses");
      cfg.tools = has("tools");
    }
    std::unique_ptr<JsonlWriter> jsonl;
    if (!o->out_jsonl.empty()) jsonl = std::make_unique<JsonlWriter>(o->out_jsonl);
    const ServerTarget target = ResolveTarget(o->url, o->run_dir);
    InterruptGuard interrupt;
    auto backend = MakeHttpBackend(target.url, o->model, InterruptGuard::Flag());
    std::int64_t done = 0;
    probes::ProbeSummary summary;
    {
      Progress progress(io, "probe", (cfg.quality ? 12 : 0) + (cfg.responses ? 10 : 0) + (cfg.tools ? 20 : 0));
      summary = probes::RunProbes(*backend, cfg, [&](const probes::ProbeRecord& r) {
        if (jsonl) jsonl->Write(probes::ToJson(r));
        progress.Update(++done);
      });
    }
    if (jsonl) jsonl->Close();  // fsync and close checked: a lost record is an error, not exit 0
    if (o->format == "json")
      io.out << probes::ToJson(summary).dump(2) << "\n";
    else
      io.out << report::ProbesMarkdown(summary);
    if (InterruptGuard::Raised()) {
      io.err << "ppdeploy probe: interrupted; the counts cover the probes that finished\n";
      return ExitCode::kInterrupted;
    }
    return probes::ProbeExitCode(summary);
  };
}

}  // namespace ppdeploy::cli
