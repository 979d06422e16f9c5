// ppdeploy verdict A.json B.json: the A/B table of two ppdeploy.verify/1 results (Markdown, JSON or an HTML page
// with the memory bars per GPU per arm).
#include <memory>

#include "cli/command.h"
#include "core/json_fields.h"
#include "io/files.h"
#include "probes/verdict.h"
#include "report/probe_report.h"
#include "report/verify_html.h"

namespace ppdeploy::cli {
namespace {

struct VerdictOptions {
  std::string a, b, format = "md";
  double alpha = 0.05;
};

}  // namespace

RunFunction DeclareVerdict(CLI::App* sub) {
  auto o = std::make_shared<VerdictOptions>();
  sub->add_option("A", o->a, "Verify result of arm A (JSON)")->required();
  sub->add_option("B", o->b, "Verify result of arm B (JSON)")->required();
  sub->add_option("--alpha", o->alpha, "Significance level")->capture_default_str()->check(CLI::Range(1e-9, 0.5));
  sub->add_option("--format", o->format, "Output format")
      ->capture_default_str()
      ->check(CLI::IsMember({"md", "json", "html"}));
  return [o](CommandIo& io) -> ExitCode {
    const auto a = probes::VerifyResultFromJson(ParseJsonText(ReadFileText(o->a), o->a), o->a);
    const auto b = probes::VerifyResultFromJson(ParseJsonText(ReadFileText(o->b), o->b), o->b);
    const auto verdict = probes::Compare(a, b, o->alpha);
    if (o->format == "json")
      io.out << probes::ToJson(verdict).dump(2) << "\n";
    else if (o->format == "html")
      RenderVerdictHtml(verdict, a, b, std::nullopt, io.out);
    else
      io.out << report::VerdictMarkdown(verdict);
    return ExitCode::kOk;
  };
}

}  // namespace ppdeploy::cli
