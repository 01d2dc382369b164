#!/usr/bin/env python3
"""Load benchmark for OpenAI-compatible servers: N concurrent streaming chat clients, each asking
for a fixed number of tokens (ignore_eos), against `qwen35 serve` or llama.cpp's `llama-server`
(started by the caller with the same model, threads and parallel slots). Reports, per client
count: aggregate generated tok/s (all tokens / wall time from the first request to the last
token), steady tok/s (from the last client's first token to the last token), all-streaming tok/s
(from the last client's first token to the first client's last: every client streams), time to
first token and inter-token latency p50/p99, as JSON lines and a table.

  bench/load_bench.py --url http://127.0.0.1:8000 --clients 1,2,4,8 --tokens 64 [--label qwen35]

Every client sends a different prompt of about --prompt-words words (so no prefix is shared)
and streams the answer; a token is one SSE chunk with content or reasoning text (both servers
send one chunk per token). Only the Python standard library is used."""
import argparse
import http.client
import json
import statistics
import sys
import threading
import time
import urllib.parse


def percentile(xs, q):
    if not xs:
        return None
    xs = sorted(xs)
    k = (len(xs) - 1) * q
    lo, hi = int(k), min(int(k) + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (k - lo)


def one_client(url, model, index, tokens, words, out):
    u = urllib.parse.urlparse(url)
    conn = http.client.HTTPConnection(u.hostname, u.port or 80, timeout=3600)
    prompt = f"Client {index}: " + " ".join(f"w{(index * 7919 + i) % 5000}" for i in range(words))
    body = {
        "model": model,
        "messages": [{"role": "user", "content": prompt}],
        "max_tokens": tokens,
        "temperature": 0,
        "ignore_eos": True,
        "stream": True,
        "chat_template_kwargs": {"enable_thinking": False},
    }
    t0 = time.perf_counter()
    conn.request("POST", "/v1/chat/completions", json.dumps(body), {"Content-Type": "application/json"})
    resp = conn.getresponse()
    if resp.status != 200:
        out.update(error=f"HTTP {resp.status}: {resp.read()[:200]!r}")
        return
    stamps = []
    buf = b""
    while True:
        chunk = resp.read1(65536) if hasattr(resp, "read1") else resp.read(1)
        if not chunk:
            break
        buf += chunk
        while b"\n\n" in buf:
            event, buf = buf.split(b"\n\n", 1)
            for line in event.split(b"\n"):
                if not line.startswith(b"data: "):
                    continue
                data = line[6:]
                if data == b"[DONE]":
                    continue
                try:
                    obj = json.loads(data)
                except json.JSONDecodeError:
                    continue
                for ch in obj.get("choices", []):
                    d = ch.get("delta", {})
                    if d.get("content") or d.get("reasoning_content"):
                        stamps.append(time.perf_counter())
    out.update(start=t0, stamps=stamps)


def run(url, model, clients, tokens, words):
    results = [dict() for _ in range(clients)]
    threads = [threading.Thread(target=one_client, args=(url, model, i, tokens, words, results[i])) for i in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    errors = [r["error"] for r in results if "error" in r]
    if errors:
        raise RuntimeError("; ".join(errors))
    start = min(r["start"] for r in results)
    end = max(r["stamps"][-1] for r in results if r["stamps"])
    n = sum(len(r["stamps"]) for r in results)
    ttft = [r["stamps"][0] - r["start"] for r in results if r["stamps"]]
    itl = [b - a for r in results for a, b in zip(r["stamps"], r["stamps"][1:])]
    def rate(lo, hi):  # tokens stamped in (lo, hi] over hi - lo
        if hi <= lo:
            return None
        return sum(sum(1 for s in r["stamps"] if lo < s <= hi) for r in results) / (hi - lo)

    # Steady: from the last client's first token to the last token. It runs on while the clients
    # that started first drain one by one; the all-streaming window closes when the first client
    # is done, so every client streams through all of it: the rate of `clients` concurrent streams.
    last_first = max(r["stamps"][0] for r in results if r["stamps"])
    first_last = min(r["stamps"][-1] for r in results if r["stamps"])
    return {
        "clients": clients,
        "tokens_per_client": tokens,
        "generated_tokens": n,
        "aggregate_tps": n / (end - start),
        "steady_aggregate_tps": rate(last_first, end),
        "all_streaming_tps": rate(last_first, first_last),
        "ttft_p50_s": percentile(ttft, 0.5),
        "ttft_p99_s": percentile(ttft, 0.99),
        "itl_p50_ms": 1000 * percentile(itl, 0.5),
        "itl_p99_ms": 1000 * percentile(itl, 0.99),
        "wall_s": end - start,
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--url", required=True)
    ap.add_argument("--model", default="default")
    ap.add_argument("--clients", default="1,2,4,8")
    ap.add_argument("--tokens", type=int, default=64)
    ap.add_argument("--prompt-words", type=int, default=32)
    ap.add_argument("--label", default="")
    ap.add_argument("--json", default="", help="append JSON lines here")
    args = ap.parse_args()
    rows = []
    for c in [int(x) for x in args.clients.split(",")]:
        r = run(args.url.rstrip("/"), args.model, c, args.tokens, args.prompt_words)
        r["label"] = args.label
        rows.append(r)
        print(json.dumps(r), file=sys.stderr)
        if args.json:
            with open(args.json, "a") as f:
                f.write(json.dumps(r) + "\n")
    print("| server | clients | aggregate tok/s | steady tok/s | all-streaming tok/s | TTFT p50 / p99 s | ITL p50 / p99 ms |")
    print("|---|---|---|---|---|---|---|")
    def cell(x):
        return "-" if x is None else f"{x:.2f}"

    for r in rows:
        print(f"| {r['label']} | {r['clients']} | {r['aggregate_tps']:.2f} | {cell(r['steady_aggregate_tps'])} | "
              f"{cell(r['all_streaming_tps'])} | "
              f"{r['ttft_p50_s']:.2f} / {r['ttft_p99_s']:.2f} | {r['itl_p50_ms']:.0f} / {r['itl_p99_ms']:.0f} |")


if __name__ == "__main__":
    main()
