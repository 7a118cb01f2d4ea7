#!/usr/bin/env bash
# GPU check of the engine: on a machine with CUDA and nothing else (no apt, no SimGrid), builds the
# engine alone, runs the `gpu` tests (every CUDA kernel against the CPU reference), runs a calibration set of
# plans with --backend cuda, captures their traces under traces/captured/<gpu>/ and writes summary.md there
# (achieved TFLOP/s per GEMM shape, per-op times, iteration times, peak memory against the memory model).
#
#   scripts/gpu-check.sh                  # GTest found by CMake; GTEST_DIR=<dir of GTestConfig.cmake> otherwise
#
# Exits non-zero with one line when no GPU can be used. Calibration plans run tp 1/2/4 and pp 2 on ONE GPU
# through the in-process communicator (every rank a thread with its own CudaBackend and streams on device 0).
# Tensors are device-resident; ops are timed by CUDA events on their streams (no host wait inside the step);
# pipeline messages of the in-process communicator pass through host memory (engine/README.md). Then one
# rank through the launcher and NCCL (a one-GPU machine cannot run more NCCL ranks: NCCL needs a GPU per rank).
set -euo pipefail

repo_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build_dir=${BUILD_DIR:-"$repo_root/build-gpu"}
fail() { printf 'gpu-check: error: %s\n' "$*" >&2; exit 1; }

command -v nvidia-smi >/dev/null 2>&1 || fail "no GPU: nvidia-smi not found (no NVIDIA driver on this machine)"
gpu_name=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -n1) || true
[[ -n "$gpu_name" ]] || fail "no GPU: nvidia-smi lists no device"
command -v nvcc >/dev/null 2>&1 || [[ -x /usr/local/cuda/bin/nvcc ]] || fail "no CUDA compiler (nvcc) on PATH or in /usr/local/cuda/bin"
export PATH="$PATH:/usr/local/cuda/bin"

arch=native
[[ -n "${CUDA_ARCHS:-}" ]] && arch=$CUDA_ARCHS
gtest_flag=()
[[ -n "${GTEST_DIR:-}" ]] && gtest_flag=("-DGTest_DIR=$GTEST_DIR")
echo "==> building the engine alone for $gpu_name (CUDA architectures: $arch) in $build_dir"
generator=()
command -v ninja >/dev/null 2>&1 && generator=(-G Ninja)
cmake -S "$repo_root" -B "$build_dir" "${generator[@]}" -DGPUTWIN_ENGINE_ONLY=ON -DGPUTWIN_CUDA=ON \
  -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES="$arch" "${gtest_flag[@]}" >"$build_dir.cmake.log" 2>&1 ||
  fail "cmake configure failed, see $build_dir.cmake.log"
cmake --build "$build_dir" -j"$(nproc)" || fail "build failed"

echo "==> gpu tests (CUDA kernels against the CPU reference)"
(cd "$build_dir" && ctest -L gpu --output-on-failure) || fail "gpu tests failed"
(cd "$build_dir" && ctest -L gpu -V 2>/dev/null | grep -q "SKIPPED") && fail "gpu tests were skipped: no usable GPU"

slug=$(echo "$gpu_name" | tr -c 'A-Za-z0-9\n' '-' | tr -s '-' | sed 's/-$//')
out_dir="$repo_root/traces/captured/$slug"
mkdir -p "$out_dir"
engine="$build_dir/gputwin-engine"

