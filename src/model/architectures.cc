#include "model/architectures.h"

#include <fmt/ranges.h>

#include <cctype>
#include <map>

#include "core/embedded_data.h"
#include "core/error.h"
#include "core/escape.h"
#include "core/json_fields.h"
#include "model/config_fields.h"

namespace ppdeploy {

namespace {

constexpr const char* kSource = "data/architectures.json";

ArchitectureRules RulesByName(const std::string& name, const std::string& where) {
  static const std::map<std::string, ArchitectureRules> kRules = {
      {"mla", ArchitectureRules::kMla},
      {"mla_dsa", ArchitectureRules::kMlaDsa},
      {"attention", ArchitectureRules::kAttention},
      {"linear_hybrid", ArchitectureRules::kLinearHybrid},
      {"linear_hybrid_mla", ArchitectureRules::kLinearHybridMla},
      {"attention_free", ArchitectureRules::kAttentionFree},
  };
  auto it = kRules.find(name);
  if (it == kRules.end()) Fail("{}: unknown rules {}", where, QuoteForMessage(name));
  return it->second;
}

std::vector<std::string> Strings(const nlohmann::json& obj, std::string_view key, const JsonContext& ctx) {
  std::vector<std::string> out;
  auto it = obj.find(std::string(key));
  if (it == obj.end()) return out;
  if (!it->is_array()) Fail("{}: expected a list of strings", ctx.Where(key));
  for (const auto& e : *it) {
    if (!e.is_string()) Fail("{}: expected a list of strings", ctx.Where(key));
    out.push_back(e.get<std::string>());
  }
  return out;
}

struct Table {
  std::vector<ArchitectureEntry> architectures;
  std::vector<UnreadKey> unread;
};

const Table& LoadedTable() {
  static const Table t = [] {
    auto text = FindEmbedded("architectures.json");
    if (!text) Fail("{}: not embedded in this binary", kSource);
    const nlohmann::json j = ParseJsonText(*text, kSource);
    JsonContext ctx{kSource, ""};
    RequireObject(j, ctx);
    if (!j.contains("rules") || !j["rules"].is_object()) Fail("{}: expected an object", ctx.Where("rules"));
    if (!j.contains("architectures") || !j["architectures"].is_array())
      Fail("{}: expected a list", ctx.Where("architectures"));
    Table out;
    int i = 0;
    for (const auto& a : j["architectures"]) {
      JsonContext c{kSource, fmt::format("architectures[{}]", i++)};
      ArchitectureEntry e;
      e.name = ReqString(a, "name", c);
      e.rules_name = ReqString(a, "rules", c);
      e.rules = RulesByName(e.rules_name, c.Where("rules"));
      e.family = ReqString(a, "family", c);
      e.source = ReqString(a, "source", c);
      const auto rule = j["rules"].find(e.rules_name);
      if (rule == j["rules"].end()) Fail("{}: no rule {} in rules", c.Where("rules"), QuoteForMessage(e.rules_name));
      JsonContext rc = ctx.Child("rules").Child(e.rules_name);
      e.kv = ReqString(*rule, "kv", rc);
      e.required = Strings(*rule, "requires", rc);
      e.reads = Strings(*rule, "reads", rc);
      out.architectures.push_back(std::move(e));
    }
    i = 0;
    if (j.contains("unread_keys"))
      for (const auto& u : j["unread_keys"]) {
        JsonContext c{kSource, fmt::format("unread_keys[{}]", i++)};
        UnreadKey k{ReqString(u, "key", c), ReqString(u, "effect", c), std::nullopt};
        if (u.contains("inert")) k.inert = u["inert"];
        out.unread.push_back(std::move(k));
      }
    return out;
  }();
  return t;
}

// "Deepseek" of "DeepseekV9ForCausalLM", "Gemma" of "Gemma4ForCausalLM": the name up to its first digit or "For".
std::string Stem(std::string_view name) {
  std::size_t n = 0;
  while (n < name.size() && !std::isdigit(static_cast<unsigned char>(name[n])) && name.substr(n, 3) != "For") ++n;
  return std::string(name.substr(0, n));
}

// The listed classes that share `name`'s stem, else all of them.
std::string KnownNames(std::string_view name) {
  const std::string stem = Stem(name);
  std::vector<std::string> similar, all;
  for (const auto& a : Architectures()) {
    all.push_back(a.name);
    if (stem.size() >= 3 && a.name.rfind(stem, 0) == 0) similar.push_back(a.name);
  }
  if (!similar.empty()) return fmt::format("similar: {}", fmt::join(similar, ", "));
  return fmt::format("it lists {}", fmt::join(all, ", "));
}

// The unread keys `obj` sets (a value other than the key's inert one), as "key (effect)".
std::vector<std::string> UnreadKeysSet(const nlohmann::json& obj, const JsonContext& ctx,
                                       std::vector<std::string>* wheres) {
  std::vector<std::string> out;
  if (!obj.is_object()) return out;
  for (const auto& k : UnreadKeys()) {
    auto it = obj.find(k.key);
    if (it == obj.end() || it->is_null() || (k.inert && *it == *k.inert)) continue;
    out.push_back(fmt::format("{} ({})", k.key, k.effect));
    if (wheres) wheres->push_back(fmt::format("{} = {}: {}", ctx.Where(k.key), ShortJson(*it), k.effect));
  }
  return out;
}

}  // namespace

const std::vector<ArchitectureEntry>& Architectures() { return LoadedTable().architectures; }

const std::vector<UnreadKey>& UnreadKeys() { return LoadedTable().unread; }

const ArchitectureEntry* FindArchitecture(std::string_view name) {
  for (const auto& a : Architectures())
    if (a.name == name) return &a;
  return nullptr;
}

namespace config_fields {

const ArchitectureEntry& RequireModelled(const ModelConfig& m, const Fields& f, const nlohmann::json& top,
                                         const JsonContext& ctx) {
  std::vector<std::string> wheres;
  std::vector<std::string> keys = UnreadKeysSet(f.obj(), f.ctx(), &wheres);
  if (&f.obj() != &top)
    for (auto& k : UnreadKeysSet(top, ctx, &wheres)) keys.push_back(std::move(k));
  const ArchitectureEntry* a = FindArchitecture(m.architecture);
  if (!a)
    Fail(
        "{}: {} is not a model class ppdeploy plans ({}: {}): its KV cache and weights would be sized by rules "
        "nobody checked for it{}. If vLLM serves this checkpoint with a listed class, name it with --hf-overrides "
        "'{{\"architectures\": [\"<class>\"]}}'",
        ctx.Where("architectures"), QuoteForMessage(m.architecture), kSource, KnownNames(m.architecture),
        keys.empty() ? std::string() : fmt::format("; it also sets {}, which no rule reads", fmt::join(keys, ", ")));
  if (!wheres.empty())
    Fail("{}: not read by any rule of ppdeploy ({}: {}), so the KV cache and weights of {} cannot be sized", wheres[0],
         kSource, "unread_keys", a->name);
  for (const auto& field : a->required)
    if (!f.Has(field))
      Fail(
          "{}: required field is missing: {} is sized by rule {} of {} ({}); without the field it is refused, "
          "not sized as plain attention",
          f.Where(field), a->name, a->rules_name, kSource, a->kv);
  return *a;
}

}  // namespace config_fields

}  // namespace ppdeploy
