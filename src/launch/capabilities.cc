#include "launch/capabilities.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/embedded_data.h"
#include "core/error.h"
#include "core/json_fields.h"

namespace ppdeploy::launch {
namespace {

constexpr std::string_view kPath = "vllm/capabilities.json";

std::string_view EmbeddedTable() {
  auto text = FindEmbedded(kPath);
  if (!text) Fail("data/{} is not embedded in this binary", kPath);
  return *text;
}

std::vector<std::string> Names(const nlohmann::json& doc) {
  std::vector<std::string> names;
  for (auto it = doc.at("profiles").begin(); it != doc.at("profiles").end(); ++it) names.push_back(it.key());
  return names;
}

}  // namespace

VllmCapabilities ParseCapabilities(std::string_view json_text, const std::string& source, std::string_view name) {
  auto doc = ParseJsonText(json_text, source);
  JsonContext root{source, ""};
  RequireObject(doc, root);
  if (ReqString(doc, "schema", root) != "ppdeploy.vllm-capabilities/1")
    Fail("{}: schema: expected \"ppdeploy.vllm-capabilities/1\"", source);
  if (!doc.contains("profiles") || !doc["profiles"].is_object()) Fail("{}: profiles: expected an object", source);
  const auto& profiles = doc["profiles"];
  auto it = profiles.find(std::string(name));
  if (it == profiles.end())
    Fail("unknown vLLM version profile '{}' (known: {}; see data/{})", name, fmt::join(Names(doc), ", "), kPath);
  JsonContext ctx = root.Child("profiles").Child(name);
  RequireObject(*it, ctx);
  VllmCapabilities c;
  c.name = std::string(name);
  c.description = OptString(*it, "description", ctx).value_or("");
  auto flag = [&](std::string_view key) {
    auto v = OptBool(*it, key, ctx);
    if (!v) Fail("{}: required field is missing", ctx.Where(key));
    return *v;
  };
  c.speculative_config_json = flag("speculative_config_json");
  c.disable_custom_all_reduce = flag("disable_custom_all_reduce");
  c.kv_cache_memory_bytes = flag("kv_cache_memory_bytes");
  c.v2_model_runner_env = flag("v2_model_runner_env");
  c.pp_speculation = flag("pp_speculation");
  c.ngram_under_v2 = flag("ngram_under_v2");
  c.native_multinode = flag("native_multinode");
  c.index_share_fix_b = flag("index_share_fix_b");
  c.index_share_fix_pattern = flag("index_share_fix_pattern");
  if (!it->contains("kv_cache_dtypes") || !(*it)["kv_cache_dtypes"].is_array())
    Fail("{}: expected an array of strings", ctx.Where("kv_cache_dtypes"));
  for (const auto& d : (*it)["kv_cache_dtypes"]) {
    if (!d.is_string()) Fail("{}: expected an array of strings", ctx.Where("kv_cache_dtypes"));
    c.kv_cache_dtypes.push_back(d.get<std::string>());
  }
  return c;
}

VllmCapabilities LoadCapabilities(std::string_view name) {
  return ParseCapabilities(EmbeddedTable(), "data/" + std::string(kPath), name);
}

std::vector<std::string> CapabilityProfileNames() {
  auto doc = ParseJsonText(EmbeddedTable(), "data/" + std::string(kPath));
  return Names(doc);
}

}  // namespace ppdeploy::launch
