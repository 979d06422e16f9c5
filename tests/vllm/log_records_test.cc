// Tests of the record splitter (src/vllm/log_records.h). Each input is a real excerpt (the boot-log examples
// (docs/sources.md §3), tests/data/llmd-v0.19) or a constructed file that says which writing behaviour of vLLM it
// reproduces; the behaviours are those of vllm/logging_utils/formatter.py (NewLineFormatter: "\n" -> "\r\n" + the
// header), vllm/utils/system_utils.py `_add_prefix` (`(name pid=N) ` at every line start, ANSI cyan on a TTY), tqdm
// progress bars (CR, no LF) and Ray's log monitor (`(Actor pid=N, ip=A) `, nested after the driver's prefix).
#include "vllm/log_records.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/escape.h"

namespace ppdeploy {
namespace {

struct Rec {
  std::int64_t line = 0;
  std::string process, extra, outer, level, time, source;
  std::optional<std::int64_t> pid;
  std::vector<std::string> lines;
  std::vector<std::int64_t> line_nos;
  bool recovered = false, truncated = false;
};

std::vector<Rec> Split(std::string_view text, LogSplitStats* stats = nullptr) {
  std::vector<Rec> out;
  LogSplitStats st = SplitLogRecords(text, [&](const LogRecord& r) {
    Rec x;
    x.line = r.line;
    x.process = r.process;
    x.extra = r.process_extra;
    x.outer = r.outer_process;
    x.level = r.level;
    x.time = r.time;
    x.source = r.source;
    x.pid = r.pid;
    for (const auto& l : r.lines) {
      x.lines.emplace_back(l.text);
      x.line_nos.push_back(l.line);
    }
    x.recovered = r.recovered;
    x.truncated = r.truncated;
    out.push_back(std::move(x));
  });
  if (stats) *stats = st;
  return out;
}

TEST(LogRecordsTest, OneRecordPerLineWithPrefixAndHeader) {
  // the boot-log examples (docs/sources.md §3) DEV-MLA-18 (Kimi-K2 TP8, recipes PR #115), verbatim.
  auto r = Split(
      "(Worker_TP0 pid=591236) INFO 11-06 12:08:54 [gpu_worker.py:349] Available KV cache memory: 46.80 GiB\n"
      "(EngineCore_DP0 pid=591074) INFO 11-06 12:08:55 [kv_cache_utils.py:1229] GPU KV cache size: 715,072 tokens\n");
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(r[0].process, "Worker_TP0");
  EXPECT_EQ(r[0].pid, 591236);
  EXPECT_EQ(r[0].level, "INFO");
  EXPECT_EQ(r[0].time, "11-06 12:08:54");
  EXPECT_EQ(r[0].source, "gpu_worker.py:349");
  EXPECT_EQ(r[0].lines, (std::vector<std::string>{"Available KV cache memory: 46.80 GiB"}));
  EXPECT_EQ(r[1].process, "EngineCore_DP0");
  EXPECT_EQ(r[1].line, 2);
}

TEST(LogRecordsTest, CrLfEndingsAreLineEndings) {
  // The same two lines with CRLF endings (a log saved on Windows): two records, not one.
  auto r = Split(
      "(Worker_TP0 pid=591236) INFO 11-06 12:08:54 [gpu_worker.py:349] Available KV cache memory: 46.80 GiB\r\n"
      "(EngineCore_DP0 pid=591074) INFO 11-06 12:08:55 [kv_cache_utils.py:1229] GPU KV cache size: 715,072 "
      "tokens\r\n");
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(r[0].lines[0], "Available KV cache memory: 46.80 GiB");
  EXPECT_EQ(r[1].lines[0], "GPU KV cache size: 715,072 tokens");
}

TEST(LogRecordsTest, NewLineFormatterContinuationIsOneRecord) {
  // The V0 memory profile is one logger.info call whose message holds "\n" (docs/memory-overheads.md §1);
  // NewLineFormatter writes each "\n" as "\r\n" + the same header, and _add_prefix adds the prefix again.
  auto r = Split(
      "(RayWorkerWrapper pid=4242, ip=10.0.0.2) INFO 12-01 00:00:00 worker.py:1] Memory profiling takes 4.25 "
      "seconds\r\n"
      "(RayWorkerWrapper pid=4242, ip=10.0.0.2) INFO 12-01 00:00:00 worker.py:1] the current vLLM instance can use "
      "total_gpu_memory (79.11GiB) x gpu_memory_utilization (0.90) = 71.20GiB\r\n"
      "(RayWorkerWrapper pid=4242, ip=10.0.0.2) INFO 12-01 00:00:00 worker.py:1] model weights take 37.50GiB; "
      "non_torch_memory takes 1.20GiB; PyTorch activation peak memory takes 4.10GiB; the rest of the memory "
      "reserved for KV Cache is 28.40GiB.\n"
      "INFO 12-01 00:00:01 executor_base.py:1] # GPU blocks: 2902, # CPU blocks: 409\n");
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(r[0].process, "RayWorkerWrapper");
  EXPECT_EQ(r[0].extra, ", ip=10.0.0.2");
  EXPECT_EQ(r[0].source, "worker.py:1");  // the pre-2024 header without '['
  ASSERT_EQ(r[0].lines.size(), 3u);
  EXPECT_EQ(r[0].lines[1].substr(0, 26), "the current vLLM instance ");
  EXPECT_EQ(r[0].line_nos, (std::vector<std::int64_t>{1, 2, 3}));
  EXPECT_EQ(r[1].process, "");
  EXPECT_EQ(r[1].lines[0], "# GPU blocks: 2902, # CPU blocks: 409");
}

TEST(LogRecordsTest, LoggerExceptionTracebackIsOneRecord) {
  // logger.exception appends the traceback after "\n": every line repeats the ERROR header (tests/data/llmd-v0.19
  // FAILED logs, format of vllm/v1/engine/core.py's `EngineCore failed to start.`), CR before each LF.
  auto r = Split(
      "(EngineCore_DP0 pid=167) ERROR 02-28 16:12:13 [core.py:866] EngineCore failed to start.\r\n"
      "(EngineCore_DP0 pid=167) ERROR 02-28 16:12:13 [core.py:866] Traceback (most recent call last):\r\n"
      "(EngineCore_DP0 pid=167) ERROR 02-28 16:12:13 [core.py:866]     raise ValueError(\r\n"
      "(EngineCore_DP0 pid=167) ERROR 02-28 16:12:13 [core.py:866] ValueError: Free memory on device (4.04/119.63 "
      "GiB) on startup is less than desired GPU memory utilization (0.15, 17.94 GiB).\n"
      "(EngineCore_DP0 pid=167) Process EngineCore_DP0:\n");
  ASSERT_EQ(r.size(), 2u);
  ASSERT_EQ(r[0].lines.size(), 4u);
  EXPECT_EQ(r[0].lines[0], "EngineCore failed to start.");
  EXPECT_EQ(r[0].lines[3].substr(0, 11), "ValueError:");
  EXPECT_EQ(r[1].level, "");  // raw stderr: prefix, no header
  EXPECT_EQ(r[1].lines[0], "Process EngineCore_DP0:");
}

TEST(LogRecordsTest, HeaderlessLinesContinueTheRecordBefore) {
  // A snippet pasted into an issue often loses the continuation lines' prefix and header.
  auto r = Split(
      "(RayWorkerWrapper pid=4242, ip=10.0.0.2) INFO 12-01 00:00:00 [worker.py:1] Memory profiling takes 4.25 "
      "seconds\n"
      "the current vLLM instance can use total_gpu_memory (79.11GiB) x gpu_memory_utilization (0.90) = 71.20GiB\n"
      "\n"
      "model weights take 37.50GiB; non_torch_memory takes 1.20GiB\n");
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].process, "RayWorkerWrapper");
  EXPECT_EQ(r[0].lines.size(), 3u);
  EXPECT_EQ(r[0].line_nos, (std::vector<std::int64_t>{1, 2, 4}));  // the blank line 3 is skipped
}

