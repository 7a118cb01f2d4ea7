"""The README's Python example runs and writes its figure."""

import os
import subprocess
import sys

import pytest

from conftest import REPO


def test_plot_sweep_writes_a_png(tmp_path):
    pytest.importorskip("matplotlib", reason="the example plots with matplotlib (Debian python3-matplotlib)")
    output = tmp_path / "sweep.png"
    env = dict(os.environ)
    env.pop("DISPLAY", None)
    done = subprocess.run([sys.executable, os.path.join(REPO, "python", "examples", "plot_sweep.py"), str(output)],
                          capture_output=True, text=True, env=env, check=False, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "wrote" in done.stdout and " 32 GPUs" in done.stdout
    with open(output, "rb") as png:
        assert png.read(8) == b"\x89PNG\r\n\x1a\n"
