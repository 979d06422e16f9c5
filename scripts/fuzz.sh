#!/usr/bin/env bash
# Builds the libFuzzer targets with clang-14 and runs each on its seed corpus in
# fuzz/corpus/<target> until its coverage stops growing, so that every target at least covers
# what its corpus covers and then explores past it. Fails on any crash, leak or sanitizer report.
#
# Usage: scripts/fuzz.sh [IDLE_SECONDS [MAX_SECONDS]]
#   A target stops after IDLE_SECONDS (default 60) without new coverage ("NEW" in libFuzzer's
#   log), but never before its seed corpus is loaded ("INITED") plus MIN_SECONDS (default 20),
#   and never after MAX_SECONDS (default 300). FUZZ_TARGETS="a b" runs only those targets.
set -euo pipefail
cd "$(dirname "$0")/.."
IDLE=${1:-60}
MAX=${2:-300}
MIN=${MIN_SECONDS:-20}
scripts/install-deps.sh
BUILD_DIR=build-fuzz
CC=clang-14 CXX=clang++-14 cmake -S . -B "$BUILD_DIR" -G Ninja -DPPDEPLOY_FUZZ=ON -DPPDEPLOY_TESTS=OFF \
  -DPPDEPLOY_BENCH=OFF -DCMAKE_BUILD_TYPE=RelWithDebInfo -DPPDEPLOY_WERROR=ON \
  -DCMAKE_CXX_FLAGS="-fsanitize=fuzzer-no-link,address,undefined" >/dev/null
cmake --build "$BUILD_DIR" -j "${JOBS:-$(nproc)}" --target fuzz_targets

# Runs one target; prints its coverage when the corpus was loaded and at the end.
run_target() {
  local bin=$1 name corpus work log pid start now inited_at last_new new_lines lines status=0
  name=$(basename "$bin")
  corpus=fuzz/corpus/${name%_fuzz}
  work=$(mktemp -d)
  log=$(mktemp)
  [[ -d $corpus ]] && cp -r "$corpus"/. "$work"/
  "$bin" -max_total_time="$MAX" -max_len=65536 -rss_limit_mb=4096 -print_final_stats=1 \
    -artifact_prefix="$work/" "$work" >"$log" 2>&1 &
  pid=$!
  start=$SECONDS inited_at="" last_new=$SECONDS new_lines=0
  while kill -0 "$pid" 2>/dev/null; do
    sleep 2
    now=$SECONDS
    if [[ -z $inited_at ]] && grep -q "INITED" "$log"; then inited_at=$now last_new=$now; fi
    lines=$(grep -c " NEW " "$log" || true)
    if ((lines > new_lines)); then new_lines=$lines last_new=$now; fi
    if [[ -n $inited_at ]] && ((now - inited_at >= MIN && now - last_new >= IDLE)); then
      kill -INT "$pid" 2>/dev/null || true  # libFuzzer prints its final stats and exits
      break
    fi
  done
  wait "$pid" || status=$?
  local init_cov end_cov
  init_cov=$(grep -m1 "INITED" "$log" | grep -o "cov: [0-9]*" || echo "cov: ?")
  end_cov=$(grep -E "^#[0-9]+" "$log" | tail -n 1 | grep -o "cov: [0-9]*" || echo "cov: ?")
  echo "fuzz: $name: seeds ${init_cov#cov: }, end ${end_cov#cov: } edges after $((SECONDS - start))s" \
    "(stopped after ${IDLE}s without new coverage, or at ${MAX}s)"
  # A crash, leak or sanitizer report leaves an artifact and a non-zero status other than the
  # interrupt's; an interrupted run exits 0 (or 130 on some libFuzzer versions).
  if compgen -G "$work/crash-*" >/dev/null || compgen -G "$work/leak-*" >/dev/null ||
    compgen -G "$work/timeout-*" >/dev/null || compgen -G "$work/oom-*" >/dev/null ||
    grep -qE "ERROR: (AddressSanitizer|LeakSanitizer|UndefinedBehaviorSanitizer|libFuzzer)|runtime error:" "$log" ||
    { ((status != 0)) && ((status != 130)) && ((status != 72)); }; then
    echo "fuzz: $name FAILED (status $status)" >&2
    tail -n 40 "$log" >&2
    ls "$work" | grep -E "^(crash|leak|timeout|oom)-" >&2 || true
    return 1
  fi
  rm -rf "$work" "$log"
}

shopt -s nullglob
failed=0
for bin in "$BUILD_DIR"/*_fuzz; do
  name=$(basename "$bin")
  if [[ -n "${FUZZ_TARGETS:-}" && " $FUZZ_TARGETS " != *" ${name%_fuzz} "* && " $FUZZ_TARGETS " != *" $name "* ]]; then
    continue
  fi
  run_target "$bin" || failed=1
done
exit "$failed"
