#!/bin/sh
# Stand-in `vllm` for the one-deployment-model end-to-end test (tests/launch/wait_e2e_test.cc):
# prints the boot-log lines in $STANDIN_BOOT_LOG (vLLM's log format, with the seed's measured
# figures), then becomes `ppdeploy sim` ($PPDEPLOY_SIM) serving the OpenAI API on the port and
# with the flags `ppdeploy start` rendered (`serve MODEL --host H --port P ...`).
cat "$STANDIN_BOOT_LOG"
# $STANDIN_KV_TOKENS, when set, is the pool the sim's own start-up log reports (its last boot).
exec "$PPDEPLOY_SIM" sim --accept-vllm-flags ${STANDIN_KV_TOKENS:+--kv-cache-tokens "$STANDIN_KV_TOKENS"} "$@"
