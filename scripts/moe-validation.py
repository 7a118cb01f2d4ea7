#!/usr/bin/env python3
"""Mixture-of-experts validation: gputwin's predicted iteration time beside measured MoE training runs.

Sets (copied with their sources into tests/data/moe/):
  - megatron-ci-h100.csv: the mixture-of-experts rows of Megatron-LM's functional tests on one DGX H100 (NVIDIA/
    Megatron-LM tests/functional_tests, d98e8a6; median iteration time). Rows with features gputwin does not model
    (Muon optimizer, activation offloading, CUDA graphs, hybrid Mamba models, GRPO) are listed as skipped.
  - grok1-h100.csv: Grok-1 314B on 512 H100 (NVIDIA dgxc-benchmarking v25.05.04, 6be5ea0).
  - grok1-gb200.csv: Grok-1 314B on 128-512 GPUs of GB200 NVL72 racks (same source), on cluster gb200-nvl72.
  - dgxc-moe.csv: DeepSeek-V3 and Llama 4 Maverick on H100 and GB200 NVL72 (same source, v25.05.04).

Usage: scripts/moe-validation.py [GPUTWIN_BINARY]   (default build/gputwin). Prints one line per row and the MAPE.
"""
import csv
import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DATA = os.path.join(ROOT, "tests", "data", "moe")
SKIP_WORDS = ("muon", "offloading", "cudagraph", "grpo", "flextron")


def run(binary, args):
    out = subprocess.run([binary, "simulate", "--json", "--allow-oom"] + args, capture_output=True, text=True)
    if out.returncode != 0:
        return None, out.stderr.strip().splitlines()[-1] if out.stderr.strip() else "exit %d" % out.returncode
    return json.loads(out.stdout)["iteration_time_s"], ""


def megatron_ci_args(r):
    tp = int(r["tensor-model-parallel-size"] or 1)
    pp = int(r["pipeline-model-parallel-size"] or 1)
    cp = int(r["context-parallel-size"] or 1)
    dp = 8 // (tp * pp * cp)
    h = int(r["hidden-size"])
    args = ["--cluster", "dgx-h100", "--nodes", "1", "--hidden", str(h), "--heads", r["num-attention-heads"],
            "--layers", r["num-layers"], "--seq-len", r["seq-length"], "--vocab", "50257",
            "--ffn-hidden", r["ffn-hidden-size"] or str(4 * h), "--num-experts", r["num-experts"],
            "--moe-topk", r["moe-router-topk"] or "1", "--tp", str(tp), "--pp", str(pp), "--cp", str(cp),
            "--dp", str(dp), "--ep", r["expert-model-parallel-size"] or "1",
            "--micro-batch", r["micro-batch-size"], "--global-batch", r["global-batch-size"],
            "--attention", "flash", "--framework", "megatron-core"]
    if r["num-query-groups"]:
        args += ["--num-query-groups", r["num-query-groups"]]
    if "etp1" in r["test_case"]:
        args += ["--etp", "1"]
    if r["sequence-parallel"] == "true" and tp > 1:
        args.append("--sp")
    if r["use-distributed-optimizer"] == "true":
        args += ["--zero", "1"]
    if r["fp8-format"]:
        args.append("--fp8")
    if r["recompute-granularity"]:
        args += ["--recompute", r["recompute-granularity"]]
    if r["overlap-grad-reduce"] == "true":
        args.append("--overlap-grad-reduce")
    if r["overlap-param-gather"] == "true" and r["use-distributed-optimizer"] == "true":
        args.append("--overlap-param-gather")
    if r["virtual-pipeline-model-parallel-size"]:
        args += ["--schedule", "interleaved", "--chunks", r["virtual-pipeline-model-parallel-size"]]
    return args


# The Grok-1 recipe as NVIDIA ran it (NeMo 25.04: NVIDIA/NeMo scripts/performance/llm/pretrain_grok1_314b.py at
# 6b28b91e51 and scripts/performance/utils.py set_primary_perf_configs; NVIDIA/dgxc-benchmarking 6be5ea0
# grok1/launch.sh): sequence parallelism, the distributed optimizer with overlapped gradient reduce-scatter and
# parameter all-gather, TE userbuffers TP overlap, gradients reduced in BF16 (grad_reduce_in_fp32 = False), TE's
# fused cross entropy (cross_entropy_fusion_impl "te"), FP8 with FP8 parameters; CUDA graphs on GB200 only
# (CUDA_GRAPH=true for gb200, false for h100).
def grok_args(r, cluster="dgx-h100"):
    args = ["--model", "grok-1", "--cluster", cluster, "--tp", r["tp"], "--pp", r["pp"], "--cp", r["cp"],
            "--ep", r["ep"], "--etp", r["etp"], "--dp", r["dp"], "--seq-len", r["seq_len"],
            "--micro-batch", r["micro_batch"], "--global-batch", r["global_batch"], "--attention", "flash", "--sp",
            "--zero", "1", "--framework", "nemo", "--overlap-grad-reduce", "--overlap-param-gather",
            "--tp-comm-overlap", "--grad-reduce-in-bf16", "--cross-entropy-fusion"]
    if cluster == "gb200-nvl72":
        args.append("--cuda-graphs")
    if int(r["vp"]) > 1:
        args += ["--schedule", "interleaved", "--chunks", r["vp"]]
    if r["precision"] == "fp8":
        args.append("--fp8")
    return args


def grok_gb200_args(r):
    return grok_args(r, "gb200-nvl72")


