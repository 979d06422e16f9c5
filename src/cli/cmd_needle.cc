// ppdeploy needle: needle-in-a-haystack recall over a length x depth grid, exact-match grading.
#include <fmt/format.h>

#include <memory>

#include "cli/backend_factory.h"
#include "cli/command.h"
#include "cli/interrupt.h"
#include "cli/progress.h"
#include "cli/target.h"
#include "io/jsonl.h"
#include "probes/needle.h"
#include "report/probe_report.h"

namespace ppdeploy::cli {
namespace {

struct NeedleOptions {
  std::string url, run_dir, model;
  std::string lengths = "128K", depths = "10,50,90";
  probes::NeedleConfig config;
  std::string out_jsonl, format = "md";
};

}  // namespace

RunFunction DeclareNeedle(CLI::App* sub) {
  auto o = std::make_shared<NeedleOptions>();
  AddTargetOptions(sub, o->url, o->run_dir);
  sub->add_option("--model", o->model, "Served model name (default: the first of /v1/models)");
  sub->add_option("--lengths", o->lengths, "Prompt lengths in tokens, e.g. 128K,300K,500K (K = 1000, M = 1e6)")
      ->capture_default_str();
  sub->add_option("--depths", o->depths, "Needle depths in percent of the haystack")->capture_default_str();
  sub->add_option("--answer-room", o->config.answer_room_tokens,
                  "Tokens kept free for the answer; lengths over max_model_len minus this are skipped")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  sub->add_option("--chars-per-token", o->config.chars_per_token,
                  "Length estimate when the server has no /tokenize (labelled 'estimated')")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  sub->add_option("--seed", o->config.seed, "Seed of the needles and the filler order")->capture_default_str();
  sub->add_option("--out-jsonl", o->out_jsonl, "Write one JSON line per cell, flushed as each cell finishes");
  sub->add_option("--format", o->format, "Output format")->capture_default_str()->check(CLI::IsMember({"md", "json"}));
  return [o](CommandIo& io) -> ExitCode {
    probes::NeedleConfig cfg = o->config;
    cfg.lengths = probes::ParseLengths(o->lengths);
    cfg.depths_pct = probes::ParseDepths(o->depths);
    std::unique_ptr<JsonlWriter> jsonl;
    if (!o->out_jsonl.empty()) jsonl = std::make_unique<JsonlWriter>(o->out_jsonl);
    const ServerTarget target = ResolveTarget(o->url, o->run_dir);
    // Ctrl-C: the cell in flight is cancelled; the finished cells are printed (and in the JSONL); exit 130.
    InterruptGuard interrupt;
    auto backend = MakeHttpBackend(target.url, o->model, InterruptGuard::Flag());
    const std::int64_t cells = static_cast<std::int64_t>(cfg.lengths.size() * cfg.depths_pct.size());
    std::int64_t done = 0;
    probes::NeedleResult result;
    {
      Progress progress(io, "needle", cells);
      result = probes::RunNeedle(*backend, cfg, [&](const probes::NeedleCell& c) {
        if (jsonl) jsonl->Write(probes::ToJson(c));
        progress.Update(++done,
                        fmt::format("{} @ {}%: {}", probes::FormatLength(c.length_tokens), c.depth_pct, c.status));
      });
    }
    if (jsonl) jsonl->Close();  // fsync and close checked: a lost record is an error, not exit 0
    if (o->format == "json")
      io.out << probes::ToJson(result).dump(2) << "\n";
    else
      io.out << report::NeedleMarkdown(result);
    if (result.interrupted || InterruptGuard::Raised()) {
      io.err << fmt::format("ppdeploy needle: interrupted after {} of {} cells\n", result.cells.size(), cells);
      return ExitCode::kInterrupted;
    }
    return probes::NeedleExitCode(result);
  };
}

}  // namespace ppdeploy::cli
