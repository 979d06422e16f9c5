#!/bin/sh
# Stand-in `nvidia-smi` (PPDEPLOY_NVIDIA_SMI): prints what the stand-in vllm of the serving arm wrote
# (`--query-gpu=index,memory.used,memory.total --format=csv` output).
cat "$STANDIN_DIR/nvidia-smi.csv"
