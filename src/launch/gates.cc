#include "launch/gates.h"

#include "layout/partition.h"

#include <algorithm>
#include <cctype>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

namespace ppdeploy::launch {
namespace {

/// 1234567 -> "1,234,567" (the seed's figures are written this way).
std::string Thousands(std::int64_t v) {
  std::string digits = std::to_string(v < 0 ? -v : v);
  std::string out;
  int n = static_cast<int>(digits.size());
  for (int i = 0; i < n; ++i) {
    out += digits[static_cast<size_t>(i)];
    if ((n - i - 1) % 3 == 0 && i != n - 1) out += ',';
  }
  return v < 0 ? "-" + out : out;
}

bool IsPySpace(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'; }

/// Python int(field) for ASCII input; nullopt on ValueError.
std::optional<std::int64_t> PyInt(std::string_view s) {
  while (!s.empty() && IsPySpace(s.front())) s.remove_prefix(1);
  while (!s.empty() && IsPySpace(s.back())) s.remove_suffix(1);
  bool negative = false;
  if (!s.empty() && (s.front() == '+' || s.front() == '-')) {
    negative = s.front() == '-';
    s.remove_prefix(1);
  }
  if (s.empty()) return std::nullopt;
  constexpr std::int64_t kClamp = 1'000'000'000'000;
  std::int64_t value = 0;
  bool prev_digit = false;
  for (size_t i = 0; i < s.size(); ++i) {
    char c = s[i];
    if (c == '_') {
      // '_' only between two digits.
      if (!prev_digit || i + 1 >= s.size() || !std::isdigit(static_cast<unsigned char>(s[i + 1]))) return std::nullopt;
      prev_digit = false;
      continue;
    }
    if (!std::isdigit(static_cast<unsigned char>(c))) return std::nullopt;
    value = std::min<std::int64_t>(kClamp, value * 10 + (c - '0'));
    prev_digit = true;
  }
  return negative ? -value : value;
}

std::vector<std::string_view> SplitComma(std::string_view text) {
  std::vector<std::string_view> out;
  size_t start = 0;
  while (true) {
    size_t pos = text.find(',', start);
    out.push_back(text.substr(start, pos == std::string_view::npos ? std::string_view::npos : pos - start));
    if (pos == std::string_view::npos) break;
    start = pos + 1;
  }
  return out;
}

std::string Printable(std::string_view s) {
  std::string out;
  for (char c : s) {
    if (c == '\n') out += "\\n";
    else if (c == '\t') out += "\\t";
    else if (static_cast<unsigned char>(c) < 0x20) out += fmt::format("\\x{:02x}", static_cast<unsigned char>(c));
    else out += c;
  }
  return out;
}

}  // namespace

std::string_view GateStatusName(GateStatus status) {
  switch (status) {
    case GateStatus::kPass: return "pass";
    case GateStatus::kWarn: return "warn";
    case GateStatus::kFail: return "FAIL";
  }
  return "?";
}

GateResult CheckDsaPpGate(int pp_size, bool dsa_with_index_sharing, bool allow_unverified_pp) {
  GateResult r{"dsa-pp", GateStatus::kPass, {}};
  if (!dsa_with_index_sharing) {
    r.messages.push_back("not a DSA model with index sharing: no PP limit from the index-sharing defect");
    return r;
  }
  if (pp_size <= 2) {
    r.messages.push_back(fmt::format("PP_SIZE={} <= 2 on a DSA model with index sharing", pp_size));
    return r;
  }
  const std::string figures =
      "the seed measured PP=4 degenerating 20% of answers with speculation off and 45% with MTP k=3 "
      "(correct answer, then a loop without EOS up to the token cap); PP=2 with Fix B: 0/200";
  if (allow_unverified_pp) {
    r.status = GateStatus::kWarn;
    r.messages.push_back(fmt::format(
        "WARNING: PP_SIZE={} > 2 on a DSA model with index sharing is UNVERIFIED: {}.", pp_size, figures));
    r.messages.push_back(
        "WARNING: ALLOW_UNVERIFIED_PP=1 lets it through for research only; do not serve users from it. After "
        "`ppdeploy start` and `ppdeploy wait`, run `ppdeploy degen` (exit 2 on any degeneration).");
    return r;
  }
  r.status = GateStatus::kFail;
  r.messages.push_back(fmt::format(
      "PP_SIZE={} > 2 on a DSA model with index sharing is refused: {}; 1M context is not usable today.", pp_size,
      figures));
  r.messages.push_back("Alternatives:");
  r.messages.push_back(
      "  1. TP_SIZE=4 PP_SIZE=2 PP_LAYER_PARTITION=41,37 (default): KV pool 729,280 tokens, max_model_len 524,288, "
      "0/200 degenerate");
  r.messages.push_back(
      "  2. TP_SIZE=8 PP_SIZE=1 MAX_MODEL_LEN=352000: KV pool 386,943 tokens, single stream ~68 tok/s, 0/120 "
      "degenerate");
  r.messages.push_back(
      "  3. KV_CACHE_DTYPE=bfloat16 MAX_MODEL_LEN=262144 (TP4/PP2, 41,37): KV pool 458,560 tokens, conc16 363 tok/s");
  r.messages.push_back("Research only: ALLOW_UNVERIFIED_PP=1 lets it pass with a warning; then run `ppdeploy degen`.");
  return r;
}

std::optional<std::vector<std::int64_t>> ParsePartitionLikeVllm(std::string_view text) {
  std::vector<std::int64_t> out;
  for (auto field : SplitComma(text)) {
    auto v = PyInt(field);
    if (!v) return std::nullopt;
    out.push_back(*v);
  }
  return out;
}

std::vector<int> DefaultPartition(int num_hidden_layers, int pp_size) {
  if (pp_size < 1 || pp_size > num_hidden_layers) return {};
  return ::ppdeploy::DefaultPartition(num_hidden_layers, pp_size);  // the planner's get_pp_indices mirror
}

PartitionCheck CheckLayerPartition(std::string_view text, int pp_size, int num_hidden_layers) {
  PartitionCheck c;
  c.result.gate = "layer-partition";
  const std::string shown = Printable(text);
  if (pp_size <= 1) {
    if (!text.empty()) {
      c.result.status = GateStatus::kWarn;
      c.result.messages.push_back(fmt::format(
          "PP_LAYER_PARTITION={} is ignored with PP_SIZE={} (vLLM reads it only with pipeline parallelism); not passed",
          shown, pp_size));
    } else {
      c.result.messages.push_back(fmt::format("PP_SIZE={}: no layer split", pp_size));
    }
    c.partition = {num_hidden_layers};
    return c;
  }
  if (text.empty()) {
    c.partition = DefaultPartition(num_hidden_layers, pp_size);
    c.result.messages.push_back(fmt::format("PP_LAYER_PARTITION unset: vLLM's default split {} (get_pp_indices)",
                                            fmt::join(c.partition, ",")));
    return c;
  }
  auto parsed = ParsePartitionLikeVllm(text);
  if (!parsed) {
    c.result.status = GateStatus::kFail;
    std::string detail;
    auto fields = SplitComma(text);
    for (size_t i = 0; i < fields.size(); ++i) {
      if (PyInt(fields[i])) continue;
      detail = fields[i].empty() ? fmt::format("segment {} is empty", i + 1)
                                 : fmt::format("segment {} '{}' is not an integer", i + 1, Printable(fields[i]));
      break;
    }
    c.result.messages.push_back(fmt::format("PP_LAYER_PARTITION={}: Invalid partition string: {} ({})", shown, shown,
                                            detail));
    return c;
  }
  const auto& parts = *parsed;
  std::int64_t sum = 0;
  for (auto p : parts) sum += p;
  if (parts.size() != static_cast<size_t>(pp_size)) {
    c.result.status = GateStatus::kFail;
    c.result.messages.push_back(fmt::format("PP_LAYER_PARTITION={}: len(partitions)={} does not match pp_size={}.",
                                            shown, parts.size(), pp_size));
    c.result.messages.push_back(fmt::format(
        "  give {} segments (vLLM's default split for PP_SIZE={} is {}), or PP_LAYER_PARTITION= to let vLLM split",
        pp_size, pp_size, fmt::join(DefaultPartition(num_hidden_layers, pp_size), ",")));
  }
  if (sum != num_hidden_layers) {
    c.result.status = GateStatus::kFail;
    c.result.messages.push_back(fmt::format("PP_LAYER_PARTITION={}: sum(partitions)={} does not match "
                                            "num_hidden_layers={}.",
                                            shown, sum, num_hidden_layers));
  }
  for (size_t i = 0; i < parts.size(); ++i) {
    if (parts[i] < 0) {
      c.result.status = GateStatus::kFail;
      c.result.messages.push_back(fmt::format(
          "PP_LAYER_PARTITION={}: stage {} has {} layers; only non-negative integers are allowed", shown, i, parts[i]));
    }
  }
  if (c.result.Failed()) return c;
  auto fields = SplitComma(text);
  for (size_t i = 0; i < fields.size(); ++i) {
    if (fields[i] != std::to_string(parts[i])) {
      c.result.status = GateStatus::kWarn;
      c.result.messages.push_back(
          fmt::format("segment {} '{}' is read by vLLM (Python int()) as {}", i + 1, Printable(fields[i]), parts[i]));
    }
    if (parts[i] == 0) {
      c.result.status = GateStatus::kWarn;
      c.result.messages.push_back(fmt::format("stage {} has 0 layers", i));
    }
  }
  c.partition.assign(parts.begin(), parts.end());
  std::vector<std::string> ranges;
  int start = 0;
  for (int p : c.partition) {
    ranges.push_back(fmt::format("[{},{})", start, start + p));
    start += p;
  }
  c.result.messages.push_back(
      fmt::format("PP_LAYER_PARTITION={}: stages {} of {} layers", shown, fmt::join(ranges, " "), num_hidden_layers));
  c.pass_env = true;
  return c;
}

GateResult CheckIndexShareSafety(const IndexShareFacts& facts, bool fix_b, std::string_view vllm_version) {
  GateResult r{"index-share", GateStatus::kPass, {}};
  if (!facts.dsa_with_index_sharing) {
    r.messages.push_back("not a DSA model with index sharing");
    return r;
  }
  std::vector<std::string> forced;
  for (size_t rank = 0; rank < facts.forced_layers_per_rank.size(); ++rank) {
    const auto& layers = facts.forced_layers_per_rank[rank];
    if (!layers.empty()) forced.push_back(fmt::format("rank {}: [{}]", rank, fmt::join(layers, ", ")));
  }
  if (forced.empty()) {
    r.messages.push_back("every rank starts on a self-computing layer: no shared top-k buffer is read before it is "
                         "written");
    return r;
  }
  if (fix_b) {
    r.messages.push_back(fmt::format("Fix B in vLLM profile {} forces {} to compute their own top-k indices",
                                     vllm_version, fmt::join(forced, "; ")));
    return r;
  }
  r.status = GateStatus::kFail;
  r.messages.push_back(fmt::format(
      "split leaves {} reading a shared top-k buffer never written on that rank (seed: 19-21% degenerate answers at "
      "PP=2 without Fix B); vLLM profile {} has no Fix B",
      fmt::join(forced, "; "), vllm_version));
  r.messages.push_back("use a split whose later stages start on a self-computing layer (e.g. 42,36 for the seed "
                       "model), PP_SIZE=1, or VLLM_VERSION=0.30-custom (Fix B)");
  return r;
}

GateResult CheckIndexSharePatternFix(const IndexShareFacts& facts, const LaunchProfile& profile,
                                     std::string* merged_hf_overrides) {
  GateResult r{"index-share", GateStatus::kPass, {}};
  std::vector<std::string> forced;
  for (size_t rank = 0; rank < facts.forced_layers_per_rank.size(); ++rank)
    if (!facts.forced_layers_per_rank[rank].empty())
      forced.push_back(fmt::format("rank {}: [{}]", rank, fmt::join(facts.forced_layers_per_rank[rank], ", ")));
  nlohmann::json overrides = nlohmann::json::object();
  if (!profile.hf_overrides.empty()) overrides = nlohmann::json::parse(profile.hf_overrides, nullptr, false);
  if (!overrides.is_object()) overrides = nlohmann::json::object();
  if (overrides.contains("index_topk_pattern") && overrides["index_topk_pattern"] != facts.pattern) {
    r.status = GateStatus::kFail;
    r.messages.push_back("HF_OVERRIDES already sets index_topk_pattern to another value; refusing to replace it "
                         "(the split needs " + facts.pattern + ")");
    return r;
  }
  overrides["index_topk_pattern"] = facts.pattern;
  *merged_hf_overrides = overrides.dump();
  r.messages.push_back(fmt::format("fix B as an override: --hf-overrides index_topk_pattern makes {} compute their own "
                                   "top-k (merged with HF_OVERRIDES)", fmt::join(forced, "; ")));
  if (facts.checkpoint_checked && !facts.checkpoint_problems.empty()) {
    r.status = GateStatus::kFail;
    for (const auto& p : facts.checkpoint_problems) r.messages.push_back("checkpoint: " + p);
    r.messages.push_back("a forced layer without indexer weights would load uninitialised parameters and answer "
                         "silently wrong; use a split whose later stages start on a self-computing layer (42,36 for "
                         "the seed model)");
    return r;
  }
  if (!facts.checkpoint_checked) {
    if (profile.allow_unchecked_indexer) {
      r.status = GateStatus::kWarn;
      r.messages.push_back(fmt::format(
          "WARNING: MODEL_PATH {} is not a local checkpoint directory, so the forced layers' indexer tensors were NOT "
          "checked (ALLOW_UNCHECKED_INDEXER=1). A missing tensor loads uninitialised weights: run `ppdeploy degen` "
          "after start.", profile.model_path));
    } else {
      r.status = GateStatus::kFail;
      r.messages.push_back(fmt::format(
          "cannot check MODEL_PATH {} for the forced layers' indexer tensors (not a local checkpoint directory); "
          "run where the checkpoint is, or set ALLOW_UNCHECKED_INDEXER=1 to waive the check", profile.model_path));
    }
    return r;
  }
  r.messages.push_back("checkpoint holds indexer tensors for every forced layer");
  return r;
}

RunnerDecision ResolveV2Runner(std::string_view force_v2_runner, int pp_size, const VllmCapabilities& caps) {
  RunnerDecision d;
  d.result.gate = "v2-runner";
  if (force_v2_runner.empty()) {
    if (pp_size <= 1) {
      d.result.messages.push_back("FORCE_V2_RUNNER auto, PP_SIZE=1: model runner left to vLLM");
    } else if (!caps.v2_model_runner_env) {
      d.result.messages.push_back(
          fmt::format("FORCE_V2_RUNNER auto: vLLM profile {} has no V2 model runner; nothing pinned", caps.name));
    } else {
      d.v2_env = 1;
      d.result.messages.push_back(fmt::format(
          "PP_SIZE={} > 1: VLLM_USE_V2_MODEL_RUNNER=1 pinned (V2 silently falls back to V1 for unsupported methods, and "
          "V1's PP + speculation is the broken path)",
          pp_size));
    }
    return d;
  }
  if (force_v2_runner == "1") {
    if (!caps.v2_model_runner_env) {
      d.result.status = GateStatus::kFail;
      d.result.messages.push_back(
          fmt::format("FORCE_V2_RUNNER=1: vLLM profile {} has no V2 model runner (VLLM_USE_V2_MODEL_RUNNER)", caps.name));
      return d;
    }
    d.v2_env = 1;
    d.result.messages.push_back("FORCE_V2_RUNNER=1: VLLM_USE_V2_MODEL_RUNNER=1");
    return d;
  }
  if (caps.v2_model_runner_env) d.v2_env = 0;
  if (pp_size > 1) {
    d.result.status = GateStatus::kWarn;
    d.result.messages.push_back(fmt::format(
        "FORCE_V2_RUNNER=0 with PP_SIZE={}: the V1 model runner's PP + speculation is the broken path (seed §8)",
        pp_size));
  } else {
    d.result.messages.push_back("FORCE_V2_RUNNER=0: VLLM_USE_V2_MODEL_RUNNER=0");
  }
  return d;
}

SpecDecision ResolveSpeculation(std::string_view requested, int pp_size, int mtp_layers, bool v2_runner_on,
                                const VllmCapabilities& caps) {
  SpecDecision d;
  d.result.gate = "speculation";
  const bool pp_blocked = pp_size > 1 && !caps.pp_speculation;
  if (requested == "auto") {
    if (mtp_layers <= 0) {
      d.method = "none";
      d.result.messages.push_back("SPEC_METHOD=auto -> none: the model has no MTP layers");
    } else if (pp_blocked) {
      d.method = "none";
      d.result.messages.push_back(fmt::format(
          "notice: SPEC_METHOD=auto chose MTP, downgraded to none: vLLM profile {} lacks PP + speculative decoding "
          "(PP_SIZE={})",
          caps.name, pp_size));
    } else {
      d.method = "mtp";
      d.result.messages.push_back(fmt::format("SPEC_METHOD=auto -> mtp (the model has {} MTP layer{})", mtp_layers,
                                              mtp_layers == 1 ? "" : "s"));
    }
    return d;
  }
  d.method = std::string(requested);
  if (requested == "none") {
    d.result.messages.push_back("SPEC_METHOD=none: no speculative decoding");
    return d;
  }
  if (requested == "mtp" && mtp_layers <= 0) {
    d.result.status = GateStatus::kFail;
    d.result.messages.push_back("SPEC_METHOD=mtp: the model has no MTP layers (num_nextn_predict_layers = 0)");
    return d;
  }
  if (requested != "mtp" && requested != "ngram") {
    d.result.status = GateStatus::kFail;
    d.result.messages.push_back(fmt::format("SPEC_METHOD={}: expected auto, mtp, ngram or none", requested));
    return d;
  }
  if (pp_blocked) {
    d.result.status = GateStatus::kFail;
    d.result.messages.push_back(fmt::format(
        "SPEC_METHOD={} with PP_SIZE={}: vLLM profile {} does not support PP + speculative decoding (only 0.30 / "
        "0.30-custom do, on the V2 model runner; vllm-rules §1.11). Use SPEC_METHOD=none or auto, PP_SIZE=1, or "
        "VLLM_VERSION=0.30-custom",
        requested, pp_size, caps.name));
    return d;
  }
  if (requested == "ngram" && v2_runner_on && !caps.ngram_under_v2) {
    d.result.status = GateStatus::kFail;
    d.result.messages.push_back(fmt::format(
        "SPEC_METHOD=ngram is not supported by the V2 model runner of vLLM profile {} (pinned because PP > 1 or "
        "FORCE_V2_RUNNER=1); use SPEC_METHOD=mtp or none",
        caps.name));
    return d;
  }
  d.result.messages.push_back(fmt::format("SPEC_METHOD={}", requested));
  return d;
}

AllReduceDecision CheckCustomAllReduce(int tp_size, bool disable_custom_all_reduce, const VllmCapabilities& caps) {
  AllReduceDecision d;
  d.result.gate = "custom-all-reduce";
  d.disable_custom_all_reduce = disable_custom_all_reduce;
  if (tp_size == 2 && !disable_custom_all_reduce) {
    d.disable_custom_all_reduce = true;
    d.result.messages.push_back(
        "notice: TP_SIZE=2: --disable-custom-all-reduce added (without it CUDA-graph profiling crashes in "
        "custom_all_reduce 'invalid argument', seed §8)");
  } else if (d.disable_custom_all_reduce) {
    d.result.messages.push_back("--disable-custom-all-reduce");
  } else {
    d.result.messages.push_back(fmt::format("TP_SIZE={}: custom all-reduce kept", tp_size));
  }
  if (d.disable_custom_all_reduce && !caps.disable_custom_all_reduce) {
    d.result.status = GateStatus::kFail;
    d.result.messages.push_back(
        fmt::format("vLLM profile {} has no --disable-custom-all-reduce", caps.name));
  }
  return d;
}

GateResult CheckVersionFlags(const LaunchProfile& p, const VllmCapabilities& caps) {
  GateResult r{"version-flags", GateStatus::kPass, {}};
  if (std::find(caps.kv_cache_dtypes.begin(), caps.kv_cache_dtypes.end(), p.kv_cache_dtype) ==
      caps.kv_cache_dtypes.end()) {
    r.status = GateStatus::kFail;
    r.messages.push_back(fmt::format("KV_CACHE_DTYPE={}: vLLM profile {} accepts {}", Printable(p.kv_cache_dtype),
                                     caps.name, fmt::join(caps.kv_cache_dtypes, ", ")));
  }
  if (p.kv_cache_memory_bytes > 0 && !caps.kv_cache_memory_bytes) {
    r.status = GateStatus::kFail;
    r.messages.push_back(
        fmt::format("KV_CACHE_MEMORY_BYTES: --kv-cache-memory-bytes does not exist in vLLM profile {} (since ~0.11)",
                    caps.name));
  }
  if (r.messages.empty()) r.messages.push_back(fmt::format("flags supported by vLLM profile {}", caps.name));
  return r;
}

GateResult CheckGpuCount(const LaunchProfile& p) {
  GateResult r{"gpus", GateStatus::kPass, {}};
  const int world = p.tp_size * p.pp_size;
  if (world > p.gpus_per_node) {
    const int nodes = (world + p.gpus_per_node - 1) / p.gpus_per_node;
    if (static_cast<int>(p.nodes.size()) < nodes) {
      r.status = GateStatus::kWarn;
      r.messages.push_back(fmt::format("TP x PP = {} > GPUS_PER_NODE={}: {} nodes; set NODES=head,worker,... ({} listed)",
                                       world, p.gpus_per_node, nodes, p.nodes.size()));
    } else {
      r.messages.push_back(fmt::format("TP x PP = {} over {} nodes of {} GPUs", world, nodes, p.gpus_per_node));
    }
    return r;
  }
  if (p.NumGpusListed() < world) {
    r.status = GateStatus::kFail;
    r.messages.push_back(fmt::format("GPUS={} lists {} GPU{}; TP x PP = {} needs {}", p.gpus, p.NumGpusListed(),
                                     p.NumGpusListed() == 1 ? "" : "s", world, world));
  } else {
    r.messages.push_back(fmt::format("TP x PP = {} on GPUs {}", world, p.gpus));
  }
  return r;
}

GateResult CheckMemory(const MemoryFacts& facts, std::int64_t max_model_len) {
  GateResult r{"memory", GateStatus::kPass, {}};
  if (!facts.weights_fit) {
    r.status = GateStatus::kFail;
    r.messages.push_back(fmt::format("weights do not fit: {}", facts.weights_reason));
  }
  if (max_model_len > facts.largest_max_model_len) {
    r.status = GateStatus::kFail;
    r.messages.push_back(fmt::format(
        "MAX_MODEL_LEN={} is above the predicted KV pool ({} tokens): the largest max_model_len that fits is {}",
        Thousands(max_model_len), Thousands(facts.predicted_kv_tokens), Thousands(facts.largest_max_model_len)));
  }
  if (!r.Failed()) {
    double conc = max_model_len > 0 ? static_cast<double>(facts.predicted_kv_tokens) / static_cast<double>(max_model_len)
                                    : 0.0;
    r.messages.push_back(fmt::format("{}MAX_MODEL_LEN={} <= {} (predicted KV pool {} tokens, {:.2f}x concurrency)",
                                     facts.weights_reason.empty() ? "" : facts.weights_reason + "; ",
                                     Thousands(max_model_len), Thousands(facts.largest_max_model_len),
                                     Thousands(facts.predicted_kv_tokens), conc));
  }
  return r;
}

bool GateReport::Refused() const {
  return std::any_of(results.begin(), results.end(), [](const GateResult& r) { return r.Failed(); });
}

int GateReport::ExitCode() const { return Refused() ? 1 : 0; }

GateReport RunGates(const LaunchProfile& profile, PlannerFacts& facts, const VllmCapabilities& caps) {
  GateReport report;
  report.effective = profile;
  const int layers = facts.NumHiddenLayers(profile);
  const IndexShareFacts index = facts.IndexShare(profile);

  report.results.push_back(CheckDsaPpGate(profile.pp_size, index.dsa_with_index_sharing, profile.allow_unverified_pp));

  PartitionCheck split = CheckLayerPartition(profile.pp_layer_partition, profile.pp_size, layers);
  report.pass_partition_env = split.pass_env;
  const bool split_ok = !split.result.Failed();
  report.results.push_back(std::move(split.result));

  if (split_ok) {
    if (!caps.index_share_fix_b && caps.index_share_fix_pattern && index.dsa_with_index_sharing && !index.pattern.empty())
      report.results.push_back(CheckIndexSharePatternFix(index, profile, &report.effective.hf_overrides));
    else
      report.results.push_back(CheckIndexShareSafety(index, caps.index_share_fix_b, caps.name));
  } else {
    report.results.push_back({"index-share", GateStatus::kPass, {"skipped: the layer split is invalid"}});
  }

  RunnerDecision runner = ResolveV2Runner(profile.force_v2_runner, profile.pp_size, caps);
  report.v2_runner_env = runner.v2_env;
  report.results.push_back(std::move(runner.result));

  SpecDecision spec = ResolveSpeculation(profile.spec_method, profile.pp_size, facts.MtpLayers(profile),
                                         report.v2_runner_env.value_or(0) == 1, caps);
  report.effective.spec_method = spec.method;
  report.results.push_back(std::move(spec.result));

  AllReduceDecision ar = CheckCustomAllReduce(profile.tp_size, profile.disable_custom_all_reduce, caps);
  report.effective.disable_custom_all_reduce = ar.disable_custom_all_reduce;
  report.results.push_back(std::move(ar.result));

  report.results.push_back(CheckVersionFlags(profile, caps));
  report.results.push_back(CheckGpuCount(profile));
  report.results.push_back(CheckMemory(facts.Memory(report.effective), profile.max_model_len));
  return report;
}

}  // namespace ppdeploy::launch
