#!/usr/bin/env python3
"""Summarizes a bench/compare_llama.sh folder: median tok/s per engine, model and test over the
rounds, and the ratios of qwen35 to each other engine. Writes summary.json and summary.md there
and prints the table."""
import json
import pathlib
import re
import statistics
import sys


def tests_of(path):
    """(test name, tok/s samples, extra) for every test object in one engine's JSON output."""
    try:
        data = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError):
        return []
    if isinstance(data, dict):
        data = [data]
    out = []
    for o in data:
        n_prompt, n_gen = int(o.get("n_prompt", 0)), int(o.get("n_gen", 0))
        name = f"pp{n_prompt}" if n_prompt and not n_gen else f"tg{n_gen}" if n_gen and not n_prompt else f"pp{n_prompt}+tg{n_gen}"
        if int(o.get("n_depth", 0)):
            name += f"@d{o['n_depth']}"
        samples = o.get("samples_ts") or [o.get("avg_ts", 0)]
        extra = {k: o[k] for k in ("bandwidth_share", "weights_read_share", "effective_GBps", "peak_rss_bytes",
                                   "read_bandwidth_GBps") if k in o}
        out.append((name, [float(s) for s in samples], extra))
    return out


def main():
    folder = pathlib.Path(sys.argv[1])
    runs = {}  # (model, test) -> engine -> [tok/s]
    extras = {}
    pattern = re.compile(r"^(qwen35|llama|ik)-(.+)-(\d+)\.json$")
    for f in sorted(folder.glob("*.json")):
        m = pattern.match(f.name)
        if not m:
            continue
        engine, model = m.group(1), m.group(2)
        for test, samples, extra in tests_of(f):
            runs.setdefault((model, test), {}).setdefault(engine, []).extend(samples)
            if engine == "qwen35":
                extras.setdefault((model, test), []).append(extra)
    rows = []
    for (model, test), by_engine in sorted(runs.items()):
        med = {e: statistics.median(v) for e, v in by_engine.items() if v}
        row = {"model": model, "test": test, "median_ts": med, "samples": {e: len(v) for e, v in by_engine.items()}}
        q = med.get("qwen35")
        for other in ("llama", "ik"):
            if q and med.get(other):
                row[f"qwen35_over_{other}"] = q / med[other]
        for key in ("bandwidth_share", "weights_read_share"):
            share = [x[key] for x in extras.get((model, test), []) if x.get(key)]
            if share:
                row["qwen35_" + key] = statistics.median(share)
        rss = [x["peak_rss_bytes"] for x in extras.get((model, test), []) if x.get("peak_rss_bytes")]
        if rss:
            row["qwen35_peak_rss_GiB"] = max(rss) / 2**30
        rows.append(row)
    (folder / "summary.json").write_text(json.dumps(rows, indent=2) + "\n")

    def fmt(x, spec=".2f"):
        return "-" if x is None else format(x, spec)

    def ratio(x):
        return "-" if x is None else format(x, ".2f") + "x"

    def percent(x):
        return "-" if x is None else format(100 * x, ".0f") + "%"

    lines = ["| model | test | qwen35 tok/s | llama.cpp | ik_llama.cpp | qwen35 / llama.cpp | qwen35 / ik "
             "| qwen35 share of read bandwidth | of a plain read of the weights |",
             "|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        m = r["median_ts"]
        lines.append(f"| {r['model']} | {r['test']} | {fmt(m.get('qwen35'))} | {fmt(m.get('llama'))} | {fmt(m.get('ik'))} | "
                     f"{ratio(r.get('qwen35_over_llama'))} | {ratio(r.get('qwen35_over_ik'))} | "
                     f"{percent(r.get('qwen35_bandwidth_share'))} | {percent(r.get('qwen35_weights_read_share'))} |")
    text = "\n".join(lines) + "\n"
    (folder / "summary.md").write_text(text)
    print(text, end="")


if __name__ == "__main__":
    main()
