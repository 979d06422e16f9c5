// `ppdeploy calibrate`: learn the unmeasurable parts of memory from one real vLLM boot log.
#include <fmt/ranges.h>

#include <memory>

#include "cli/command.h"
#include "cli/deployment_options.h"
#include "core/error.h"
#include "core/units.h"
#include "io/files.h"
#include "memory/pool.h"
#include "model/presets.h"
#include "report/table.h"
#include "vllm/calibrate.h"
#include "vllm/log_records.h"

namespace ppdeploy::cli {
namespace {

struct CalibrateOptions {
  DeploymentOptions deployment;
  std::string log_path, out_path;
  int boot = 0;  // 0 = the last complete boot
  std::string format = "table";
};

ExitCode RunCalibrate(const CalibrateOptions& o, CommandIo& io) {
  OutputFormat format = ParseOutputFormat(o.format, {"table", "json"});
  std::string text = ReadFileText(o.log_path, 4LL << 30);
  LogParseOptions parse;
  parse.source = o.log_path;
  parse.boot = o.boot;
  BootLog log = ParseBootLog(text, parse);
  RequireUsableBoot(log);  // a failed boot: its error is the answer, and no calibration is written from it
  DeploymentOptions opts = o.deployment;
  opts.no_calibration = true;
  const LaunchArgs* args = log.launch_args ? &*log.launch_args : (log.engine_config ? &*log.engine_config : nullptr);
  std::vector<std::string> notes;
  if (opts.model.empty() && args && args->model) {
    if (FindModelPreset(*args->model)) {
      opts.model = *args->model;
      notes.push_back("model " + *args->model + " from the log's launch arguments");
    } else {
      throw Error(
          fmt::format("{}: the log serves \"{}\", which is not a preset; give --model (a preset, config.json or "
                      "checkpoint directory)",
                      log.WhereBoot(), EscapeLogText(*args->model, 200)));
    }
  }
  if (opts.model.empty())
    throw Error(
        fmt::format("{}: the log names no model (no \"non-default args\" line); give --model", log.WhereBoot()));
  if (opts.vllm.empty() && log.version) {
    if (auto m = TryResolveVllmVersion(*log.version)) {
      opts.vllm = m->profile->name;
      notes.push_back("vLLM row " + m->profile->name + " from the logged version " + *log.version +
                      (m->note.empty() ? "" : " (" + m->note + ")"));
    }
  }
  if (opts.kv_cache_dtype.empty() && args && args->kv_cache_dtype) opts.kv_cache_dtype = *args->kv_cache_dtype;
  const ResolvedDeployment resolved = opts.Resolve();
  const Deployment& d = resolved.planner;
  // The layout of that boot: what the user says (flags, environment, profile), else the log's.
  LayoutSpec hint;
  const auto& q = resolved.request;
  if (q.Setting("tp_size").source >= SettingSource::kFile) hint.tensor_parallel_size = q.tp_size;
  if (q.Setting("pp_size").source >= SettingSource::kFile) hint.pipeline_parallel_size = q.pp_size;
  if (q.Setting("pp_layer_partition").source >= SettingSource::kFile && resolved.pass_partition_env) {
    if (!resolved.PartitionValid()) throw Error(fmt::format("{}", fmt::join(resolved.partition_check.messages, "; ")));
    hint.pipeline_parallel_size = q.pp_size;
    hint.layer_partition = resolved.partition;
  }
  LogCalibration cal = CalibrateFromLog(log, d, hint);
  CalibrationCheck check = CheckCalibration(cal, d);
  if (!o.out_path.empty()) WriteFileText(o.out_path, CalibrationToJson(cal.calibration).dump(2) + "\n");

  if (format == OutputFormat::kJson) {
    nlohmann::json j;
    j["schema"] = "ppdeploy.calibrate/1";
    j["log"] = o.log_path;
    j["boot"] = {{"index", log.boot},
                 {"of", log.boots},
                 {"first_line", log.boot_list[static_cast<std::size_t>(log.boot - 1)].first_line},
                 {"last_line", log.boot_list[static_cast<std::size_t>(log.boot - 1)].last_line},
                 {"chosen_by", log.boot_requested ? "--boot" : "the last complete boot"},
                 {"description", log.DescribeBoot()}};
    j["boots"] = nlohmann::json::array();
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
      j["boots"].push_back(std::move(jb));
    }
    j["calibration"] = CalibrationToJson(cal.calibration);
    j["check"] = {
        {"predicted_kv_tokens", check.predicted_kv_tokens},
        {"predicted_blocks", check.predicted_blocks},
        {"blocks_lo", check.blocks_lo},
        {"blocks_hi", check.blocks_hi},
        {"logged_kv_tokens", check.logged_kv_tokens ? nlohmann::json(*check.logged_kv_tokens) : nlohmann::json()},
        {"logged_blocks", check.logged_blocks ? nlohmann::json(*check.logged_blocks) : nlohmann::json()},
        {"within_rounding", check.within_rounding},
        {"estimated_kv_tokens_without_calibration", check.estimated_kv_tokens},
        {"kv_bytes_per_token", check.bytes_per_token}};
    j["ranks"] = nlohmann::json::array();
    for (const auto& r : cal.ranks)
      j["ranks"].push_back({{"pp_rank", r.pp_rank},
                            {"available_kv_gib", r.available_kv_gib},
                            {"uncertainty_gib", r.uncertainty_gib},
                            {"inferred", r.inferred},
                            {"source", r.source}});
    j["notes"] = notes;
    j["warnings"] = cal.warnings;
    io.out << j.dump(2) << "\n";
  } else {
    io.out << fmt::format("Calibration from {} ({}, TP{} PP{} split {}, block {}, max_model_len {})\n", o.log_path,
                          d.model_name, cal.layout.tensor_parallel_size, cal.layout.pipeline_parallel_size,
                          FormatPartition(cal.calibration.layer_partition), cal.block_size,
                          WithThousands(cal.max_model_len));
    io.out << "  " << log.DescribeBoot() << "\n";
    for (const auto& n : notes) io.out << "  " << n << "\n";
    Table t;
    t.headers = {"PP rank",           "available KV GiB", "+/- GiB", "KV B/token",
                 "model loading GiB", "CUDA graph GiB",   "source"};
    for (size_t r = 0; r < cal.ranks.size(); ++r) {
      const auto& cr = cal.ranks[r];
      const auto& c = cal.calibration.ranks[r];
      t.AddRow({std::to_string(cr.pp_rank), fmt::format("{:.3f}", cr.available_kv_gib),
                fmt::format("{:.3f}", cr.uncertainty_gib), WithThousands(check.bytes_per_token[r]),
                c.model_loading_gib ? fmt::format("{:.2f}", *c.model_loading_gib) : "-",
                c.cuda_graph_gib ? fmt::format("{:.2f}", *c.cuda_graph_gib) : "-", cr.source});
    }
    t.RenderText(io.out, "  ");
    io.out << fmt::format(
        "  pool: predicted {} tokens ({} blocks; rounding allows {}..{}), logged {}{}\n",
        WithThousands(check.predicted_kv_tokens), WithThousands(check.predicted_blocks), WithThousands(check.blocks_lo),
        WithThousands(check.blocks_hi), check.logged_kv_tokens ? WithThousands(*check.logged_kv_tokens) : "-",
        check.logged_blocks ? fmt::format(" ({} blocks): {}", WithThousands(*check.logged_blocks),
                                          check.within_rounding ? "within rounding" : "OUTSIDE the rounding interval")
                            : "");
    io.out << fmt::format("  without calibration the estimate would be {} tokens\n",
                          WithThousands(check.estimated_kv_tokens));
    for (const auto& w : cal.warnings)
      if (!w.starts_with("used boot ")) io.out << "  warning: " << w << "\n";  // the boot line above says it
    if (!o.out_path.empty())
      io.out << "  wrote " << o.out_path << " (use: ppdeploy plan --calibration " << o.out_path << ")\n";
  }
  return ExitCode::kOk;
}

}  // namespace

RunFunction DeclareCalibrate(CLI::App* sub) {
  auto o = std::make_shared<CalibrateOptions>();
  CLI::App* cmd = sub;
  cmd->add_option("--log", o->log_path, "vLLM start-up log (any version since 0.8; ANSI colours and prefixes are fine)")
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
