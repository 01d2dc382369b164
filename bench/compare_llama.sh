#!/usr/bin/env bash
# Side-by-side prompt and generation speed of qwen35 and llama.cpp / ik_llama.cpp on the same
# GGUF files: every round runs each engine once per model (one repetition each, engines in turn),
# so a noisy shared machine disturbs all of them alike; the summary gives medians over rounds and
# the ratios qwen35 / other.
#
#   bench/compare_llama.sh --llama ~/llama.cpp/build/bin/llama-bench \
#       --ik ~/ik_llama.cpp/build/bin/llama-bench -m a.gguf -m b.gguf [-p 512] [-n 128] [-t 2] \
#       [--rounds 3] [--out DIR] [--qwen35 build/bin/qwen35] [-- extra qwen35 bench options]
#
# llama.cpp runs with -lm none, ik_llama.cpp with -mmp 0 -rtr 1 (their fastest CPU settings on
# the development machine). Omit --llama or --ik to leave that engine out. Raw JSON of every run,
# the commands and the summary (summary.json, summary.md) go to --out.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
qwen35="$here/../build/bin/qwen35"
llama="" ik="" p=512 n=128 t=2 rounds=3 out="bench-compare-$(date +%Y%m%d-%H%M%S)"
models=() extra=()
while [ $# -gt 0 ]; do
  case "$1" in
    -m) models+=("$2"); shift 2 ;;
    -p) p="$2"; shift 2 ;;
    -n) n="$2"; shift 2 ;;
    -t) t="$2"; shift 2 ;;
    --rounds) rounds="$2"; shift 2 ;;
    --out) out="$2"; shift 2 ;;
    --llama) llama="$2"; shift 2 ;;
    --ik) ik="$2"; shift 2 ;;
    --qwen35) qwen35="$2"; shift 2 ;;
    --) shift; extra=("$@"); break ;;
    -h|--help) sed -n '2,14p' "$0"; exit 0 ;;
    *) echo "compare_llama.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
done
[ ${#models[@]} -gt 0 ] || { echo "compare_llama.sh: give at least one -m MODEL.gguf" >&2; exit 2; }
for m in "${models[@]}"; do [ -f "$m" ] || { echo "compare_llama.sh: no such file: $m" >&2; exit 2; }; done
[ -x "$qwen35" ] || { echo "compare_llama.sh: qwen35 binary not found at $qwen35 (--qwen35)" >&2; exit 2; }
# The summary reads every result file in --out, so an earlier run's rounds there would be mixed in.
if compgen -G "$out/qwen35-*.json" > /dev/null || compgen -G "$out/llama-*.json" > /dev/null ||
   compgen -G "$out/ik-*.json" > /dev/null; then
  echo "compare_llama.sh: $out already holds results of an earlier run; give a new --out" >&2
  exit 2
fi
mkdir -p "$out"
log="$out/commands.log"
: > "$log"

run() {  # engine model round -> out/engine-modelname-round.json
  local engine="$1" model="$2" round="$3" name
  name="$(basename "$model" .gguf)"
  local cmd
  case "$engine" in
    qwen35) cmd=("$qwen35" bench -m "$model" -p "$p" -n "$n" -t "$t" -r 1 --json ${extra[@]+"${extra[@]}"}) ;;
    llama)  cmd=("$llama" -m "$model" -p "$p" -n "$n" -t "$t" -r 1 -lm none -o json) ;;
    ik)     cmd=("$ik" -m "$model" -p "$p" -n "$n" -t "$t" -r 1 -mmp 0 -rtr 1 -o json) ;;
  esac
  echo "$(date -Is) round $round: ${cmd[*]}" >> "$log"
  if ! "${cmd[@]}" > "$out/$engine-$name-$round.json" 2> "$out/$engine-$name-$round.log"; then
    echo "compare_llama.sh: $engine failed on $name (see $out/$engine-$name-$round.log)" >&2
    rm -f "$out/$engine-$name-$round.json"
  fi
  echo "$(date -Is) load $(cut -d' ' -f1-3 /proc/loadavg)" >> "$log"
}

engines=(qwen35)
[ -n "$llama" ] && engines+=(llama)
[ -n "$ik" ] && engines+=(ik)
for ((r = 1; r <= rounds; r++)); do
  for m in "${models[@]}"; do
    # The order rotates every round so no engine always runs right after a model load.
    for ((i = 0; i < ${#engines[@]}; i++)); do
      e="${engines[$(( (i + r - 1) % ${#engines[@]} ))]}"
      echo "round $r/$rounds: $e on $(basename "$m")" >&2
      run "$e" "$m" "$r"
    done
  done
done
python3 "$here/compare_summary.py" "$out"