# Calibration set: several layer sizes, tp 1/2/4 (in-process ranks on one GPU), SP, each recompute mode.
plans=(
  "h1024-tp1|--hidden 1024 --heads 16 --layers 2 --seq-len 512 --vocab 8192 --tp 1"
  "h1024-tp2|--hidden 1024 --heads 16 --layers 2 --seq-len 512 --vocab 8192 --tp 2"
  "h1024-tp4-sp|--hidden 1024 --heads 16 --layers 2 --seq-len 512 --vocab 8192 --tp 4 --sp"
  "h2048-tp1|--hidden 2048 --heads 16 --layers 2 --seq-len 1024 --vocab 8192 --tp 1"
  "h2048-tp2-selective|--hidden 2048 --heads 16 --layers 2 --seq-len 1024 --vocab 8192 --tp 2 --recompute selective"
  "h2048-tp1-full|--hidden 2048 --heads 16 --layers 2 --seq-len 1024 --vocab 8192 --tp 1 --recompute full"
  "h4096-tp1|--hidden 4096 --heads 32 --layers 1 --seq-len 1024 --vocab 8192 --tp 1"
  "h1024-pp2-1f1b|--hidden 1024 --heads 16 --layers 4 --seq-len 512 --vocab 8192 --pp 2 --schedule 1f1b"
)
for entry in "${plans[@]}"; do
  name=${entry%%|*}
  flags=${entry#*|}
  echo "==> calibration plan $name: $flags"
  # shellcheck disable=SC2086
  "$engine" train $flags --micro-batch 1 --global-batch 2 --steps 4 --backend cuda \
    --trace "$out_dir/$name.json" >"$out_dir/$name.log" 2>&1 || fail "plan $name failed, see $out_dir/$name.log"
  tail -n 4 "$out_dir/$name.log"
done

echo "==> NCCL: one rank through the launcher (gputwin-engine launch --nproc 1 -- train --comm nccl)"
nccl_flags=(--hidden 1024 --heads 16 --layers 2 --seq-len 512 --vocab 8192 --micro-batch 1 --global-batch 2 --steps 4)
if "$engine" launch --nproc 1 -- "$engine" train "${nccl_flags[@]}" --backend cuda --comm nccl \
  >"$out_dir/nccl-1rank.log" 2>&1; then
  tail -n 4 "$out_dir/nccl-1rank.log"
elif grep -q "built without NCCL" "$out_dir/nccl-1rank.log"; then
  echo "NCCL not found by CMake on this machine: NCCL run skipped ($(tail -n 1 "$out_dir/nccl-1rank.log"))"
else
  fail "the NCCL run failed, see $out_dir/nccl-1rank.log"
fi

echo "==> summary"
python3 - "$out_dir" "$gpu_name" <<'PY'
import json, statistics, sys, pathlib, re, collections
out, gpu = pathlib.Path(sys.argv[1]), sys.argv[2]
lines = [f"# Engine calibration on {gpu}", "",
         "Backend cuda (device-resident tensors; ops timed by CUDA events on their streams). Written by scripts/gpu-check.sh.", ""]
for trace in sorted(out.glob("*.json")):
    if not (out / (trace.stem + ".log")).exists():
        continue  # not a calibration plan of this script (e.g. kernels.trace.json of gpu-measure-kernels.py)
    t = json.loads(trace.read_text())
    log = (out / (trace.stem + ".log")).read_text()
    it = t.get("measured_iteration_s", [])
    lines += [f"## {trace.stem}", "",
              f"- iteration time: median {statistics.median(it) * 1e3:.2f} ms over {len(it)} iterations" if it else "- no iteration times"]
    peak = re.search(r"rank 0 peak bytes by purpose: (.*)", log)
    table2 = re.search(r"activation bytes saved per layer.*", log)
    if peak: lines.append(f"- rank 0 peak (allocator) vs memory model: {peak.group(1)}")
    if table2: lines.append(f"- {table2.group(0)}")
    gemms = collections.defaultdict(lambda: [0.0, 0.0, 0])
    ops = collections.defaultdict(lambda: [0.0, 0])
    for rank in t["ranks"][:1]:
        for op in rank["ops"]:
            d = op.get("duration_ns", -1)
            if d is None or d < 0: continue
            ops[op["name"]][0] += d; ops[op["name"]][1] += 1
            g = op.get("gemm")
            if g:
                key = f'{g["m"]}x{g["n"]}x{g["k"]}x{g["batch"]}'
                gemms[key][0] += op["flops"]; gemms[key][1] += d; gemms[key][2] += 1
    lines += ["", "| GEMM m x n x k x batch | count | mean time (us) | TFLOP/s |", "|---|---|---|---|"]
    for key, (fl, ns, n) in sorted(gemms.items(), key=lambda kv: -kv[1][0]):
        lines.append(f"| {key} | {n} | {ns / n / 1e3:.1f} | {fl / ns / 1e3 if ns else 0:.2f} |")
    lines += ["", "| op (rank 0) | count | mean time (us) |", "|---|---|---|"]
    for name, (ns, n) in sorted(ops.items(), key=lambda kv: -kv[1][0])[:25]:
        lines.append(f"| {name} | {n} | {ns / n / 1e3:.1f} |")
    lines.append("")
(out / "summary.md").write_text("\n".join(lines))
print("\n".join(lines[:60]))
PY
echo "==> traces and summary in $out_dir"
