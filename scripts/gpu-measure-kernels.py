#!/usr/bin/env python3
"""Measures what the simulator's GPU compute model needs on the GPU this runs on, and writes it as a trace
in the project's format (traces/FORMAT.md) so that `gputwin calibrate` fits the model to it:

  * bf16 GEMM time (cuBLAS through torch.matmul / torch.bmm) for the GEMM shapes of GPT layers -- forward,
    input-gradient and weight-gradient products of the four linears, and the batched attention products --
    for the paper's Table 3 models at tensor-parallel size 8 and a few tp 1/2/4 layers;
  * memory-bound kernels at layer sizes: copy, GeLU, layernorm, softmax, with the bytes the workload
    generator counts (16-bit read + write).

Usage (on a GPU machine with PyTorch):  python3 scripts/gpu-measure-kernels.py OUT.trace.json
Then, anywhere:  build/gputwin calibrate OUT.trace.json --gpu h100 -o h100.gpu-model.yaml
"""
import json
import sys

import torch

WARMUP, REPS = 5, 20


def timed_ms(fn):
    for _ in range(WARMUP):
        fn()
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(REPS):
        fn()
    end.record()
    torch.cuda.synchronize()
    return start.elapsed_time(end) / REPS


def layer_gemms(s, b, h, a, t):
    """(name, m, n, k, batch) of one layer's GEMMs on one TP rank, as models/workload/src/layer_ops.cpp emits them."""
    T, hp, d, heads = s * b, h // t, h // a, b * (a // t)
    return [
        ("qkv.fwd", T, 3 * hp, h, 1), ("proj.fwd", T, h, hp, 1), ("fc1.fwd", T, 4 * hp, h, 1),
        ("fc2.fwd", T, h, 4 * hp, 1), ("attn.scores.fwd", s, s, d, heads), ("attn.context.fwd", s, d, s, heads),
        ("fc2.dgrad", T, 4 * hp, h, 1), ("fc2.wgrad", h, 4 * hp, T, 1), ("fc1.dgrad", T, h, 4 * hp, 1),
        ("fc1.wgrad", 4 * hp, h, T, 1), ("proj.dgrad", T, hp, h, 1), ("proj.wgrad", h, hp, T, 1),
        ("qkv.dgrad", T, h, 3 * hp, 1), ("qkv.wgrad", 3 * hp, h, T, 1),
        ("attn.context.dgrad_probs", s, s, d, heads), ("attn.scores.dgrad_q", s, d, s, heads),
    ]


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else "kernels.trace.json"
    torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction = True
    dev = torch.device("cuda")
    configs = [  # (label, s, b, h, a, t): Table 3 models at t = 8 (their micro-batches), and tp 1/2/4 layers
        ("gpt-22b", 2048, 4, 6144, 64, 8), ("gpt3-175b", 2048, 1, 12288, 96, 8),
        ("mt-nlg-530b", 2048, 1, 20480, 128, 8), ("gpt-1t", 2048, 1, 25600, 160, 8),
        ("h8192-tp1", 2048, 1, 8192, 64, 1), ("h4096-tp2", 2048, 2, 4096, 32, 2), ("h4096-tp4", 4096, 1, 4096, 32, 4),
    ]
    ops, clock_ns, seen = [], 0, set()

    def add(name, duration_ms, flops, nbytes, gemm=None):
        nonlocal clock_ns
        op = {"id": len(ops), "kind": "compute", "name": name, "phase": "forward", "layer": -1,
              "micro_batch": -1, "chunk": 0, "stream": 0, "flops": flops, "bytes": nbytes}
        if gemm:
            op["gemm"] = gemm
        duration_ns = int(round(duration_ms * 1e6))
        op.update({"deps": [], "start_ns": clock_ns, "duration_ns": duration_ns})
        clock_ns += duration_ns
        ops.append(op)

    for label, s, b, h, a, t in configs:
        for name, m, n, k, batch in layer_gemms(s, b, h, a, t):
            if (m, n, k, batch) in seen:
                continue
            seen.add((m, n, k, batch))
            if batch == 1:
                A = torch.randn(m, k, device=dev, dtype=torch.bfloat16)
                B = torch.randn(k, n, device=dev, dtype=torch.bfloat16)
                ms = timed_ms(lambda: torch.matmul(A, B))
            else:
                A = torch.randn(batch, m, k, device=dev, dtype=torch.bfloat16)
                B = torch.randn(batch, k, n, device=dev, dtype=torch.bfloat16)
                ms = timed_ms(lambda: torch.bmm(A, B))
            flops = 2.0 * m * n * k * batch
            add(f"{label}.{name}", ms, flops, 2.0 * (m * k + k * n + m * n) * batch,
                {"m": m, "n": n, "k": k, "batch": batch})
            print(f"{label:12s} {name:26s} {m:6d} x {n:6d} x {k:6d} x {batch:3d}  {ms:8.3f} ms  "
                  f"{flops / ms / 1e9:7.1f} TFLOP/s", flush=True)
            del A, B
        # Memory-bound kernels at this layer's sizes (elements of one hidden-state tensor and of the MLP).
        T = s * b
        x = torch.randn(T, h, device=dev, dtype=torch.bfloat16)
        y = torch.empty_like(x)
        ms = timed_ms(lambda: y.copy_(x))
        add(f"{label}.copy", ms, 0.0, 4.0 * T * h)
        ms = timed_ms(lambda: torch.nn.functional.layer_norm(x, (h,)))
        add(f"{label}.layernorm", ms, 8.0 * T * h, 4.0 * T * h)
        u = torch.randn(T, 4 * h // t, device=dev, dtype=torch.bfloat16)
        ms = timed_ms(lambda: torch.nn.functional.gelu(u, approximate="tanh"))
        add(f"{label}.gelu", ms, 8.0 * u.numel(), 4.0 * u.numel())
        scores = torch.randn(b * (a // t), s, s, device=dev, dtype=torch.bfloat16)
        ms = timed_ms(lambda: torch.softmax(scores, dim=-1))
        add(f"{label}.softmax", ms, 5.0 * scores.numel(), 4.0 * scores.numel())
        print(f"{label:12s} memory-bound: copy/layernorm/gelu/softmax measured", flush=True)
        del x, y, u, scores
        torch.cuda.empty_cache()

    name = torch.cuda.get_device_name(0)
    trace = {"format": "gputwin-op-graph", "format_version": 1,
             "metadata": {"producer": "scripts/gpu-measure-kernels.py", "device": name,
                          "torch": torch.__version__, "cuda": torch.version.cuda or "?",
                          "method": f"CUDA events, mean of {REPS} after {WARMUP} warm-up, bf16 operands"},
             "measured_iteration_s": [], "groups": [], "ranks": [{"rank": 0, "ops": ops}]}
    with open(out, "w") as f:
        json.dump(trace, f, indent=None, separators=(",", ":"))
    print(f"wrote {out}: {len(ops)} ops on {name}")


if __name__ == "__main__":
    main()
