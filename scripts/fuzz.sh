#!/usr/bin/env bash
# The fuzzing benchmark (not part of CI): every reader's harness of tests/fuzz under libFuzzer with AddressSanitizer
# and UndefinedBehaviorSanitizer (clang, build-fuzz/), started from the checked-in corpus and dictionary; prints per
# reader the executions, crashes (any crash, sanitizer report or exception the reader does not document) and hangs
# (inputs running longer than the timeout), and the total.
#
#   scripts/fuzz.sh            # 100000 runs per reader (1.5M executions in all, 15 harnesses)
#   scripts/fuzz.sh 250000     # runs per reader
#   scripts/fuzz.sh 60s        # seconds per reader
#   FUZZ_READERS="json kineto" scripts/fuzz.sh 10s      # some readers only
#   FUZZ_TIMEOUT=10 (seconds per input), FUZZ_SKIP_BUILD=1 (run the harnesses build-fuzz/ holds)
#
# Installs clang and its libFuzzer runtime with apt when missing (the main build stays gcc). Findings are saved
# under build-fuzz/findings/<reader>/ (crash-*, timeout-*, oom-*): replay one with build-fuzz/fuzz/fuzz_<reader> FILE,
# or with the deterministic driver: build/fuzz/fuzz_<reader> FILE. Exit status 1 when anything was found.
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

budget=${1:-100000}
case "$budget" in
  *s) limit=(-max_total_time="${budget%s}" -runs=-1) ;;
  *[!0-9]* | "") echo "usage: scripts/fuzz.sh [RUNS_PER_READER | SECONDSs]" >&2; exit 2 ;;
  *) limit=(-runs="$budget") ;;
