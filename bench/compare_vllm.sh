#!/usr/bin/env bash
# `ppdeploy bench` side by side with vLLM's own request function (`vllm bench serve`'s client code, driven by
# bench/vllm_peer.py) against `ppdeploy sim --ttft-ms 100 --itl-ms 10`, each pinned to its own core:
# sim on CPU 0, the client on CPU 1. Prints per concurrency: client CPU per streamed token, max RSS, and how
# far the median TTFT / ITL are from the sim's truth (100 / 10 ms), then the ratios ppdeploy / vLLM.
# Not a test: figures for the README.
#
# Usage: VLLM_REQUEST_FUNCS=/path/to/endpoint_request_func.py bench/compare_vllm.sh [BUILD_DIR] [CONCURRENCY...]
#   VLLM_REQUEST_FUNCS: a local copy of vLLM's vllm/benchmarks/lib/endpoint_request_func.py (vLLM is not
#   vendored here). Python: Debian's /usr/bin/python3 with python3-aiohttp, python3-tqdm, python3-regex.
#   OUT_LEN (64), REQ_FACTOR (4: requests = 4 x concurrency, at least 64).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${1:-build}; shift || true
CONCS=("$@"); [[ ${#CONCS[@]} -eq 0 ]] && CONCS=(1 16 64 256)
BIN=$BUILD_DIR/ppdeploy
PY=${PYTHON:-/usr/bin/python3}
OUT_LEN=${OUT_LEN:-64}; REQ_FACTOR=${REQ_FACTOR:-4}
: "${VLLM_REQUEST_FUNCS:?set VLLM_REQUEST_FUNCS to a copy of vLLM endpoint_request_func.py}"
"$PY" -c "import aiohttp, tqdm, regex" 2>/dev/null || { echo "needs python3-aiohttp python3-tqdm python3-regex" >&2; exit 1; }
tmp=$(mktemp -d)
taskset -c 0 "$BIN" sim --port 0 --ttft-ms 100 --itl-ms 10 --max-num-seqs 4096 >"$tmp/sim.out" 2>"$tmp/sim.err" &
sim_pid=$!
trap 'kill $sim_pid 2>/dev/null || true; rm -rf "$tmp"' EXIT
for _ in $(seq 100); do grep -q "listening on" "$tmp/sim.out" && break; sleep 0.05; done
URL=$(sed -n 's/.*listening on //p' "$tmp/sim.out")
echo "sim at $URL (CPU 0): TTFT 100 ms, ITL 10 ms, 1 token per chunk; $OUT_LEN output tokens; clients on CPU 1"
printf "%-6s %-9s %8s %12s %10s %14s %13s\n" conc client requests "cpu us/tok" "RSS MiB" "TTFT-100 ms" "ITL-10 ms"
for C in "${CONCS[@]}"; do
  N=$(( C * REQ_FACTOR )); (( N < 64 )) && N=64
  /usr/bin/time -f "%M" -o "$tmp/pp.rss" taskset -c 1 "$BIN" bench --url "$URL" --concurrency "$C" --requests "$N" \
    --input-len 32 --output-len "$OUT_LEN" --out-jsonl none --format json >"$tmp/pp.json"
  /usr/bin/time -f "%M" -o "$tmp/vl.rss" taskset -c 1 "$PY" bench/vllm_peer.py --request-funcs "$VLLM_REQUEST_FUNCS" \
    --url "$URL" --concurrency "$C" --requests "$N" --output-len "$OUT_LEN" >"$tmp/vl.json"
  "$PY" - "$C" "$tmp" <<'PY'
import json, sys
c, tmp = sys.argv[1], sys.argv[2]
pp = json.load(open(f"{tmp}/pp.json"))["levels"][0]
vl = json.loads(open(f"{tmp}/vl.json").read())
pp_rss = int(open(f"{tmp}/pp.rss").read().split()[-1]) / 1024
vl_rss = int(open(f"{tmp}/vl.rss").read().split()[-1]) / 1024
pp_tok = pp["output_throughput_tok_s"] * pp["duration_s"]
rows = [("ppdeploy", pp["requests"]["ok"], pp["client_cpu_s"] / pp_tok * 1e6, pp_rss,
         pp["ttft_ms"]["median"] - 100, pp["itl_per_chunk_ms"]["median"] - 10),
        ("vllm", vl["requests"] - vl["failed"], vl["cpu_s"] / max(1, vl["output_tokens"]) * 1e6, vl_rss,
         vl["ttft_ms_median"] - 100, vl["itl_ms_median"] - 10)]
for name, n, cpu, rss, ttft, itl in rows:
    print(f"{c:<6} {name:<9} {n:>8} {cpu:>12.1f} {rss:>10.1f} {ttft:>14.2f} {itl:>13.2f}")
print(f"{c:<6} {'ratio':<9} {'':>8} {rows[0][2] / rows[1][2]:>11.2f}x {rows[0][3] / rows[1][3]:>9.2f}x")
PY
done
