#include "vllm/profile.h"

#include <fmt/ranges.h>

#include <algorithm>
#include <cctype>

#include "core/embedded_data.h"
#include "core/error.h"
#include "core/escape.h"
#include "core/json_fields.h"

namespace ppdeploy {
namespace {

constexpr std::string_view kSource = "data/vllm/versions.json";

struct Loaded {
  std::vector<VllmProfile> profiles;
  std::string default_name;
};

std::vector<std::string> StringList(const nlohmann::json& v, std::string_view key, const JsonContext& c) {
  std::vector<std::string> out;
  if (!v.contains(key)) return out;
  const auto& a = v[std::string(key)];
  if (!a.is_array()) Fail("{}: expected a list of strings, got {}", c.Where(key), ShortJson(a));
  for (const auto& s : a) {
    if (!s.is_string()) Fail("{}: expected a list of strings, got {}", c.Where(key), ShortJson(a));
    out.push_back(s.get<std::string>());
  }
  return out;
}

bool Bool(const nlohmann::json& v, std::string_view key, const JsonContext& c) {
  auto b = OptBool(v, key, c);
  if (!b) Fail("{}: required boolean is missing", c.Where(key));
  return *b;
}

template <typename E>
E OneOf(const nlohmann::json& v, std::string_view key, const JsonContext& c,
        std::initializer_list<std::pair<std::string_view, E>> values) {
  std::string s = ReqString(v, key, c);
  std::vector<std::string_view> names;
  for (const auto& [name, value] : values) {
    if (s == name) return value;
    names.push_back(name);
  }
  Fail("{}: unknown value \"{}\" (expected one of {})", c.Where(key), s, fmt::join(names, ", "));
}

VllmProfile ParseRow(const nlohmann::json& v, const JsonContext& c) {
  RequireObject(v, c);
  VllmProfile p;
  p.name = ReqString(v, "name", c);
  p.lines = StringList(v, "lines", c);
  p.custom_of = OptString(v, "custom_of", c).value_or("");
  p.date = ReqString(v, "date", c);
  p.description = OptString(v, "description", c).value_or("");
  p.approximate_lines_note = OptString(v, "approximate_lines_note", c).value_or("");
  p.note = OptString(v, "note", c).value_or("");
  p.default_gpu_memory_utilization = ReqNumber(v, "default_gpu_memory_utilization", c);
  p.available_kv = ReqString(v, "available_kv", c);
  p.accounting = OneOf<MemoryAccounting>(v, "available_kv", c,
                                         {{"v0_profiled", MemoryAccounting::kV1Absolute},
                                          {"v1_absolute", MemoryAccounting::kV1Absolute},
                                          {"v1_profiled", MemoryAccounting::kV1Profiled},
                                          {"n_consumed", MemoryAccounting::kNConsumed}});
  p.subtracts_cuda_graph_estimate = Bool(v, "subtracts_cuda_graph_estimate", c);
  p.pool_combine = OneOf<PoolCombine>(v, "pool_combine", c,
                                      {{"per_rank_min", PoolCombine::kPerRankMin},
                                       {"v08_min_memory", PoolCombine::kV08MinMemory},
                                       {"dsa_global_page", PoolCombine::kDsaGlobalPage}});
  p.tokens_formula =
      OneOf<TokensFormula>(v, "tokens_formula", c,
                           {{"blocks_x_block_size", TokensFormula::kBlocksTimesBlockSize},
                            {"blocks_per_group_x_block_size", TokensFormula::kBlocksPerGroupTimesBlockSize},
                            {"concurrency_x_max_model_len", TokensFormula::kConcurrencyTimesMaxModelLen}});
  p.one_line_capacity_log = OneOf<bool>(v, "capacity_log", c, {{"one_line", true}, {"two_lines", false}});
  p.index_share = OneOf<IndexShareMode>(v, "index_share", c,
                                        {{"none", IndexShareMode::kNone},
                                         {"compute_only", IndexShareMode::kComputeOnly},
                                         {"full", IndexShareMode::kFull}});
  p.supports_dsa = Bool(v, "supports_dsa", c);
  p.pp_speculation = Bool(v, "pp_speculation", c);
  p.fix_b = OneOf<FixBSource>(
      v, "fix_b", c,
      {{"none", FixBSource::kNone}, {"builtin", FixBSource::kBuiltin}, {"pattern", FixBSource::kPattern}});
  p.index_topk_pattern = Bool(v, "index_topk_pattern", c);
  if (p.fix_b == FixBSource::kPattern && !p.index_topk_pattern)
    Fail("{}: fix_b \"pattern\" needs index_topk_pattern true", c.Where("fix_b"));
  {
    std::string rule = ReqString(v, "block_size_rule", c);
    if (rule != "preferred" && rule != "forced" && rule != "legacy_16")
      Fail("{}: unknown value \"{}\" (expected one of legacy_16, forced, preferred)", c.Where("block_size_rule"), rule);
    p.preferred_block_size = rule == "preferred";
    p.legacy_block_16 = rule == "legacy_16";
  }
  p.kv_cache_memory_bytes = Bool(v, "kv_cache_memory_bytes", c);
  p.indexer_weights_on_all_layers = Bool(v, "indexer_weights_on_all_layers", c);
  p.dsa_auto_kv =
      OneOf<std::string>(v, "dsa_auto_kv", c, {{"model_dtype", "model_dtype"}, {"fp8_ds_mla", "fp8_ds_mla"}});
  p.dsa_fp8_kv = OneOf<std::string>(v, "dsa_fp8_kv", c, {{"fp8_ds_mla", "fp8_ds_mla"}, {"by_gpu", "by_gpu"}});
  p.override_in_fit_check = Bool(v, "override_in_fit_check", c);
  p.nccl_in_non_torch = Bool(v, "nccl_in_non_torch", c);
  p.large_gpu_batch_defaults = Bool(v, "large_gpu_batch_defaults", c);
  p.dcp_dsa_blackwell = Bool(v, "dcp_dsa_blackwell", c);
  p.speculative_config_json = Bool(v, "speculative_config_json", c);
  p.disable_custom_all_reduce = Bool(v, "disable_custom_all_reduce", c);
  p.v2_model_runner_env = Bool(v, "v2_model_runner_env", c);
  p.ngram_under_v2 = Bool(v, "ngram_under_v2", c);
  p.native_multinode = Bool(v, "native_multinode", c);
  p.kv_cache_dtypes = StringList(v, "kv_cache_dtypes", c);
  if (p.kv_cache_dtypes.empty()) Fail("{}: expected a non-empty list", c.Where("kv_cache_dtypes"));
  p.workspace_manager = Bool(v, "workspace_manager", c);
  p.dsa_dummy_logits = Bool(v, "dsa_dummy_logits", c);
  p.cuda_graph_estimate_v1_runner =
      OneOf<bool>(v, "cuda_graph_estimate_runners", c, {{"both", true}, {"v2_only", false}});
  p.mtp_own_vocab_weights_with_pp = static_cast<int>(ReqInt(v, "mtp_own_vocab_weights_with_pp", c, 0));
  if (p.mtp_own_vocab_weights_with_pp > 2)
    Fail("{}: expected 0, 1 or 2 (embed_tokens and shared_head.head), got {}", c.Where("mtp_own_vocab_weights_with_pp"),
         p.mtp_own_vocab_weights_with_pp);
  p.cuda_graph_capture =
      OneOf<CudaGraphCapture>(v, "cuda_graph_capture", c,
                              {{"step8_piecewise", CudaGraphCapture::kStep8Piecewise},
                               {"step16_full_and_piecewise", CudaGraphCapture::kStep16FullAndPiecewise}});
  // Engines, KV layouts and block arithmetic (issue 12). Every field is required in every row.
  if (!v.contains("engines")) Fail("{}: required list is missing", c.Where("engines"));
  for (const auto& e : StringList(v, "engines", c)) {
    if (e == "v0")
      p.engines.push_back(Engine::kV0);
    else if (e == "v1")
      p.engines.push_back(Engine::kV1);
    else
      Fail("{}: unknown engine \"{}\" (expected v0 or v1)", c.Where("engines"), e);
  }
  if (p.engines.empty()) Fail("{}: expected a non-empty list", c.Where("engines"));
  p.mla_kv_from_patch = static_cast<int>(ReqInt(v, "mla_kv_from_patch", c, -1));
  p.pre_mla_head_256 = OneOf<bool>(v, "pre_mla_head_size", c, {{"padded_256", true}, {"qk_head_dim", false}});
  p.default_split = OneOf<DefaultSplitRule>(v, "default_split", c,
                                            {{"remainder_last", DefaultSplitRule::kRemainderLast},
                                             {"remainder_before_last", DefaultSplitRule::kRemainderBeforeLast}});
  p.lm_head_every_pp_rank = Bool(v, "lm_head_every_pp_rank", c);
  p.hybrid_kv_cache_manager = Bool(v, "hybrid_kv_cache_manager", c);
  p.chunked_local_hybrid = Bool(v, "chunked_local_hybrid", c);
  p.hybrid_group_size_ratio = ReqNumber(v, "hybrid_group_size_ratio", c, 0.0);
  p.fit_check_scope = OneOf<FitCheckScope>(v, "fit_check_scope", c,
                                           {{"worker_layers", FitCheckScope::kWorkerLayers},
                                            {"whole_model", FitCheckScope::kWholeModel},
                                            {"worker_groups", FitCheckScope::kWorkerGroups}});
  p.dcp = Bool(v, "dcp", c);
  p.dcp_gqa = Bool(v, "dcp_gqa", c);
  return p;
}

const Loaded& Load() {
  static const Loaded loaded = [] {
    const std::string source(kSource);
    auto text = FindEmbedded("vllm/versions.json");
    if (!text) Fail("{}: not embedded in this binary", source);
    auto j = ParseJsonText(*text, source);
    JsonContext ctx{source, ""};
    Loaded out;
    out.default_name = ReqString(j, "default", ctx);
    if (!j.contains("versions") || !j["versions"].is_array()) Fail("{}: versions: expected a list", source);
    int idx = 0;
    for (const auto& v : j["versions"]) {
      VllmProfile p = ParseRow(v, ctx.Child(fmt::format("versions[{}]", idx++)));
      for (const auto& q : out.profiles) {
        if (q.name == p.name) Fail("{}: row \"{}\" appears twice", source, p.name);
        for (const auto& line : p.lines)
          if (std::find(q.lines.begin(), q.lines.end(), line) != q.lines.end())
            Fail("{}: release line {} is listed by rows \"{}\" and \"{}\"", source, line, q.name, p.name);
      }
      out.profiles.push_back(std::move(p));
    }
    return out;
  }();
  return loaded;
}

const VllmProfile* ByName(std::string_view name) {
  for (const auto& p : VllmProfiles())
    if (p.name == name) return &p;
  return nullptr;
}

std::string Lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return std::tolower(c); });
  return out;
}

