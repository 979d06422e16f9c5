// ppdeploy degen: sample N answers and count degenerate loops (docs/seed.md §7, §12 "degen exits 2 on any
// degeneration; AGENT_PROBE_TRIALS=200 narrows the bound").
#include <fmt/format.h>

#include <cstdlib>
#include <memory>
#include <optional>

#include "cli/backend_factory.h"
#include "cli/command.h"
#include "cli/interrupt.h"
#include "cli/progress.h"
#include "cli/target.h"
#include "core/error.h"
#include "io/files.h"
#include "io/jsonl.h"
#include "probes/degen_run.h"
#include "report/probe_report.h"

namespace ppdeploy::cli {
namespace {

struct DegenOptions {
  std::string url, run_dir, model;
  int trials = 0;  // 0 = AGENT_PROBE_TRIALS or 40
  probes::DegenConfig config;
  std::int64_t seed = -1;
  bool no_token_ids = false;
  std::string baseline, out_jsonl, format = "md";
};

}  // namespace

RunFunction DeclareDegen(CLI::App* sub) {
  auto o = std::make_shared<DegenOptions>();
  AddTargetOptions(sub, o->url, o->run_dir);
  sub->add_option("--model", o->model, "Served model name (default: the first of /v1/models)");
  sub->add_option("--trials", o->trials, "Number of trials (default: env AGENT_PROBE_TRIALS, else 40)")
      ->check(CLI::PositiveNumber);
  sub->add_option("--concurrency", o->config.concurrency, "Requests in flight")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  sub->add_option("--prompts", o->config.prompt_set, "Prompt set: identity (p5_identity) or rotation (5 prompts)")
      ->capture_default_str()
      ->check(CLI::IsMember({"identity", "rotation"}));
  sub->add_option("--max-tokens", o->config.max_tokens, "Output cap per answer")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  sub->add_option("--temperature", o->config.temperature, "Sampling temperature")->capture_default_str();
  sub->add_option("--top-p", o->config.top_p, "Nucleus sampling top_p")->capture_default_str();
  sub->add_option("--seed", o->seed, "Per-trial sampling seed base (trial i uses seed + i); default unseeded");
  sub->add_flag("--no-token-ids", o->no_token_ids, "Do not ask for return_token_ids (detect on normalised text)");
  sub->add_option("--baseline", o->baseline,
                  "Baseline to compare with: a ppdeploy.degen/1 JSON, a ppdeploy.verify/1 JSON or a --out-jsonl file");
  sub->add_option("--out-jsonl", o->out_jsonl, "Write one JSON line per trial, flushed as each trial finishes");
  sub->add_option("--format", o->format, "Output format")->capture_default_str()->check(CLI::IsMember({"md", "json"}));
  return [o](CommandIo& io) -> ExitCode {
    probes::DegenConfig cfg = o->config;
    cfg.trials = o->trials > 0 ? o->trials : TrialsFromEnv();
    if (o->seed >= 0) cfg.seed = o->seed;
    cfg.request_token_ids = !o->no_token_ids;
    std::optional<probes::DegenSummary> baseline;
    if (!o->baseline.empty()) baseline = probes::ParseDegenBaseline(ReadFileText(o->baseline), o->baseline);
    std::unique_ptr<JsonlWriter> jsonl;
    if (!o->out_jsonl.empty()) jsonl = std::make_unique<JsonlWriter>(o->out_jsonl);
    const ServerTarget target = ResolveTarget(o->url, o->run_dir);
    // Ctrl-C: the trials in flight are cancelled; the finished ones are summarised (and in the JSONL); exit 130.
    InterruptGuard interrupt;
    auto backend = MakeHttpBackend(target.url, o->model, InterruptGuard::Flag());
    int done = 0, degenerate = 0;
    probes::DegenSummary summary;
    {
      Progress progress(io, "degen", cfg.trials);
      summary = probes::RunDegen(*backend, cfg, [&](const probes::DegenTrial& t) {
        if (jsonl) jsonl->Write(probes::ToJson(t));
        degenerate += t.degenerate ? 1 : 0;
        progress.Update(++done, fmt::format("{} degenerate", degenerate));
      });
    }
    if (jsonl) jsonl->Close();  // fsync and close checked: a lost record is an error, not exit 0
    std::optional<probes::BaselineComparison> cmp;
    if (baseline) cmp = probes::CompareWithBaseline(summary, *baseline);
    if (o->format == "json") {
      nlohmann::json j = probes::ToJson(summary);
      if (cmp) j["baseline"] = probes::ToJson(*cmp);
      io.out << j.dump(2) << "\n";
    } else {
      io.out << report::DegenMarkdown(summary, cmp);
    }
    if (InterruptGuard::Raised()) {
      io.err << fmt::format("ppdeploy degen: interrupted after {} of {} trials ({} cut); the summary covers them\n",
                            summary.trials, cfg.trials, summary.cancelled);
      return ExitCode::kInterrupted;
    }
    return probes::DegenExitCode(summary);
  };
}

}  // namespace ppdeploy::cli
