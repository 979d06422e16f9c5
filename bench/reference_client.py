#!/usr/bin/env python3
"""Reference streaming client in another stack (Python standard library only: asyncio + raw HTTP/1.1).

Closed-loop load like `ppdeploy bench`: N concurrent keep-alive connections, each sending streaming
/v1/chat/completions requests back to back, parsing chunked transfer encoding and SSE, and counting output
tokens from the server's usage (stream_options.include_usage). Prints one JSON line with requests/s and
streamed tokens/s, so the C++ client's throughput can be compared side by side (bench/run_client_throughput.sh).

Usage: reference_client.py --url http://127.0.0.1:PORT --concurrency 64 --requests 4000 --output-len 32
"""
import argparse
import asyncio
import json
import time
from urllib.parse import urlparse


async def read_chunked_sse(reader):
    """Reads one chunked SSE response body; returns (completion_tokens, events, saw_done)."""
    buf = b""
    tokens = 0
    events = 0
    done = False
    while True:
        size_line = await reader.readline()
        size = int(size_line.strip().split(b";")[0], 16)
        if size == 0:
            await reader.readline()  # trailing CRLF
            break
        data = await reader.readexactly(size + 2)
        buf += data[:-2]
        while b"\n\n" in buf:
            event, buf = buf.split(b"\n\n", 1)
            for line in event.split(b"\n"):
                if not line.startswith(b"data:"):
                    continue
                payload = line[5:].strip()
                events += 1
                if payload == b"[DONE]":
                    done = True
                    continue
                chunk = json.loads(payload)
                usage = chunk.get("usage")
                if usage and not chunk.get("choices"):
                    tokens = usage.get("completion_tokens", tokens)
    return tokens, events, done


async def worker(host, port, body, counter, results):
    reader, writer = await asyncio.open_connection(host, port)
    request = (
        f"POST /v1/chat/completions HTTP/1.1\r\nHost: {host}:{port}\r\nContent-Type: application/json\r\n"
        f"Accept: text/event-stream\r\nContent-Length: {len(body)}\r\n\r\n"
    ).encode() + body
    while counter[0] > 0:
        counter[0] -= 1
        writer.write(request)
        await writer.drain()
        status = await reader.readline()
        if b" 200 " not in status:
            results["errors"] += 1
        while (await reader.readline()) not in (b"\r\n", b""):
            pass
        tokens, events, done = await read_chunked_sse(reader)
        results["tokens"] += tokens
        results["events"] += events
        results["requests"] += 1 if done else 0
    writer.close()


async def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--url", required=True)
    ap.add_argument("--model", default="ppdeploy-sim")
    ap.add_argument("--concurrency", type=int, default=64)
    ap.add_argument("--requests", type=int, default=4000)
    ap.add_argument("--output-len", type=int, default=32)
    args = ap.parse_args()
    u = urlparse(args.url)
    body = json.dumps({
        "model": args.model,
        "messages": [{"role": "user", "content": "reference client prompt"}],
        "max_tokens": args.output_len, "min_tokens": args.output_len, "ignore_eos": True, "stream": True,
        "stream_options": {"include_usage": True, "continuous_usage_stats": True},
    }).encode()
    counter = [args.requests]
    results = {"requests": 0, "tokens": 0, "events": 0, "errors": 0}
    t0 = time.perf_counter()
    await asyncio.gather(*(worker(u.hostname, u.port, body, counter, results) for _ in range(args.concurrency)))
    wall = time.perf_counter() - t0
    print(json.dumps({"client": "python-asyncio-stdlib", "concurrency": args.concurrency, **results,
                      "wall_s": round(wall, 3), "requests_per_s": round(results["requests"] / wall, 1),
                      "tokens_per_s": round(results["tokens"] / wall, 1)}))


if __name__ == "__main__":
    asyncio.run(main())