// Reads "[v]MAJOR.MINOR" at the start of `s`; the rest is the patch / pre-release / local part.
std::optional<std::string> ReleaseLine(std::string_view s, std::string_view* rest) {
  size_t i = 0;
  if (i < s.size() && (s[i] == 'v' || s[i] == 'V')) ++i;
  auto digits = [&](size_t from) {
    size_t j = from;
    while (j < s.size() && std::isdigit(static_cast<unsigned char>(s[j]))) ++j;
    return j;
  };
  size_t major_end = digits(i);
  if (major_end == i || major_end - i > 4 || major_end >= s.size() || s[major_end] != '.') return std::nullopt;
  size_t minor_end = digits(major_end + 1);
  if (minor_end == major_end + 1 || minor_end - major_end - 1 > 4) return std::nullopt;
  // Leading zeros are not part of the line's name ("0.08" is not 0.8).
  std::string major(s.substr(i, major_end - i)), minor(s.substr(major_end + 1, minor_end - major_end - 1));
  auto strip = [](std::string x) {
    while (x.size() > 1 && x[0] == '0') x.erase(0, 1);
    return x;
  };
  *rest = s.substr(minor_end);
  return strip(major) + "." + strip(minor);
}

}  // namespace

const std::vector<VllmProfile>& VllmProfiles() { return Load().profiles; }

