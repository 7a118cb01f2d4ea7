"""Shared by the Python module's tests: the package on sys.path, and the `gputwin` executable to compare with."""

import json
import os
import subprocess
import sys

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(REPO, "python"))


def build_dir():
    """The build directory: $GPUTWIN_BUILD_DIR, else <repo>/build (where the README's build puts it)."""
    return os.environ.get("GPUTWIN_BUILD_DIR") or os.path.join(REPO, "build")


@pytest.fixture(scope="session")
def cli():
    """Runs `build/gputwin ARGS...`; returns (exit status, stdout, stderr)."""
    binary = os.path.join(build_dir(), "gputwin")
    if not os.access(binary, os.X_OK):
        pytest.fail("%s is not built (cmake --build build --target gputwin)" % binary)

    def run(*args):
        done = subprocess.run([binary, *args], capture_output=True, text=True, check=False)
        return done.returncode, done.stdout, done.stderr

    return run


@pytest.fixture(scope="session")
def cli_json(cli):
    """Runs `build/gputwin ARGS... --json` and returns the parsed report; fails the test on a non-zero exit."""

    def run(*args):
        status, out, err = cli(*args, "--json")
        assert status == 0, err
        return json.loads(out)

    return run