TEST(LogRecordsTest, AnsiColourIsRemoved) {
  // ColoredFormatter (vllm/logging_utils/formatter.py) and _add_prefix on a TTY: cyan prefix, green level,
  // grey time and file.
  auto r = Split(
      "\x1b[1;36m(Worker_PP1_TP0 pid=123)\x1b[0;0m \x1b[32mINFO\x1b[0m \x1b[90m08-01 00:00:00\x1b[0m "
      "\x1b[90m[gpu_worker.py:1]\x1b[0m Available KV cache memory: 15.56 GiB\n");
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].process, "Worker_PP1_TP0");
  EXPECT_EQ(r[0].level, "INFO");
  EXPECT_EQ(r[0].source, "gpu_worker.py:1");
  EXPECT_EQ(r[0].lines[0], "Available KV cache memory: 15.56 GiB");
}

TEST(LogRecordsTest, RecordInterleavedMidLineIsSplitAndTheCutRecordRejoined) {
  // The case: PP0's long write was cut (pipe writes over PIPE_BUF are not atomic) and PP1's record
  // landed in the middle; PP0's tail starts the next line without prefix. PP1's "Model loading took" must be
  // PP1's, and PP0's message must come back whole.
  auto r = Split(
      "(Worker_PP0_TP0 pid=10) INFO 08-21 18:02:00 [gpu_model_runner.py:5405] Model loading took 47.85 GiB me"
      "(Worker_PP1_TP0 pid=14) INFO 08-21 18:02:00 [gpu_model_runner.py:5405] Model loading took 50.2 GiB memory "
      "and 121.0 seconds\n"
      "mory and 120.502592 seconds\n"
      "(EngineCore_DP0 pid=8) INFO 08-21 18:03:01 [kv_cache_utils.py:1869] GPU KV cache size: 1,626,048 tokens\n");
  ASSERT_EQ(r.size(), 3u);
  EXPECT_EQ(r[0].process, "Worker_PP1_TP0");
  EXPECT_EQ(r[0].lines[0], "Model loading took 50.2 GiB memory and 121.0 seconds");
  EXPECT_EQ(r[1].process, "Worker_PP0_TP0");
  EXPECT_TRUE(r[1].recovered);
  EXPECT_EQ(r[1].lines, (std::vector<std::string>{"Model loading took 47.85 GiB memory and 120.502592 seconds"}));
  EXPECT_EQ(r[1].line, 1);
  EXPECT_EQ(r[2].process, "EngineCore_DP0");
}

