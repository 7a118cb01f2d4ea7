#!/usr/bin/env python3
"""One GPT layer (pre-LN, hidden 8192, 64 heads, seq 2048, micro-batch 1, tp 1, no recompute) forward+backward:
PyTorch eager bf16 (same math: unfused attention, no flash attention, tanh GeLU, dropout 0.1 on the attention
probabilities and both residual branches as Megatron-LM and the engine have it) against the gputwin CUDA engine,
measured in the same run on the same GPU (the engine's speed against PyTorch). Prints figures; not a test.

    python3 scripts/gpu-bench-layer.py --engine build-gpu/gputwin-engine

The engine figure is the sum of the traced durations of the layer's ops (layer >= 0) in the last iteration of
`gputwin-engine train --layers 1 --backend cuda`. Tensors are device-resident and ops are timed by CUDA events on
their stream (no host wait inside the step): an op starts when the stream reaches its start event (the end of
the op before it, or its launch if the stream was idle) and ends at its end event, so the sum is the time the
stream was busy with the layer.
"""
import argparse, json, math, statistics, subprocess, sys, tempfile, time

import torch
import torch.nn.functional as F

p = argparse.ArgumentParser()
p.add_argument("--engine", default="build-gpu/gputwin-engine")
p.add_argument("--hidden", type=int, default=8192)
p.add_argument("--heads", type=int, default=64)
p.add_argument("--seq", type=int, default=2048)
p.add_argument("--iters", type=int, default=10)
p.add_argument("--dropout", type=float, default=0.1, help="both sides (the engine always runs its dropout kernels)")
args = p.parse_args()
h, a, s, b = args.hidden, args.heads, args.seq, 1
d = h // a
dev = torch.device("cuda")
torch.manual_seed(0)
bf = torch.bfloat16


def param(*shape):
    return (torch.randn(*shape, device=dev, dtype=bf) * 0.02).requires_grad_()


ln1_w, ln1_b, ln2_w, ln2_b = param(h), param(h), param(h), param(h)
w_qkv, b_qkv, w_o, b_o = param(3 * h, h), param(3 * h), param(h, h), param(h)
w_fc1, b_fc1, w_fc2, b_fc2 = param(4 * h, h), param(4 * h), param(h, 4 * h), param(h)
mask = torch.full((s, s), float("-inf"), device=dev).triu(1)


def layer(x):  # x (s, b, h)
    y = F.layer_norm(x, (h,), ln1_w, ln1_b)
    qkv = F.linear(y, w_qkv, b_qkv).view(s, b, 3, a, d)
    q, k, v = (qkv[:, :, i].permute(1, 2, 0, 3) for i in range(3))  # (b, a, s, d)
    scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(d) + mask
    probs = F.dropout(torch.softmax(scores.float(), dim=-1).to(bf), args.dropout)
    ctx = torch.matmul(probs, v).permute(2, 0, 1, 3).reshape(s, b, h)
    x = x + F.dropout(F.linear(ctx, w_o, b_o), args.dropout)
    y = F.layer_norm(x, (h,), ln2_w, ln2_b)
    return x + F.dropout(F.linear(F.gelu(F.linear(y, w_fc1, b_fc1), approximate="tanh"), w_fc2, b_fc2), args.dropout)


x = torch.randn(s, b, h, device=dev, dtype=bf, requires_grad=True)
grad = torch.randn(s, b, h, device=dev, dtype=bf)
times = []
for i in range(args.iters + 3):
    start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    layer(x).backward(grad)
    stop.record()
    torch.cuda.synchronize()
    if i >= 3:
        times.append(start.elapsed_time(stop))
torch_ms = statistics.median(times)
flops = 3 * (24 * b * s * h * h + 4 * b * s * s * h)  # Narayanan et al. 2021, Eq. 3 per layer, fwd + bwd
print(f"PyTorch eager bf16: {torch_ms:.2f} ms per layer fwd+bwd, {flops / torch_ms / 1e9:.1f} TFLOP/s")

m = n = k = 8192
A = torch.randn(m, k, device=dev, dtype=bf)
B = torch.randn(k, n, device=dev, dtype=bf)
for _ in range(3):
    A @ B
torch.cuda.synchronize()
t0 = time.perf_counter()
for _ in range(20):
    A @ B
torch.cuda.synchronize()
peak = 2 * m * n * k * 20 / (time.perf_counter() - t0) / 1e12
print(f"bf16 GEMM peak (8192^3 cuBLAS): {peak:.0f} TFLOP/s")
del A, B, x, grad
torch.cuda.empty_cache()

with tempfile.TemporaryDirectory() as tmp:
    trace = f"{tmp}/layer.json"
    cmd = [args.engine, "train", "--hidden", str(h), "--heads", str(a), "--layers", "1", "--seq-len", str(s),
           "--vocab", "1024", "--tp", "1", "--micro-batch", "1", "--global-batch", "1", "--steps", "3",
           "--dropout", str(args.dropout), "--backend", "cuda", "--trace", trace]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"gpu-bench-layer: error: the engine failed: {r.stdout.strip()} {r.stderr.strip()}")
    t = json.load(open(trace))
    ops = [op for op in t["ranks"][0]["ops"] if op["layer"] >= 0 and op.get("duration_ns", -1) >= 0]
    engine_ms = sum(op["duration_ns"] for op in ops) / 1e6
    gemm_flops = sum(op["flops"] for op in ops if "gemm" in op)
    gemm_ms = sum(op["duration_ns"] for op in ops if "gemm" in op) / 1e6
print(f"gputwin engine (cuda): {engine_ms:.2f} ms per layer fwd+bwd, {flops / engine_ms / 1e9:.1f} TFLOP/s, "
      f"speed {torch_ms / engine_ms * 100:.0f}% of PyTorch (target >= 90%)")
print(f"engine GEMMs: {gemm_flops / gemm_ms / 1e9:.1f} TFLOP/s = {gemm_flops / gemm_ms / 1e9 / peak * 100:.0f}% "
      f"of the measured peak (target >= 70%)")
