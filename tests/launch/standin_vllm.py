#!/usr/bin/env python3
"""Stand-in for `vllm serve` in the launcher's end-to-end tests (tests/launch/process_test.cc).

Usage, as ppdeploy renders it: standin_vllm.py serve MODEL --host H --port P [--served-model-name N] ...
- Records its argv, environment and pid to $STANDIN_RECORD (JSON), plus the pid of a child it spawns
  (`sleep`), so a test can check that `ppdeploy stop` leaves no orphan in the process group.
- Serves GET /health (200 once $STANDIN_READY_DELAY_S seconds have passed, 503 before) and
  GET /v1/models ({"object": "list", "data": [{"id": NAME}]}) on 127.0.0.1:P.
- Exits on SIGTERM, unless $STANDIN_IGNORE_TERM=1 (to test the SIGKILL path).
- $STANDIN_EXIT_AFTER_S: exit with status 3 after that many seconds (to test "process died").
- With --headless (a native multi-node worker): no HTTP server, it only waits for SIGTERM.
"""
import http.server
import json
import os
import signal
import subprocess
import sys
import threading
import time

START = time.monotonic()


def arg(name, default=None):
    argv = sys.argv
    for i, a in enumerate(argv):
        if a == name and i + 1 < len(argv):
            return argv[i + 1]
    return default


def main():
    port = int(arg("--port", "8000"))
    name = arg("--served-model-name") or (sys.argv[2] if len(sys.argv) > 2 else "model")
    ready_delay = float(os.environ.get("STANDIN_READY_DELAY_S", "0"))
    child = subprocess.Popen(["sleep", "600"])
    record = os.environ.get("STANDIN_RECORD")
    if record:
        tmp = record + ".tmp"
        with open(tmp, "w") as f:
            json.dump({"argv": sys.argv[1:], "env": dict(os.environ), "pid": os.getpid(), "child_pid": child.pid,
                       "pgid": os.getpgid(0)}, f)
        os.replace(tmp, record)

    if os.environ.get("STANDIN_IGNORE_TERM") == "1":
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    else:
        def on_term(signum, frame):
            print("standin: SIGTERM, exiting", flush=True)
            os._exit(0)
        signal.signal(signal.SIGTERM, on_term)

    exit_after = os.environ.get("STANDIN_EXIT_AFTER_S")
    if exit_after:
        def die():
            time.sleep(float(exit_after))
            print("standin: exiting with status 3 (STANDIN_EXIT_AFTER_S)", flush=True)
            os._exit(3)
        threading.Thread(target=die, daemon=True).start()

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            ready = time.monotonic() - START >= ready_delay
            if self.path == "/health":
                code, body = (200, b"") if ready else (503, b"loading")
            elif self.path == "/v1/models":
                code = 200 if ready else 503
                body = json.dumps({"object": "list", "data": [{"id": name, "object": "model"}]}).encode()
            else:
                code, body = 404, b"not found"
            self.send_response(code)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, fmt, *args):
            print("standin: " + fmt % args, flush=True)

    if "--headless" in sys.argv:
        print(f"standin: headless worker of {name}, node rank {arg('--node-rank')}", flush=True)
        while True:
            time.sleep(3600)

    server = http.server.ThreadingHTTPServer(("127.0.0.1", port), Handler)
    print(f"standin: serving {name} on 127.0.0.1:{port}", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
