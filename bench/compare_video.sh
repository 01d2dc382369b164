#!/usr/bin/env bash
# A video question, qwen35 beside llama.cpp's llama-mtmd-cli, on the same text GGUF, the same
# mmproj and the same clip, 2 threads each: how long each takes to decode the clip's frames and
# run the vision tower over them (issue 46's figure), besides the tokens each made of the clip.
#
#   bench/compare_video.sh --mtmd ~/llama.cpp/build/bin/llama-mtmd-cli -m TEXT.gguf --mmproj MMPROJ.gguf \
#       --video CLIP.mkv [--rounds 3] [--out DIR] [--video-bench build/bin/video_bench]
#
# The clip must be readable from a pipe (llama-mtmd-cli pipes it into ffprobe and ffmpeg): Matroska
# as `video_bench --write-clip` writes it, or an MP4 with its index in front. The text GGUF needs
# the real Qwen3.5 special tokens for qwen35 to place the video (tools/gguf_swap_tokenizer).
#
# Every round runs, in an order that rotates: qwen35 as the official processor samples (2 fps, its
# token budget: "qwen35"), qwen35 at llama-mtmd-cli's rate ("qwen35-4fps"), and llama-mtmd-cli once.
# llama-mtmd-cli samples 4 frames per second (its video helper's fixed default, FFmpeg's fps filter
# in an ffmpeg subprocess) and sizes each frame alone, so "qwen35-4fps" is the like-for-like run:
# the same frames (as far as the two samplers agree) and about the same tokens; compare the token
# counts the summary prints before reading a ratio.
#
# qwen35: bench/video_bench's case video/seconds:10/threads:2 on QWEN35_BENCH_VIDEO (the case's
# "seconds" names the clip it would synthesize and is ignored for a given file), 3 iterations per
# run; decode_s (open + decode the sampled frames), load_s (that + resize + patches), vision_s.
# llama-mtmd-cli: one answer of one token with --log-timestamps; vision is the sum of its "mtmd
# batch encoding done in N ms", and decode + preprocess is the time from the end of its warm-up
# (the last log line before it starts tokenizing) to its first "encoding mtmd batch" line: its
# mtmd_tokenize reads every frame from the ffmpeg pipe and preprocesses it before any encoding.
# Neither engine's prefill of the prompt (thousands of vision tokens through the text model) is
# part of the figure; a text GGUF cut to a few layers (tools/gguf_swap_tokenizer --layers 4) keeps
# it short. Raw outputs, the commands and the summary (summary.json, summary.md) go to --out.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
video_bench="$here/../build/bin/video_bench"
mtmd="" model="" mmproj="" video="" rounds=3 ctx=32768 out="video-compare-$(date +%Y%m%d-%H%M%S)"
prompt="What happens in this video?"
while [ $# -gt 0 ]; do
  case "$1" in
    --mtmd) mtmd="$2"; shift 2 ;;
    -m) model="$2"; shift 2 ;;
    --mmproj) mmproj="$2"; shift 2 ;;
    --video) video="$2"; shift 2 ;;
    --rounds) rounds="$2"; shift 2 ;;
    --ctx) ctx="$2"; shift 2 ;;
    --out) out="$2"; shift 2 ;;
    --video-bench) video_bench="$2"; shift 2 ;;
    -h|--help) sed -n '2,32p' "$0"; exit 0 ;;
    *) echo "compare_video.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
done
for f in "$model" "$mmproj" "$video"; do
  [ -n "$f" ] && [ -f "$f" ] || { echo "compare_video.sh: give -m TEXT.gguf, --mmproj MMPROJ.gguf and --video CLIP (files)" >&2; exit 2; }
done
[ -x "$video_bench" ] || { echo "compare_video.sh: video_bench not found at $video_bench (--video-bench)" >&2; exit 2; }
[ -z "$mtmd" ] || [ -x "$mtmd" ] || { echo "compare_video.sh: no llama-mtmd-cli at $mtmd" >&2; exit 2; }
[ -z "$mtmd" ] || command -v ffmpeg > /dev/null || { echo "compare_video.sh: llama-mtmd-cli reads video through the ffmpeg program, which is not on PATH" >&2; exit 2; }
if compgen -G "$out/*-[0-9]*.json" > /dev/null || compgen -G "$out/llama-[0-9]*.log" > /dev/null; then
  echo "compare_video.sh: $out already holds results of an earlier run; give a new --out" >&2
  exit 2
fi
mkdir -p "$out"
log="$out/commands.log"
: > "$log"

run() {  # engine round
  local engine="$1" round="$2" rc=0
  local -a cmd env=(QWEN35_BENCH_MODEL="$model" QWEN35_BENCH_MMPROJ="$mmproj" QWEN35_BENCH_VIDEO="$video")
  case "$engine" in
    qwen35|qwen35-4fps)
      [ "$engine" = qwen35-4fps ] && env+=(QWEN35_BENCH_VIDEO_FPS=4)
      cmd=(env "${env[@]}" "$video_bench" '--benchmark_filter=^video/seconds:10/threads:2/'
           --benchmark_format=json "--benchmark_out=$out/$engine-$round.json")
      echo "$(date -Is) round $round: ${cmd[*]}" >> "$log"
      "${cmd[@]}" > "$out/$engine-$round.log" 2>&1 || rc=$?
      grep -q '"vision_s"' "$out/$engine-$round.json" 2> /dev/null || { [ "$rc" != 0 ] || rc=1; } ;;
    llama)
      cmd=("$mtmd" -m "$model" --mmproj "$mmproj" --video "$video" -p "$prompt" -n 1 -t 2 -c "$ctx" --temp 0
           --log-timestamps)
      echo "$(date -Is) round $round: ${cmd[*]}" >> "$log"
      # SIGPIPE ignored: its helper feeds the file to ffprobe through a pipe, and ffprobe exits once
      # it has read the headers, which would otherwise kill llama-mtmd-cli (exit 141).
      (trap '' PIPE; exec "${cmd[@]}") > "$out/llama-$round.log" 2>&1 < /dev/null || rc=$?
      grep -q "mtmd batch encoding done" "$out/llama-$round.log" || { [ "$rc" != 0 ] || rc=1; } ;;
  esac
  [ "$rc" = 0 ] || echo "compare_video.sh: $engine failed in round $round (see $out/$engine-$round.log)" >&2
  echo "$(date -Is) load $(cut -d' ' -f1-3 /proc/loadavg)" >> "$log"
}

engines=(qwen35 qwen35-4fps)
[ -n "$mtmd" ] && engines+=(llama)
for ((r = 1; r <= rounds; r++)); do
  for ((i = 0; i < ${#engines[@]}; i++)); do
    e="${engines[$(( (i + r - 1) % ${#engines[@]} ))]}"
    echo "round $r/$rounds: $e" >&2
    run "$e" "$r"
  done
done
python3 "$here/compare_video_summary.py" "$out"
