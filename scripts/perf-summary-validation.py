#!/usr/bin/env python3
"""NVIDIA's published Megatron-Bridge / NeMo pre-training throughput beside gputwin's prediction.

Data: tests/data/megatron-bridge-perf/pretrain.csv -- every pre-training row of Megatron-Bridge's
docs/performance-summary.md and docs/performance-summary-archive.md (NVIDIA-NeMo/Megatron-Bridge 4ab94dfad, Apache-2.0:
NeMo containers 25.09 to 26.08, DGX-H100/B200/B300 and GB200/GB300 NVL72, dense Llama 3 and MoE models; MoE rows run
with forced-balanced routing and, unless "tokendrop", dropless). The measured step time is GBS x sequence length /
(tokens per second per GPU x GPUs).

What the page does not say is assumed, the same for every row (so the errors show the model, not a per-row choice):
sequence parallelism with tp > 1, the distributed optimizer (ZeRO-1) with overlapped gradient reduce-scatter and
parameter all-gather, Megatron-FSDP (--zero 3) where the FSDP column is set, TE userbuffers TP overlap with tp > 1,
TE's fused cross entropy, flash attention, expert tensor parallelism 1, no recompute, no CUDA graphs; FP8 /
FP8-CS as per-tensor current scaling (the page's own description), FP8-MX / MXFP8 and NVFP4 as TE's block-scaled
recipes; the 25.09 tables give no precision column: their primary numbers are taken as FP8-CS. Uneven pipeline
stages where the layers do not divide: ceil(L / pp) layers on the middle stages, the rest split between the first
and the last. Rows of models gputwin has no catalogue entry for (Nemotron 3 hybrids, Kimi K2, DeepSeek V4) are
listed as skipped.

With --a2a-overlap, MoE rows whose plan allows it (ep > 1, pp 1 or virtual stages) also run Megatron-Core's EP
all-to-all overlap (--overlap-moe-expert-parallel-comm), which the recipes of some releases turn on (Megatron-Bridge
perf_recipes deepseek/qwen/gpt_oss: overlap_moe_expert_parallel_comm, with A2A_1F1B since 25.09).

With --recipe-recompute, DeepSeek-V3 rows also recompute the modules Megatron-Bridge's performance recipes list for
their system and precision (src/megatron/bridge/perf_recipes/deepseek/<system>/deepseek_v3.py at 067f987df,
cfg.model.recompute_modules; Megatron-Core's selective granularity, gputwin --recompute-modules). Those are today's
recipes: which of them each older release ran is not published.

With --shared-expert-overlap, DGX-H100 DeepSeek-V3 rows (the only MoE model of the page with shared experts) also
run the shared experts beside the token all-to-alls (--moe-shared-expert-overlap): DeepSeekModelProvider's default,
which Megatron-Bridge's H100 DeepSeek-V3 recipe keeps (src/megatron/bridge/recipes/deepseek/h100/deepseek_v3.py:232
at 067f987df) and the EP all-to-all overlap or a DeepEP/HybridEP dispatcher turns off (scripts/performance/utils/
overrides.py, utils.py; the Blackwell perf_recipes/deepseek/*/deepseek_v3.py use DeepEP or HybridEP): with
--a2a-overlap, only rows that do not get that overlap.

With --framework=FILE every row runs with that host profile (a framework YAML, e.g.
tests/fuzz/corpus/framework_yaml/moe-expert-host.yaml: sim/README.md "Host issue model").

Usage: scripts/perf-summary-validation.py [GPUTWIN_BINARY] [--full] [--a2a-overlap] [--recipe-recompute]
[--shared-expert-overlap] [--framework=FILE] (default build/gputwin; --estimate unless --full).
Prints one line per row and the MAPE per system and per model family.
"""
import collections
import csv
import json
import math
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DATA = os.path.join(ROOT, "tests", "data", "megatron-bridge-perf", "pretrain.csv")

