#!/bin/sh
# Stand-in `vllm` for the rebalance A/B end-to-end test (tests/cli/rebalance_e2e_test.cc): for the split it
# is given (VLLM_PP_LAYER_PARTITION, as `ppdeploy start` renders it) it asks the planner for that layout,
# writes what the stand-in nvidia-smi will report (the seed's measured per-GPU memory, docs/seed.md §6), and
# becomes `ppdeploy sim` with the planned pool and a vLLM-style per-rank boot log (--boot-plan).
# $STANDIN_DIR: where the plan and the nvidia-smi figures go; $STANDIN_DEGENERATE_SPLIT: the split whose
# answers degenerate (the sim's --degenerate-rate 1); $STANDIN_ITL_MS: ms per decoded token of every arm
# (default 1; slower lets a test interrupt a verify); $STANDIN_SIM_ARGS: more sim flags (word-split);
# $PPDEPLOY_SIM: the ppdeploy binary.
set -e
split="$VLLM_PP_LAYER_PARTITION"
if [ "$split" = "${STANDIN_FAIL_SPLIT:-}" ]; then
  echo "ValueError: No available memory for the cache blocks. (stand-in: the split $split cannot boot)" >&2
  exit 1
fi
if [ "$split" = "${STANDIN_HOLD_SPLIT:-}" ]; then
  while [ ! -e "$STANDIN_DIR/release" ]; do sleep 0.1; done
fi
plan="$STANDIN_DIR/plan-$split.json"
PP_LAYER_PARTITION="$split" "$PPDEPLOY_SIM" plan --no-enumerate --no-optimize --format json >"$plan"
case "$split" in
  39,39) pp0=72430 pp1=80118 ;;
  41,37) pp0=79441 pp1=79343 ;;
  *) pp0=70000 pp1=70000 ;;
esac
{
  echo "index, memory.used [MiB], memory.total [MiB]"
  for g in 0 1 2 3; do echo "$g, $pp0 MiB, 81920 MiB"; done
  for g in 4 5 6 7; do echo "$g, $pp1 MiB, 81920 MiB"; done
} >"$STANDIN_DIR/nvidia-smi.csv"
rate=0
[ "$split" = "${STANDIN_DEGENERATE_SPLIT:-}" ] && rate=1
itl="${STANDIN_ITL_MS:-1}"
arm_args=""
[ "$split" = "${STANDIN_ARM_SPLIT:-}" ] && arm_args="${STANDIN_ARM_ARGS:-}"
# shellcheck disable=SC2086
exec "$PPDEPLOY_SIM" sim --accept-vllm-flags --boot-plan "$plan" --degenerate-rate "$rate" --itl-ms "$itl" \
  --ttft-ms 5 ${STANDIN_SIM_ARGS:-} $arm_args "$@"