esac
timeout_s=${FUZZ_TIMEOUT:-10}   # per input; an input running longer is a hang
fuzz_dir="$repo_root/build-fuzz"
readers=${FUZZ_READERS:-"json trace_json kineto cluster_yaml model_yaml gpu_model_yaml framework_yaml gemm_table_csv
                          iteration_csv nccl_tests_log hf_config megatron_args chakra chakra_writer sweep_csv"}

if [ "${FUZZ_SKIP_BUILD:-0}" != 1 ]; then # FUZZ_SKIP_BUILD=1: run what build-fuzz/ holds
  install_missing_packages
  install_packages_if_missing clang libclang-rt-dev
  jobs=$(nproc 2>/dev/null || echo 2)
  say "configure: cmake -S $repo_root -B $fuzz_dir (clang, GPUTWIN_FUZZ=ON, GPUTWIN_SANITIZE=address,undefined)"
  cmake -S "$repo_root" -B "$fuzz_dir" -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
    -DCMAKE_BUILD_TYPE=Release "-DCMAKE_CXX_FLAGS_RELEASE=-O1 -g1" -DGPUTWIN_CUDA=OFF -DGPUTWIN_BUILD_TESTS=OFF \
    -DGPUTWIN_FUZZ=ON -DGPUTWIN_SANITIZE=address,undefined >/dev/null
  say "build: cmake --build $fuzz_dir -j $jobs --target fuzz_harnesses"
  cmake --build "$fuzz_dir" -j "$jobs" --target fuzz_harnesses
fi

# ASan: leaks are findings too (readers are plain C++; no SimGrid here). UBSan: every report aborts.
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1:symbolize=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
export GPUTWIN_FUZZ_STRICT_MESSAGES=${GPUTWIN_FUZZ_STRICT_MESSAGES:-0}

say "fuzz: ${limit[*]} per reader, timeout ${timeout_s} s per input, rss limit 2048 MB"
results=()
total_runs=0 total_crashes=0 total_hangs=0 total_ms=0
for reader in $readers; do
  binary="$fuzz_dir/fuzz/fuzz_$reader"
  findings="$fuzz_dir/findings/$reader"
  work="$fuzz_dir/corpus/$reader" # the corpus libFuzzer grows; the checked-in one is only read
  rm -rf "$findings"
  mkdir -p "$findings" "$work"
  dict=()
  [ -f "$repo_root/tests/fuzz/dict/$reader.dict" ] && dict=(-dict="$repo_root/tests/fuzz/dict/$reader.dict")
  log="$fuzz_dir/fuzz-$reader.log"
  : >"$log"
  start=$(date +%s%N)
  runs=0 load_timeouts=0 attempt=0
  # libFuzzer's timeout is wall-clock and it stops at the first one: on a loaded machine a slow input can pass it.
  # Each timeout input is replayed alone under the same timeout; one that then finishes is counted as a timeout of
  # the machine's load (kept under findings/<reader>/load/), not a hang, and a run budget resumes from the grown
  # corpus for the runs left (at most 5 times).
  while :; do
    attempt=$((attempt + 1))
    run_limit=("${limit[@]}")
    [[ "$budget" != *s ]] && run_limit=(-runs=$((budget - runs)))
    set +e
    "$binary" "${run_limit[@]}" "${dict[@]}" -timeout="$timeout_s" -rss_limit_mb=2048 -malloc_limit_mb=2048 \
      -max_len=65536 -print_final_stats=1 -artifact_prefix="$findings/" "$work" "$repo_root/tests/fuzz/corpus/$reader" \
      >"$log.part" 2>&1
    status=$?
    set -e
    cat "$log.part" >>"$log"
    part_runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log.part" | tail -1 || true)
    if [ -z "$part_runs" ]; then # died before its final stats: the last status line says how far it got
      part_runs=$(grep -o '^#[0-9]*' "$log.part" | tail -1 | tr -d '#' || true)
    fi
    runs=$((runs + ${part_runs:-0}))
    rm -f "$log.part"
    resumable=0
    for input in $(find "$findings" -maxdepth 1 -type f -name 'timeout-*'); do
      if timeout "$timeout_s" "$binary" "$input" >/dev/null 2>&1; then
        mkdir -p "$findings/load"
        mv "$input" "$findings/load/"
        load_timeouts=$((load_timeouts + 1))
        resumable=1
      fi
    done
    real_findings=$(find "$findings" -maxdepth 1 -type f \( -name 'crash-*' -o -name 'oom-*' -o -name 'leak-*' \
      -o -name 'timeout-*' \))
    if [ "$status" -ne 0 ] && [ "$resumable" -eq 1 ] && [ -z "$real_findings" ]; then
      if [[ "$budget" != *s ]] && [ "$runs" -lt "$budget" ] && [ "$attempt" -lt 6 ]; then
        continue
      fi
      status=0 # it ended on timeouts of the load alone; the executions say how far it got
    fi
    break
  done
  ms=$((($(date +%s%N) - start) / 1000000))
  seconds=$(awk -v ms="$ms" 'BEGIN { printf "%.1f", ms / 1000 }')
  crashes=$(find "$findings" -maxdepth 1 -type f \( -name 'crash-*' -o -name 'oom-*' -o -name 'leak-*' \) | wc -l)
  hangs=$(find "$findings" -maxdepth 1 -type f -name 'timeout-*' | wc -l)
  if [ "$status" -ne 0 ] && [ "$crashes" -eq 0 ] && [ "$hangs" -eq 0 ]; then
    crashes=1 # ended abnormally without an artifact: count it, the log says why
  fi
  results+=("$(printf '%-16s %12s %8s %6s %8s' "$reader" "$runs" "$crashes" "$hangs" "$seconds")")
  total_runs=$((total_runs + runs))
  total_crashes=$((total_crashes + crashes))
  total_hangs=$((total_hangs + hangs))
  total_ms=$((total_ms + ms))
  printf '==> %s: %s executions, %s crashes, %s hangs (%s s; log %s)\n' "$reader" "$runs" "$crashes" "$hangs" \
    "$seconds" "$log"
  [ "$load_timeouts" -gt 0 ] &&
    printf '    %s timeout(s) of the machine'"'"'s load: finished alone within %s s (kept in %s/load)\n' \
      "$load_timeouts" "$timeout_s" "$findings"
  if [ "$crashes" -ne 0 ] || [ "$hangs" -ne 0 ]; then
    grep -m1 -A3 -E 'ERROR: |fuzz finding|deadly signal|timeout after' "$log" | sed 's/^/    /' || true
    find "$findings" -type f | sed 's/^/    saved: /'
  fi
done

echo
printf '%-16s %12s %8s %6s %8s\n' reader executions crashes hangs seconds
printf '%s\n' "${results[@]}"
printf '%-16s %12s %8s %6s %8s\n' total "$total_runs" "$total_crashes" "$total_hangs" \
  "$(awk -v ms="$total_ms" 'BEGIN { printf "%.1f", ms / 1000 }')"
[ "$total_crashes" -eq 0 ] && [ "$total_hangs" -eq 0 ]