TEST(LogRecordsTest, ProgressBarCarriageReturnsAndARecordAfterThem) {
  // tqdm writes "\r<bar>" without LF; another process's record then follows on the same physical line, and
  // the bar's next update starts the next line. The bar belongs to PP0, the record to PP1.
  LogSplitStats st;
  auto r = Split(
      "(Worker_PP0_TP0 pid=10) \rLoading safetensors checkpoint shards:  45% Completed | 72/160"
      "(Worker_PP1_TP0 pid=14) INFO 08-21 18:02:00 [gpu_worker.py:1] Available KV cache memory: 15.56 GiB\n"
      "\rLoading safetensors checkpoint shards:  46% Completed | 73/160\rLoading safetensors checkpoint shards: "
      "100% Completed | 160/160\n",
      &st);
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(r[0].process, "Worker_PP1_TP0");
  EXPECT_EQ(r[0].lines[0], "Available KV cache memory: 15.56 GiB");
  EXPECT_EQ(r[1].process, "Worker_PP0_TP0");
  EXPECT_TRUE(r[1].recovered);
  ASSERT_EQ(r[1].lines.size(), 4u);  // "", 45%, 46%, 100%: one message line per CR-separated piece
  EXPECT_EQ(r[1].lines[3], "Loading safetensors checkpoint shards: 100% Completed | 160/160");
  EXPECT_EQ(st.bare_crs, 3);
  EXPECT_EQ(st.mid_line_starts, 1);
  EXPECT_EQ(st.recovered, 1);
}

