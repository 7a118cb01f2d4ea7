#!/usr/bin/env bash
# Set-up and main job: install what is missing (apt), build, and run gputwin on its embedded default --
# one training iteration of GPT-3 175B on 64 simulated DGX A100 GPUs under the paper's plan (TP 8, PP 8
# interleaved x3, sequence parallelism, selective recompute), then that plan's per-GPU memory.
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
install_missing_packages
configure_and_build
plan=(--model gpt3-175b --plan paper --sp --recompute selective)
say "main job: build/gputwin simulate ${plan[*]} --cluster dgx-a100"
"$build_dir/gputwin" simulate "${plan[@]}" --cluster dgx-a100
say "and its memory: build/gputwin memory ${plan[*]}"
"$build_dir/gputwin" memory "${plan[@]}"
