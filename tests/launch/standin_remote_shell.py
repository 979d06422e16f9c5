#!/usr/bin/env python3
"""Stand-in for `ssh -o BatchMode=yes HOST -- COMMAND...` in the multi-node tests.

Like ssh it takes options (-o VALUE), the host, an optional `--`, then the command's words, which it
joins with spaces and hands to the node's shell (`/bin/sh -c`). The "node" is this machine: the
command runs here, with a clean environment like a fresh ssh session (PATH, HOME) plus
STANDIN_DIR, STANDIN_HOST (the node) and STANDIN_RECORD ($STANDIN_DIR/vllm-<host>.json), and the
variables of $STANDIN_DIR/env-<host>.json when that file exists (per-node behaviour of the
stand-ins). Every call is appended to $STANDIN_DIR/remote-shell.jsonl: {"host", "words", "pid"}.
The "remote" processes run in the local remote shell's process group here, where on a real node they
would be another machine's: so they keep PPDEPLOY_RUN_TOKEN, which marks the local group's members as
ppdeploy's (launch/identity.h), as the ssh client's own children would.
A node with a file $STANDIN_DIR/unreachable-<host> answers like an unreachable ssh (exit 255).
<host> in file names: every character outside [A-Za-z0-9._-] replaced by '_'.
"""
import json
import os
import re
import sys


def safe(host):
    return re.sub(r"[^A-Za-z0-9._-]", "_", host)


def main():
    args = sys.argv[1:]
    while len(args) >= 2 and args[0] == "-o":
        args = args[2:]
    if not args:
        print("usage: standin_remote_shell.py [-o OPT]... HOST [--] COMMAND...", file=sys.stderr)
        return 255
    host, words = args[0], args[1:]
    if words and words[0] == "--":
        words = words[1:]
    d = os.environ["STANDIN_DIR"]
    with open(os.path.join(d, "remote-shell.jsonl"), "a") as f:
        f.write(json.dumps({"host": host, "words": words, "pid": os.getpid()}) + "\n")
    if os.path.exists(os.path.join(d, "unreachable-" + safe(host))):
        print(f"ssh: connect to host {host} port 22: No route to host", file=sys.stderr)
        return 255
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": os.environ.get("HOME", "/"),
           "STANDIN_DIR": d, "STANDIN_HOST": host,
           "STANDIN_RECORD": os.path.join(d, "vllm-" + safe(host) + ".json")}
    if "PPDEPLOY_RUN_TOKEN" in os.environ:
        env["PPDEPLOY_RUN_TOKEN"] = os.environ["PPDEPLOY_RUN_TOKEN"]
    extra = os.path.join(d, "env-" + safe(host) + ".json")
    if os.path.exists(extra):
        with open(extra) as f:
            env.update(json.load(f))
    os.execve("/bin/sh", ["sh", "-c", " ".join(words)], env)


if __name__ == "__main__":
    sys.exit(main())