TEST(LogRecordsTest, RecordAfterACarriageReturnIsARecordStart) {
  auto r = Split(
      "Loading safetensors checkpoint shards: 100% Completed | 4/4\r(EngineCore_DP0 pid=143) INFO 03-18 14:04:13 "
      "[gpu_model_runner.py:1] Model loading took 14.99 GiB memory and 10.5 seconds\n");
  ASSERT_EQ(r.size(), 2u);
  EXPECT_FALSE(r[0].recovered || r[0].truncated);  // the bar ended at the CR: complete
  EXPECT_EQ(r[1].process, "EngineCore_DP0");
  EXPECT_EQ(r[1].lines[0], "Model loading took 14.99 GiB memory and 10.5 seconds");
}

TEST(LogRecordsTest, CrOnlyLineEndingsStillSeparateRecords) {
  // A log whose lines end with CR alone (a terminal capture): every record starts after a CR.
  auto r = Split(
      "(Worker_TP0 pid=591236) INFO 11-06 12:08:54 [gpu_worker.py:349] Available KV cache memory: 46.80 GiB\r"
      "(EngineCore_DP0 pid=591074) INFO 11-06 12:08:55 [kv_cache_utils.py:1229] GPU KV cache size: 715,072 tokens\r");
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(r[0].process, "Worker_TP0");
  EXPECT_EQ(r[0].lines, (std::vector<std::string>{"Available KV cache memory: 46.80 GiB"}));
  EXPECT_EQ(r[1].process, "EngineCore_DP0");
  EXPECT_FALSE(r[0].truncated || r[0].recovered);
}

TEST(LogRecordsTest, NulRunIsARecordBoundary) {
  // logrotate copytruncate: the writer keeps its offset, the file gets a hole of NUL bytes, and the next
  // record follows the hole directly (no LF).
  std::string text = "(EngineCore pid=8) INFO 08-01 00:00:00 [core.py:1] Waiting for init message\n";
  text += std::string(4096, '\0');
  text += "(EngineCore pid=8) INFO 08-01 00:00:31 [kv_cache_utils.py:1] GPU KV cache size: 1,234 tokens\n";
  LogSplitStats st;
  auto r = Split(text, &st);
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(r[1].lines[0], "GPU KV cache size: 1,234 tokens");
  EXPECT_EQ(r[1].line, 2);
  EXPECT_EQ(st.nul_runs, 1);
  EXPECT_EQ(st.nul_bytes, 4096);
  EXPECT_EQ(st.first_nul_line, 2);
}

TEST(LogRecordsTest, CollectorLeadsAreDropped) {
  // docker compose / Loki exports put a timestamp and '|' before vLLM's line (seen in public vLLM issue logs).
  auto r = Split(
      "2026-04-19 12:59:18.672 | (EngineCore pid=196) INFO 04-19 10:59:18 [parallel_state.py:1713] rank 0 in world "
      "size 1 is assigned as DP rank 0, PP rank 0, PCP rank 0, TP rank 0, EP rank 0, EPLB rank N/A\n"
      "vllm-1  | INFO 04-19 10:59:19 [kv_cache_utils.py:1] GPU KV cache size: 2,048 tokens\n");
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(r[0].process, "EngineCore");
  EXPECT_EQ(r[0].lines[0].substr(0, 24), "rank 0 in world size 1 i");
  EXPECT_EQ(r[1].process, "");
  EXPECT_EQ(r[1].level, "INFO");
  EXPECT_EQ(r[1].lines[0], "GPU KV cache size: 2,048 tokens");
}

