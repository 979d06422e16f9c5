// Dataset files for `bench --dataset sharegpt|jsonl`: constructed files in the formats vLLM reads
// (ShareGPT_V3_unfiltered_cleaned_split.json entries; vLLM's custom JSONL "prompt" lines), and broken ones
// whose errors must name the file, the line or byte and the field.
#include "client/datasets.h"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <set>

#include "core/error.h"
#include "test_util.h"

namespace ppdeploy::client {
namespace {

std::string Write(const std::string& name, const std::string& text) {
  auto dir = std::filesystem::temp_directory_path() / ("ppdeploy-datasets-" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  std::string path = (dir / name).string();
  std::ofstream(path, std::ios::binary) << text;
  return path;
}

std::string ShareGpt(int n) {
  nlohmann::json a = nlohmann::json::array();
  for (int i = 0; i < n; ++i) {
    a.push_back({{"id", fmt::format("c{}", i)},
                 {"conversations",
                  {{{"from", "human"}, {"value", "question " + std::to_string(i)}},
                   {{"from", "gpt"}, {"value", "answer " + std::to_string(i)}},
                   {{"from", "human"}, {"value", "follow-up"}}}}});
  }
  a.push_back({{"id", "short"}, {"conversations", {{{"from", "human"}, {"value", "one turn only"}}}}});
  a.push_back({{"id", "none"}});
  return a.dump();
}

TEST(ShareGpt, ReservoirSampleOfFirstTwoTurns) {
  std::string path = Write("sg.json", ShareGpt(50));
  std::int64_t total = 0;
  auto all = ReadShareGpt(path, 1000, 1, &total);
  EXPECT_EQ(total, 50);  // entries with < 2 turns are not usable (vLLM filters them too)
  ASSERT_EQ(all.size(), 50u);
  std::set<std::string> prompts;
  for (const auto& e : all) {
    prompts.insert(e.prompt);
    EXPECT_EQ(e.prompt.substr(0, 9), "question ");
    EXPECT_EQ(e.reference_answer, "answer " + e.prompt.substr(9));  // turns[1] of the same entry
  }
  EXPECT_EQ(prompts.size(), 50u);
  auto some = ReadShareGpt(path, 10, 1);
  EXPECT_EQ(some.size(), 10u);
  auto again = ReadShareGpt(path, 10, 1);
  for (std::size_t i = 0; i < some.size(); ++i) EXPECT_EQ(some[i].prompt, again[i].prompt);  // seeded
  EXPECT_TRUE(IsValidShareGptSequence(4, 4));
  EXPECT_FALSE(IsValidShareGptSequence(3, 100));
  EXPECT_FALSE(IsValidShareGptSequence(1025, 4));
  EXPECT_FALSE(IsValidShareGptSequence(1000, 1049));
}

TEST(ShareGpt, BrokenFilesAreNamed) {
  std::string bad = Write("bad.json", "[{\"conversations\": [{\"value\": \"x\"}, ");
  EXPECT_NE(
      testing::ErrorOf([&] { ReadShareGpt(bad, 10, 0); }).find("--dataset-path " + bad + ": malformed JSON at byte"),
      std::string::npos);
  std::string obj = Write("obj.json", "{\"conversations\": []}");
  EXPECT_EQ(testing::ErrorOf([&] { ReadShareGpt(obj, 10, 0); }),
            "--dataset-path " + obj + ": expected a ShareGPT JSON array of {\"conversations\": [...]} entries");
  std::string empty = Write("empty.json", "[]");
  EXPECT_EQ(testing::ErrorOf([&] { ReadShareGpt(empty, 10, 0); }),
            "--dataset-path " + empty + ": no entry with at least 2 conversation turns");
  EXPECT_EQ(testing::ErrorOf([] { ReadShareGpt("/dev/zero", 10, 0); }), "--dataset-path /dev/zero: not a regular file");
  EXPECT_EQ(testing::ErrorOf([] { ReadShareGpt("/nonexistent/x.json", 10, 0); }),
            "--dataset-path /nonexistent/x.json: cannot read: no such file");
}

TEST(JsonlDataset, ReadsInFileOrderAndCycles) {
  std::string path = Write("p.jsonl",
                           "{\"prompt\": \"first\", \"output_tokens\": 7}\n\n"
                           "{\"messages\": [{\"role\": \"user\", \"content\": \"second\"}]}\r\n"
                           "{\"prompt\": \"third\"}");
  JsonlDataset d(path, true);
  EXPECT_EQ(d.size(), 3);
  DatasetEntry a = d.Next();
  EXPECT_EQ(a.prompt, "first");
  EXPECT_EQ(a.output_tokens, 7);
  DatasetEntry b = d.Next();
  EXPECT_TRUE(b.messages.is_array());
  EXPECT_EQ(b.messages[0]["content"], "second");
  EXPECT_EQ(d.Next().prompt, "third");
  EXPECT_EQ(d.Next().prompt, "first");  // wraps around
}

TEST(JsonlDataset, BadLinesNameFileLineAndField) {
  std::string p1 = Write("b1.jsonl", "{\"prompt\": \"ok\"}\n{\"prompt\": 5}\n");
  EXPECT_EQ(testing::ErrorOf([&] { JsonlDataset d(p1, true); }), p1 + ":2: prompt: expected a string, got 5");
  std::string p2 = Write("b2.jsonl", "{\"text\": \"no prompt\"}\n");
  EXPECT_EQ(testing::ErrorOf([&] { JsonlDataset d(p2, true); }),
            p2 + ":1: expected exactly one of \"prompt\" (a string) or \"messages\" (an array), got neither");
  std::string p3 = Write("b3.jsonl", "{\"messages\": [{\"role\": \"user\", \"content\": \"x\"}]}\n");
  EXPECT_EQ(testing::ErrorOf([&] { JsonlDataset d(p3, false); }),
            p3 + ":1: messages: chat messages need --endpoint chat");
  std::string p4 = Write("b4.jsonl", "{\"prompt\": \"x\", \"output_tokens\": 0}\n");
  EXPECT_NE(testing::ErrorOf([&] { JsonlDataset d(p4, true); }).find(p4 + ":1: output_tokens"), std::string::npos);
  std::string p5 = Write("b5.jsonl", "not json\n");
  EXPECT_NE(testing::ErrorOf([&] { JsonlDataset d(p5, true); }).find(p5 + ":1: malformed JSON"), std::string::npos);
  std::string p6 = Write("b6.jsonl", "\n\n");
  EXPECT_EQ(testing::ErrorOf([&] { JsonlDataset d(p6, true); }), "--dataset-path " + p6 + ": no prompt in the file");
}

}  // namespace
}  // namespace ppdeploy::client
