#!/usr/bin/env python3
"""Closed-loop load with vLLM's own request function, for bench/compare_vllm.sh.

Loads async_request_openai_chat_completions from a local copy of vLLM's
vllm/benchmarks/lib/endpoint_request_func.py (path in --request-funcs; vLLM's code is not part of ppdeploy
and is not committed here) and drives it the way `vllm bench serve --max-concurrency C --request-rate inf`
does (vllm/benchmarks/serve.py benchmark(): one aiohttp session whose TCPConnector is limited to C, one task
per request behind an asyncio.Semaphore(C)), after C warm-up requests that open the connections.

Prints one JSON line: requests, failures, output tokens, CPU seconds of this process during the measured
phase (resource.getrusage), and TTFT / ITL / E2EL medians and p99 in ms (vLLM's definitions: ITL per chunk,
E2EL to the last token chunk). Needs Debian's python3-aiohttp, python3-tqdm and python3-regex.
"""
import argparse
import asyncio
import importlib.util
import json
import resource
import statistics
import time


def load(path):
    spec = importlib.util.spec_from_file_location("vllm_endpoint_request_func", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def pct(values, q):
    if not values:
        return 0.0
    s = sorted(values)
    rank = q / 100 * (len(s) - 1)
    lo = int(rank)
    hi = min(lo + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (rank - lo)


WORDS = ("alpha river stone garden window paper letter number table light water green silver quiet bright "
         "gentle careful modern ancient local").split()


def prompt(i, words):
    return " ".join([str(i)] + [WORDS[(i * 7 + k * 13) % len(WORDS)] for k in range(words)])


async def run(m, args):
    import aiohttp

    api_url = args.url.rstrip("/") + "/v1/chat/completions"
    # As vllm/benchmarks/serve.py benchmark() builds its session.
    connector = aiohttp.TCPConnector(limit=args.concurrency, limit_per_host=args.concurrency, ttl_dns_cache=300,
                                     use_dns_cache=True, keepalive_timeout=60, enable_cleanup_closed=True,
                                     force_close=False)
    async with aiohttp.ClientSession(connector=connector, trust_env=True, timeout=m.AIOHTTP_TIMEOUT) as session:
        sem = asyncio.Semaphore(args.concurrency)

        def make(i):
            return m.RequestFuncInput(prompt=prompt(i, args.prompt_words), api_url=api_url, prompt_len=args.prompt_words,
                                      output_len=args.output_len, model=args.model, ignore_eos=True,
                                      extra_body={"min_tokens": args.output_len})

        async def limited(rfi):
            async with sem:
                return await m.async_request_openai_chat_completions(rfi, session)

        await asyncio.gather(*[limited(make(-1 - i)) for i in range(args.concurrency)])  # warm-up
        r0 = resource.getrusage(resource.RUSAGE_SELF)
        t0 = time.perf_counter()
        outs = await asyncio.gather(*[asyncio.create_task(limited(make(i))) for i in range(args.requests)])
        wall = time.perf_counter() - t0
        r1 = resource.getrusage(resource.RUSAGE_SELF)
    ok = [o for o in outs if o.success]
    ttft = [o.ttft * 1000 for o in ok]
    itl = [x * 1000 for o in ok for x in o.itl]
    e2el = [o.latency * 1000 for o in ok]
    return {
        "client": "vllm-request-func",
        "requests": len(outs),
        "failed": len(outs) - len(ok),
        "output_tokens": sum(o.output_tokens or 0 for o in ok),
        "wall_s": wall,
        "cpu_s": (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime),
        "ttft_ms_median": statistics.median(ttft) if ttft else 0,
        "ttft_ms_p99": pct(ttft, 99),
        "itl_ms_median": statistics.median(itl) if itl else 0,
        "itl_ms_p99": pct(itl, 99),
        "e2el_ms_median": statistics.median(e2el) if e2el else 0,
    }


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--request-funcs", required=True, help="path to vLLM's endpoint_request_func.py")
    ap.add_argument("--url", required=True)
    ap.add_argument("--model", default="ppdeploy-sim")
    ap.add_argument("--concurrency", type=int, default=16)
    ap.add_argument("--requests", type=int, default=256)
    ap.add_argument("--output-len", type=int, default=64)
    ap.add_argument("--prompt-words", type=int, default=14)
    args = ap.parse_args()
    print(json.dumps(asyncio.run(run(load(args.request_funcs), args))))


if __name__ == "__main__":
    main()