TEST(LogRecordsTest, RayPrefixNestedAfterTheDriversPrefix) {
  // Ray forwards an actor's output with its own prefix; the API server's _add_prefix adds its own before it.
  auto r = Split(
      "(APIServer pid=5332) (DPEngineCoreActor pid=5439, ip=10.233.69.249) INFO 01-12 06:15:21 "
      "[parallel_state.py:1208] rank 1 in world size 2 is assigned as DP rank 1, PP rank 0, TP rank 0, EP rank 1\n");
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].process, "DPEngineCoreActor");
  EXPECT_EQ(r[0].pid, 5439);
  EXPECT_EQ(r[0].extra, ", ip=10.233.69.249");
  EXPECT_EQ(r[0].outer, "APIServer");
}

TEST(LogRecordsTest, PrefixLikeTextInsideAMessageIsNotASplit) {
  // Only a named prefix, or a nameless `(pid=N)` followed by a header, starts a record mid-line.
  auto r = Split(
      "(APIServer pid=1) WARNING 08-01 00:00:00 [launcher.py:1] killing the old server (pid=1234) before the "
      "restart\n");
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].lines[0], "killing the old server (pid=1234) before the restart");
}

TEST(LogRecordsTest, HeaderWithoutPrefixMidLineStartsARecord) {
  // The V0 driver prints without prefix; its record can land inside a worker's unfinished line.
  auto r = Split(
      "(VllmWorker rank=1 pid=19832) INFO 07-09 09:47:45 [gpu_worker.py:233] Available KV cache memory: 12.13 GiB"
      "INFO 07-09 09:47:46 [kv_cache_utils.py:716] GPU KV cache size: 807,792 tokens\n");
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(r[0].process, "");
  EXPECT_EQ(r[0].lines[0], "GPU KV cache size: 807,792 tokens");
  EXPECT_EQ(r[1].process, "VllmWorker rank=1");
  EXPECT_TRUE(r[1].truncated);  // its tail never came: it ends at the interruption
  EXPECT_EQ(r[1].lines[0], "Available KV cache memory: 12.13 GiB");
}

TEST(LogRecordsTest, BrokenUtf8IsKeptAsBytes) {
  // A multi-byte character cut by an interleaved write: the bytes stay (matchers see them), nothing is lost.
  auto r = Split("(APIServer pid=1) INFO 04-22 01:32:31 [utils.py:299] \xe2\x96 version 0.19.0 \xff\n");
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].lines[0], "\xe2\x96 version 0.19.0 \xff");
}

TEST(LogRecordsTest, ManyHeaderlessLinesAreCappedPerRecord) {
  std::string text = "(Worker_TP0 pid=1) INFO 01-01 00:00:00 [x.py:1] start\n";
  for (int i = 0; i < 1000; ++i) text += "a header-less line\n";
  auto r = Split(text);
  ASSERT_EQ(r.size(), 4u);  // 256 lines a record at most: 256 + 256 + 256 + 233
  for (const auto& x : r) EXPECT_EQ(x.process, "Worker_TP0");
  EXPECT_EQ(r[3].lines.size(), 233u);
}

TEST(LogRecordsTest, RecordStartParser) {
  auto s = ParseLogRecordStart("(VllmWorker rank=3 pid=19834) INFO 07-09 09:47:45 [gpu_worker.py:233] Avail", 0);
  ASSERT_TRUE(s);
  EXPECT_EQ(s->process, "VllmWorker rank=3");
  EXPECT_EQ(s->pid, 19834);
  EXPECT_EQ(s->source, "gpu_worker.py:233");
  EXPECT_EQ(s->end, 70u);
  EXPECT_FALSE(ParseLogRecordStart("INFO 07-09 09:47 [x.py:1] too short a time", 0));
  EXPECT_FALSE(ParseLogRecordStart("INFO 07-09 09:47:45 [x.py] no line number", 0));
  EXPECT_FALSE(ParseLogRecordStart("(Worker_TP0 pid=) INFO 07-09 09:47:45 [x.py:1] no pid", 0));
  EXPECT_EQ(FindLogRecordStart("text then INFO 07-09 09:47:46 [kv_cache_utils.py:716] x", 0), 10u);
  EXPECT_EQ(FindLogRecordStart("no record start here (really) 07-09", 0), std::string_view::npos);
}

