#include "probes/needle.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <cmath>
#include <random>

#include "core/error.h"

namespace ppdeploy::probes {

namespace {
std::string Trim(std::string_view s) {
  const auto a = s.find_first_not_of(" \t\r\n");
  if (a == std::string_view::npos) return "";
  const auto b = s.find_last_not_of(" \t\r\n");
  return std::string(s.substr(a, b - a + 1));
}

std::vector<std::string> SplitComma(std::string_view text) {
  std::vector<std::string> out;
  std::size_t start = 0;
  while (start <= text.size()) {
    const auto comma = text.find(',', start);
    const auto end = comma == std::string_view::npos ? text.size() : comma;
    out.push_back(Trim(text.substr(start, end - start)));
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  return out;
}

double ParseNumber(const std::string& s, std::string_view what) {
  double v = 0;
  const auto* first = s.data();
  const auto* last = s.data() + s.size();
  auto [ptr, ec] = std::from_chars(first, last, v);
  if (ec != std::errc() || ptr != last || !std::isfinite(v)) Fail("{}: not a number: \"{}\"", what, s);
  return v;
}

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// Filler: plain sentences with no digits and none of the needle's words.
constexpr std::array<std::string_view, 32> kFiller = {
    "The river town kept its ledgers in blue ink and stored them in a cedar chest.",
    "Every spring the orchard keepers counted the blossoms before the first warm rain.",
    "A narrow bridge crossed the canal near the old mill where the bakers met.",
    "The library opened its east wing after the carpenters repaired the reading tables.",
    "Travellers often stopped at the inn to dry their coats by the stone fireplace.",
    "The choir practised in the chapel on evenings when the wind came from the sea.",
    "Fishermen mended their nets on the pier while gulls circled over the harbour.",
    "The weaver sold scarves dyed with onion skins, walnut husks and madder root.",
    "In the valley the shepherds moved their flocks to higher meadows in early summer.",
    "The clockmaker adjusted each pendulum with a small brass key and a steady hand.",
    "Children gathered chestnuts under the tall trees that lined the school road.",
    "The potter fired her bowls in a kiln that had been built by her grandmother.",
    "Lanterns hung along the market street during the long festival of the harvest.",
    "The ferry carried carts, goats and letters across the lake twice each day.",
    "A quiet garden behind the museum grew lavender, sage and climbing roses.",
    "The blacksmith shaped hinges and hooks for the new houses on the hill.",
    "Snow covered the mountain pass, so the merchants waited in the lower village.",
    "The astronomer wrote careful notes about the moon rising over the eastern ridge.",
    "Bees from the abbey hives visited the clover fields along the southern wall.",
    "The tailor measured sleeves twice and cut the cloth only once.",
    "Rain drummed on the tin roof of the station while the evening train was late.",
    "The cartographer redrew the coastline after the storm moved the sand bars.",
    "Old sailors told stories of islands where the birds had never seen a ship.",
    "The gardener planted rows of beans, leeks and cabbages behind the kitchen.",
    "A gentle breeze carried the smell of bread from the bakery to the square.",
    "The schoolteacher read poems aloud while the stove warmed the small classroom.",
    "Pilgrims rested under the olive trees before climbing the final slope.",
    "The miller listened to the water wheel and knew when the stones needed dressing.",
    "Caravans of mules brought salt, wool and copper pots down from the highlands.",
    "The glassblower turned the glowing bulb slowly until it became a pitcher.",
    "Herons waited in the reeds at dawn, still as painted posts in the shallow water.",
    "The bell ringer climbed the tower stairs every morning before sunrise.",
};
constexpr std::array<std::string_view, 16> kAdjectives = {"amber",   "cobalt",  "crimson", "silver", "jade", "ivory",
                                                          "scarlet", "golden",  "violet",  "copper", "onyx", "azure",
                                                          "russet",  "saffron", "teal",    "umber"};
constexpr std::array<std::string_view, 16> kAnimals = {"falcon",  "otter",  "lynx",   "heron",  "badger", "marten",
                                                       "ibis",    "walrus", "gecko",  "puffin", "bison",  "ocelot",
                                                       "kestrel", "tapir",  "jackal", "wombat"};
constexpr std::array<std::string_view, 12> kCodeWords = {"QUARTZ", "MAPLE",  "ORBIT",  "TUNDRA",  "EMBER",  "GLACIER",
                                                         "NEBULA", "CANYON", "HARBOR", "PRAIRIE", "SUMMIT", "DELTA"};

// Token count of `text`: server tokenizer when available, else bytes / chars_per_token (ceil).
struct Counter {
  ChatBackend& backend;
  double chars_per_token;
  bool estimated = false;
  int calls = 0;
  std::int64_t operator()(const std::string& text) {
    ++calls;
    if (!estimated) {
      auto ids = backend.Tokenize(text);
      if (ids) return static_cast<std::int64_t>(ids->size());
      estimated = true;
    }
    return static_cast<std::int64_t>(std::ceil(static_cast<double>(text.size()) / chars_per_token));
  }
};

struct Builder {
  const Needle& needle;
  double depth_pct;
  std::mt19937_64 rng;
  std::vector<std::size_t> order;  // filler index per sentence position
  std::size_t Sentence(std::size_t i) {
    while (order.size() <= i) order.push_back(static_cast<std::size_t>(rng() % kFiller.size()));
    return order[i];
  }
  // n whole sentences, the needle before sentence round(depth * n), the first w words of sentence n.
  std::string Build(std::int64_t n, std::int64_t w, double* actual_depth = nullptr) {
    std::string s;
    const auto at = static_cast<std::int64_t>(std::llround(depth_pct / 100.0 * static_cast<double>(n)));
    std::size_t needle_pos = 0;
    for (std::int64_t i = 0; i <= n; ++i) {
      if (i == at) {
        needle_pos = s.size();
        s += needle.sentence;
        s += ' ';
      }
      if (i == n) break;
      s += kFiller[Sentence(static_cast<std::size_t>(i))];
      s += ' ';
    }
    if (w > 0) {
      std::string_view last = kFiller[Sentence(static_cast<std::size_t>(n))];
      std::int64_t words = 0;
      std::size_t end = 0;
      while (words < w && end < last.size()) {
        auto sp = last.find(' ', end + 1);
        end = sp == std::string_view::npos ? last.size() : sp;
        ++words;
      }
      s += last.substr(0, end);
      s += ' ';
    }
    if (actual_depth)
      *actual_depth = s.empty() ? 0.0 : 100.0 * static_cast<double>(needle_pos) / static_cast<double>(s.size());
    s += "\n\n";
    s += needle.question;
    return s;
  }
};

std::int64_t WordsIn(std::string_view s) {
  std::int64_t n = 0;
  bool in_word = false;
  for (char c : s) {
    const bool sp = c == ' ';
    if (!sp && !in_word) ++n;
    in_word = !sp;
  }
  return n;
}
}  // namespace

std::vector<std::int64_t> ParseLengths(std::string_view text) {
  std::vector<std::int64_t> out;
  for (const auto& item : SplitComma(text)) {
    if (item.empty()) Fail("lengths: empty item in \"{}\"", text);
    std::string num = item;
    double mult = 1;
    const char suffix = static_cast<char>(std::toupper(static_cast<unsigned char>(num.back())));
    if (suffix == 'K') mult = 1e3;
    if (suffix == 'M') mult = 1e6;
    if (mult != 1) num.pop_back();
    const double v = ParseNumber(num, "lengths") * mult;
    if (v < 1 || v > 1e12) Fail("lengths: \"{}\" must be >= 1 token", item);
    out.push_back(static_cast<std::int64_t>(std::llround(v)));
  }
  return out;
}

std::vector<double> ParseDepths(std::string_view text) {
  std::vector<double> out;
  for (const auto& item : SplitComma(text)) {
    std::string num = item;
    if (!num.empty() && num.back() == '%') num.pop_back();
    const double v = ParseNumber(num, "depths");
    if (v < 0 || v > 100) Fail("depths: \"{}\" must be a percentage in [0, 100]", item);
    out.push_back(v);
  }
  return out;
}

std::string FormatLength(std::int64_t tokens) {
  auto fmt_unit = [](double v, const char* unit) {
    std::string s = fmt::format("{:.3f}", v);
    while (s.back() == '0') s.pop_back();
    if (s.back() == '.') s.pop_back();
    return s + unit;
  };
  if (tokens >= 1000000 && tokens % 10000 == 0) return fmt_unit(static_cast<double>(tokens) / 1e6, "M");
  if (tokens >= 1000 && tokens % 10 == 0) return fmt_unit(static_cast<double>(tokens) / 1e3, "K");
  return std::to_string(tokens);
}

Needle MakeNeedle(std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  Needle n;
  n.key = fmt::format("{}-{}-{}", kAdjectives[rng() % kAdjectives.size()], kAnimals[rng() % kAnimals.size()],
                      100 + rng() % 900);
  n.value = fmt::format("{}-{}-{}", 1000 + rng() % 9000, kCodeWords[rng() % kCodeWords.size()], 1000 + rng() % 9000);
  // The convention of the ppdeploy simulator (src/sim FindNeedle): "The value of key K is V." and
  // "What is the value of key K?", so the same probe runs against `ppdeploy sim`.
  n.sentence = fmt::format("The value of key {} is {}.", n.key, n.value);
  n.question =
      fmt::format("What is the value of key {}? It is stated in the text above. Reply with the value only.", n.key);
  return n;
}

Haystack BuildHaystack(ChatBackend& backend, std::int64_t target_tokens, double depth_pct, const Needle& needle,
                       std::uint64_t seed, double chars_per_token) {
  if (chars_per_token <= 0) Fail("needle: chars_per_token must be > 0, got {}", chars_per_token);
  Counter count{backend, chars_per_token};
  Builder b{needle, depth_pct, std::mt19937_64(seed), {}};
  const std::int64_t base = count(b.Build(0, 0));
  if (base > target_tokens)
    Fail("needle: length {} is smaller than the needle and question alone ({} tokens)", target_tokens, base);
  // Bracket the largest n with count(n) <= target, guided by the measured tokens per sentence.
  std::int64_t g = std::max<std::int64_t>(1, (target_tokens - base) / 16);
  std::int64_t v = count(b.Build(g, 0));
  double per_sentence = std::max(1.0, static_cast<double>(v - base) / static_cast<double>(g));
  std::int64_t lo = 0, hi = -1;  // count(lo) <= target < count(hi)
  if (v <= target_tokens)
    lo = g;
  else
    hi = g;
  g = std::max<std::int64_t>(1, static_cast<std::int64_t>(static_cast<double>(target_tokens - base) / per_sentence));
  std::int64_t step = 2;
  for (int guard = 0; guard < 64 && hi < 0; ++guard) {  // find hi
    if (g <= lo) g = lo + step;
    v = count(b.Build(g, 0));
    if (v <= target_tokens) {
      lo = g;
      g = lo + step;
      step *= 2;
    } else {
      hi = g;
    }
  }
  if (hi < 0) Fail("needle: could not reach {} tokens (tokenizer count does not grow)", target_tokens);
  // Narrow the bracket from below with the estimate too, then bisect.
  for (int guard = 0; guard < 64 && hi - lo > 1; ++guard) {
    const std::int64_t mid = lo + (hi - lo) / 2;
    if (count(b.Build(mid, 0)) <= target_tokens)
      lo = mid;
    else
      hi = mid;
  }
  // Top up with the words of the next sentence.
  const std::int64_t words = WordsIn(kFiller[b.Sentence(static_cast<std::size_t>(lo))]);
  std::int64_t wlo = 0, whi = words + 1;
  while (whi - wlo > 1) {
    const std::int64_t mid = wlo + (whi - wlo) / 2;
    if (count(b.Build(lo, mid)) <= target_tokens)
      wlo = mid;
    else
      whi = mid;
  }
  Haystack h;
  h.prompt = b.Build(lo, wlo, &h.needle_depth_pct);
  h.tokens = count(h.prompt);
  h.estimated = count.estimated;
  h.tokenize_calls = count.calls;
  return h;
}

NeedleResult RunNeedle(ChatBackend& backend, const NeedleConfig& config,
                       const std::function<void(const NeedleCell&)>& on_cell) {
  if (config.lengths.empty()) Fail("needle: no lengths given");
  if (config.depths_pct.empty()) Fail("needle: no depths given");
  if (config.answer_room_tokens < 1) Fail("needle: answer room must be >= 1 token");
  NeedleResult r;
  r.max_model_len = backend.MaxModelLen();
  std::uint64_t cell_index = 0;
  for (std::int64_t length : config.lengths) {
    for (double depth : config.depths_pct) {
      NeedleCell c;
      c.length_tokens = length;
      c.depth_pct = depth;
      const std::uint64_t seed = config.seed + 7919 * cell_index++;
      const Needle needle = MakeNeedle(seed);
      c.expected = needle.value;
      if (r.max_model_len && length + config.answer_room_tokens > *r.max_model_len) {
        c.status = "skipped";
        c.note = fmt::format("{} + {} answer tokens > max_model_len {}", FormatLength(length),
                             config.answer_room_tokens, *r.max_model_len);
      } else {
        try {
          const Haystack h = BuildHaystack(backend, length, depth, needle, seed, config.chars_per_token);
          c.prompt_tokens = h.tokens;
          c.estimated = h.estimated;
          if (h.estimated) c.note = fmt::format("length estimated as bytes/{} (no /tokenize)", config.chars_per_token);
          ChatRequest req;
          req.messages = nlohmann::json::array({{{"role", "user"}, {"content", h.prompt}}});
          req.max_tokens = config.answer_room_tokens;
          req.temperature = 0.0;
          req.tag = fmt::format("needle-{}-{}", FormatLength(length), depth);
          const ChatResult res = backend.Chat(req);
          if (res.cancelled) {
            r.interrupted = true;
            return r;
          }
          c.e2e_ms = res.e2e_ms;
          if (!res.ok) {
            c.status = "error";
            c.note = res.error;
          } else {
            const std::string answer = AnswerText(res.text);
            c.answer = answer.substr(0, 200);
            c.status = Lower(answer).find(Lower(needle.value)) != std::string::npos ? "pass" : "fail";
          }
        } catch (const Error& e) {
          c.status = "error";
          c.note = e.what();
        }
      }
      if (c.status == "pass") ++r.passed;
      if (c.status == "fail") ++r.failed;
      if (c.status == "skipped") ++r.skipped;
      if (c.status == "error") ++r.errors;
      r.cells.push_back(c);
      if (on_cell) on_cell(r.cells.back());
    }
  }
  return r;
}

ExitCode NeedleExitCode(const NeedleResult& result) {
  if (result.failed > 0) return ExitCode::kCheckFailed;
  if (result.errors > 0 || result.passed == 0) return ExitCode::kError;
  return ExitCode::kOk;
}

nlohmann::json ToJson(const NeedleCell& c) {
  return {{"length_tokens", c.length_tokens},
          {"depth_pct", c.depth_pct},
          {"status", c.status},
          {"prompt_tokens", c.prompt_tokens},
          {"estimated", c.estimated},
          {"expected", c.expected},
          {"answer", c.answer},
          {"note", c.note},
          {"e2e_ms", c.e2e_ms}};
}

NeedleCell NeedleCellFromJson(const nlohmann::json& j) {
  NeedleCell c;
  c.length_tokens = j.value("length_tokens", std::int64_t{0});
  c.depth_pct = j.value("depth_pct", 0.0);
  c.status = j.value("status", std::string());
  c.prompt_tokens = j.value("prompt_tokens", std::int64_t{0});
  c.estimated = j.value("estimated", false);
  c.expected = j.value("expected", std::string());
  c.answer = j.value("answer", std::string());
  c.note = j.value("note", std::string());
  c.e2e_ms = j.value("e2e_ms", -1.0);
  return c;
}

nlohmann::json ToJson(const NeedleResult& r) {
  nlohmann::json cells = nlohmann::json::array();
  for (const auto& c : r.cells) cells.push_back(ToJson(c));
  return {{"schema", "ppdeploy.needle/1"},
          {"max_model_len", r.max_model_len ? nlohmann::json(*r.max_model_len) : nlohmann::json()},
          {"passed", r.passed},
          {"failed", r.failed},
          {"skipped", r.skipped},
          {"errors", r.errors},
          {"cells", cells}};
}

}  // namespace ppdeploy::probes
