#!/usr/bin/env bash
# Client throughput, side by side: `ppdeploy bench` (C++, libcurl multi, one thread) and bench/reference_client.py
# (Python asyncio, stdlib) against `ppdeploy sim` with zero latency on loopback. Not a test: prints figures.
# Usage: bench/run_client_throughput.sh [BUILD_DIR] [CONCURRENCY] [REQUESTS] [OUTPUT_LEN]
# On a shared, loaded machine set RT=1 (root): runs the sim and both clients under `chrt -f 10` for the few seconds
# of the measurement, so the figures measure the programs rather than the scheduler's share.
set -euo pipefail
PRIO=(); [[ "${RT:-0}" == 1 ]] && PRIO=(chrt -f 10)
cd "$(dirname "$0")/.."
BUILD_DIR=${1:-build}; CONC=${2:-64}; REQS=${3:-8000}; OUT_LEN=${4:-32}
BIN=$BUILD_DIR/ppdeploy
tmp=$(mktemp -d)
"${PRIO[@]}" "$BIN" sim --port 0 --threads "${SIM_THREADS:-1}" >"$tmp/sim.out" 2>"$tmp/sim.err" &
sim_pid=$!
trap 'kill $sim_pid 2>/dev/null || true; rm -rf "$tmp"' EXIT
for _ in $(seq 100); do grep -q "listening on" "$tmp/sim.out" && break; sleep 0.05; done
URL=$(sed -n 's/.*listening on //p' "$tmp/sim.out")
echo "sim at $URL; concurrency $CONC, $REQS requests x $OUT_LEN tokens, 1 token per SSE chunk"
"${PRIO[@]}" /usr/bin/time -f "ppdeploy bench: %e s wall, %U s user, %S s sys, %M KiB max RSS" \
  "$BIN" bench --url "$URL" --concurrency "$CONC" --requests "$REQS" --warmup "$CONC" --input-len 16 \
  --output-len "$OUT_LEN" --out-jsonl none --format csv | cut -d, -f1-9
"${PRIO[@]}" /usr/bin/time -f "reference_client.py: %e s wall, %U s user, %S s sys, %M KiB max RSS" \
  python3 bench/reference_client.py --url "$URL" --concurrency "$CONC" --requests "$REQS" --output-len "$OUT_LEN"
