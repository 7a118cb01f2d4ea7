#!/usr/bin/env bash
# Set-up and main job: install what is missing (apt), build, and run gputwin on its embedded default --
# the per-GPU memory of GPT-3 175B under the paper's plan (TP 8, PP 8 interleaved x3, SP, selective recompute).
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
install_missing_packages
configure_and_build
main_job=("$build_dir/gputwin" memory --model gpt3-175b --plan paper --sp --recompute selective)
say "main job: ${main_job[*]#$repo_root/}"
"${main_job[@]}"
