#include "cli/parse_errors.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>

namespace ppdeploy::cli {
namespace {

std::size_t CommonPrefix(std::string_view a, std::string_view b) {
  std::size_t n = 0;
  while (n < a.size() && n < b.size() && a[n] == b[n]) ++n;
  return n;
}

std::vector<std::string> SubcommandNames(const CLI::App& app) {
  std::vector<std::string> out;
  for (const CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; })) out.push_back(sub->get_name());
  return out;
}

std::vector<std::string> LongOptionNames(const CLI::App& app) {
  std::vector<std::string> out;
  for (const CLI::Option* opt : app.get_options())
    for (const std::string& name : opt->get_lnames()) out.push_back(name);
  return out;
}

const CLI::App* FindSubcommand(const CLI::App& app, const std::string& name) {
  for (const CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; }))
    if (sub->get_name() == name) return sub;
  return nullptr;
}

}  // namespace

std::size_t EditDistance(std::string_view a, std::string_view b) {
  // d[i][j]: distance between a[0..i) and b[0..j).
  std::vector<std::vector<std::size_t>> d(a.size() + 1, std::vector<std::size_t>(b.size() + 1));
  for (std::size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
  for (std::size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i)
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
    }
  return d[a.size()][b.size()];
}

std::string ClosestName(std::string_view typed, const std::vector<std::string>& candidates) {
  if (typed.empty() || typed.size() > 64) return "";  // a pasted blob is no typo of a name
  const std::size_t limit = std::clamp<std::size_t>(typed.size() / 3, 1, 3);
  std::string best;
  std::size_t best_distance = limit + 1, best_prefix = 0;
  for (const std::string& c : candidates) {
    if (c == typed) return "";  // the name exists: nothing to suggest
    const std::size_t dist = EditDistance(typed, c), prefix = CommonPrefix(typed, c);
    if (dist < best_distance || (dist == best_distance && prefix > best_prefix)) {
      best = c;
      best_distance = dist;
      best_prefix = prefix;
    }
  }
  return best_distance <= limit ? best : "";
}

std::string DidYouMean(const CLI::App& app, const std::vector<std::string>& args) {
  const CLI::App* scope = &app;
  bool have_subcommand = false;
  for (const std::string& arg : args) {
    if (arg == "--") break;  // what follows is passed through (e.g. extra `vllm serve` arguments)
    if (arg.rfind("--", 0) == 0) {
      const std::string name =
          arg.substr(2, arg.find('=') == std::string::npos ? std::string::npos : arg.find('=') - 2);
      const std::vector<std::string> names = LongOptionNames(*scope);
      if (std::find(names.begin(), names.end(), name) != names.end()) continue;
      const std::string close = ClosestName(name, names);
      if (!close.empty()) return fmt::format("unknown option --{}: did you mean `--{}`?", name, close);
      continue;
    }
    if (have_subcommand || arg.empty() || arg[0] == '-') continue;  // a value or a positional argument
    if (const CLI::App* sub = FindSubcommand(app, arg)) {
      scope = sub;
      have_subcommand = true;
      continue;
    }
    const std::string close = ClosestName(arg, SubcommandNames(app));
    if (!close.empty()) return fmt::format("unknown command \"{}\": did you mean `{}`?", arg, close);
    return "";  // the first word is no command and resembles none
  }
  return "";
}

std::string CapLongNumbers(std::string_view message) {
  constexpr std::size_t kLongest = 40, kShown = 20;
  std::string out;
  std::size_t i = 0;
  while (i < message.size()) {
    if (!std::isdigit(static_cast<unsigned char>(message[i]))) {
      out += message[i++];
      continue;
    }
    std::size_t end = i;
    while (end < message.size() && std::isdigit(static_cast<unsigned char>(message[end]))) ++end;
    const std::string_view digits = message.substr(i, end - i);
    out += digits.size() > kLongest ? fmt::format("{}... ({} digits)", digits.substr(0, kShown), digits.size())
                                    : std::string(digits);
    i = end;
  }
  return out;
}

}  // namespace ppdeploy::cli
