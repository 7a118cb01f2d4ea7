#!/usr/bin/env bash
# CI's sanitizer stage (.ci/run runs it after scripts/test.sh): the libraries and their unit tests built with
# AddressSanitizer + UndefinedBehaviorSanitizer (gcc -O1 -g1; every UBSan report is fatal, -fno-sanitize-recover=all;
# float-cast-overflow on top of `undefined`, which leaves it out) in build-asan/, and run by ctest: the readers
# (trace JSON, YAML, CSV, nccl-tests logs), the models, topologies, collectives, both executors (SimGrid and the DAG
# estimator), the engine's kernels, numerics, tracer and communicators, and every fuzz corpus (`ctest -L fuzz`).
# The test sources themselves are compiled at -O0 with AddressSanitizer only (tests/CMakeLists.txt): the libraries
# under test keep every sanitizer, and UBSan on the tests' own assertions cost ~2 minutes of this stage's build.
#
# Not here: the tests that drive the `gputwin` / `gputwin-engine` binaries as subprocesses (cli_test, replay_test,
# kineto_replay_test, chakra_export_test, output_file_cli_test, topologies_cli_test, engine_cli_test, launch and
# tcp_train tests, the goodput/estimator-accuracy CLI tests, Table 5's eight simulations), engine_train_test (it
# asserts a 120 s wall-time bound). Under ASan the whole suite took 35 minutes on the
# 2-core CI machine, the simulations dominating; they run unsanitized in scripts/test.sh, and the code under them
# runs sanitized here in the smaller tests. Also, SimGrid switches stacks: ASan prints "False positive error reports
# may follow" on stderr once per process (none followed), which the CLI tests' one-line-stderr checks would read.
#
#   scripts/sanitize.sh            # configure, build, run; idempotent (build-asan/ is reused incrementally)
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

asan_dir="$repo_root/build-asan"
jobs=$(nproc 2>/dev/null || echo 2)
sanitizers=address,undefined,float-cast-overflow
targets=(json_writer_test output_file_test trace_format_test models_test config_test topologies_test collectives_test
         nccl_tests_log_test collective_executor_test nccl_validation_test nccl_echo_validation_test bubble_test
         iteration_validation_test dag_executor_test plan_search_test scenario_test engine_kernels_test engine_numerics_test
         engine_memory_test engine_trace_memory_test engine_rendezvous_test engine_tcp_world_test fuzz_harnesses)
start=$(date +%s)

install_missing_packages
say "sanitize: configure: cmake -S $repo_root -B $asan_dir -DGPUTWIN_SANITIZE=$sanitizers (-O1 -g1, no CUDA)"
cmake -S "$repo_root" -B "$asan_dir" -DCMAKE_BUILD_TYPE=Release "-DCMAKE_CXX_FLAGS_RELEASE=-O1 -g1" \
  -DGPUTWIN_CUDA=OFF -DGPUTWIN_PYTHON=OFF "-DGPUTWIN_SANITIZE=$sanitizers" >/dev/null
say "sanitize: build: cmake --build $asan_dir -j $jobs --target ${targets[*]}"
cmake --build "$asan_dir" -j "$jobs" --target "${targets[@]}"
built=$(date +%s)

# The ctest names of the targets' tests: their GoogleTest suites, and the fuzz corpora.
suites=()
for target in "${targets[@]}"; do
  [ "$target" = fuzz_harnesses ] && continue
  binary=$(find "$asan_dir/tests" -type f -perm -u+x -name "$target" | head -1)
  [ -n "$binary" ] || { echo "sanitize: $target was not built" >&2; exit 1; }
  while read -r suite; do suites+=("$suite"); done < <("$binary" --gtest_list_tests | awk '/^[^ ]/ && $1 ~ /\.$/ { print substr($1, 1, length($1) - 1) }')
done
include="^(fuzz|$(printf '%s\n' "${suites[@]}" | sort -u | paste -sd '|'))\\."

# LeakSanitizer on, except for SimGrid's own allocations (scripts/lsan.supp says which). A report aborts the test.
export LSAN_OPTIONS=${LSAN_OPTIONS:-suppressions=$repo_root/scripts/lsan.supp:print_suppressions=0}
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1:strict_string_checks=1:check_initialization_order=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
# Label `slow` (the long end-to-end accuracy runs) stays in scripts/test.sh, unsanitized: a suite that gains one
# here does not add minutes of simulation under ASan; its code runs sanitized in the smaller tests.
say "sanitize: test: ctest --test-dir $asan_dir -j $jobs -LE 'gpu|slow' -R <${#suites[@]} suites and fuzz>"
ctest --test-dir "$asan_dir" --output-on-failure -j "$jobs" -LE 'gpu|slow' -R "$include"
say "sanitize: passed; build $((built - start)) s, tests $(($(date +%s) - built)) s"
