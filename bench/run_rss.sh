#!/usr/bin/env bash
# Memory over run length: max RSS of `ppdeploy bench` for 10,000 and 100,000 requests against `ppdeploy sim`
# with zero latency (per-request JSONL written to a file as usual). Issue 17: the 100k run must stay within
# 20% of the 10k run (results are folded into constant-memory estimators, never kept).
# Usage: bench/run_rss.sh [BUILD_DIR] [CONCURRENCY] [OUTPUT_LEN]
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${1:-build}; CONC=${2:-64}; OUT_LEN=${3:-16}
BIN=$BUILD_DIR/ppdeploy
tmp=$(mktemp -d)
"$BIN" sim --port 0 >"$tmp/sim.out" 2>"$tmp/sim.err" &
sim_pid=$!
trap 'kill $sim_pid 2>/dev/null || true; rm -rf "$tmp"' EXIT
for _ in $(seq 100); do grep -q "listening on" "$tmp/sim.out" && break; sleep 0.05; done
URL=$(sed -n 's/.*listening on //p' "$tmp/sim.out")
for N in 10000 100000; do
  /usr/bin/time -f "%M %e %U %S" -o "$tmp/time" "$BIN" bench --url "$URL" --concurrency "$CONC" --requests "$N" \
    --input-len 32 --output-len "$OUT_LEN" --out-jsonl "$tmp/run.jsonl" --format csv >/dev/null
  read -r rss wall user sys <"$tmp/time"
  lines=$(wc -l <"$tmp/run.jsonl")
  echo "requests $N: max RSS $((rss / 1024)) MiB ($rss KiB), $wall s wall, $user s user, $sys s sys, $lines JSONL lines"
done
