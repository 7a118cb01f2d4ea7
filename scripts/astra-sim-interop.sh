#!/usr/bin/env bash
# Interop check of `gputwin simulate --chakra` with ASTRA-sim (issue 32): exports plans as Chakra execution traces,
# runs ASTRA-sim's analytical (congestion-unaware) binary on every rank of each, and prints ASTRA-sim's iteration
# time beside gputwin's for the same workload.
#
#   scripts/astra-sim-interop.sh ASTRA_SIM_BINARY [WORK_DIR]
#
# ASTRA_SIM_BINARY: AstraSim_Analytical_Congestion_Unaware (scripts/build-astra-sim.sh builds one from a checkout).
# WORK_DIR (default: a temporary directory, removed at the end): each case's traces and ASTRA-sim log, kept there.
# The network and system configurations are topologies/astra-sim/ (a DGX A100 node and 4 DGX A100 nodes, derived
# from topologies/clusters/dgx-a100.yaml; README there).
#
# gputwin's figure is `simulate --framework none --comm-interference off`, the workload the export holds (it has no
# host issue model, and its durations are each kernel's alone: sim/README.md "Chakra export"); `gputwin default` is
# the same plan with simulate's defaults (host model, compute-communication interference). The first two cases are
# the check: both must run to completion in ASTRA-sim and agree with gputwin within 10%; the last two show the
# exchanges issue 32 item 4 exports as messages (a MoE all-to-all-v under load imbalance, context parallelism's K/V
# ring) running in ASTRA-sim too, held to the same bound. Exit status 1 when a case fails or disagrees, 2 on bad use.
set -euo pipefail

die() { echo "astra-sim-interop.sh: $*" >&2; exit 2; }
[[ $# -ge 1 && $# -le 2 ]] || die "usage: scripts/astra-sim-interop.sh ASTRA_SIM_BINARY [WORK_DIR]"
astra=$(realpath "$1" 2>/dev/null) || die "$1: no such file"
[[ -x $astra && -f $astra ]] || die "$astra: not an executable file (expected ASTRA-sim's AstraSim_Analytical_Congestion_Unaware)"

source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
configs=$repo_root/topologies/astra-sim
gputwin=$build_dir/gputwin
if [[ ! -x $gputwin ]]; then
  install_missing_packages >&2
  configure_and_build >&2
fi

if [[ $# -eq 2 ]]; then
  work=$2
  mkdir -p "$work" || die "$work: cannot create the directory"
else
  work=$(mktemp -d)
  trap 'rm -rf "$work"' EXIT
fi

# name | gputwin plan flags | ASTRA-sim configuration (topologies/astra-sim/<name>.{network.yml,system.json})
cases=(
  "gpt-22b, paper plan: tp 8, 1 micro-batch of 4|--model gpt-22b --plan paper --nodes 1|dgx-a100-1node"
  "gpt3-175b (8 layers), tp 8 · pp 2 · dp 2, SP, 4 micro-batches|--model gpt3-175b --layers 8 --tp 8 --pp 2 --dp 2 --sp --global-batch 8 --nodes 4|dgx-a100-4node"
  "mixtral-8x7b (4 layers), ep 8 · dp 8, load CV 0.5 (all-to-all-v)|--model mixtral-8x7b --layers 4 --tp 1 --ep 8 --dp 8 --moe-imbalance 0.5 --nodes 1|dgx-a100-1node"
  "llama3-8b (4 layers), tp 4 · cp 2, flash (K/V ring)|--model llama3-8b --layers 4 --tp 4 --cp 2 --attention flash --sp --nodes 1|dgx-a100-1node"
)

json_field() { python3 -c 'import json,sys; print(json.load(sys.stdin)[sys.argv[1]])' "$1"; }

status=0
printf '| plan | GPUs | ASTRA-sim s | gputwin s | ASTRA-sim vs gputwin | gputwin default s |\n'
printf '|---|---|---|---|---|---|\n'
index=0
for entry in "${cases[@]}"; do
  IFS='|' read -r name flags config <<<"$entry"
  index=$((index + 1))
  dir=$work/case$index
  rm -rf "$dir"
  mkdir -p "$dir"
  # shellcheck disable=SC2086  # flags are words
  same=$("$gputwin" simulate $flags --framework none --comm-interference off --json --chakra "$dir/et" 2>"$dir/gputwin.err") ||
    { cat "$dir/gputwin.err" >&2; die "gputwin simulate failed for '$name'"; }
  # shellcheck disable=SC2086
  default=$("$gputwin" simulate $flags --json 2>>"$dir/gputwin.err") || die "gputwin simulate failed for '$name'"
  gputwin_s=$(json_field iteration_time_s <<<"$same")
  default_s=$(json_field iteration_time_s <<<"$default")
  gpus=$(json_field gpus <<<"$same")
  ranks=$(find "$dir/et" -name 'workload.*.et' | wc -l)

  rc=0
  (cd "$dir" && timeout 1200 "$astra" \
      --workload-configuration="$dir/et/workload" \
      --comm-group-configuration="$dir/et/workload.comm_groups.json" \
      --system-configuration="$configs/$config.system.json" \
      --network-configuration="$configs/$config.network.yml" \
      --remote-memory-configuration="$configs/no-remote-memory.json") >"$dir/astra-sim.log" 2>&1 || rc=$?
  # ASTRA-sim's analytical backend ticks in nanoseconds: "sys[R] finished, C cycles" for every rank R.
  finished=$(grep -c 'finished, [0-9]* cycles' "$dir/astra-sim.log" || true)
  if [[ $rc -ne 0 || $finished -ne $ranks ]]; then
    printf '| %s | %s | failed (exit %s, %s of %s ranks finished; %s) | %.4f | — | %.4f |\n' \
      "$name" "$gpus" "$rc" "$finished" "$ranks" "$dir/astra-sim.log" "$gputwin_s" "$default_s"
    status=1
    continue
  fi
  astra_s=$(grep -o 'finished, [0-9]* cycles' "$dir/astra-sim.log" | awk '{ if ($2 > m) m = $2 } END { printf "%.6f", m / 1e9 }')
  read -r diff ok < <(python3 -c 'import sys; a, g = map(float, sys.argv[1:3]); d = (a / g - 1) * 100; print(f"{d:+.1f}", int(abs(d) <= 10))' \
                      "$astra_s" "$gputwin_s")
  [[ $ok -eq 1 ]] || status=1
  printf '| %s | %s | %.4f | %.4f | %s %% | %.4f |\n' "$name" "$gpus" "$astra_s" "$gputwin_s" "$diff" "$default_s"
done
if [[ $status -eq 0 ]]; then
  echo "every plan ran to completion in ASTRA-sim and agrees with gputwin within 10%"
else
  echo "astra-sim-interop.sh: a plan failed in ASTRA-sim or disagrees with gputwin by more than 10%" >&2
fi
exit $status
