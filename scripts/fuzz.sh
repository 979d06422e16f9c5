#!/usr/bin/env bash
# Builds the libFuzzer targets with clang-14 and runs each on its seed corpus in
# fuzz/corpus/<target> until its coverage stops growing, so that every target at least covers
# what its corpus covers and then explores past it. Fails on any crash, leak or sanitizer report.
#
# Usage: scripts/fuzz.sh [IDLE_SECONDS [MAX_SECONDS]]
#   A target stops after IDLE_SECONDS (default 60) without a new coverage edge (libFuzzer's
#   "cov:" figure; new features, "ft:", keep trickling in long after), but never before its
#   corpus is loaded ("INITED") plus MIN_SECONDS (default 20), and at MAX_SECONDS at the latest
#   (default 180). FUZZ_TARGETS="a b" runs only those targets.
#   FUZZ_TOTAL_SECONDS caps all targets together (CI: 420): each target gets at most its share
#   of what is left, so the whole run ends within that cap plus the build, however many
#   targets there are. A target still running 15 s past its limit is killed.
#   The seed corpora include up to 20 inputs per target kept from longer runs (grown-*: the
#   ones adding the most edges, from `-merge=1 -use_counters=0`).
set -euo pipefail
cd "$(dirname "$0")/.."
IDLE=${1:-60}
MAX=${2:-180}
MIN=${MIN_SECONDS:-20}
TOTAL=${FUZZ_TOTAL_SECONDS:-0}
scripts/install-deps.sh
BUILD_DIR=build-fuzz
CC=clang-14 CXX=clang++-14 cmake -S . -B "$BUILD_DIR" -G Ninja -DPPDEPLOY_FUZZ=ON -DPPDEPLOY_TESTS=OFF \
  -DPPDEPLOY_BENCH=OFF -DCMAKE_BUILD_TYPE=RelWithDebInfo -DPPDEPLOY_WERROR=ON \
  -DCMAKE_CXX_FLAGS="-fsanitize=fuzzer-no-link,address,undefined" >/dev/null
cmake --build "$BUILD_DIR" -j "${JOBS:-$(nproc)}" --target fuzz_targets

# Runs one target; prints its coverage when the corpus was loaded and at the end.
run_target() {
  local bin=$1 max=$2 name corpus work log pid start now inited_at last_new cov best=0 status=0
  name=$(basename "$bin")
  corpus=fuzz/corpus/${name%_fuzz}
  work=$(mktemp -d)
  log=$(mktemp)
  [[ -d $corpus ]] && cp -r "$corpus"/. "$work"/
  "$bin" -max_total_time="$max" -max_len=65536 -rss_limit_mb=4096 -print_final_stats=1 \
    -artifact_prefix="$work/" "$work" >"$log" 2>&1 &
  pid=$!
  start=$SECONDS inited_at="" last_new=$SECONDS
  while kill -0 "$pid" 2>/dev/null; do
    sleep 2
    now=$SECONDS
    if [[ -z $inited_at ]] && grep -q "INITED" "$log"; then inited_at=$now last_new=$now; fi
    cov=$(grep -oE "^#[0-9]+[[:space:]]+[A-Z]+[[:space:]]+cov: [0-9]+" "$log" | tail -n 1 | grep -oE "[0-9]+$" || echo 0)
    if ((cov > best)); then best=$cov last_new=$now; fi
    if ((now - start >= max + 15)); then  # past -max_total_time (a slow corpus load)
      echo "fuzz: $name still running after $((now - start))s: killed" >&2
      kill -KILL "$pid" 2>/dev/null || true
      break
    fi
    if [[ -n $inited_at ]] && ((now - inited_at >= MIN && now - last_new >= IDLE)); then
      kill -INT "$pid" 2>/dev/null || true  # libFuzzer prints its final stats and exits
      break
    fi
  done
  wait "$pid" || status=$?
  local init_cov end_cov
  init_cov=$(grep -m1 "INITED" "$log" | grep -o "cov: [0-9]*" || echo "cov: ?")
  end_cov=$(grep -E "^#[0-9]+" "$log" | tail -n 1 | grep -o "cov: [0-9]*" || echo "cov: ?")
  echo "fuzz: $name: corpus ${init_cov#cov: }, end ${end_cov#cov: } edges after $((SECONDS - start))s" \
    "(stops after ${IDLE}s without a new edge, or at ${max}s)"
  # A crash, leak or sanitizer report leaves an artifact and a non-zero status other than the
  # interrupt's; an interrupted run exits 0 (or 130 on some libFuzzer versions).
  if compgen -G "$work/crash-*" >/dev/null || compgen -G "$work/leak-*" >/dev/null ||
    compgen -G "$work/timeout-*" >/dev/null || compgen -G "$work/oom-*" >/dev/null ||
    grep -qE "ERROR: (AddressSanitizer|LeakSanitizer|UndefinedBehaviorSanitizer|libFuzzer)|runtime error:" "$log" ||
    { ((status != 0)) && ((status != 130)) && ((status != 72)) && ((status != 137)); }; then
    echo "fuzz: $name FAILED (status $status)" >&2
    tail -n 40 "$log" >&2
    ls "$work" | grep -E "^(crash|leak|timeout|oom)-" >&2 || true
    return 1
  fi
  rm -rf "$work" "$log"
}

shopt -s nullglob
bins=()
for bin in "$BUILD_DIR"/*_fuzz; do
  name=$(basename "$bin")
  if [[ -n "${FUZZ_TARGETS:-}" && " $FUZZ_TARGETS " != *" ${name%_fuzz} "* && " $FUZZ_TARGETS " != *" $name "* ]]; then
    continue
  fi
  bins+=("$bin")
done
failed=0 fuzz_start=$SECONDS
for ((i = 0; i < ${#bins[@]}; i++)); do
  max=$MAX
  if ((TOTAL > 0)); then
    share=$(((TOTAL - (SECONDS - fuzz_start)) / (${#bins[@]} - i)))
    ((share < max)) && max=$share
    ((max < 1)) && max=1
  fi
  run_target "${bins[i]}" "$max" || failed=1
done
echo "fuzz: ${#bins[@]} targets in $((SECONDS - fuzz_start))s"
exit "$failed"
