#!/usr/bin/env bash
# Benchmarks of the simulator itself: wall time and peak memory of real CLI runs, one line per case with its target
# (issue 29's figures, and the earlier cases). Each case runs BENCH_REPEAT times (default 3): the median wall time
# and the largest peak RSS are printed, with "ok" or "MISSED" against the targets.
# Usage: scripts/bench.sh [build-dir]     (after scripts/run.sh or scripts/test.sh has built build/gputwin)
#        BENCH_REPEAT=1 scripts/bench.sh  (one run per case)
#        BENCH_ONLY=sweep scripts/bench.sh (the cases whose name contains the text)
set -euo pipefail
build_dir=${1:-$(cd "$(dirname "$0")/.." && pwd)/build}
gputwin="$build_dir/gputwin"
repeat=${BENCH_REPEAT:-3}
only=${BENCH_ONLY:-}
[ -x "$gputwin" ] || { echo "bench: $gputwin not built (run scripts/test.sh first)" >&2; exit 1; }
case "$repeat" in '' | *[!0-9]* | 0) echo "bench: BENCH_REPEAT: expected a positive integer, got '$repeat'" >&2; exit 2 ;; esac
work_dir=$(mktemp -d)
trap 'rm -rf "$work_dir"' EXIT
missed=0

bench() { # name, target seconds, target MiB ("-": none), command...
  local name=$1 target_s=$2 target_mib=$3
  shift 3
  [ -z "$only" ] || [[ "$name" == *"$only"* ]] || return 0
  local walls=() rss_max_kb=0 out wall_s rss_kb
  for ((run = 0; run < repeat; run++)); do
    if ! /usr/bin/time -o "$work_dir/time" -f '%e %M' "$@" >/dev/null 2>"$work_dir/stderr"; then
      echo "bench: $name: the command failed: $(head -c 300 "$work_dir/stderr")" >&2
      missed=1
      return 0
    fi
    out=$(tail -n 1 "$work_dir/time")
    wall_s=${out% *} rss_kb=${out#* }
    walls+=("$wall_s")
    ((rss_kb > rss_max_kb)) && rss_max_kb=$rss_kb
  done
  local median_s
  median_s=$(printf '%s\n' "${walls[@]}" | sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }')
  local rss_mib=$((rss_max_kb / 1024)) verdict=ok
  awk -v a="$median_s" -v b="$target_s" 'BEGIN { exit !(a <= b) }' || verdict=MISSED
  if [ "$target_mib" != - ] && ((rss_mib > target_mib)); then verdict=MISSED; fi
  [ "$verdict" = ok ] || missed=1
  printf '%-66s wall %7.2f s (target %5s s)  peak RSS %6d MiB (target %5s)  %s\n' "$name" "$median_s" "$target_s" \
    "$rss_mib" "$target_mib" "$verdict"
}

echo "# gputwin benchmarks on $(nproc) cores, $(date -u +%Y-%m-%d), median of $repeat run(s), peak RSS the largest"
# Issue 29's checks.
bench "sweep gpt3-175b, dgx-a100 and dgx-h100 x 64..1024 GPUs (10 points)" 30 2048 \
  "$gputwin" sweep --model gpt3-175b --cluster dgx-a100,dgx-h100 --gpus 64,128,256,512,1024 --global-batch 1536 \
  --tokens 300e9 --price-per-gpu-hour 2 --csv "$work_dir/s.csv" --plot "$work_dir/s.png"
overlaps=(--sp --tp-comm-overlap --overlap-grad-reduce --overlap-param-gather --zero 1 --attention flash)
bench "simulate gpt3-175b TP 4 PP 8 x12 FP8 overlaps, dp 128 (4096 H100)" 5 - \
  "$gputwin" simulate --model gpt3-175b --cluster dgx-h100 --tp 4 --pp 8 --schedule interleaved --chunks 12 --fp8 \
  "${overlaps[@]}" --dp 128 --global-batch 2048 --json
bench "simulate gpt3-175b TP 4 PP 8 x12 FP8 overlaps, dp 336 (10752 H100)" 15 - \
  "$gputwin" simulate --model gpt3-175b --cluster dgx-h100 --tp 4 --pp 8 --schedule interleaved --chunks 12 --fp8 \
  "${overlaps[@]}" --dp 336 --global-batch 2688 --json
# As issue 29 names it (global batch 8192), the run is refused three ways: 126 layers do not split into 16 equal stages
# (Llama 3's own layout has 7 layers on the first and last stage: Dubey et al. 2024, section 3.3.2), 8192 sequences
# do not split over dp 768 (12288 = 16 micro-batches each), and 12,288 nodes do not fit three levels of radix-64
# switches (radix 128: Spectrum-4 / Quantum-X800 class switches, as 100k-GPU clusters use).
bench "simulate llama3-405b TP 8 PP 16 dp 768 (98304 H100), seq 8192" 60 8192 \
  "$gputwin" simulate --model llama3-405b --cluster dgx-h100 --set fabric.switch_radix=128 --tp 8 --pp 16 \
  --pp-first-stage-layers 7 --pp-last-stage-layers 7 --dp 768 --global-batch 12288 --seq-len 8192 "${overlaps[@]}" --json
bench "simulate gpt-1t, TP 8 PP 64 DP 6, 3072 GPUs" 3 4096 \
  "$gputwin" simulate --model gpt-1t --tp 8 --pp 64 --dp 6 --global-batch 3072 --micro-batch 1 --sp \
  --recompute selective --json
# Issue 27's check: DeepSeek-V3 on 512 H100 with EP 64 (its 102.6 GiB stage does not fit 80 GB: --allow-oom).
bench "simulate deepseek-v3 TP 2 PP 8 EP 64 DP 32 (512 H100), 128 micro-batches" 60 - \
  "$gputwin" simulate --model deepseek-v3 --cluster dgx-h100 --tp 2 --pp 8 --ep 64 --dp 32 --global-batch 4096 \
  --micro-batch 1 --seq-len 4096 --allow-oom --json
# Issue 30 item 5: a table far past the memory limit is refused from a sample of its rows (exit 2 expected).
awk 'BEGIN { print "# GPUs,global batch,micro batch,hidden size,attention heads,# layers,sequence length,tensor parallelism,data parallelism,pipeline parallelism,iteration time (ms)";
             for (h = 0; h < 1000; h++) for (l = 1; l <= 100; l++) printf "2,16,8,%d,16,%d,1024,1,1,2,%d\n", 1024 + 64 * h, 2 * l, 300 + (h * 100 + l) % 100 }' \
  >"$work_dir/rows.csv"
