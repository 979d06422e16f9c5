#!/usr/bin/env bash
# Runs a command while every core is kept busy by another process (one busy loop per core), the
# way a loaded CI machine or `stress --cpu N` would: timing-sensitive tests must still pass.
# Usage: scripts/with-cpu-load.sh [-n LOOPS] COMMAND [ARGS...]   (default LOOPS: nproc)
# The busy loops run at the same priority as the command and are stopped (by their PIDs) when it
# exits, whatever its status; the command's exit status is returned.
set -euo pipefail
loops=$(nproc)
if [[ "${1:-}" == "-n" ]]; then
  loops=$2
  shift 2
fi
if (($# == 0)); then
  echo "usage: $0 [-n LOOPS] COMMAND [ARGS...]" >&2
  exit 2
fi
pids=()
stop_loops() {
  local pid
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
}
trap stop_loops EXIT
for ((i = 0; i < loops; i++)); do
  bash -c 'while :; do :; done' &
  pids+=($!)
done
echo "with-cpu-load: ${loops} busy loop(s) running (PIDs ${pids[*]})" >&2
status=0
"$@" || status=$?
exit "$status"