MODELS = {"LLAMA3_8B": ("llama3-8b", 32), "LLAMA3_70B": ("llama3-70b", 80), "LLAMA3.1_405B": ("llama3-405b", 126),
          "DeepSeekV3": ("deepseek-v3", 61), "Qwen3_30B_a3B": ("qwen3-30b-a3b", 48),
          "Qwen3_235B_a22B": ("qwen3-235b-a22b", 94), "GPT OSS 120B": ("gpt-oss-120b", 36)}
SYSTEMS = {"DGX-H100": ("dgx-h100", 8), "DGX-B200": ("dgx-b200", 8), "DGX-B300": ("dgx-b300", 8),
           "DGX-GB200": ("gb200-nvl72", 4), "DGX-GB300": ("gb300-nvl72", 4)}
PRECISIONS = {"BF16": [], "FP8": ["--fp8", "--fp8-recipe", "tensorwise"], "FP8-CS": ["--fp8", "--fp8-recipe", "tensorwise"],
              "FP8-MX": ["--precision", "mxfp8"], "MXFP8": ["--precision", "mxfp8"], "NVFP4": ["--precision", "nvfp4"]}

# Megatron-Bridge perf_recipes/deepseek/*/deepseek_v3.py (067f987df): the 256-GPU (1024-GPU on H100) configs'
# recompute_modules by system and precision; configs that set none (and so run Megatron-Core's default) are left out.
DEEPSEEK_V3_RECOMPUTE = {
    ("DGX-H100", "BF16"): "mla_up_proj,mlp", ("DGX-H100", "FP8-CS"): "mla_up_proj,mlp",
    ("DGX-H100", "FP8"): "mla_up_proj,mlp",
    ("DGX-B200", "BF16"): "mla_up_proj", ("DGX-B200", "FP8-CS"): "mla_up_proj", ("DGX-B200", "FP8"): "mla_up_proj",
    ("DGX-B200", "MXFP8"): "mla_up_proj,mlp", ("DGX-B200", "FP8-MX"): "mla_up_proj,mlp",
    ("DGX-B200", "NVFP4"): "mla_up_proj,layernorm,moe_act",
    ("DGX-B300", "BF16"): "mla_up_proj", ("DGX-B300", "FP8-CS"): "mla_up_proj", ("DGX-B300", "FP8"): "mla_up_proj",
    ("DGX-B300", "MXFP8"): "mla_up_proj", ("DGX-B300", "FP8-MX"): "mla_up_proj",
    ("DGX-GB200", "BF16"): "mla_up_proj", ("DGX-GB200", "FP8-CS"): "mlp", ("DGX-GB200", "FP8"): "mlp",
    ("DGX-GB200", "MXFP8"): "mla_up_proj", ("DGX-GB200", "FP8-MX"): "mla_up_proj", ("DGX-GB200", "NVFP4"): "mlp",
    ("DGX-GB300", "BF16"): "moe_act", ("DGX-GB300", "FP8-CS"): "mla_up_proj", ("DGX-GB300", "FP8"): "mla_up_proj",
    ("DGX-GB300", "NVFP4"): "mla_up_proj",
}


def base_model(name):
    """The catalogue model and layers of a row's model name, and its variant ("w/o MTP", "tokendrop", ...)."""
    plain = name.split(" (")[0].strip()
    variant = name[len(plain):].strip(" ()")
    return MODELS.get(plain), variant


def uneven_stages(layers, pp):
    if pp <= 1 or layers % pp == 0:
        return None
    middle = math.ceil(layers / pp)
    rest = layers - middle * (pp - 2)
    if rest < 2:
        return None
    return (rest + 1) // 2, rest // 2


