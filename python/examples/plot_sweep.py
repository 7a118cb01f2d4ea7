"""Tokens/s and MFU of the best plan on 8, 16 and 32 DGX A100 GPUs: `gputwin sweep` from Python, plotted.

    python3 python/examples/plot_sweep.py /tmp/sweep.png

The model is GPT 22B cut to 12 layers (`layers=12`, as `--layers 12`), so that the sweep takes seconds. Each point
is the fastest plan that `gputwin search` finds there (the fast estimator ranks every plan that fits memory, the
best one is simulated in full) at a global batch of one sample per GPU; the figure has tokens/s and MFU against
the GPU count.
"""

import os
import sys

# The package lives in python/ beside this folder; so the script runs from anywhere in the clone.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir))

import matplotlib  # noqa: E402

if not os.environ.get("DISPLAY"):
    matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

import gputwin  # noqa: E402

# %% The sweep: one dict per point, the same fields as `gputwin sweep --json`.
gpus = [8, 16, 32]
points = gputwin.sweep(model="gpt-22b", layers=12, cluster="dgx-a100", gpus=gpus)
for p in points:
    plan = p["plan"]
    print("%3d GPUs  tp %d pp %d dp %d  %8.0f tokens/s  MFU %.1f%%"
          % (p["gpus"], plan["tp"], plan["pp"], plan["dp"], p["tokens_per_s"], 100 * p["mfu"]))

# %% The figure: tokens/s (left axis) and MFU (right axis) against GPUs.
figure, tokens_axis = plt.subplots(figsize=(6, 4))
tokens_axis.plot([p["gpus"] for p in points], [p["tokens_per_s"] for p in points], "o-", color="tab:blue")
tokens_axis.set_xscale("log", base=2)
tokens_axis.set_xticks(gpus, [str(g) for g in gpus])
tokens_axis.set_xlabel("GPUs (DGX A100)")
tokens_axis.set_ylabel("tokens/s", color="tab:blue")
mfu_axis = tokens_axis.twinx()
mfu_axis.plot([p["gpus"] for p in points], [100 * p["mfu"] for p in points], "s--", color="tab:orange")
mfu_axis.set_ylabel("MFU (%)", color="tab:orange")
mfu_axis.set_ylim(0, 100)
tokens_axis.set_title("GPT 22B (12 layers), best plan per GPU count (gputwin sweep)")
figure.tight_layout()

output = sys.argv[1] if len(sys.argv) > 1 else "sweep.png"
figure.savefig(output, dpi=100)
print("wrote", output)
