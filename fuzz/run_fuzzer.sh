#!/bin/sh
# Runs one fuzzer for a bounded time on its seed corpus (see fuzz/CMakeLists.txt). A crash, an
# input that takes over 10 s, a leak or more than 2 GiB of memory exits non-zero.
# usage: run_fuzzer.sh BINARY SEED_DIR WORK_DIR SECONDS
set -eu
bin=$1 seeds=$2 work=$3 seconds=$4
mkdir -p "$work/corpus" "$work/artifacts"
exec "$bin" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
  -artifact_prefix="$work/artifacts/" "$work/corpus" "$seeds"
