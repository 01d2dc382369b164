#!/usr/bin/env python3
"""Writes moe_quant_types.json: the type llama-quantize gives every tensor of some qwen35moe GGUF
files under each preset, read from its --dry-run report (no file is written, so this takes seconds
even at the real 35B-A3B shapes). README.md in this folder says which files and the commands.

  make_moe_quant_types.py --llama-quantize BIN --out moe_quant_types.json \
      --model NAME FILE N_LAYERS N_GQA N_EXPERT [KEY=TYPE:VALUE ...] [--model ...]

N_LAYERS is llama.cpp's n_layer_all (block_count, the MTP block included), N_GQA the attention
heads per KV head, N_EXPERT the expert count llama-quantize sees (after any --override-kv given as
KEY=TYPE:VALUE after it). A preset llama-quantize refuses for a file gets null instead of types.
"""
from __future__ import annotations

import argparse
import json
import re
import subprocess

PRESETS = ["F32", "F16", "BF16", "Q8_0", "Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q2_K", "Q3_K_S", "Q3_K_M", "Q3_K_L",
           "Q4_K_S", "Q4_K_M", "Q5_K_S", "Q5_K_M", "Q6_K", "IQ4_NL", "IQ4_XS"]

# [  12/ 149] blk.0.ffn_down_exps.weight - [  512,  2048,   256,     1], type =   q8_0, size = ... (q6_K)
LINE = re.compile(r"^\[\s*\d+/\s*\d+\]\s+(\S+)\s+- \[([\d,\s]+)\], type =\s+(\S+), size =[^(]*(?:\((\S+)\))?\s*$")


def dry_run(bin_path: str, path: str, preset: str, overrides: list[str]) -> list[tuple[str, list[int], str]] | None:
    """Every tensor's (name, ne, type), or None where llama-quantize refuses the preset (a row
    length that fits neither the type's blocks nor its fallback's, e.g. the tiny MoE's shared
    expert width 48 under the 32-element formats, which have no fallback)."""
    cmd = [bin_path, "--dry-run", "--allow-requantize"]
    for o in overrides:
        cmd += ["--override-kv", o]
    cmd += [path, preset, "1"]
    out = subprocess.run(cmd, capture_output=True, text=True)
    if out.returncode != 0:
        if "no tensor type fallback is defined" in out.stdout + out.stderr:
            return None
        raise SystemExit(f"llama-quantize failed on {path} {preset}:\n{out.stdout}{out.stderr}")
    rows = []
    for line in (out.stdout + out.stderr).splitlines():
        m = LINE.match(line.strip())
        if not m:
            continue
        ne = [int(x) for x in m.group(2).split(",")]
        while len(ne) > 1 and ne[-1] == 1:  # ggml_n_dims: trailing ones do not count
            ne.pop()
        # No "(type)" at the end: the tensor keeps its stored type.
        rows.append((m.group(1), ne, m.group(4) or m.group(3)))
    if not rows:
        raise SystemExit(f"no tensor lines in llama-quantize's report for {path} {preset}")
    return rows


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--llama-quantize", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--model", nargs="+", action="append", required=True)
    args = ap.parse_args()
    models = []
    for spec in args.model:
        name, path, n_layers, n_gqa, n_expert, *overrides = spec
        entry = {"name": name, "n_layers": int(n_layers), "n_gqa": int(n_gqa), "n_expert": int(n_expert),
                 "override_kv": overrides, "tensors": None, "types": {}}
        for preset in PRESETS:
            rows = dry_run(args.llama_quantize, path, preset, overrides)
            if rows is None:
                entry["types"][preset] = None  # llama-quantize refuses it
                continue
            tensors = [[n, ne] for n, ne, _ in rows]
            if entry["tensors"] is None:
                entry["tensors"] = tensors
            elif entry["tensors"] != tensors:
                raise SystemExit(f"{path}: the tensor list changed between presets")
            entry["types"][preset] = [t for _, _, t in rows]
        models.append(entry)
    with open(args.out, "w") as f:
        json.dump({"llama_cpp_commit": "3f545becc", "models": models}, f, separators=(",", ":"))
        f.write("\n")


if __name__ == "__main__":
    main()
