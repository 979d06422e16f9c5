#include "vllm/profile.h"

#include <fmt/ranges.h>

#include "core/embedded_data.h"
#include "core/error.h"
#include "core/json_fields.h"

namespace ppdeploy {
namespace {

struct Loaded {
  std::vector<VllmProfile> profiles;
  std::string default_name;
};

const Loaded& Load() {
  static const Loaded loaded = [] {
    const std::string source = "data/vllm/versions.json";
    auto text = FindEmbedded("vllm/versions.json");
    if (!text) Fail("{}: not embedded in this binary", source);
    auto j = ParseJsonText(*text, source);
    JsonContext ctx{source, ""};
    Loaded out;
    out.default_name = ReqString(j, "default", ctx);
    if (!j.contains("versions") || !j["versions"].is_array()) Fail("{}: versions: expected a list", source);
    int idx = 0;
    for (const auto& v : j["versions"]) {
      JsonContext c = ctx.Child(fmt::format("versions[{}]", idx++));
      VllmProfile p;
      p.name = ReqString(v, "name", c);
      p.date = ReqString(v, "date", c);
      p.default_gpu_memory_utilization = ReqNumber(v, "default_gpu_memory_utilization", c);
      p.available_kv = ReqString(v, "available_kv", c);
      p.subtracts_cuda_graph_estimate = OptBool(v, "subtracts_cuda_graph_estimate", c).value_or(false);
      std::string pool = ReqString(v, "pool_combine", c);
      if (pool == "per_rank_min") p.pool_combine = PoolCombine::kPerRankMin;
      else if (pool == "v08_min_memory") p.pool_combine = PoolCombine::kV08MinMemory;
      else if (pool == "dsa_global_page") p.pool_combine = PoolCombine::kDsaGlobalPage;
      else Fail("{}: unknown value \"{}\"", c.Where("pool_combine"), pool);
      std::string tokens = ReqString(v, "tokens_formula", c);
      if (tokens == "blocks_x_block_size") p.tokens_formula = TokensFormula::kBlocksTimesBlockSize;
      else if (tokens == "concurrency_x_max_model_len") p.tokens_formula = TokensFormula::kConcurrencyTimesMaxModelLen;
      else Fail("{}: unknown value \"{}\"", c.Where("tokens_formula"), tokens);
      p.one_line_capacity_log = ReqString(v, "capacity_log", c) == "one_line";
      std::string share = ReqString(v, "index_share", c);
      if (share == "none") p.index_share = IndexShareMode::kNone;
      else if (share == "compute_only") p.index_share = IndexShareMode::kComputeOnly;
      else if (share == "full") p.index_share = IndexShareMode::kFull;
      else Fail("{}: unknown value \"{}\"", c.Where("index_share"), share);
      p.supports_dsa = OptBool(v, "supports_dsa", c).value_or(false);
      p.pp_with_mtp = OptBool(v, "pp_with_mtp", c).value_or(false);
      std::string fix = ReqString(v, "fix_b", c);
      if (fix == "none") p.fix_b = FixBSource::kNone;
      else if (fix == "builtin") p.fix_b = FixBSource::kBuiltin;
      else if (fix == "pattern") p.fix_b = FixBSource::kPattern;
      else Fail("{}: unknown value \"{}\"", c.Where("fix_b"), fix);
      p.preferred_block_size = ReqString(v, "block_size_rule", c) == "preferred";
      p.kv_cache_memory_bytes = OptBool(v, "kv_cache_memory_bytes", c).value_or(false);
      p.indexer_weights_on_all_layers = OptBool(v, "indexer_weights_on_all_layers", c).value_or(false);
      p.dsa_auto_kv = ReqString(v, "dsa_auto_kv", c);
      p.dsa_fp8_kv = ReqString(v, "dsa_fp8_kv", c);
      p.note = OptString(v, "note", c).value_or("");
      out.profiles.push_back(std::move(p));
    }
    return out;
  }();
  return loaded;
}

}  // namespace

const std::vector<VllmProfile>& VllmProfiles() { return Load().profiles; }

const VllmProfile& FindVllmProfile(const std::string& name) {
  std::string wanted = name;
  if (!wanted.empty() && (wanted[0] == 'v' || wanted[0] == 'V')) wanted = wanted.substr(1);
  std::vector<std::string> names;
  for (const auto& p : VllmProfiles()) {
    if (p.name == wanted) return p;
    names.push_back(p.name);
  }
  Fail("unknown vLLM version profile \"{}\" (known: {})", name, fmt::join(names, ", "));
}

const VllmProfile& DefaultVllmProfile() { return FindVllmProfile(Load().default_name); }

std::string ToString(FixBSource s) {
  switch (s) {
    case FixBSource::kNone: return "none";
    case FixBSource::kBuiltin: return "builtin";
    case FixBSource::kPattern: return "pattern";
  }
  return "none";
}

}  // namespace ppdeploy
