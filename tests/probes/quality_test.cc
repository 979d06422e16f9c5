#include "probes/quality.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <map>

#include "core/error.h"
#include "probes/fake_backend.h"

namespace ppdeploy::probes {
namespace {

using testing::LastContent;
using testing::ScriptedBackend;

// Correct answers, in the loose shapes real models produce.
const std::map<std::string, std::string>& GoodAnswers() {
  static const std::map<std::string, std::string> answers = {
      {"arithmetic", "391"},
      {"word_count", "There are 9 words."},
      {"json_object", "```json\n{\"name\": \"Ada\", \"year\": 1815}\n```"},
      {"capital", "Canberra."},
      {"unit_conversion", "3,500 metres"},
      {"sort_list", "3, 7, 19, 25, 42"},
      {"reverse_word", "desserts"},
      {"maximum", "91"},
      {"weekday", "<think>Friday + 2</think>\nSunday"},
      {"uppercase", "HELLO WORLD"},
      {"prime", "Yes."},
      {"chemical_symbol", "Au"},
  };
  return answers;
}

std::string NameOfPrompt(const std::string& prompt) {
  for (const auto& p : QualityProbes())
    if (p.prompt == prompt) return p.name;
  return "";
}

// A fake that answers quality prompts, Responses-API calls and tool round trips correctly
// (or, with `wrong`, returns wrong answers).
ScriptedBackend GoodBackend(bool wrong = false) {
  ScriptedBackend b([wrong](const ChatRequest& req, int) {
    ChatResult r;
    r.ok = true;
    r.finish_reason = "stop";
    if (req.tools.is_array()) {
      const auto& last = req.messages.back();
      if (last["role"] == "user") {  // first leg: call the tool
        const std::string q = LastContent(req);
        nlohmann::json call = {{"id", "call_1"}, {"type", "function"}};
        if (q.find("weather") != std::string::npos) {
          const auto at = q.find("weather in ") + 11;
          call["function"] = {{"name", "get_weather"},
                              {"arguments", nlohmann::json{{"city", q.substr(at, q.find(' ', at) - at)}}.dump()}};
        } else {
          int a = 0, b = 0;
          std::sscanf(q.c_str(), "Use the add tool to compute %d + %d", &a, &b);
          call["function"] = {{"name", "add"}, {"arguments", nlohmann::json{{"a", a}, {"b", b}}.dump()}};
        }
        r.tool_calls = nlohmann::json::array({call});
        r.finish_reason = "tool_calls";
        return r;
      }
      // second leg: use the tool result
      const auto result = nlohmann::json::parse(last["content"].get<std::string>());
      if (wrong) {
        r.text = "I am not sure.";
      } else if (result.contains("result")) {
        const long long v = result["result"].get<long long>();
        // thousands separators as models write them: "6,912"
        r.text = v > 999 ? fmt::format("The sum is {},{:03}.", v / 1000, v % 1000) : fmt::format("The sum is {}.", v);
      } else {
        r.text = fmt::format("It is {} C with {} in {}.", result["temperature_c"].get<int>(),
                             result["condition"].get<std::string>(), result["city"].get<std::string>());
      }
      return r;
    }
    const std::string name = NameOfPrompt(LastContent(req));
    r.text = wrong ? "I don't know" : GoodAnswers().at(name);
    return r;
  });
  b.post = [wrong](const std::string& path, const nlohmann::json& body) {
    EXPECT_EQ(path, "/v1/responses");
    PostResult p;
    p.ok = true;
    p.http_status = 200;
    const std::string name = NameOfPrompt(body["input"].get<std::string>());
    p.body = {{"output",
               nlohmann::json::array(
                   {{{"type", "message"},
                     {"content", nlohmann::json::array(
                                     {{{"type", "output_text"}, {"text", wrong ? "?" : GoodAnswers().at(name)}}})}}})}};
    return p;
  };
  return b;
}

TEST(QualityTest, TwelveChecksAcceptGoodAnswersAndRejectBadOnes) {
  ASSERT_EQ(QualityProbes().size(), 12u);  // docs/seed.md §6: quality 12/12
  for (const auto& p : QualityProbes()) {
    EXPECT_TRUE(p.check(AnswerText(GoodAnswers().at(p.name))).pass) << p.name;
    EXPECT_FALSE(p.check("I am not sure.").pass) << p.name;
  }
  const auto& byname = [](const std::string& n) {
    for (const auto& p : QualityProbes())
      if (p.name == n) return p;
    throw std::runtime_error(n);
  };
  EXPECT_FALSE(byname("sort_list").check("42, 25, 19, 7, 3").pass);
  EXPECT_FALSE(byname("prime").check("No, 97 is not prime... yes").pass);
  EXPECT_FALSE(byname("chemical_symbol").check("AU").pass);
  EXPECT_FALSE(byname("json_object").check("{\"name\": \"Ada\", \"year\": \"1815\"}").pass);
  EXPECT_FALSE(byname("arithmetic").check("3910").pass);
}

TEST(QualityTest, AllProbesPassOnAGoodServer) {
  auto backend = GoodBackend();
  int seen = 0;
  const ProbeSummary s = RunProbes(backend, ProbeConfig{}, [&](const ProbeRecord&) { ++seen; });
  EXPECT_EQ(seen, 42);
  EXPECT_EQ(s.quality_passed, 12);
  EXPECT_EQ(s.quality_total, 12);
  EXPECT_EQ(s.responses_passed, 10);  // docs/seed.md §6: Responses API 10/10
  EXPECT_EQ(s.responses_total, 10);
  EXPECT_EQ(s.tools_passed, 20);  // docs/seed.md §6: tool round trips 20/20
  EXPECT_EQ(s.tools_total, 20);
  for (const auto& r : s.records) EXPECT_TRUE(r.pass) << r.kind << " " << r.name << ": " << r.detail;
  EXPECT_EQ(ProbeExitCode(s), ExitCode::kOk);
  const auto j = ToJson(s);
  EXPECT_EQ(j["schema"], "ppdeploy.probes/1");
  EXPECT_EQ(j["tools"]["passed"], 20);
}

TEST(QualityTest, WrongAnswersFailWithExitTwo) {
  auto backend = GoodBackend(/*wrong=*/true);
  const ProbeSummary s = RunProbes(backend, ProbeConfig{});
  EXPECT_EQ(s.quality_passed, 0);
  EXPECT_EQ(s.responses_passed, 0);
  EXPECT_EQ(s.tools_passed, 0);
  EXPECT_EQ(ProbeExitCode(s), ExitCode::kCheckFailed);
}

TEST(QualityTest, ToolRoundTripNeedsTheCallAndTheResult) {
  ScriptedBackend no_call([](const ChatRequest&, int) {
    ChatResult r;
    r.ok = true;
    r.text = "It is probably sunny.";
    return r;
  });
  const ProbeRecord r = RunToolProbe(no_call, ToolProbes()[0], 256);
  EXPECT_FALSE(r.pass);
  EXPECT_EQ(r.detail, "call 1: expected a tool call, got none");
  // The second request carries the assistant tool call and the tool message.
  auto good = GoodBackend();
  EXPECT_TRUE(RunToolProbe(good, ToolProbes()[12], 256).pass);
  const auto reqs = good.requests();
  ASSERT_EQ(reqs.size(), 2u);
  EXPECT_EQ(reqs[1].messages.size(), 3u);
  EXPECT_EQ(reqs[1].messages[2]["role"], "tool");
  EXPECT_EQ(reqs[1].messages[2]["tool_call_id"], "call_1");
  EXPECT_EQ(reqs[0].tools, ToolDeclarations("add"));
  EXPECT_EQ(reqs[0].tools[0]["function"]["name"], "add");
  EXPECT_EQ(ToolDeclarations()[0]["function"]["name"], "get_weather");
}

TEST(QualityTest, PlaceholderArgumentsFailUnlessUnchecked) {
  // Like `ppdeploy sim`: calls tools[0] with placeholder arguments, then echoes the tool result.
  ScriptedBackend sim([](const ChatRequest& req, int) {
    ChatResult r;
    r.ok = true;
    if (req.messages.back()["role"] == "user") {
      const std::string name = req.tools[0]["function"]["name"];
      const nlohmann::json args =
          name == "add" ? nlohmann::json{{"a", 1}, {"b", 1}} : nlohmann::json{{"city", "sim-city"}};
      r.tool_calls = nlohmann::json::array(
          {{{"id", "call_x"}, {"type", "function"}, {"function", {{"name", name}, {"arguments", args.dump()}}}}});
    } else {
      r.text = "The tool returned: " + req.messages.back()["content"].get<std::string>() + ".";
    }
    return r;
  });
  const ProbeRecord strict = RunToolProbe(sim, ToolProbes()[0], 256);
  EXPECT_FALSE(strict.pass);
  EXPECT_EQ(strict.detail, "call 1: argument city expected \"Paris\", got arguments {\"city\":\"sim-city\"}");
  const ProbeRecord loose = RunToolProbe(sim, ToolProbes()[15], 256, /*check_arguments=*/false);
  EXPECT_TRUE(loose.pass) << loose.detail;
  EXPECT_NE(loose.detail.find("not checked"), std::string::npos);
}

TEST(QualityTest, ResponsesTextShapes) {
  EXPECT_EQ(ResponsesText({{"output_text", "hi"}}), "hi");
  EXPECT_THROW(ResponsesText({{"foo", 1}}), Error);
}

}  // namespace
}  // namespace ppdeploy::probes
