// The subcommand table: one row per subcommand, in --help order. The run functions live in
// src/cli/cmd_<name>.cc.
#include <fmt/format.h>

#include "cli/command.h"

namespace ppdeploy::cli {

RunFunction DeclarePlan(CLI::App* sub);
RunFunction DeclarePreflight(CLI::App* sub);
RunFunction DeclareCalibrate(CLI::App* sub);
RunFunction DeclareCmd(CLI::App* sub);
RunFunction DeclareDefaultcheck(CLI::App* sub);
RunFunction DeclareStart(CLI::App* sub);
RunFunction DeclareWait(CLI::App* sub);
RunFunction DeclareStop(CLI::App* sub);
RunFunction DeclareStatus(CLI::App* sub);
RunFunction DeclareLogs(CLI::App* sub);
RunFunction DeclareDegen(CLI::App* sub);
RunFunction DeclareNeedle(CLI::App* sub);
RunFunction DeclareProbe(CLI::App* sub);
RunFunction DeclareVerdict(CLI::App* sub);
RunFunction DeclareVerify(CLI::App* sub);
RunFunction DeclareRebalance(CLI::App* sub);
RunFunction DeclareBench(CLI::App* sub);
RunFunction DeclareSim(CLI::App* sub);

namespace {

constexpr CommandSpec kCommands[] = {
    {"plan", "Predict every GPU's memory and the KV-cache pool of each layout", "",
     "ppdeploy plan                                   # the seed's deployment (8 x A100, GLM-5.3 W4A16)\n"
     "ppdeploy plan --tp 4 --pp 2 --partition 39,39   # one split in detail\n"
     "ppdeploy plan --tp 4 --pp 2 --optimize          # the best split (41,37 for the seed) and its neighbours\n"
     "PP_LAYER_PARTITION=39,39 ppdeploy plan          # the same settings as `ppdeploy cmd` reads\n"
     "ppdeploy plan --model deepseek-v3 --gpu h200 --gpus 8 --max-model-len 131072 --format json\n"
     "ppdeploy plan --model /models/Kimi-K2/config.json --gpu h200 --kv-cache-dtype auto\n"
     "ppdeploy plan --format html > plan.html         # charts: memory per stage, splits, layer map",
     DeclarePlan},
    {"preflight", "Check a layer split for the DSA index-share PP defect (exit 2 if unsafe)",
     "Exit codes: 0 safe, 1 bad input, 2 unsafe split.",
     "ppdeploy preflight --partition 41,37             # rank1 forced [41], fixed by the seed's image\n"
     "ppdeploy preflight --partition 45,33 --fix none  # unsafe: layer 45 reuses layer 42's index on PP0\n"
     "ppdeploy preflight --partition 39,39 --fix pattern --vllm 0.26   # print the index_topk_pattern override",
     DeclarePreflight},
    {"calibrate", "Learn non-torch / activation / CUDA-graph memory from a real vLLM boot log",
     "Exit codes: 0 calibrated (from the last complete boot unless --boot N); 1 bad input, or the boot failed "
     "(its file, line and cause are reported and nothing is written).",
     "ppdeploy calibrate --log boot.log --model glm-5.3-w4a16 --gpu a100 --tp 4 --pp 2 --partition 39,39 --out "
     "cal.json\n"
     "ppdeploy calibrate --log restarts.log --boot 1 --format json   # the first of several boots in one file\n"
     "ppdeploy plan --calibration cal.json --tp 4 --pp 2 --optimize",
     DeclareCalibrate},
    {"cmd", "Show the resolved settings, the rendered vllm serve command and the gates",
     "Exit codes: 0 every gate passes; 1 a gate refuses the launch or a setting is invalid.",
     "ppdeploy cmd                                   # the seed's default: TP4/PP2, 41,37, MTP k=3\n"
     "PP_LAYER_PARTITION=39,39 ppdeploy cmd\n"
     "TP_SIZE=8 PP_SIZE=1 MAX_MODEL_LEN=352000 ppdeploy cmd\n"
     "PP_SIZE=4 TP_SIZE=2 ppdeploy cmd               # refused (exit 1), with planned alternatives\n"
     "ppdeploy cmd --enable-expert-parallel --max-num-seqs 64 --block-size 64\n"
     "ppdeploy cmd --runtime bare --port 8001 --format json -- --enable-prefix-caching",
     DeclareCmd},
    {"defaultcheck", "Compare the generated argv and injected env with the committed expected defaults (drift: exit 2)",
     "Settings from flags, environment and profile file apply, so a changed default or an override shows as drift.\n"
     "Exit codes: 0 no drift; 2 drift (a diff is printed) or a gate refuses the default; 1 error.",
     "ppdeploy defaultcheck\n"
     "PP_LAYER_PARTITION=39,39 ppdeploy defaultcheck   # exit 2\n"
     "ppdeploy defaultcheck --defaults my-defaults.toml",
     DeclareDefaultcheck},
    {"start", "Run the gates, then start the vLLM server in the background",
     "Exit codes: 0 started (or dry run passed); 1 a gate refused, a server is already running, or it died at once.\n"
     "Multi-node layouts (NODES=head,worker,...) are started over the remote shell (PPDEPLOY_REMOTE_SHELL, default\n"
     "ssh): Ray's head and workers, then `vllm serve` on the head (or vLLM's native mode's workers, then the head);\n"
     "`ppdeploy stop` stops every node, `ppdeploy cmd` prints the per-node commands.",
     "ppdeploy start && ppdeploy wait\n"
     "PP_LAYER_PARTITION=39,39 ppdeploy start --dry-run\n"
     "ppdeploy start --runtime bare --vllm-bin /opt/vllm/bin/vllm --run-dir /var/run/ppdeploy\n"
     "NODES=10.0.0.1,10.0.0.2 TP_SIZE=8 PP_SIZE=2 ppdeploy start && ppdeploy wait   # two nodes over ssh\n"
     "ALLOW_UNVERIFIED_PP=1 TP_SIZE=2 PP_SIZE=4 PP_LAYER_PARTITION=20,20,20,18 MAX_MODEL_LEN=1048576 \\\n"
     "  DISABLE_CUSTOM_ALL_REDUCE=1 ppdeploy start   # research only, warns",
     DeclareStart},
    {"wait", "Wait until the started server answers /health and /v1/models, then compare its pool with the plan",
     "Exit codes: 0 ready; 1 timeout, the process died, or nothing was started; 130 interrupted (the run state\n"
     "records what the wait saw).",
     "ppdeploy wait\n"
     "ppdeploy wait --timeout 900 --interval 5",
     DeclareWait},
    {"stop", "Stop the started server (SIGTERM to its process group, then SIGKILL)",
     "Idempotent: stopping a stopped server prints 'not running' and exits 0.\n"
     "Exit codes: 0 stopped or not running; 1 error.",
     "ppdeploy stop\n"
     "ppdeploy stop --grace 5 --run-dir /var/run/ppdeploy",
     DeclareStop},
    {"status", "Show whether the started server runs: pid, uptime, port, health",
     "Exit codes: 0 (running or stopped: read the output); 1 error.",
     "ppdeploy status\n"
     "ppdeploy status --format json",
     DeclareStatus},
    {"logs", "Print the server log (tail, or follow while it runs)", "Exit codes: 0 ok; 1 nothing was started.",
     "ppdeploy logs --tail 50\n"
     "ppdeploy logs --follow",
     DeclareLogs},
    {"degen", "Degeneration probe: N sampled answers; exit 2 when any answer loops to the cap without EOS",
     "Exit codes: 0 no degenerate answer; 2 degeneration found (or worse than --baseline); 1 error; 130 interrupted.",
     "ppdeploy degen --trials 200                      # the server `ppdeploy start` started\n"
     "ppdeploy degen --url http://127.0.0.1:8000 --trials 200\n"
     "AGENT_PROBE_TRIALS=200 ppdeploy degen --url http://127.0.0.1:8000\n"
     "ppdeploy degen --url http://127.0.0.1:8000 --baseline pp1.json --format json > pp2.json",
     DeclareDegen},
    {"needle", "Needle-in-a-haystack recall (K = 1,000 tokens); exit 2 when a needle is missed",
     "Exit codes: 0 every needle found; 2 a needle was missed; 1 error; 130 interrupted.",
     "ppdeploy needle --lengths 128K,300K,500K --depths 10,50,90   # the server `ppdeploy start` started\n"
     "ppdeploy needle --url http://127.0.0.1:8000 --lengths 32K --out-jsonl needle.jsonl\n"
     "ppdeploy needle --url http://127.0.0.1:8000 --lengths 32K --format json",
     DeclareNeedle},
    {"probe", "Acceptance probes (quality 12, Responses API 10, tool round trips 20); exit 2 when one fails",
     "Exit codes: 0 every probe passes; 2 a probe failed; 1 error; 130 interrupted.",
     "ppdeploy probe                                   # the server `ppdeploy start` started\n"
     "ppdeploy probe --url http://127.0.0.1:8000 --only tools\n"
     "ppdeploy probe --url http://127.0.0.1:8000 --format json",
     DeclareProbe},
    {"verify",
     "All checks against a running server (smoke, needle, degeneration, bench, probes) -> a ppdeploy.verify/1 result "
     "for `ppdeploy verdict`; exit 2 when a check found a problem",
     "Exit codes: 2 a check found a problem (degeneration, missed needle, failed probe or smoke); 1 an error;\n"
     "130 interrupted; 0 otherwise. The file lists the steps not done under verify.missing (--resume continues it).\n"
     "Server facts (boot log, /metrics, nvidia-smi or $PPDEPLOY_NVIDIA_SMI, run state) are recorded with their "
     "sources.",
     "ppdeploy verify                                  # the server `ppdeploy start` started -> <run-dir>/verify.json\n"
     "ppdeploy verify --url http://127.0.0.1:8000 --out a.json --plan-json plan.json\n"
     "ppdeploy verify --out a.json --resume            # continue an interrupted run\n"
     "ppdeploy verify --format html > verify.html",
     DeclareVerify},
    {"verdict", "Compare two ppdeploy.verify/1 results: better arm and significance per metric",
     "Exit codes: 0 ok; 1 error.",
     "ppdeploy verdict control.json candidate.json\n"
     "ppdeploy verdict a.json b.json --format json\n"
     "ppdeploy verdict a.json b.json --format html > ab.html   # memory bars per GPU per arm, pools, facts",
     DeclareVerdict},
    {"rebalance",
     "The split A/B of the seed (preflight, control, boot SPLIT, verify, verdict; restore): one resumable flow, one "
     "run directory per arm under .ppdeploy/ab",
     "Exit codes: 0 the new arm is not worse than the control; 2 it is worse, or a check found a problem (an unsafe\n"
     "split); 1 an error; 130 interrupted (finished steps and measurements are kept: run it again to resume).",
     "PP_LAYER_PARTITION=39,39 ppdeploy start && ppdeploy wait   # the control arm\n"
     "ppdeploy rebalance run 41,37                     # preflight, control, boot 41,37, verify, verdict\n"
     "ppdeploy rebalance preflight                     # the optimiser's split, gated, without touching the service\n"
     "ppdeploy rebalance boot 41,37 && ppdeploy rebalance verify && ppdeploy rebalance verdict --format html > "
     "ab.html\n"
     "ppdeploy rebalance run 41,37 --trials 200 --needle-lengths 128K,300K   # the seed's acceptance sizes\n"
     "ppdeploy rebalance run 41,37 --force             # measure both arms again\n"
     "ppdeploy rebalance restore                       # stop the new arm, restart the control",
     DeclareRebalance},
    {"bench", "Benchmark an OpenAI-compatible server (streaming): concurrency levels, request rates, sweeps, goodput",
     "Exit codes: 0 ok (request errors are reported, not fatal); 1 bad options or server unreachable; 130 SIGINT\n"
     "(the per-request JSONL is complete up to the interruption).",
     "ppdeploy bench --url http://127.0.0.1:8000 --concurrency 1,4,8,16 --requests 64 --input-len 1024 --output-len "
     "256\n"
     "ppdeploy bench --url http://127.0.0.1:8000 --request-rate 20 --requests 2000 --goodput ttft:500 tpot:50\n"
     "ppdeploy bench --url http://127.0.0.1:8000 --request-rate 8 --arrival gamma --burstiness 0.5 --max-concurrency "
     "64\n"
     "ppdeploy bench --url http://127.0.0.1:8000 --ramp-up linear --ramp-up-start-rps 1 --ramp-up-end-rps 30 "
     "--requests 600\n"
     "ppdeploy bench --url http://127.0.0.1:8000 --sweep 8 --duration-s 60 --format html > sweep.html\n"
     "ppdeploy bench --url http://127.0.0.1:8000 --search-max-goodput --goodput ttft:2000 tpot:50 --requests 200\n"
     "ppdeploy bench --url http://127.0.0.1:8000 --dataset sharegpt --dataset-path "
     "ShareGPT_V3_unfiltered_cleaned_split.json",
     DeclareBench},
    {"sim", "Run an OpenAI-compatible simulator of `vllm serve` (deterministic under --seed) for tests and demos", "",
     "ppdeploy sim --port 0 --ttft-ms 100 --itl-ms 10\n"
     "ppdeploy sim --port 8000 --fault-rate 0.1 --fault-kinds 500,429,disconnect,stall\n"
     "ppdeploy sim --accept-vllm-flags serve /models/glm --port 8000 --tensor-parallel-size 8",
     DeclareSim},
};

std::string Footer(const CommandSpec& c) {
  std::string out;
  if (!c.exit_codes.empty()) out += std::string(c.exit_codes) + "\n";
  out += "Examples:\n";
  std::string_view ex = c.examples;
  while (!ex.empty()) {
    size_t nl = ex.find('\n');
    out += "  " + std::string(ex.substr(0, nl)) + "\n";
    ex = nl == std::string_view::npos ? std::string_view() : ex.substr(nl + 1);
  }
  return out;
}

}  // namespace

std::span<const CommandSpec> Commands() { return kCommands; }

std::vector<std::pair<CLI::App*, RunFunction>> DeclareCommands(CLI::App& app) {
  std::vector<std::pair<CLI::App*, RunFunction>> out;
  for (const auto& c : kCommands) {
    CLI::App* sub = app.add_subcommand(std::string(c.name), std::string(c.summary));
    sub->footer(Footer(c));
    out.emplace_back(sub, c.declare(sub));
  }
  return out;
}

}  // namespace ppdeploy::cli
