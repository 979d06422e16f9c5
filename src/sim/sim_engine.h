// The behaviour of `ppdeploy sim`, an OpenAI-compatible stand-in for `vllm serve`, without any I/O:
// the tokenizer, the answer a request gets (deterministic under --seed), its latency schedule, the injected
// faults, and the JSON/SSE payloads. The network side lives in sim_server.{h,cc}.
//
// Shapes follow vLLM's OpenAI server (vllm/entrypoints/openai/protocol.py, serving_chat.py,
// serving_completion.py, serving_responses.py; vLLM 0.10-0.11) and the OpenAI API reference; the knobs follow
// llm-d-inference-sim (docs/sources.md §6) plus what it lacks: degenerate loops, needle recall, chunk bundling,
// missing usage.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <vector>

namespace ppdeploy::sim {

/// One pipeline stage of the layout a start-up log describes (every TP rank of it alike), GiB.
struct BootStage {
  int pp_rank = 0;
  double weights_gib = 0, non_torch_gib = 0, activation_gib = 0, cuda_graph_estimate_gib = 0, cuda_graph_gib = 0;
  double available_kv_gib = 0, kv_allocated_gib = 0, requested_gib = 0, cuda_context_gib = 0;
  std::int64_t num_blocks = 0;
};

/// The layout a vLLM-style start-up log describes (`ppdeploy sim --boot-plan`): taken from the planner's result
/// for one layout, so that a GPU-free stand-in boots "with the pool the planner predicts" and logs its
/// per-rank memory like vLLM does.
struct BootLayout {
  int tensor_parallel_size = 1;
  int pipeline_parallel_size = 1;
  std::vector<int> partition;
  std::vector<BootStage> stages;
  double gpu_total_gib = 0;
  double gpu_memory_utilization = 0.9;
  std::int64_t kv_tokens = 0;
  std::int64_t num_gpu_blocks = 0;
  int block_size = 16;
  std::int64_t max_model_len = 0;
  std::string kv_cache_dtype = "auto";
  std::string source;  ///< the plan file
};

/// Reads the first detailed layout of a `ppdeploy plan --format json` document (ppdeploy.plan/3, or /2), or the "plan"
/// of `ppdeploy cmd --format json`. Throws Error naming `source` and the field for anything else.
BootLayout BootLayoutFromPlanJson(const nlohmann::json& plan, const std::string& source);

struct SimOptions {
  std::string model = "ppdeploy-sim";
  std::uint64_t seed = 0;
  double ttft_ms = 0;
  double ttft_std_ms = 0;
  double itl_ms = 0;
  double itl_std_ms = 0;
  double prefill_ms_per_token = 0;
  int max_num_seqs = 256;
  std::int64_t max_model_len = 32768;
  int tokens_per_chunk = 1;
  bool no_usage = false;
  double fault_rate = 0;                           ///< share of requests that fail, in [0, 1]
  std::vector<std::string> fault_kinds = {"500"};  ///< "500", "429", "disconnect", "stall"
  double stall_ms = 30000;                         ///< how long a "stall" fault holds the connection
  double degenerate_rate = 0;                      ///< share of answers that loop until max_tokens
  std::int64_t effective_context = 0;              ///< needle recall limit in prompt tokens (0 = unlimited)
  double startup_delay_s = 0;
  /// Prefix cache (vLLM's automatic prefix caching, on by default there): prompt blocks of 16 tokens are
  /// remembered, FIFO, up to this many; hits are reported as vllm:prefix_cache_hits_total. 0 = off.
  std::int64_t prefix_cache_blocks = 65536;
  // KV cache as vllm:cache_config_info reports it (vLLM's --block-size, --kv-cache-dtype,
  // --gpu-memory-utilization); num_gpu_blocks = kv_cache_tokens / block_size.
  int block_size = 16;
  std::string kv_cache_dtype = "auto";
  double gpu_memory_utilization = 0.9;
  /// The layout the start-up log describes (per-rank lines); unset: the short single-process log below.
  std::optional<BootLayout> boot_layout;
  // Figures for the vLLM-style start-up log.
  std::int64_t kv_cache_tokens = 729280;
  double available_kv_gib = 15.56;
  double model_load_gib = 47.85;
  double model_load_s = 120.5;
  double init_engine_s = 12.34;
  std::string vllm_version = "0.11.0";
};

/// Throws Error when an option is out of range (names the flag).
void ValidateOptions(const SimOptions& options);

/// The deterministic tokenizer: a run of letters/digits/non-ASCII bytes, optionally with one leading space,
/// is one token; every other character (punctuation, newline, a space before punctuation) is its own token.
std::vector<std::string> Tokenize(std::string_view text);
/// The prefix-cache block size (vLLM's default block_size).
constexpr std::size_t kPrefixBlockTokens = 16;
/// Chained hashes of the full kPrefixBlockTokens-token blocks of `tokens`.
std::vector<std::uint64_t> PrefixBlockHashes(const std::vector<std::string>& tokens);
/// Token id of a piece (FNV-1a, in [100, 50100)).
std::int64_t TokenId(std::string_view piece);
/// The text the sim tokenizes for a chat request: "<|role|>content" per message, then "<|assistant|>".
std::string RenderChat(const nlohmann::json& messages);

enum class FaultKind { kNone, kHttp500, kHttp429, kDisconnect, kStall };

/// Which API a request came in on.
enum class Api { kChat, kCompletions, kResponses };

/// Everything about how one request is answered.
struct Plan {
  bool error = false;  ///< answer with an HTTP error instead (status + body)
  int status = 200;
  nlohmann::json error_body;

