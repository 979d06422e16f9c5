// `ppdeploy calibrate`: learn the unmeasurable parts of memory from one real vLLM boot log.
#include <memory>
#include <optional>

#include "cli/command.h"
#include "cli/deployment_options.h"
#include "core/error.h"
#include "core/units.h"
#include "io/files.h"
#include "memory/pool.h"
#include "model/presets.h"
#include "report/table.h"
#include "vllm/calibrate.h"

namespace ppdeploy::cli {
namespace {

struct CalibrateOptions {
  DeploymentOptions deployment;
  std::string log_path, out_path;
  std::optional<std::string> partition;  // given, even empty (refused as vLLM refuses "")
  int tp = 0, pp = 0;
  std::string format = "table";
};

int RunCalibrate(const CalibrateOptions& o, CommandIo& io) {
  OutputFormat format = ParseOutputFormat(o.format, {"table", "json"});
  std::string text = ReadFileText(o.log_path, 4LL << 30);
  BootLog log = ParseBootLog(text);
  DeploymentOptions opts = o.deployment;
  opts.no_calibration = true;
  const LaunchArgs* args = log.launch_args ? &*log.launch_args : (log.engine_config ? &*log.engine_config : nullptr);
  std::vector<std::string> notes;
  if (opts.model.empty() && args && args->model) {
    if (FindModelPreset(*args->model)) {
      opts.model = *args->model;
      notes.push_back("model " + *args->model + " from the log's launch arguments");
    } else {
      throw Error(fmt::format("{}: the log serves \"{}\", which is not a preset; give --model (a preset, config.json or "
                              "checkpoint directory)", o.log_path, *args->model));
    }
  }
  if (opts.model.empty())
    throw Error(fmt::format("{}: the log names no model (no \"non-default args\" line); give --model", o.log_path));
  if (opts.vllm.empty() && log.version) {
    if (auto p = ProfileForVersion(*log.version)) {
      opts.vllm = *p;
      notes.push_back("vLLM profile " + *p + " from the logged version " + *log.version);
    }
  }
  if (opts.kv_cache_dtype.empty() && args && args->kv_cache_dtype) opts.kv_cache_dtype = *args->kv_cache_dtype;
  Deployment d = opts.Build();
  LayoutSpec hint;
  hint.tensor_parallel_size = o.tp;
  hint.pipeline_parallel_size = o.pp;
  if (o.partition) {
    int pp = static_cast<int>(std::count(o.partition->begin(), o.partition->end(), ',')) + 1;
    hint.pipeline_parallel_size = pp;
    hint.layer_partition = ParsePartitionFlag(*o.partition, pp, d.model.num_hidden_layers);
  }
  LogCalibration cal = CalibrateFromLog(log, d, hint);
  CalibrationCheck check = CheckCalibration(cal, d);
  if (!o.out_path.empty()) WriteFileText(o.out_path, CalibrationToJson(cal.calibration).dump(2) + "\n");

  if (format == OutputFormat::kJson) {
    nlohmann::json j;
    j["schema"] = "ppdeploy.calibrate/1";
    j["log"] = o.log_path;
    j["calibration"] = CalibrationToJson(cal.calibration);
    j["check"] = {{"predicted_kv_tokens", check.predicted_kv_tokens},
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
      j["ranks"].push_back({{"pp_rank", r.pp_rank}, {"available_kv_gib", r.available_kv_gib},
                            {"uncertainty_gib", r.uncertainty_gib}, {"inferred", r.inferred}, {"source", r.source}});
    j["notes"] = notes;
    j["warnings"] = cal.warnings;
    io.out << j.dump(2) << "\n";
  } else {
    io.out << fmt::format("Calibration from {} ({}, TP{} PP{} split {}, block {}, max_model_len {})\n", o.log_path,
                          d.model_name, cal.layout.tensor_parallel_size, cal.layout.pipeline_parallel_size,
                          FormatPartition(cal.calibration.layer_partition), cal.block_size, WithThousands(cal.max_model_len));
    for (const auto& n : notes) io.out << "  " << n << "\n";
    Table t;
    t.headers = {"PP rank", "available KV GiB", "+/- GiB", "KV B/token", "model loading GiB", "CUDA graph GiB", "source"};
    for (size_t r = 0; r < cal.ranks.size(); ++r) {
      const auto& cr = cal.ranks[r];
      const auto& c = cal.calibration.ranks[r];
      t.AddRow({std::to_string(cr.pp_rank), fmt::format("{:.3f}", cr.available_kv_gib), fmt::format("{:.3f}", cr.uncertainty_gib),
                WithThousands(check.bytes_per_token[r]), c.model_loading_gib ? fmt::format("{:.2f}", *c.model_loading_gib) : "-",
                c.cuda_graph_gib ? fmt::format("{:.2f}", *c.cuda_graph_gib) : "-", cr.source});
    }
    t.RenderText(io.out, "  ");
    io.out << fmt::format("  pool: predicted {} tokens ({} blocks; rounding allows {}..{}), logged {}{}\n",
                          WithThousands(check.predicted_kv_tokens), WithThousands(check.predicted_blocks),
                          WithThousands(check.blocks_lo), WithThousands(check.blocks_hi),
                          check.logged_kv_tokens ? WithThousands(*check.logged_kv_tokens) : "-",
                          check.logged_blocks ? fmt::format(" ({} blocks): {}", WithThousands(*check.logged_blocks),
                                                            check.within_rounding ? "within rounding" : "OUTSIDE the rounding interval")
                                              : "");
    io.out << fmt::format("  without calibration the estimate would be {} tokens\n", WithThousands(check.estimated_kv_tokens));
    for (const auto& w : cal.warnings) io.out << "  warning: " << w << "\n";
    if (!o.out_path.empty()) io.out << "  wrote " << o.out_path << " (use: ppdeploy plan --calibration " << o.out_path << ")\n";
  }
  return 0;
}

RunFunction AddCalibrateCommand(CLI::App& app) {
  auto o = std::make_shared<CalibrateOptions>();
  CLI::App* cmd = app.add_subcommand("calibrate", "Learn non-torch / activation / CUDA-graph memory from a real vLLM boot log");
  cmd->add_option("--log", o->log_path, "vLLM start-up log (any version since 0.8; ANSI colours and prefixes are fine)")->required();
  o->deployment.Add(cmd);
  cmd->add_option("--tp", o->tp, "Tensor parallel size (default: from the log's launch arguments)");
  cmd->add_option("--pp", o->pp, "Pipeline parallel size (default: from the log)");
  cmd->add_option("--partition", o->partition, "VLLM_PP_LAYER_PARTITION of that boot (default: from the log / vLLM's default)");
  cmd->add_option("--out", o->out_path, "Write the calibration JSON here (for plan --calibration)");
  cmd->add_option("--format", o->format, "table or json")->capture_default_str();
  cmd->footer(
      "Examples:\n"
      "  ppdeploy calibrate --log boot.log --model glm-5.3-w4a16 --gpu a100 --tp 4 --pp 2 --partition 39,39 --out cal.json\n"
      "  ppdeploy plan --calibration cal.json --tp 4 --pp 2 --optimize");
  return [o](CommandIo& io) { return RunCalibrate(*o, io); };
}

}  // namespace

PPDEPLOY_COMMAND(30, AddCalibrateCommand);

}  // namespace ppdeploy::cli
