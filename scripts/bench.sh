#!/usr/bin/env bash
# Benchmarks of the simulator itself (wall time and peak memory of real CLI runs); prints one line per case.
# Usage: scripts/bench.sh [build-dir]   (after scripts/run.sh or scripts/test.sh has built build/gputwin)
set -euo pipefail
build_dir=${1:-$(cd "$(dirname "$0")/.." && pwd)/build}
gputwin="$build_dir/gputwin"
[ -x "$gputwin" ] || { echo "bench: $gputwin not built (run scripts/test.sh first)" >&2; exit 1; }

bench() { # name, target seconds, command...
  local name=$1 target_s=$2
  shift 2
  local out
  out=$( { /usr/bin/time -f '%e %M' "$@" >/dev/null; } 2>&1 | tail -n 1)
  local wall_s=${out% *} rss_kb=${out#* }
  printf '%-58s wall %6.2f s (target < %s s)  peak RSS %6.0f MiB\n' "$name" "$wall_s" "$target_s" "$((rss_kb / 1024))"
}

echo "# gputwin benchmarks on $(nproc) cores, $(date -u +%Y-%m-%d)"
bench "8 GiB all-reduce, 1024 GPUs (dgx-a100, 128 nodes)" 5 \
  "$gputwin" collective --cluster dgx-a100 --op all-reduce --ranks 1024 --bytes 8G --json
bench "all-reduce sweep 1M:8G, 128 GPUs (dgx-a100, 16 nodes)" 5 \
  "$gputwin" collective --cluster dgx-a100 --op all-reduce --ranks 128 --sweep 1M:8G --json
bench "simulate gpt-1t, Table 3 plan, SP + selective, 512 GPUs" 10 \
  "$gputwin" simulate --model gpt-1t --plan paper --sp --recompute selective --json
bench "simulate gpt-1t, TP 8 PP 64 DP 6, 3072 GPUs (also < 4 GiB)" 10 \
  "$gputwin" simulate --model gpt-1t --tp 8 --pp 64 --dp 6 --global-batch 3072 --micro-batch 1 --sp \
  --recompute selective --json
bench "simulate gpt3-175b, TP 8 PP 16 DP 128, 16384 H100 (dgx-h100)" 60 \
  "$gputwin" simulate --model gpt3-175b --cluster dgx-h100 --tp 8 --pp 16 --dp 128 --global-batch 4096 \
  --micro-batch 1 --sp --recompute selective --json
bench "8 GiB all-reduce, 16384 H100 (dgx-h100, 2048 nodes)" 10 \
  "$gputwin" collective --cluster dgx-h100 --op all-reduce --ranks 16384 --bytes 8G --json
bench "all-to-all 1 GiB, 1024 H100 (dgx-h100, a million flows)" 30 \
  "$gputwin" collective --cluster dgx-h100 --op all-to-all --ranks 1024 --bytes 1G --json
# Issue 29's steady state: many micro-batches per pipeline (the estimate and the flow-level simulation), and the
# sweep whose points each search and confirm such plans.
bench "estimate gpt3-175b, TP 8 PP 8 DP 1, 1536 micro-batches" 5 \
  "$gputwin" simulate --model gpt3-175b --cluster dgx-a100 --tp 8 --pp 8 --dp 1 --global-batch 1536 \
  --micro-batch 1 --sp --recompute selective --estimate --json
bench "simulate gpt3-175b, TP 4 PP 16 x2 chunks DP 1, 1536 micro-batches" 30 \
  "$gputwin" simulate --model gpt3-175b --cluster dgx-a100 --tp 4 --pp 16 --dp 1 --global-batch 1536 \
  --micro-batch 1 --sp --recompute selective --schedule interleaved --chunks 2 --json
sweep_dir=$(mktemp -d)
bench "sweep gpt3-175b, dgx-a100 and dgx-h100 x 64..1024 GPUs (10 points)" 30 \
  "$gputwin" sweep --model gpt3-175b --cluster dgx-a100,dgx-h100 --gpus 64,128,256,512,1024 --global-batch 1536 \
  --tokens 300e9 --price-per-gpu-hour 2 --csv "$sweep_dir/s.csv"
rm -rf "$sweep_dir"
