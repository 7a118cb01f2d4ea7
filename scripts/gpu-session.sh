#!/usr/bin/env bash
# Everything a lent GPU machine should run for the engine, in one command, so a short lease is enough:
# scripts/gpu-check.sh (engine-only build, `ctest -L gpu`, the calibration plans and their traces, one NCCL
# rank), then scripts/gpu-bench-layer.py (one h8192 layer vs PyTorch eager; needs PyTorch), and packs the
# results into one archive under $OUT (the device tool returns few files) for committing here.
#
#   scripts/gpu-session.sh            # on the GPU machine, from the repository root; OUT defaults to ./gpu-out
#
# The machine has CUDA, CMake and PyTorch but no apt: where GoogleTest is not installed, carry a copy of this
# machine's under build-gtest/usr (see engine/README.md, "On a GPU machine") and this script points CMake at it.
set -uo pipefail

repo_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$repo_root"
out=${OUT:-"$repo_root/gpu-out"}
mkdir -p "$out"
export PATH="$PATH:/usr/local/cuda/bin"
gtest_config="$repo_root/build-gtest/usr/lib/x86_64-linux-gnu/cmake/GTest"
[[ -z "${GTEST_DIR:-}" && -d "$gtest_config" ]] && export GTEST_DIR="$gtest_config"
[[ -z "${CUDA_ARCHS:-}" ]] && export CUDA_ARCHS=native

exec > >(tee "$out/gpu-session.log") 2>&1 # everything below is logged too
status=0
nvidia-smi || true
echo "==> scripts/gpu-check.sh"
scripts/gpu-check.sh || status=1
echo "==> scripts/gpu-bench-layer.py"
python3 scripts/gpu-bench-layer.py --engine build-gpu/gputwin-engine || status=1

# The captured traces and summaries, plus the build's test log: one archive to unpack at the repository root.
tar -czf "$out/gpu-session.tar.gz" traces/captured build-gpu/Testing/Temporary/LastTest.log 2>/dev/null || true
echo "==> results in $out (gpu-session.log, gpu-session.tar.gz); exit status $status"
exit "$status"
