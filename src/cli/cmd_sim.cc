// `ppdeploy sim`: an OpenAI-compatible simulator of `vllm serve` for tests and demos (src/sim).
#include <fmt/format.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <ctime>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <thread>

#include "cli/command.h"
#include "core/error.h"
#include "core/json_fields.h"
#include "io/files.h"
#include "io/output_file.h"
#include "sim/sim_server.h"

extern char** environ;

namespace ppdeploy::cli {
namespace {

struct SimArgs {
  sim::SimOptions o;
  std::string host = "127.0.0.1";
  int port = 8000;
  int threads = 2;
  std::string fault_kinds = "500";
  std::string log_file;
  std::string record_argv;
  std::string boot_plan;
  bool accept_vllm_flags = false;
  std::uint64_t seed = 0;
};

std::vector<std::string> SelfArgv() {
  std::vector<std::string> argv;
  std::ifstream in("/proc/self/cmdline", std::ios::binary);
  std::string arg;
  while (std::getline(in, arg, '\0')) argv.push_back(arg);
  return argv;
}

void RecordArgv(const std::string& path) {
  nlohmann::json env = nlohmann::json::object();
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    std::string kv(*e);
    auto eq = kv.find('=');
    if (eq != std::string::npos) env[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  nlohmann::json j = {{"schema", "ppdeploy.sim-argv/1"}, {"argv", SelfArgv()}, {"env", env}, {"pid", getpid()}};
  WriteFileText(path, j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n");
}

std::string Stamp() {
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  localtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%m-%d %H:%M:%S", &tm);
  return buf;
}

std::vector<std::string> SplitComma(const std::string& s) {
  std::vector<std::string> out;
  std::size_t pos = 0;
  while (pos <= s.size()) {
    std::size_t end = s.find(',', pos);
    if (end == std::string::npos) end = s.size();
    std::string item = s.substr(pos, end - pos);
    if (!item.empty()) out.push_back(item);
    pos = end + 1;
  }
  return out;
}

}  // namespace

namespace {

// `ppdeploy sim` after parsing: the options completed from extras and --boot-plan, the server, the
// start-up log, then a wait for SIGINT/SIGTERM (announcing readiness after --startup-delay-s).
ExitCode RunSim(const std::shared_ptr<SimArgs>& args, CLI::App* sub, CommandIo& io) {
  if (!args->record_argv.empty()) RecordArgv(args->record_argv);
  std::vector<std::string> extras = sub->remaining();
  if (!extras.empty()) {
    if (!args->accept_vllm_flags)
      Fail("sim: unknown arguments starting at \"{}\" (pass --accept-vllm-flags to ignore vLLM flags)", extras.front());
    // `serve <model>`: take the model path as the name unless --model/--served-model-name was given.
    std::size_t i = extras.front() == "serve" ? 1 : 0;
    if (sub->count("--model") == 0 && i < extras.size() && extras[i].rfind("-", 0) != 0) args->o.model = extras[i];
  }
  args->o.seed = args->seed;
  args->o.fault_kinds = SplitComma(args->fault_kinds);
  if (!args->boot_plan.empty()) {
    sim::BootLayout b =
        sim::BootLayoutFromPlanJson(ParseJsonText(ReadFileText(args->boot_plan), args->boot_plan), args->boot_plan);
    if (sub->count("--kv-cache-tokens") == 0) args->o.kv_cache_tokens = b.kv_tokens;
    if (sub->count("--block-size") == 0) args->o.block_size = b.block_size;
    if (sub->count("--max-model-len") == 0) args->o.max_model_len = b.max_model_len;
    if (sub->count("--kv-cache-dtype") == 0) args->o.kv_cache_dtype = b.kv_cache_dtype;
    if (sub->count("--gpu-memory-utilization") == 0) args->o.gpu_memory_utilization = b.gpu_memory_utilization;
    args->o.boot_layout = std::move(b);
  }

  // Block SIGINT/SIGTERM before the server threads start, so that they inherit the mask and only sigwait sees them.
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);

  std::ofstream log_file;
  std::ostream* log = &io.err;
  if (!args->log_file.empty()) {
    CheckOutputTarget(args->log_file);  // a log is appended to a regular file only
    log_file.open(args->log_file, std::ios::app);
    if (!log_file) Fail("--log-file: cannot open {}", args->log_file);
    log = &log_file;
  }
  sim::SimServer server(args->o, args->host, args->port, args->threads);
  int pid = static_cast<int>(getpid());
  for (const auto& line : server.engine().StartupLog(pid, Stamp(), server.url())) *log << line << "\n";
  log->flush();
  io.out << "ppdeploy sim: listening on " << server.url() << std::endl;

  bool announced = args->o.startup_delay_s <= 0;
  if (announced) *log << fmt::format("(APIServer pid={}) INFO:     Application startup complete.", pid) << std::endl;
  auto start = std::chrono::steady_clock::now();
  int sig = 0;
  for (;;) {
    timespec timeout{0, 200'000'000};
    sig = sigtimedwait(&set, nullptr, &timeout);
    if (sig == SIGINT || sig == SIGTERM) break;
    if (!announced &&
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() >= args->o.startup_delay_s) {
      announced = true;
      *log << fmt::format("(APIServer pid={}) INFO:     Application startup complete.", pid) << std::endl;
    }
  }
  *log << fmt::format("(APIServer pid={}) INFO:     Shutting down (signal {})", pid, sig) << std::endl;
  server.Stop();
  auto c = server.counters();
  *log << fmt::format(
              "(APIServer pid={}) INFO:     ppdeploy sim served {} requests ({} finished, {} rejected, {} faults)", pid,
              c.requests, c.finished, c.rejected,
              [&] {
                std::int64_t n = 0;
                for (const auto& [k, v] : c.faults) n += v;
                return n;
              }())
       << std::endl;
  return ExitCode::kOk;
}

}  // namespace

RunFunction DeclareSim(CLI::App* sub) {
  auto args = std::make_shared<SimArgs>();
  sub->allow_extras();
  auto& o = args->o;
  sub->add_option("--host", args->host, "Address to listen on")->capture_default_str();
  sub->add_option("--port", args->port, "Port (0 = an ephemeral port; the bound one is printed)")
      ->capture_default_str();
  sub->add_option("--model,--served-model-name", o.model, "Model name served")->capture_default_str();
  sub->add_option("--seed", args->seed, "Seed of answers, latency jitter, faults")->capture_default_str();
  sub->add_option("--threads", args->threads, "Event-loop threads")->capture_default_str();
  sub->add_option("--ttft-ms", o.ttft_ms, "Mean time to first token (ms)")->capture_default_str();
  sub->add_option("--ttft-std-ms", o.ttft_std_ms, "TTFT standard deviation (ms)")->capture_default_str();
  sub->add_option("--itl-ms", o.itl_ms, "Mean inter-token latency (ms)")->capture_default_str();
  sub->add_option("--itl-std-ms", o.itl_std_ms, "ITL standard deviation (ms)")->capture_default_str();
  sub->add_option("--prefill-ms-per-token", o.prefill_ms_per_token, "Extra TTFT per prompt token (ms)")
      ->capture_default_str();
  sub->add_option("--max-num-seqs", o.max_num_seqs, "Requests running at once; more wait in a queue")
      ->capture_default_str();
  sub->add_option("--max-model-len", o.max_model_len, "Context length; prompt + max_tokens over it -> HTTP 400")
      ->capture_default_str();
  sub->add_option("--tokens-per-chunk", o.tokens_per_chunk, "Tokens per SSE chunk after the first")
      ->capture_default_str();
  sub->add_flag("--no-usage", o.no_usage, "Omit usage from every response");
  sub->add_option("--fault-rate", o.fault_rate, "Share of requests that fail [0,1]")->capture_default_str();
  sub->add_option("--fault-kinds", args->fault_kinds, "Comma list of 500,429,disconnect,stall")->capture_default_str();
  sub->add_option("--stall-ms", o.stall_ms, "How long a stall fault holds the connection before closing it")
      ->capture_default_str();
  sub->add_option("--degenerate-rate", o.degenerate_rate,
                  "Share of answers that loop on a token cycle until max_tokens")
      ->capture_default_str();
  sub->add_option("--effective-context", o.effective_context,
                  "Needle recall only for prompts of <= N tokens (0 = always)")
      ->capture_default_str();
  sub->add_option("--startup-delay-s", o.startup_delay_s, "/health answers 503 this long after start")
      ->capture_default_str();
  sub->add_option("--prefix-cache-blocks", o.prefix_cache_blocks,
                  "Prefix cache of 16-token prompt blocks (FIFO), reported as vllm:prefix_cache_hits_total; 0 = off")
      ->capture_default_str();
  sub->add_option("--kv-cache-tokens", o.kv_cache_tokens, "Start-up log: GPU KV cache size (tokens)")
      ->capture_default_str();
  sub->add_option("--available-kv-gib", o.available_kv_gib, "Start-up log: available KV cache memory (GiB)")
      ->capture_default_str();
  sub->add_option("--model-load-gib", o.model_load_gib, "Start-up log: model loading memory (GiB)")
      ->capture_default_str();
  sub->add_option("--model-load-s", o.model_load_s, "Start-up log: model loading time (s)")->capture_default_str();
  sub->add_option("--init-engine-s", o.init_engine_s, "Start-up log: init engine time (s)")->capture_default_str();
  sub->add_option("--vllm-version", o.vllm_version, "Version reported by /version and the log")->capture_default_str();
  sub->add_option("--block-size", o.block_size,
                  "KV block size (vllm:cache_config_info; num_gpu_blocks = --kv-cache-tokens / block size)")
      ->capture_default_str();
  sub->add_option("--kv-cache-dtype", o.kv_cache_dtype, "KV cache dtype reported by vllm:cache_config_info")
      ->capture_default_str();
  sub->add_option("--gpu-memory-utilization", o.gpu_memory_utilization,
                  "gpu_memory_utilization reported by vllm:cache_config_info and the log")
      ->capture_default_str();
  sub->add_option("--boot-plan", args->boot_plan,
                  "`ppdeploy plan --format json` (or `cmd --format json`) of one layout: the start-up log describes it "
                  "(split, per-rank weights, activation, CUDA graphs, available KV) and its pool, block size and "
                  "max_model_len become the sim's unless given");
  sub->add_option("--log-file", args->log_file, "Write the vLLM-style log here instead of stderr");
  sub->add_option("--record-argv", args->record_argv, "Write argv and environment as JSON to this file at start");
  sub->add_flag("--accept-vllm-flags", args->accept_vllm_flags,
                "Accept and ignore unknown vLLM flags (`ppdeploy sim --accept-vllm-flags serve /models/x "
                "--tensor-parallel-size 4`)");

  return [args, sub](CommandIo& io) -> ExitCode { return RunSim(args, sub, io); };
}

}  // namespace ppdeploy::cli