// Log text reaches messages through the project's one escaping convention (core/escape.h): the bytes a
// record keeps as they are (NUL runs, a zero-width space in a figure, a BOM, bidi overrides, broken UTF-8,
// ANSI remnants, C1 controls) are visible in every warning.
TEST(LogRecordsTest, LogTextInMessagesIsEscapedByTheOneConvention) {
  EXPECT_EQ(EscapeForMessage(std::string("a\0b", 3)), "a\\x00b");
  EXPECT_EQ(EscapeForMessage("41,\xe2\x80\x8b"
                             "37"),
            "41,<U+200B>37");  // zero-width space
  EXPECT_EQ(EscapeForMessage("\xef\xbb\xbf"
                             "x"),
            "<U+FEFF>x");  // BOM
  EXPECT_EQ(EscapeForMessage("\xe2\x80\xae"
                             "abc"),
            "<U+202E>abc");                                     // right-to-left override
  EXPECT_EQ(EscapeForMessage("\xff\xfe ok"), "\\xff\\xfe ok");  // not UTF-8
  EXPECT_EQ(EscapeForMessage("\xe2\x96"), "\\xe2\\x96");        // cut sequence
  EXPECT_EQ(EscapeForMessage("tab\there\x1b[0m"), "tab\\x09here\\x1b[0m");
  EXPECT_EQ(EscapeForMessage("\xe2\x96\x88 version 0.19.0"), "\xe2\x96\x88 version 0.19.0");  // visible: kept
  EXPECT_EQ(EscapeForMessage("\xc2\x85"), "<U+0085>");                                        // C1 control (NEL)
  EXPECT_EQ(EscapeForMessage("\xed\xa0\x80"), "\\xed\\xa0\\x80");  // a surrogate is not UTF-8
  EXPECT_EQ(EscapeForMessage(std::string(100, 'x'), 10), "xxxxxxxxxx... (100 bytes)");
}

}  // namespace
}  // namespace ppdeploy

namespace ppdeploy {
namespace {

// The fuzz seeds of fuzz/corpus/log_records stay meaningful: each still takes the path its name says.
TEST(LogRecordsTest, FuzzSeedsTakeTheirPaths) {
  auto seed = [](const std::string& name) {
    std::string path = std::string(PPDEPLOY_SOURCE_DIR) + "/fuzz/corpus/log_records/" + name;
    std::FILE* f = std::fopen(path.c_str(), "rb");
    std::string s;
    if (!f) return s;
    char buf[4096];
    for (std::size_t n; (n = std::fread(buf, 1, sizeof buf, f)) > 0;) s.append(buf, n);
    std::fclose(f);
    return s;
  };
  auto stats = [&](const std::string& name) {
    std::string text = seed(name);
    EXPECT_FALSE(text.empty()) << name;
    LogSplitStats st;
    auto recs = Split(text, &st);
    EXPECT_FALSE(recs.empty()) << name;
    return std::make_pair(st, recs);
  };
  EXPECT_GT(stats("progress_cr.log").first.bare_crs, 0);
  EXPECT_GT(stats("nul_run.log").first.nul_runs, 0);
  EXPECT_GT(stats("interleaved.log").first.recovered, 0);
  EXPECT_GT(stats("ansi.log").first.ansi_lines, 0);
  EXPECT_GT(stats("headerless_midline.log").first.truncated, 0);
  EXPECT_EQ(stats("newline_formatter_crlf.log").second[0].lines.size(), 2u);
  EXPECT_EQ(stats("traceback.log").second[0].lines.size(), 3u);
  EXPECT_EQ(stats("ray_nested_and_lead.log").second[0].outer, "APIServer");
  EXPECT_EQ(stats("broken_utf8.log").second[0].lines[0], "\xe2\x96 version 0.19.0 \xff");
}

}  // namespace
}  // namespace ppdeploy
