#!/usr/bin/env python3
"""Stand-in for the `ray` CLI in the multi-node tests (run on a "node" by standin_remote_shell.py).

- `ray start --head --port P [--node-ip-address IP] [--block]` and
  `ray start --address HOST:P [--node-ip-address IP] [--block]`: register this node ($STANDIN_HOST)
  in $STANDIN_DIR/ray-cluster/<host>.json with its GPUs (the ids in CUDA_VISIBLE_DEVICES, else 8);
  a worker whose --address is no registered head fails like Ray (exit 1). With --block it stays
  until `ray stop` on the node removes the registration or SIGTERM arrives.
  $STANDIN_RAY_JOIN_DELAY_S: register only after that many seconds. $STANDIN_EXIT_AFTER_S: exit 3
  after that many seconds (also while it waits to join).
- `ray status [--address HOST:P]`: Ray 2.x's autoscaler status with an "Active:" list and a
  "Resources ... Usage: 0.0/16.0 GPU" block over the registered nodes.
- `ray stop [--force]`: removes this node's registration (its `ray start --block` then exits);
  --force also SIGKILLs it.
Every call is appended to $STANDIN_DIR/ray-calls.jsonl: {"host", "argv", "env", "pid"}.
"""
import hashlib
import json
import os
import signal
import sys
import time

D = os.environ["STANDIN_DIR"]
HOST = os.environ.get("STANDIN_HOST", "localhost")
CLUSTER = os.path.join(D, "ray-cluster")


def safe(host):
    return "".join(c if (c.isascii() and c.isalnum()) or c in "._-" else "_" for c in host)


def arg(name):
    argv = sys.argv
    for i, a in enumerate(argv):
        if a == name and i + 1 < len(argv):
            return argv[i + 1]
    return None


def registrations():
    out = []
    if os.path.isdir(CLUSTER):
        for name in sorted(os.listdir(CLUSTER)):
            try:
                with open(os.path.join(CLUSTER, name)) as f:
                    out.append(json.load(f))
            except (OSError, ValueError):
                pass
    return out


def reg_path():
    return os.path.join(CLUSTER, safe(HOST) + ".json")


def start():
    head = "--head" in sys.argv
    address = f"{HOST}:{arg('--port') or 6379}" if head else arg("--address")
    if not head and not any(r["role"] == "head" and r["address"] == address for r in registrations()):
        print(f"ConnectionError: could not connect to the GCS at {address}", flush=True)
        return 1
    cvd = os.environ.get("CUDA_VISIBLE_DEVICES")
    gpus = len(cvd.split(",")) if cvd else 8
    delay = float(os.environ.get("STANDIN_RAY_JOIN_DELAY_S", "0"))
    exit_after = os.environ.get("STANDIN_EXIT_AFTER_S")
    t0 = time.monotonic()
    while time.monotonic() - t0 < delay:
        time.sleep(0.1)
        if exit_after and time.monotonic() - t0 >= float(exit_after):
            print("ray: exiting with status 3 before joining (STANDIN_EXIT_AFTER_S)", flush=True)
            return 3
    os.makedirs(CLUSTER, exist_ok=True)
    tmp = reg_path() + ".tmp"
    with open(tmp, "w") as f:
        json.dump({"host": HOST, "role": "head" if head else "worker", "gpus": gpus, "pid": os.getpid(),
                   "address": address}, f)
    os.replace(tmp, reg_path())
    print("Ray runtime started.", flush=True)
    if "--block" not in sys.argv:
        return 0

    def on_term(signum, frame):
        try:
            os.remove(reg_path())
        except OSError:
            pass
        os._exit(0)

    signal.signal(signal.SIGTERM, on_term)
    while True:
        time.sleep(0.1)
        if not os.path.exists(reg_path()):
            print("ray: stopped by `ray stop`", flush=True)
            return 0
        if exit_after and time.monotonic() - t0 >= float(exit_after):
            os.remove(reg_path())
            print("ray: exiting with status 3 (STANDIN_EXIT_AFTER_S)", flush=True)
            return 3


def status():
    regs = registrations()
    address = arg("--address")
    if not any(r["role"] == "head" and (address is None or r["address"] == address) for r in regs):
        print(f"ConnectionError: Could not find any running Ray instance at {address}", flush=True)
        return 1
    gpus = sum(r["gpus"] for r in regs)
    print("======== Autoscaler status: 2025-04-09 09:25:37.694016 ========")
    print("Node status")
    print("-" * 63)
    print("Active:")
    for r in regs:
        print(" 1 node_" + hashlib.sha256(r["host"].encode()).hexdigest()[:56])
    print("Pending:")
    print(" (no pending nodes)")
    print("Recent failures:")
    print(" (no failures)")
    print()
    print("Resources")
    print("-" * 63)
    print("Usage:")
    print(f" 0.0/{16.0 * len(regs)} CPU")
    print(f" 0.0/{float(gpus)} GPU")
    print(" 0B/1.58TiB memory")
    print(" 0B/372.53GiB object_store_memory")
    print()
    print("Demands:")
    print(" (no resource demands)")
    return 0


def stop():
    try:
        with open(reg_path()) as f:
            pid = json.load(f)["pid"]
        os.remove(reg_path())
    except (OSError, ValueError, KeyError):
        print("Did not find any active Ray processes.")
        return 0
    if "--force" in sys.argv:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
    print("Stopped all 5 Ray processes.")
    return 0


def main():
    with open(os.path.join(D, "ray-calls.jsonl"), "a") as f:
        f.write(json.dumps({"host": HOST, "argv": sys.argv[1:], "env": dict(os.environ), "pid": os.getpid()}) + "\n")
    command = sys.argv[1] if len(sys.argv) > 1 else ""
    if command == "start":
        return start()
    if command == "status":
        return status()
    if command == "stop":
        return stop()
    print(f"standin ray: unknown command {command!r}", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
