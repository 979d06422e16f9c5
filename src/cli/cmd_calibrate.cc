// `ppdeploy calibrate`: learn the unmeasurable parts of memory from one real vLLM boot log.
#include <fmt/ranges.h>

#include <memory>

#include "calibration/check.h"
#include "calibration/schema.h"
#include "cli/command.h"
#include "cli/deployment_options.h"
#include "core/error.h"
#include "core/escape.h"
#include "core/units.h"
#include "io/files.h"
#include "io/output_file.h"
#include "memory/pool.h"
#include "model/presets.h"
#include "report/table.h"

namespace ppdeploy::cli {
namespace {

struct CalibrateOptions {
  DeploymentOptions deployment;
  std::string log_path, out_path;
  int boot = 0;  // 0 = the last complete boot
  std::string format = "table";
};

/// The deployment of the boot: the user's settings, with the model, the vLLM row and the KV
/// dtype the log names where the user gave none; never a calibration (this makes one).
ResolvedDeployment CalibrationDeployment(const CalibrateOptions& o, const BootLog& log,
                                         std::vector<std::string>& notes) {
  DeploymentOptions opts = o.deployment;
  opts.settings.Set("calibration", "", "--no-calibration");
  const LaunchArgs* args = log.launch_args ? &*log.launch_args : (log.engine_config ? &*log.engine_config : nullptr);
  if (!opts.settings.Given("model") && args && args->model) {
    if (FindModelPreset(*args->model)) {
      opts.settings.Set("model", *args->model, "--model");
      notes.push_back("model " + *args->model + " from the log's launch arguments");
    } else {
      throw Error(
          fmt::format("{}: the log serves \"{}\", which is not a preset; give --model (a preset, config.json or "
                      "checkpoint directory)",
                      log.WhereBoot(), EscapeForMessage(*args->model, 200)));
    }
  }
  if (!opts.settings.Given("model"))
    throw Error(
        fmt::format("{}: the log names no model (no \"non-default args\" line); give --model", log.WhereBoot()));
  if (!opts.settings.Given("vllm_version") && log.version) {
    if (auto m = TryResolveVllmVersion(*log.version)) {
      opts.settings.Set("vllm_version", m->profile->name, "--vllm");
      notes.push_back("vLLM row " + m->profile->name + " from the logged version " + *log.version +
                      (m->note.empty() ? "" : " (" + m->note + ")"));
    }
  }
  if (!opts.settings.Given("kv_cache_dtype") && args && args->kv_cache_dtype)
    opts.settings.Set("kv_cache_dtype", *args->kv_cache_dtype, "--kv-cache-dtype");
  return opts.Resolve();
}

/// The layout of that boot: what the user says (flags, environment, profile), else the log's.
LayoutSpec BootLayoutHint(const ResolvedDeployment& resolved) {
  LayoutSpec hint;
  const auto& q = resolved.request;
  if (q.Setting("tp_size").source >= SettingSource::kFile) hint.tensor_parallel_size = q.tp_size;
  if (q.Setting("pp_size").source >= SettingSource::kFile) hint.pipeline_parallel_size = q.pp_size;
  if (q.Setting("pp_layer_partition").source >= SettingSource::kFile && resolved.pass_partition_env) {
    if (!resolved.PartitionValid()) throw Error(fmt::format("{}", fmt::join(resolved.partition_check.messages, "; ")));
    hint.pipeline_parallel_size = q.pp_size;
    hint.layer_partition = resolved.partition;
  }
  return hint;
}

/// What the calibration saw of one boot: the figures it used and how they check.
struct CalibrateResult {
  const BootLog& log;
  const Deployment& d;
  LogCalibration cal;
  CalibrationCheck check;
  std::vector<std::string> notes;
  bool written = false;
};

std::string RefusalLine(const CalibrateResult& r) {
  const LogCalibration& cal = r.cal;
  const CalibrationCheck& check = r.check;
  if (!cal.refusal || cal.refusal_pp_rank < 0) return "";
  const NotEnoughKvError& e = *cal.refusal;
  return fmt::format(
      "refusal (PP rank {}): vLLM {:.2f} GiB needed, estimated maximum model length {}; planner {:.2f} GiB, "
      "{}..{}: {}",
      cal.refusal_pp_rank, e.needed_gib,
      e.estimated_max_model_len ? WithThousands(*e.estimated_max_model_len) : std::string("-"),
      ToGiB(check.refusal_needed_bytes), WithThousands(check.max_model_len_lo), WithThousands(check.max_model_len_hi),
      check.refusal_reproduced ? "reproduced" : "NOT reproduced");
}

nlohmann::json BootsJson(const BootLog& log) {
  nlohmann::json boots = nlohmann::json::array();
  for (const auto& b : log.boot_list) {
    nlohmann::json jb = {{"index", b.index},
                         {"first_line", b.first_line},
                         {"last_line", b.last_line},
                         {"status", std::string(ToString(b.status))},
                         {"ready", b.ready}};
    if (b.kv_tokens) jb["kv_tokens"] = *b.kv_tokens;
    if (b.failure)
      jb["failure"] = {{"line", b.failure->line},
                       {"process", b.failure->process},
                       {"message", b.failure->message},
                       {"cause_line", b.failure->cause_line},
                       {"cause", b.failure->cause}};
    boots.push_back(std::move(jb));
  }
  return boots;
}

nlohmann::json CheckJson(const LogCalibration& cal, const CalibrationCheck& check) {
  nlohmann::json j = {
      {"predicted_kv_tokens", check.predicted_kv_tokens},
      {"predicted_blocks", check.predicted_blocks},
      {"blocks_lo", check.blocks_lo},
      {"blocks_hi", check.blocks_hi},
      {"logged_kv_tokens", check.logged_kv_tokens ? nlohmann::json(*check.logged_kv_tokens) : nlohmann::json()},
      {"logged_blocks", check.logged_blocks ? nlohmann::json(*check.logged_blocks) : nlohmann::json()},
      {"within_rounding", check.within_rounding},
      {"predicted_within_rounding", check.predicted_within},
      {"logged_within_rounding", check.logged_within},
      {"estimated_kv_tokens_without_calibration", check.estimated_kv_tokens},
      {"kv_bytes_per_token", check.bytes_per_token},
      {"planned_weights_bytes", check.planned_weights_bytes}};
  if (cal.refusal && cal.refusal_pp_rank >= 0)
    j["refusal"] = {{"pp_rank", cal.refusal_pp_rank},
                    {"logged_needed_gib", cal.refusal->needed_gib},
                    {"logged_available_gib", cal.refusal->available_gib},
                    {"logged_estimated_max_model_len", cal.refusal->estimated_max_model_len
                                                           ? nlohmann::json(*cal.refusal->estimated_max_model_len)
                                                           : nlohmann::json()},
                    {"predicted_needed_bytes", check.refusal_needed_bytes},
                    {"predicted_max_model_len_lo", check.max_model_len_lo},
                    {"predicted_max_model_len_hi", check.max_model_len_hi},
                    {"reproduced", check.refusal_reproduced}};
  return j;
}

nlohmann::json CalibrateJson(const CalibrateOptions& o, const CalibrateResult& r) {
  const BootLog& log = r.log;
  const LogCalibration& cal = r.cal;
  nlohmann::json j;
  j["schema"] = "ppdeploy.calibrate/1";
  j["log"] = o.log_path;
  j["boot"] = {{"index", log.boot},
               {"of", log.boots},
               {"first_line", log.boot_list[static_cast<std::size_t>(log.boot - 1)].first_line},
               {"last_line", log.boot_list[static_cast<std::size_t>(log.boot - 1)].last_line},
               {"chosen_by", log.boot_requested ? "--boot" : "the last complete boot"},
               {"description", log.DescribeBoot()}};
  j["boots"] = BootsJson(log);
  j["calibration"] = CalibrationToJson(cal.calibration);
  j["check"] = CheckJson(cal, r.check);
  j["weights_only"] = cal.weights_only;
  j["failure"] = cal.failure.empty() ? nlohmann::json() : nlohmann::json(cal.failure);
  j["used"] = cal.used;
  j["written"] = r.written ? nlohmann::json(o.out_path) : nlohmann::json();
  j["ranks"] = nlohmann::json::array();
  for (const auto& rank : cal.ranks)
    j["ranks"].push_back({{"pp_rank", rank.pp_rank},
                          {"available_kv_gib", rank.available_kv_gib},
                          {"uncertainty_gib", rank.uncertainty_gib},
                          {"inferred", rank.inferred},
                          {"from_refusal", rank.from_refusal},
                          {"weights_gib", rank.weights_gib ? nlohmann::json(*rank.weights_gib) : nlohmann::json()},
                          {"source", rank.source}});
  j["notes"] = r.notes;
  j["warnings"] = cal.warnings;
  return j;
}

// "within rounding" only when the prediction and the logged pool both lie in the interval, else which does not.
std::string RoundingVerdict(const CalibrationCheck& check) {
  if (check.within_rounding) return "within rounding";
  std::vector<std::string> outside;
  if (!check.predicted_within) outside.push_back("the prediction");
  if (!check.logged_within) outside.push_back("the logged pool");
  return fmt::format("OUTSIDE the rounding interval ({} {})", fmt::join(outside, " and "),
                     outside.size() > 1 ? "lie outside it" : "lies outside it");
}

void PrintCalibrateTable(const CalibrateOptions& o, const CalibrateResult& r, std::ostream& out) {
  const LogCalibration& cal = r.cal;
  const CalibrationCheck& check = r.check;
  out << fmt::format("Calibration from {} ({}, TP{} PP{} split {}, block {}, max_model_len {})\n", o.log_path,
                     r.d.model_name, cal.layout.tensor_parallel_size, cal.layout.pipeline_parallel_size,
                     FormatPartition(cal.calibration.layer_partition), cal.block_size,
                     WithThousands(cal.max_model_len));
  out << "  " << r.log.DescribeBoot() << "\n";
  for (const auto& n : r.notes) out << "  " << n << "\n";
  Table t;
  t.headers = {"PP rank",           "available KV GiB",    "+/- GiB",        "KV B/token",
               "model loading GiB", "planned weights GiB", "CUDA graph GiB", "source"};
  for (size_t i = 0; i < cal.ranks.size(); ++i) {
    const auto& cr = cal.ranks[i];
    const auto& c = cal.calibration.ranks[i];
    t.AddRow({std::to_string(cr.pp_rank), cal.weights_only ? "-" : fmt::format("{:.3f}", cr.available_kv_gib),
              cal.weights_only ? "-" : fmt::format("{:.3f}", cr.uncertainty_gib),
              WithThousands(check.bytes_per_token[i]),
              c.model_loading_gib ? fmt::format("{:.2f}", *c.model_loading_gib) : "-",
              fmt::format("{:.2f}", ToGiB(check.planned_weights_bytes[i])),
              c.cuda_graph_gib ? fmt::format("{:.2f}", *c.cuda_graph_gib) : "-", cr.source});
  }
  t.RenderText(out, "  ");
  if (!cal.weights_only) {
    out << fmt::format(
        "  pool: predicted {} tokens ({} blocks; rounding allows {}..{}), logged {}{}\n",
        WithThousands(check.predicted_kv_tokens), WithThousands(check.predicted_blocks), WithThousands(check.blocks_lo),
        WithThousands(check.blocks_hi), check.logged_kv_tokens ? WithThousands(*check.logged_kv_tokens) : "-",
        check.logged_blocks
            ? fmt::format(" ({} blocks): {}", WithThousands(*check.logged_blocks), RoundingVerdict(check))
            : "");
    if (std::string rl = RefusalLine(r); !rl.empty()) out << "  " << rl << "\n";
  }
  out << fmt::format("  without calibration the estimate would be {} tokens\n",
                     WithThousands(check.estimated_kv_tokens));
  if (!cal.used.empty()) {
    out << "  figures used:\n";
    for (const auto& u : cal.used) out << "    " << u << "\n";
  }
  for (const auto& w : cal.warnings)
    if (!w.starts_with("used boot ")) out << "  warning: " << w << "\n";  // the boot line above says it
  if (r.written) out << "  wrote " << o.out_path << " (use: ppdeploy plan --calibration " << o.out_path << ")\n";
}

ExitCode RunCalibrate(const CalibrateOptions& o, CommandIo& io) {
  OutputFormat format = ParseOutputFormat(o.format, {"table", "json"});
  if (!o.out_path.empty()) CheckOutputTarget(o.out_path);  // a FIFO, device or directory: refused first
  CheckOutputIsNotInput(o.out_path, o.log_path, "boot log");
  std::string text = ReadFileText(o.log_path, kBootLogReadLimitBytes);
  LogParseOptions parse;
  parse.source = o.log_path;
  parse.boot = o.boot;
  BootLog log = ParseBootLog(text, parse);
  RequireUsableBoot(log);  // a failed boot without any figure: its error is the answer
  std::vector<std::string> notes;
  const ResolvedDeployment resolved = CalibrationDeployment(o, log, notes);
  const Deployment& d = resolved.planner;
  CalibrateResult r{log, d, CalibrateFromLog(log, d, BootLayoutHint(resolved)), {}, std::move(notes)};
  r.check = CheckCalibration(r.cal, d);
  // A weights-only boot has no available-KV figure: a calibration file from it would plan with nonsense.
  r.written = !o.out_path.empty() && r.cal.writable();
  if (r.written) WriteFileText(o.out_path, CalibrationToJson(r.cal.calibration).dump(2) + "\n");
  if (format == OutputFormat::kJson)
    io.out << CalibrateJson(o, r).dump(2) << "\n";
  else
    PrintCalibrateTable(o, r, io.out);
  if (!o.out_path.empty() && !r.written) {
    io.err << fmt::format(
        "error: {}: no calibration written to {}: the boot logged weights but no available-KV "
        "figure\n",
        log.WhereBoot(), o.out_path);
    return ExitCode::kError;
  }
  return ExitCode::kOk;
}

}  // namespace

RunFunction DeclareCalibrate(CLI::App* sub) {
  auto o = std::make_shared<CalibrateOptions>();
  CLI::App* cmd = sub;
  cmd->add_option(
         "--log", o->log_path,
         "vLLM start-up log (V0 and V1 engines; ANSI colours and prefixes are fine; a failed boot's figures are used)")
      ->required();
  o->deployment.Add(cmd);
  cmd->add_option("--out", o->out_path, "Write the calibration JSON here (for plan --calibration)");
  cmd->add_option("--boot", o->boot,
                  "Which boot of a log that holds several (1 = the first; default: the last complete one). A failed "
                  "boot is reported with its error and never calibrated from")
      ->check(CLI::Range(1, 1000000));
  cmd->add_option("--format", o->format, "table or json")->capture_default_str();
  return [o](CommandIo& io) { return RunCalibrate(*o, io); };
}

}  // namespace ppdeploy::cli
