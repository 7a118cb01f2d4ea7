#!/usr/bin/env bash
# Runs every GoogleTest binary of a build as one process each (no ctest, no sharding: all of a binary's tests in
# one invocation) and lists the binaries that fail. SimGrid allows one platform per process, so the SimGrid test
# binaries run each test in a process of their own (tests/isolated_test_main.cpp); this checks that every binary
# passes that way. GPU-only binaries skip themselves on a machine without a GPU.
#   usage: scripts/run-test-binaries.sh [BUILD_DIR]   (default build/)
set -uo pipefail
cd "$(dirname "$0")/.."
build="${1:-build}"
failed=()
count=0
# The test binaries ctest knows: gtest_discover_tests writes NAME[1]_tests.cmake next to each.
mapfile -t binaries < <(find "$build/tests" -name '*\[1\]_tests.cmake' | sed -E 's/\[1\]_tests\.cmake$//' | sort)
for bin in "${binaries[@]}"; do
  [[ -x "$bin" ]] || continue
  count=$((count + 1))
  log="$(mktemp)"
  abs="$(realpath "$bin")"
  if ! (cd "$(dirname "$abs")" && timeout 1800 "$abs" > "$log" 2>&1); then
    failed+=("$bin")
    echo "FAILED: $bin"
    grep -E "^\[  FAILED  \]" "$log" | sort -u | head -5
  else
    echo "ok: $bin"
  fi
  rm -f "$log"
done
echo "$count test binaries run as one process each: ${#failed[@]} failed"
[[ ${#failed[@]} -eq 0 ]]
