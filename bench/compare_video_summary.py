#!/usr/bin/env python3
"""Summarizes a bench/compare_video.sh folder: per engine the medians over the rounds of the seconds
to decode the clip's frames (with their preprocessing) and to run the vision tower over them, the
frame pairs and vision tokens each made of the clip, and the ratios llama-mtmd-cli / qwen35 (above 1:
qwen35 is faster). Writes summary.json and summary.md there and prints the table."""
import json
import pathlib
import re
import statistics
import sys

STAMP = re.compile(r"^(\d+)\.(\d{2})\.(\d{3})\.(\d{3}) ")


def qwen35_run(path):
    """video_bench's JSON: the one case's counters (already averaged over its iterations)."""
    try:
        data = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError):
        return None
    for b in data.get("benchmarks", []):
        if b.get("run_type", "iteration") == "iteration" and "vision_s" in b:
            return {
                "decode_s": b["decode_s"], "load_s": b["load_s"], "vision_s": b["vision_s"],
                "decode_vision_s": b["load_s"] + b["vision_s"],
                "pairs": (b["frames_sampled"] + 1) // 2, "tokens": b["video_tokens"],
            }
    return None


def llama_run(path):
    """llama-mtmd-cli's log with --log-timestamps (minutes.seconds.ms.us since its start)."""
    try:
        lines = path.read_text(errors="replace").splitlines()
    except OSError:
        return None
    last_stamp = None  # the stamp of the latest timestamped line
    start = first_encode = None
    vision_ms = 0
    pairs = tokens = 0
    want_tokens = False
    for line in lines:
        m = STAMP.match(line)
        stamp = None
        if m:
            mi, s, ms, us = (int(g) for g in m.groups())
            stamp = mi * 60 + s + ms / 1e3 + us / 1e6
        if "encoding mtmd batch" in line:
            if first_encode is None:
                first_encode, start = stamp, last_stamp
            n = re.search(r"n_chunks = (\d+)", line)
            pairs += int(n.group(1)) if n else 0
        if (x := re.search(r"mtmd batch encoding done in (\d+) ms", line)):
            vision_ms += int(x.group(1))
            want_tokens = True
        # A pair's tokens are placed right after its encoding; M-RoPE positions jump, and the KV
        # cache warns "... with N new tokens" (the only place the default log gives the count).
        if want_tokens and (x := re.search(r"find_slot: .* with (\d+) new tokens", line)):
            tokens += int(x.group(1))
            want_tokens = False
        if stamp is not None:
            last_stamp = stamp
    if first_encode is None or start is None:
        return None
    preprocess = first_encode - start
    return {
        "decode_s": preprocess, "load_s": preprocess, "vision_s": vision_ms / 1e3,
        "decode_vision_s": preprocess + vision_ms / 1e3,
        "pairs": pairs, "tokens": tokens,
    }


def main():
    folder = pathlib.Path(sys.argv[1])
    runs = {}  # engine -> [run]
    for f in sorted(folder.iterdir()):
        if (m := re.match(r"^(qwen35|qwen35-4fps)-(\d+)\.json$", f.name)):
            r = qwen35_run(f)
        elif (m := re.match(r"^(llama)-(\d+)\.log$", f.name)):
            r = llama_run(f)
        else:
            continue
        if r:
            runs.setdefault(m.group(1), []).append(r)
    keys = ["decode_s", "load_s", "vision_s", "decode_vision_s", "pairs", "tokens"]
    summary = {e: {k: statistics.median(r[k] for r in rs) for k in keys} | {"rounds": len(rs)} for e, rs in runs.items()}
    ratios = {}
    if "llama" in summary:
        for e in ("qwen35", "qwen35-4fps"):
            if e in summary:
                ratios[f"llama/{e}"] = {k: summary["llama"][k] / summary[e][k] for k in ("vision_s", "decode_vision_s")
                                        if summary[e][k] > 0}
                per_token = {x: summary[x]["decode_vision_s"] / summary[x]["tokens"] for x in ("llama", e)
                             if summary[x]["tokens"] > 0}
                if len(per_token) == 2:
                    ratios[f"llama/{e}"]["decode_vision_s_per_token"] = per_token["llama"] / per_token[e]
    (folder / "summary.json").write_text(json.dumps({"engines": summary, "ratios": ratios}, indent=2) + "\n")
    rows = ["| engine | rounds | frame pairs | vision tokens | decode (+ preprocess) s | vision s | decode + vision s |",
            "|---|---|---|---|---|---|---|"]
    for e, s in summary.items():
        rows.append(f"| {e} | {s['rounds']} | {s['pairs']:.0f} | {s['tokens']:.0f} | {s['load_s']:.2f} | {s['vision_s']:.2f} | "
                    f"{s['decode_vision_s']:.2f} |")
    for name, r in ratios.items():
        rows.append("")
        rows.append(f"{name}: " + ", ".join(f"{k} {v:.2f}x" for k, v in r.items()))
    text = "\n".join(rows) + "\n"
    (folder / "summary.md").write_text(text)
    print(text, end="")


if __name__ == "__main__":
    main()
