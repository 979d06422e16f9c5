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

ExitCode RunCalibrate(const CalibrateOptions& o, CommandIo& io) {
  OutputFormat format = ParseOutputFormat(o.format, {"table", "json"});
  std::string text = ReadFileText(o.log_path, 4LL << 30);
  LogParseOptions parse;
  parse.source = o.log_path;
  parse.boot = o.boot;
  BootLog log = ParseBootLog(text, parse);
  RequireUsableBoot(log);  // a failed boot without any figure: its error is the answer
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
                      log.WhereBoot(), EscapeForMessage(*args->model, 200)));
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
  // A weights-only boot has no available-KV figure: a calibration file from it would plan with nonsense.
  const bool write = !o.out_path.empty() && cal.writable();
  if (write) WriteFileText(o.out_path, CalibrationToJson(cal.calibration).dump(2) + "\n");
  auto refusal_line = [&]() -> std::string {
    if (!cal.refusal || cal.refusal_pp_rank < 0) return "";
    const NotEnoughKvError& e = *cal.refusal;
    return fmt::format(
        "refusal (PP rank {}): vLLM {:.2f} GiB needed, estimated maximum model length {}; planner {:.2f} GiB, "
        "{}..{}: {}",
        cal.refusal_pp_rank, e.needed_gib,
        e.estimated_max_model_len ? WithThousands(*e.estimated_max_model_len) : std::string("-"),
        ToGiB(check.refusal_needed_bytes), WithThousands(check.max_model_len_lo), WithThousands(check.max_model_len_hi),
        check.refusal_reproduced ? "reproduced" : "NOT reproduced");
  };

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
        {"kv_bytes_per_token", check.bytes_per_token},
        {"planned_weights_bytes", check.planned_weights_bytes}};
    if (cal.refusal && cal.refusal_pp_rank >= 0)
      j["check"]["refusal"] = {
          {"pp_rank", cal.refusal_pp_rank},
          {"logged_needed_gib", cal.refusal->needed_gib},
          {"logged_available_gib", cal.refusal->available_gib},
          {"logged_estimated_max_model_len", cal.refusal->estimated_max_model_len
                                                 ? nlohmann::json(*cal.refusal->estimated_max_model_len)
                                                 : nlohmann::json()},
          {"predicted_needed_bytes", check.refusal_needed_bytes},
          {"predicted_max_model_len_lo", check.max_model_len_lo},
          {"predicted_max_model_len_hi", check.max_model_len_hi},
          {"reproduced", check.refusal_reproduced}};
    j["weights_only"] = cal.weights_only;
    j["failure"] = cal.failure.empty() ? nlohmann::json() : nlohmann::json(cal.failure);
    j["used"] = cal.used;
    j["written"] = write ? nlohmann::json(o.out_path) : nlohmann::json();
    j["ranks"] = nlohmann::json::array();
    for (const auto& r : cal.ranks)
      j["ranks"].push_back({{"pp_rank", r.pp_rank},
                            {"available_kv_gib", r.available_kv_gib},
                            {"uncertainty_gib", r.uncertainty_gib},
                            {"inferred", r.inferred},
                            {"from_refusal", r.from_refusal},
                            {"weights_gib", r.weights_gib ? nlohmann::json(*r.weights_gib) : nlohmann::json()},
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
    t.headers = {"PP rank",           "available KV GiB",    "+/- GiB",        "KV B/token",
                 "model loading GiB", "planned weights GiB", "CUDA graph GiB", "source"};
    for (size_t r = 0; r < cal.ranks.size(); ++r) {
      const auto& cr = cal.ranks[r];
      const auto& c = cal.calibration.ranks[r];
      t.AddRow({std::to_string(cr.pp_rank), cal.weights_only ? "-" : fmt::format("{:.3f}", cr.available_kv_gib),
                cal.weights_only ? "-" : fmt::format("{:.3f}", cr.uncertainty_gib),
                WithThousands(check.bytes_per_token[r]),
                c.model_loading_gib ? fmt::format("{:.2f}", *c.model_loading_gib) : "-",
                fmt::format("{:.2f}", ToGiB(check.planned_weights_bytes[r])),
                c.cuda_graph_gib ? fmt::format("{:.2f}", *c.cuda_graph_gib) : "-", cr.source});
    }
    t.RenderText(io.out, "  ");
    if (!cal.weights_only) {
      io.out << fmt::format(
          "  pool: predicted {} tokens ({} blocks; rounding allows {}..{}), logged {}{}\n",
          WithThousands(check.predicted_kv_tokens), WithThousands(check.predicted_blocks),
          WithThousands(check.blocks_lo), WithThousands(check.blocks_hi),
          check.logged_kv_tokens ? WithThousands(*check.logged_kv_tokens) : "-",
          check.logged_blocks ? fmt::format(" ({} blocks): {}", WithThousands(*check.logged_blocks),
                                            check.within_rounding ? "within rounding" : "OUTSIDE the rounding interval")
                              : "");
      if (std::string rl = refusal_line(); !rl.empty()) io.out << "  " << rl << "\n";
    }
    io.out << fmt::format("  without calibration the estimate would be {} tokens\n",
                          WithThousands(check.estimated_kv_tokens));
    if (!cal.used.empty()) {
      io.out << "  figures used:\n";
      for (const auto& u : cal.used) io.out << "    " << u << "\n";
    }
    for (const auto& w : cal.warnings)
      if (!w.starts_with("used boot ")) io.out << "  warning: " << w << "\n";  // the boot line above says it
    if (write) io.out << "  wrote " << o.out_path << " (use: ppdeploy plan --calibration " << o.out_path << ")\n";
  }
  if (!o.out_path.empty() && !write) {
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
