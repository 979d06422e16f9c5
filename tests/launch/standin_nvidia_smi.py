#!/usr/bin/env python3
"""Stand-in for `nvidia-smi --query-gpu=index,name,memory.total --format=csv,noheader,nounits` on a
"node" of the multi-node tests (linked as `nvidia-smi` into a directory on PATH).

Prints $STANDIN_DIR/nvidia-smi-<host>.txt when it exists (<host> = $STANDIN_HOST with characters
outside [A-Za-z0-9._-] as '_'), else eight A100-SXM4-80GB lines as the real tool prints them
(e.g. "0, NVIDIA A100-SXM4-80GB, 81920"). Other arguments: exit 2, as nvidia-smi does for a query
it does not know.
"""
import os
import sys


def main():
    if sys.argv[1:] != ["--query-gpu=index,name,memory.total", "--format=csv,noheader,nounits"]:
        print("Invalid combination of input arguments. Please run 'nvidia-smi -h' for help.", file=sys.stderr)
        return 2
    host = os.environ.get("STANDIN_HOST", "localhost")
    safe = "".join(c if (c.isascii() and c.isalnum()) or c in "._-" else "_" for c in host)
    path = os.path.join(os.environ["STANDIN_DIR"], "nvidia-smi-" + safe + ".txt")
    if os.path.exists(path):
        with open(path) as f:
            sys.stdout.write(f.read())
        return 0
    for i in range(8):
        print(f"{i}, NVIDIA A100-SXM4-80GB, 81920")
    return 0


if __name__ == "__main__":
    sys.exit(main())