  Api api = Api::kChat;
  bool stream = false;
  bool include_usage = false;     ///< stream_options.include_usage (and not --no-usage)
  bool continuous_usage = false;  ///< stream_options.continuous_usage_stats (and not --no-usage)
  bool usage = true;              ///< non-streaming: include usage (not --no-usage)
  bool logprobs = false;
  std::string id;  ///< "chatcmpl-...", "cmpl-...", "resp_..."
  std::int64_t created = 0;
  std::string model;
  std::int64_t prompt_tokens = 0;
  /// Chained hashes of the prompt's full 16-token blocks (block i's hash covers tokens 0 .. 16 i + 15), as
  /// vLLM's prefix cache keys them.
  std::vector<std::uint64_t> prompt_block_hashes;
  std::vector<std::string> tokens;  ///< the output pieces (their count is completion_tokens)
  std::string finish_reason;        ///< "stop", "length" or "tool_calls"
  nlohmann::json tool_calls;        ///< null, or the tool_calls array
  bool degenerate = false;
  FaultKind fault = FaultKind::kNone;
  std::size_t fault_after_tokens = 0;  ///< disconnect/stall: tokens sent before the fault

  double ttft_ms = 0;          ///< from admission to the first token
  std::vector<double> itl_ms;  ///< gap before token i (i >= 1; itl_ms[0] = 0)

  std::string Text() const;
};

/// One piece of a streamed response, to be written at `at_ms` after admission.
struct StreamPart {
  double at_ms = 0;
  std::string bytes;  ///< complete SSE event(s)
};

class SimEngine {
 public:
  explicit SimEngine(SimOptions options);

  const SimOptions& options() const { return options_; }

  /// Plans the answer to a POST on `api` with JSON `body`. `request_number` is the server's arrival counter
  /// (it drives latency jitter, fault and degeneration draws); `now_s` is the Unix time for "created".
  Plan MakePlan(Api api, const nlohmann::json& body, std::uint64_t request_number, std::int64_t now_s) const;

  /// Non-streaming response body.
  nlohmann::json ResponseBody(const Plan& plan) const;
  /// Streamed parts in time order, including the terminating "data: [DONE]" (chat/completions).
  /// For a disconnect/stall fault the parts stop after `fault_after_tokens` tokens.
  std::vector<StreamPart> StreamParts(const Plan& plan) const;

  /// POST /tokenize: {"count","tokens","max_model_len"} (vLLM TokenizeResponse) for {"prompt"} or {"messages"}.
  nlohmann::json TokenizeBody(const nlohmann::json& body) const;
  /// GET /v1/models.
  nlohmann::json ModelsBody(std::int64_t now_s) const;
  /// vLLM's error JSON: {"object":"error","message":..,"type":..,"param":null,"code":status}.
  static nlohmann::json ErrorBody(const std::string& message, const std::string& type, int code);
  /// The vLLM-style start-up log lines (one string each, no newline), with `pid` and a "MM-DD HH:MM:SS" stamp.
  /// With a boot layout: the API server, the engine's config, the uneven split, per stage (worker
  /// Worker_PP<p>_TP0, pid + 1 + p) model loading, the memory summary, available KV and graph capture, then the
  /// pool, the concurrency at max_model_len and the ready lines (formats: docs/vllm-rules.md §2, vLLM 0.11+).
  std::vector<std::string> StartupLog(int pid, const std::string& stamp, const std::string& url) const;
  /// KV blocks of the pool: kv_cache_tokens / block_size.
  std::int64_t NumGpuBlocks() const;

 private:
  SimOptions options_;
  std::vector<std::string> words_;
};

/// Parses "--fault-kinds 500,429,disconnect,stall" items; throws Error for an unknown kind.
FaultKind ParseFaultKind(std::string_view kind);
const char* FaultKindName(FaultKind kind);

}  // namespace ppdeploy::sim
