#!/usr/bin/env bash
# Rewrites tests/data/golden/NN.json: the JSON reports of the commands in tests/data/golden/commands.txt (one per
# line, run from the repository root), sim_wall_time_s written as 0. GoldenOutputs.* (tests/cli/golden_outputs_test.cpp)
# requires today's build to print exactly these; run this only for a change meant to move the figures, and say in
# the commit which figures moved and why.
#   usage: scripts/update-golden.sh [BUILD_DIR]   (default build/)
set -euo pipefail
cd "$(dirname "$0")/.."
gputwin="${1:-build}/gputwin"
n=0
while IFS= read -r line; do
  [[ -z "$line" || "$line" == \#* ]] && continue
  n=$((n + 1))
  out=$(printf 'tests/data/golden/%02d.json' "$n")
  # shellcheck disable=SC2086 # the line is a list of arguments
  "$gputwin" $line 2>/dev/null | sed -E 's/("sim_wall_time_s": )[-0-9.e+]+/\10/' > "$out.tmp"
  mv "$out.tmp" "$out"
  echo "$out: gputwin $line"
done < tests/data/golden/commands.txt
