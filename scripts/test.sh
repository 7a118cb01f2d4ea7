#!/usr/bin/env bash
# Set-up and the whole test suite: install what is missing (apt), build, run every GoogleTest suite via ctest,
# then the Python module's tests with pytest.
# GPU tests (label `gpu`) skip with a message on a machine without a usable GPU.
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
install_missing_packages
configure_and_build
jobs=$(nproc 2>/dev/null || echo 2)
say "test: ctest --test-dir build --output-on-failure -j $jobs"
ctest --test-dir "$build_dir" --output-on-failure -j "$jobs"
# The Python module's tests (python/tests: its reports against the CLI's, its errors, the README example), with an
# interpreter that has pytest: `python3` on PATH, else Debian's /usr/bin/python3, where apt installs pytest.
python=python3
if ! "$python" -c 'import pytest' 2>/dev/null && [ -x /usr/bin/python3 ]; then
  python=/usr/bin/python3
fi
say "test: $python -m pytest -q python/tests"
cd "$repo_root"
PYTHONDONTWRITEBYTECODE=1 "$python" -m pytest -q -p no:cacheprovider python/tests
# Code shape: no function longer than 120 lines anywhere in the tree.
say "test: scripts/check-function-length.py"
python3 scripts/check-function-length.py
# Includes: every #include "gputwin/..." and <simgrid/...> allowed by ARCHITECTURE.md's dependency table.
say "test: scripts/check-dependencies.py"
python3 scripts/check-dependencies.py