# DeepSeek-V3 and Llama 4 Maverick as NVIDIA's dgxc-benchmarking v25.05.04 ran them (NeMo 25.04: NVIDIA/NeMo v2.3.0
# scripts/performance/llm/pretrain_deepseek_v3.py -- token drop at capacity factor 1 with padding
# (MegatronTokenDropCallback); TE's fused cross entropy; uneven stages 64/pp - 1 and 64/pp - 2 layers; no TP
# overlap -- and set_primary_perf_configs). DeepSeek's attention on Blackwell: the nemo:25.04.01 container's
# Transformer Engine (v2.2-v2.4) has no fused kernel for MLA's head dims (d_qk 192 != d_v 128) on sm100:
# FlashAttention is disabled for MLA (attention/dot_product_attention/utils.py get_attention_backend, "Disabling
# FlashAttention as it does not support MLA") and cuDNN's arbitrary-seqlen backend excludes
# `sm_arch_ >= 100 && (head_dim_qk > 128 || head_dim_v > 128)` (common/fused_attn/fused_attn.cpp
# nvte_get_fused_attn_backend; training support came with TE v2.5 and cuDNN 9.11), so TE ran its unfused attention
# -- which is why the GB200 launcher recomputes core_attn (dgxc deepseek_v3/pretraining/launch.sh RM='core_attn':
# Megatron's selective recompute); H100 runs cuDNN's fused MLA and recomputes mla_up_proj (--recompute-modules). Maverick's
# launcher (dgxc llama4/launch.sh) turns CUDA graphs on for FP8 on H100 only; its NeMo recipe
# (scripts/performance/llm/pretrain_llama4_e128.py: nemo/collections/llm/recipes/llama4_e128.py
# pretrain_performance_optimizations) adds the token drop at capacity factor 1 (MegatronTokenDropCallback), TE's
# userbuffers TP overlap and BF16 gradient reduction (grad_reduce_in_fp32 = False), then TE cross entropy, RoPE and
# permute fusion, to set_primary_perf_configs' overlaps.
def dgxc_moe_args(r):
    mla_on_blackwell = r["model"] == "deepseek-v3" and r["system"] == "gb200-nvl72"
    attention = "unfused" if mla_on_blackwell else "flash"
    gpus_per_node = 4 if r["system"] == "gb200-nvl72" else 8
    args = ["--model", r["model"], "--cluster", r["system"], "--nodes", str(int(r["gpus"]) // gpus_per_node),
            "--tp", r["tp"], "--pp", r["pp"], "--cp", r["cp"], "--ep", r["ep"], "--etp", r["etp"], "--dp", r["dp"],
            "--seq-len", r["seq_len"], "--micro-batch", r["micro_batch"], "--global-batch", r["global_batch"],
            "--attention", attention, "--zero", "1", "--framework", "nemo", "--overlap-grad-reduce",
            "--overlap-param-gather", "--cross-entropy-fusion"]
    if int(r["tp"]) > 1:
        args.append("--sp")
    # NeMo 25.04 (v2.3.0) runs both with the alltoall dispatcher and the shared experts beside its exchanges:
    # DeepSeekConfig (gpt/model/deepseek.py:88) and Llama4Config (gpt/model/llama.py:404) moe_shared_expert_overlap=True.
    args.append("--moe-shared-expert-overlap")
    if r["model"] == "deepseek-v3":
        args += ["--moe-capacity-factor", "1"]
        args += ["--recompute-modules", "core_attn" if mla_on_blackwell else "mla_up_proj"]
    else:  # Maverick: pretrain_performance_optimizations adds the token drop and TE's TP overlap
        args += ["--grad-reduce-in-bf16", "--moe-capacity-factor", "1"]
        if int(r["tp"]) > 1:
            args.append("--tp-comm-overlap")
        if r["system"] == "dgx-h100" and r["precision"] == "fp8":
            args.append("--cuda-graphs")
    if int(r["first_stage_layers"]) > 0:
        args += ["--pp-first-stage-layers", r["first_stage_layers"], "--pp-last-stage-layers", r["last_stage_layers"]]
    if int(r["vp"]) > 1:
        args += ["--schedule", "interleaved", "--chunks", r["vp"]]
    if r["precision"] == "fp8":
        args.append("--fp8")
    return args


def main():
    binary = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "build", "gputwin")
    errors = {}
    for name, reader, make_args, measured_key in (
        ("megatron-ci-h100", "megatron-ci-h100.csv", megatron_ci_args, "iter_time_median_s"),
        ("grok1-h100", "grok1-h100.csv", grok_args, "step_time_s"),
        ("grok1-gb200", "grok1-gb200.csv", grok_gb200_args, "step_time_s"),
        ("dgxc-moe", "dgxc-moe.csv", dgxc_moe_args, "step_time_s"),
    ):
        errors[name] = []
        for r in csv.DictReader(open(os.path.join(DATA, reader))):
            case = r.get("test_case") or "%s %s %s GPUs" % (r["model"], r["precision"], r["gpus"])
            if any(w in case for w in SKIP_WORDS):
                print("%-90s skipped (not modelled)" % case)
                continue
            measured = float(r[measured_key])
            predicted, why = run(binary, make_args(r))
            if predicted is None:
                print("%-90s error: %s" % (case, why))
                continue
            err = predicted / measured - 1
            errors[name].append(err)
            print("%-90s measured %8.4f s  gputwin %8.4f s  %+6.1f %%" % (case, measured, predicted, 100 * err))
    for name, errs in errors.items():
        if errs:
            mape = sum(abs(e) for e in errs) / len(errs)
            print("%s: %d rows, MAPE %.1f %%, worst %+.1f %%" % (name, len(errs), 100 * mape,
                                                            100 * max(errs, key=abs)))


if __name__ == "__main__":
    main()
