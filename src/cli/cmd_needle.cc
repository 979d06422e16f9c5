// ppdeploy needle: needle-in-a-haystack recall over a length x depth grid, exact-match grading.
#include <memory>

#include "cli/backend_factory.h"
#include "cli/command.h"
#include "io/jsonl.h"
#include "probes/needle.h"
#include "report/probe_report.h"

namespace ppdeploy::cli {
namespace {

struct NeedleOptions {
  std::string url, model;
  std::string lengths = "128K", depths = "10,50,90";
  probes::NeedleConfig config;
  std::string out_jsonl, format = "md";
};

}  // namespace

RunFunction DeclareNeedle(CLI::App* sub) {
  auto o = std::make_shared<NeedleOptions>();
  sub->add_option("--url", o->url, "Server base URL, e.g. http://127.0.0.1:8000")->required();
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
    auto backend = MakeHttpBackend(o->url, o->model);
    const auto result = probes::RunNeedle(*backend, cfg, [&](const probes::NeedleCell& c) {
      if (jsonl) jsonl->Write(probes::ToJson(c));
      if (io.err_is_tty)
        io.err << "needle " << probes::FormatLength(c.length_tokens) << " @ " << c.depth_pct << "%: " << c.status
               << "\n";
    });
    if (o->format == "json")
      io.out << probes::ToJson(result).dump(2) << "\n";
    else
      io.out << report::NeedleMarkdown(result);
    return probes::NeedleExitCode(result);
  };
}

}  // namespace ppdeploy::cli
