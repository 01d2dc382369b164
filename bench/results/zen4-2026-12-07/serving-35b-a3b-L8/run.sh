#!/bin/bash
# MoE serving: qwen35 serve vs llama-server -np 4, 1 and 4 clients, 128 tokens.
M=/work/models/qwen35moe-35b-a3b-L8-Q4_K_M.gguf
OUT=/work/runs/s6/moe-load; mkdir -p $OUT; rm -f $OUT/load.jsonl
cd /work/main
wait_ready() { for i in $(seq 1 300); do curl -sf $1/health >/dev/null && return 0; sleep 1; done; return 1; }
for round in 1 2; do
  build/bin/qwen35 serve -m $M --port 8301 --parallel 4 --ctx 4096 --threads 2 > $OUT/qwen35-serve-$round.log 2>&1 &
  P=$!; wait_ready http://127.0.0.1:8301 && python3 bench/load_bench.py --url http://127.0.0.1:8301 --clients 1,4 --tokens 128 --label qwen35 --json $OUT/load.jsonl
  kill $P; wait $P
  /work/peers/llama.cpp/build/bin/llama-server -m $M --port 8302 -np 4 -c 16384 -t 2 -lm none > $OUT/llama-server-$round.log 2>&1 &
  P=$!; wait_ready http://127.0.0.1:8302 && python3 bench/load_bench.py --url http://127.0.0.1:8302 --clients 1,4 --tokens 128 --label llama-server --json $OUT/load.jsonl
  kill $P; wait $P
done