bench "compare --iterations, 100k distinct rows, refused (memory)" 1 200 \
  bash -c '"$1" compare --iterations "$2" --cluster dgx-a100 --recompute full --schedule 1f1b --vocab 50257 2>/dev/null; [ $? = 2 ]' \
  _ "$gputwin" "$work_dir/rows.csv"
awk 'BEGIN { print "# GPUs,global batch,micro batch,hidden size,attention heads,# layers,sequence length,tensor parallelism,data parallelism,pipeline parallelism,iteration time (ms)";
             for (h = 0; h < 10000; h++) for (l = 1; l <= 100; l++) printf "2,16,8,%d,16,%d,1024,1,1,2,%d\n", 1024 + 64 * h, 2 * l, 300 + (h * 100 + l) % 100 }' \
  >"$work_dir/rows1m.csv"
bench "calibrate --iterations, 1M distinct rows (35 MB), refused (memory)" 1 200 \
  bash -c '"$1" calibrate --iterations "$2" -o "$3" --cluster dgx-a100 --recompute full --schedule 1f1b --vocab 50257 2>/dev/null; [ $? = 2 ]' \
  _ "$gputwin" "$work_dir/rows1m.csv" "$work_dir/fit.yaml"
bench "all-to-all 1 GiB, 1024 H100 (dgx-h100, a million flows)" 2 - \
  "$gputwin" collective --cluster dgx-h100 --op all-to-all --ranks 1024 --bytes 1G --json
# Earlier cases.
bench "8 GiB all-reduce, 1024 GPUs (dgx-a100, 128 nodes)" 5 - \
  "$gputwin" collective --cluster dgx-a100 --op all-reduce --ranks 1024 --bytes 8G --json
bench "all-reduce sweep 1M:8G, 128 GPUs (dgx-a100, 16 nodes)" 5 - \
  "$gputwin" collective --cluster dgx-a100 --op all-reduce --ranks 128 --sweep 1M:8G --json
bench "simulate gpt-1t, Table 3 plan, SP + selective, 512 GPUs" 10 - \
  "$gputwin" simulate --model gpt-1t --plan paper --sp --recompute selective --json
bench "simulate gpt3-175b, TP 8 PP 16 DP 128, 16384 H100 (dgx-h100)" 60 - \
  "$gputwin" simulate --model gpt3-175b --cluster dgx-h100 --tp 8 --pp 16 --dp 128 --global-batch 4096 \
  --micro-batch 1 --sp --recompute selective --json
bench "8 GiB all-reduce, 16384 H100 (dgx-h100, 2048 nodes)" 10 - \
  "$gputwin" collective --cluster dgx-h100 --op all-reduce --ranks 16384 --bytes 8G --json
bench "estimate gpt3-175b, TP 8 PP 8 DP 1, 1536 micro-batches" 5 - \
  "$gputwin" simulate --model gpt3-175b --cluster dgx-a100 --tp 8 --pp 8 --dp 1 --global-batch 1536 \
  --micro-batch 1 --sp --recompute selective --estimate --json
bench "simulate gpt3-175b, TP 4 PP 16 x2 chunks DP 1, 1536 micro-batches" 30 - \
  "$gputwin" simulate --model gpt3-175b --cluster dgx-a100 --tp 4 --pp 16 --dp 1 --global-batch 1536 \
  --micro-batch 1 --sp --recompute selective --schedule interleaved --chunks 2 --json
[ "$missed" = 0 ] || echo "bench: some cases missed their targets (MISSED above)"
