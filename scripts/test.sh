#!/usr/bin/env bash
# Set-up and the whole test suite: install what is missing (apt), build, run every GoogleTest suite via ctest.
# GPU tests (label `gpu`) skip with a message on a machine without a usable GPU.
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
install_missing_packages
configure_and_build
jobs=$(nproc 2>/dev/null || echo 2)
say "test: ctest --test-dir build --output-on-failure -j $jobs"
ctest --test-dir "$build_dir" --output-on-failure -j "$jobs"
