// Internal to src/model/config*.cc: typed reads of a config.json object with transformers' class
// defaults as the fallback (Fields), and the layer classification (config_layers.cc). Pure: no I/O.
#pragma once

#include <fmt/ranges.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/error.h"
#include "core/json_fields.h"
#include "model/architectures.h"
#include "model/config.h"

namespace ppdeploy::config_fields {

inline constexpr std::int64_t kMaxSize = 100'000'000;

// Typed reads from the decoder's config object, falling back to transformers' class defaults for
// keys the file does not have (a null in the file is kept as "unset").
class Fields {
 public:
  Fields(const nlohmann::json& obj, JsonContext ctx, const nlohmann::json* defaults, std::string defaults_source,
         std::vector<std::string>* warnings)
      : obj_(obj),
        ctx_(std::move(ctx)),
        defaults_(defaults),
        defaults_source_(std::move(defaults_source)),
        warnings_(warnings) {}

  const JsonContext& ctx() const { return ctx_; }
  const nlohmann::json& obj() const { return obj_; }
  std::string Where(std::string_view key) const { return ctx_.Where(key); }

  // The value of `key`: the file's, else the default's; nullptr when unset or null.
  const nlohmann::json* Find(std::string_view key, bool* from_default = nullptr) const {
    if (from_default) *from_default = false;
    auto it = obj_.find(std::string(key));
    if (it != obj_.end()) return it->is_null() ? nullptr : &*it;
    if (defaults_) {
      auto d = defaults_->find(std::string(key));
      if (d != defaults_->end() && !d->is_null()) {
        if (from_default) *from_default = true;
        return &*d;
      }
    }
    return nullptr;
  }
  bool Has(std::string_view key) const { return Find(key) != nullptr; }

  // An integer count or size. Integral floats are refused: vLLM passes these fields to range() and
  // tensor shapes, which raise TypeError for a float. `cast_ok` fields (vLLM casts them) only warn.
  std::optional<std::int64_t> OptInt(std::string_view key, std::int64_t min = 0, bool cast_ok = false) const {
    const nlohmann::json* v = Find(key);
    if (!v) return std::nullopt;
    if (v->is_number_float() && !cast_ok) {
      const double d = v->get<double>();
      if (std::isfinite(d) && d == std::floor(d) && std::fabs(d) < 9e15)
        Fail(
            "{}: expected an integer, got the float {} (vLLM passes this field to range() / tensor shapes, which "
            "raise TypeError for a float; write {})",
            Where(key), ShortJson(*v), static_cast<std::int64_t>(d));
    }
    const std::int64_t value = JsonIntValue(*v, Where(key), min, std::numeric_limits<std::int64_t>::max(), cast_ok);
    if (v->is_number_float() && warnings_)
      warnings_->push_back(fmt::format("{}: the float {} is read as the integer {} (vLLM casts it with int())",
                                       Where(key), ShortJson(*v), value));
    if (value > kMaxSize) Fail("{}: value {} is implausibly large", Where(key), value);
    return value;
  }
  int Int(std::string_view key, std::int64_t min = 1) const {
    auto v = OptInt(key, min);
    if (!v) Fail("{}: required field is missing", Where(key));
    return static_cast<int>(*v);
  }
  int IntOr(std::string_view key, int fallback, std::int64_t min = 0) const {
    auto v = OptInt(key, min);
    return v ? static_cast<int>(*v) : fallback;
  }
  // The first of `keys` that is set (aliases used by different families).
  std::optional<std::int64_t> FirstInt(std::initializer_list<std::string_view> keys, std::int64_t min = 0,
                                       std::string* which = nullptr, bool cast_ok = false) const {
    for (auto k : keys)
      if (auto v = OptInt(k, min, cast_ok)) {
        if (which) *which = std::string(k);
        return v;
      }
    return std::nullopt;
  }
  int ReqFirstInt(std::initializer_list<std::string_view> keys, std::int64_t min = 1) const {
    if (auto v = FirstInt(keys, min)) return static_cast<int>(*v);
    Fail("{}: required field is missing{}", Where(*keys.begin()),
         keys.size() > 1 ? fmt::format(" (also looked for {})",
                                       fmt::join(std::vector<std::string_view>(keys.begin() + 1, keys.end()), ", "))
                         : std::string());
  }
  std::optional<bool> OptBool(std::string_view key) const {
    const nlohmann::json* v = Find(key);
    if (!v) return std::nullopt;
    if (!v->is_boolean()) Fail("{}: expected true or false, got {}", Where(key), ShortJson(*v));
    return v->get<bool>();
  }
  std::optional<std::string> OptString(std::string_view key) const {
    const nlohmann::json* v = Find(key);
    if (!v) return std::nullopt;
    if (!v->is_string()) Fail("{}: expected a string, got {}", Where(key), ShortJson(*v));
    return v->get<std::string>();
  }
  std::vector<int> IntList(std::string_view key) const {
    std::vector<int> out;
    const nlohmann::json* v = Find(key);
    if (!v) return out;
    if (!v->is_array()) Fail("{}: expected a list of integers, got {}", Where(key), ShortJson(*v));
    for (std::size_t i = 0; i < v->size(); ++i)
      out.push_back(static_cast<int>(JsonIntValue((*v)[i], fmt::format("{}[{}]", Where(key), i), -kMaxSize, kMaxSize,
                                                  /*float_ok=*/false)));
    return out;
  }

 private:
  const nlohmann::json& obj_;
  JsonContext ctx_;
  const nlohmann::json* defaults_;
  std::string defaults_source_;
  std::vector<std::string>* warnings_;
};

/// The layer kinds from the standard fields (model/config.h); window sizes are read here too. `row` is
/// the model type's row of data/config-defaults.json (or nullptr).
void ClassifyLayers(ModelConfig& m, const Fields& f, const nlohmann::json* row);

/// The recurrent state of linear layers, from the fields each family uses.
void ReadLinearState(ModelConfig& m, const Fields& f);

/// The row of data/architectures.json for `m.architecture` (model/architectures.h). Throws Error naming the
/// class when the table does not list it (with the unread keys the config sets), naming the key when the config
/// sets an unread key (in the decoder object `f` or the top level `top`), and naming the field when one the
/// class's rule requires is missing.
const ArchitectureEntry& RequireModelled(const ModelConfig& m, const Fields& f, const nlohmann::json& top,
                                         const JsonContext& ctx);

}  // namespace ppdeploy::config_fields