const VllmProfile& DefaultVllmProfile() {
  const VllmProfile* p = ByName(Load().default_name);
  if (!p) Fail("{}: default row \"{}\" does not exist", kSource, Load().default_name);
  return *p;
}

std::string KnownVllmVersions() {
  std::vector<std::string> parts;
  for (const auto& p : VllmProfiles()) {
    bool only_itself = p.lines.empty() || (p.lines.size() == 1 && p.lines[0] == p.name);
    parts.push_back(only_itself ? p.name
                                : fmt::format("{} ({}{})", p.name, p.lines.front(),
                                              p.lines.size() > 1 ? "-" + p.lines.back() : ""));
  }
  return fmt::format("{}", fmt::join(parts, ", "));
}

std::optional<VersionMatch> TryResolveVllmVersion(std::string_view version) {
  if (const VllmProfile* p = ByName(version)) return VersionMatch{p, "", true, "", std::nullopt};
  std::string_view rest;
  auto line = ReleaseLine(version, &rest);
  if (!line) return std::nullopt;
  // What may follow MAJOR.MINOR: .PATCH, rcN / aN / bN, .devN, .postN, +LOCAL or -custom.
  std::string tail = Lower(rest);
  bool custom = false;
  if (auto pos = tail.find("custom"); pos != std::string::npos) {
    const size_t end = pos + 6;
    if (pos == 0 || (tail[pos - 1] != '+' && tail[pos - 1] != '-' && tail[pos - 1] != '.') ||
        (end < tail.size() && std::isalnum(static_cast<unsigned char>(tail[end]))))
      return std::nullopt;
    custom = true;
  }
  for (char ch : tail)
    if (!(std::isalnum(static_cast<unsigned char>(ch)) || ch == '.' || ch == '+' || ch == '-' || ch == '_'))
      return std::nullopt;
  if (!tail.empty() && tail[0] != '.' && tail[0] != '+' && tail[0] != '-' &&
      !std::isalpha(static_cast<unsigned char>(tail[0])))
    return std::nullopt;
  if (custom) {
    for (const auto& p : VllmProfiles())
      if (p.custom_of == *line) return VersionMatch{&p, *line, true, "", std::nullopt};
    return std::nullopt;
  }
  std::optional<int> patch;
  if (tail.size() > 1 && tail[0] == '.' && std::isdigit(static_cast<unsigned char>(tail[1]))) {
    size_t e = 1;
    while (e < tail.size() && std::isdigit(static_cast<unsigned char>(tail[e])) && e < 6) ++e;
    patch = std::stoi(tail.substr(1, e - 1));
  }
  for (const auto& p : VllmProfiles()) {
    if (std::find(p.lines.begin(), p.lines.end(), *line) == p.lines.end()) continue;
    VersionMatch m{&p, *line, p.name == *line, "", patch};
    if (!m.exact)
      m.note = fmt::format("vLLM {} has no row of its own; planned with row {} ({})", *line, p.name,
                           p.approximate_lines_note.empty() ? "approximate" : p.approximate_lines_note);
    return m;
  }
  return std::nullopt;
}

VersionMatch ResolveVllmVersion(std::string_view version) {
  if (auto m = TryResolveVllmVersion(version)) return *m;
  Fail("unknown vLLM version {} (known rows: {}; rule: {} \"resolution_rule\")", QuoteForMessage(version),
       KnownVllmVersions(), kSource);
}

const VllmProfile& FindVllmProfile(const std::string& name) { return *ResolveVllmVersion(name).profile; }

std::string ToString(FixBSource s) {
  switch (s) {
    case FixBSource::kNone:
      return "none";
    case FixBSource::kBuiltin:
      return "builtin";
    case FixBSource::kPattern:
      return "pattern";
  }
  return "none";
}

}  // namespace ppdeploy