def args_of(r, full, a2a_overlap=False, recipe_recompute=False, shared_expert_overlap=False):
    model, variant = base_model(r["model"])
    system, gpus_per_node = SYSTEMS[r["system"]]
    name, layers = model
    gpus, tp, pp, cp = int(r["gpus"]), int(r["tp"]), int(r["pp"]), int(r["cp"])
    ep = int(r["ep"]) if r["ep"] not in ("n/a", "") else 1
    vp = int(r["vp"]) if r["vp"] not in ("n/a", "") else 1
    fsdp = int(r["fsdp"] or 0) > 0
    dp = gpus // (tp * pp * cp)
    args = ["simulate", "--json", "--allow-oom", "--model", name, "--cluster", system,
            "--nodes", str(math.ceil(gpus / gpus_per_node)), "--tp", str(tp), "--pp", str(pp), "--cp", str(cp),
            "--dp", str(dp), "--micro-batch", r["mbs"], "--global-batch", r["gbs"], "--seq-len", r["seq_len"],
            "--attention", "flash", "--cross-entropy-fusion"]
    if not full:
        args.append("--estimate")
    if fsdp:
        args += ["--zero", "3"]
    else:
        args += ["--zero", "1", "--overlap-grad-reduce", "--overlap-param-gather"]
    if tp > 1:
        args += ["--sp", "--tp-comm-overlap"]
    if ep > 1:
        args += ["--ep", str(ep), "--etp", "1"]
        if a2a_overlap and (pp == 1 or vp > 1) and not fsdp:
            args.append("--overlap-moe-expert-parallel-comm")
        elif shared_expert_overlap and name == "deepseek-v3" and r["system"] == "DGX-H100":
            args.append("--moe-shared-expert-overlap")
    if vp > 1:
        args += ["--schedule", "interleaved", "--chunks", str(vp)]
    split = uneven_stages(layers, pp)
    if split:
        args += ["--pp-first-stage-layers", str(split[0]), "--pp-last-stage-layers", str(split[1])]
    if "w/o MTP" in variant:
        args += ["--mtp-layers", "0"]
    if "tokendrop" in variant:
        args += ["--moe-capacity-factor", "1"]
    args += PRECISIONS[r["precision"]]
    modules = DEEPSEEK_V3_RECOMPUTE.get((r["system"], r["precision"])) if name == "deepseek-v3" else None
    if recipe_recompute and modules:
        args += ["--recompute-modules", modules]
    return args


def main():
    full = "--full" in sys.argv
    a2a_overlap = "--a2a-overlap" in sys.argv
    recipe_recompute = "--recipe-recompute" in sys.argv
    shared_expert_overlap = "--shared-expert-overlap" in sys.argv
    framework = [a.split("=", 1)[1] for a in sys.argv[1:] if a.startswith("--framework=")]
    positional = [a for a in sys.argv[1:] if not a.startswith("--")]
    binary = positional[0] if positional else os.path.join(ROOT, "build", "gputwin")
    by_system, by_family = collections.defaultdict(list), collections.defaultdict(list)
    for r in csv.DictReader(open(DATA)):
        case = "%s %s %s %s GPUs (%s)" % (r["release"], r["system"], r["model"], r["gpus"], r["precision"])
        model, _ = base_model(r["model"])
        if model is None or r["precision"] not in PRECISIONS:
            print("%-70s skipped (not in the catalogue)" % case)
            continue
        measured_s = int(r["gbs"]) * int(r["seq_len"]) / (float(r["tokens_per_s_per_gpu"]) * int(r["gpus"]))
        out = subprocess.run([binary] + args_of(r, full, a2a_overlap, recipe_recompute, shared_expert_overlap) +
                             (["--framework", framework[-1]] if framework else []), capture_output=True, text=True)
        if out.returncode != 0:
            print("%-70s error: %s" % (case, (out.stderr.strip().splitlines() or ["exit %d" % out.returncode])[-1]))
            continue
        predicted_s = json.loads(out.stdout)["iteration_time_s"]
        err = predicted_s / measured_s - 1
        by_system[r["system"]].append(err)
        by_family["moe" if int(r["ep"] if r["ep"] not in ("n/a", "") else 1) > 1 else "dense"].append(err)
        print("%-70s measured %8.3f s  gputwin %8.3f s  %+6.1f %%" % (case, measured_s, predicted_s, 100 * err))
    for title, groups in (("system", by_system), ("family", by_family)):
        for key, errs in sorted(groups.items()):
            print("%s %-10s %3d rows  MAPE %5.1f %%  mean %+5.1f %%" % (
                title, key, len(errs), 100 * sum(abs(e) for e in errs) / len(errs), 100 * sum(errs) / len(errs)))


if __name__ == "__main__":
    main()
