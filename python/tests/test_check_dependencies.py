"""scripts/check-dependencies.py on a tiny fake tree: it passes what the table allows and fails, naming the file, the
directories and the header, on an include the table does not allow, on SimGrid outside its rows, and on a table row
naming a directory that does not exist."""

import os
import subprocess
import sys

SCRIPT = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "scripts",
                      "check-dependencies.py")

TABLE = """# Architecture

| directory | may include |
|---|---|
| `common` | nothing |
| `engine` | `common` |
| `sim/platform` | `SimGrid`, `common` |
| `sim/*` (any other) | `sim/*`, `common` |
"""


def write(root, path, text):
    full = os.path.join(root, path)
    os.makedirs(os.path.dirname(full), exist_ok=True)
    with open(full, "w", encoding="utf-8") as f:
        f.write(text)


def fake_tree(root, table=TABLE):
    """A tree every include of which the table allows: engine on common, sim/platform on SimGrid, sim/study (no row
    of its own: `sim/*`) on sim/platform."""
    write(root, "ARCHITECTURE.md", table)
    write(root, "common/include/gputwin/common/input_error.hpp", "#pragma once\n")
    write(root, "engine/include/gputwin/engine/backend.hpp", '#pragma once\n#include "gputwin/common/input_error.hpp"\n')
    write(root, "sim/platform/include/gputwin/sim/platform.hpp", "#pragma once\n")
    write(root, "sim/platform/src/platform.cpp", '#include "gputwin/sim/platform.hpp"\n#include <simgrid/s4u.hpp>\n')
    write(root, "sim/study/src/study.cpp", '#include "gputwin/sim/platform.hpp"\n#include <vector>\n')
    write(root, "build/engine/generated.cpp", '#include "gputwin/sim/platform.hpp"\n')  # build trees are skipped


def run_checker(root):
    done = subprocess.run([sys.executable, SCRIPT, "--root", str(root)], capture_output=True, text=True, check=False)
    return done.returncode, done.stdout


def test_allowed_includes_pass(tmp_path):
    fake_tree(tmp_path)
    assert run_checker(tmp_path) == (0, "")


def test_a_forbidden_include_fails_naming_the_file(tmp_path):
    fake_tree(tmp_path)
    write(tmp_path, "engine/src/engine.cpp",
          '#include "gputwin/engine/backend.hpp"\n#include "gputwin/sim/platform.hpp"\n')
    status, out = run_checker(tmp_path)
    assert status == 1
    assert out == ("engine/src/engine.cpp:2: `engine` includes `gputwin/sim/platform.hpp` of `sim/platform`, not in "
                   "ARCHITECTURE.md's table\n")


def test_simgrid_outside_its_rows_fails(tmp_path):
    fake_tree(tmp_path)
    write(tmp_path, "sim/study/src/actor.cpp", "#include <simgrid/s4u/Actor.hpp>\n")
    status, out = run_checker(tmp_path)
    assert status == 1
    assert "sim/study/src/actor.cpp:1: `sim/study` includes `simgrid/s4u/Actor.hpp` of `SimGrid`" in out


def test_a_row_naming_a_missing_directory_fails(tmp_path):
    fake_tree(tmp_path, TABLE + "| `sim/estimator` | `common` |\n")
    status, out = run_checker(tmp_path)
    assert status == 1
    assert out == "ARCHITECTURE.md:9: `sim/estimator` names a directory that does not exist\n"


def test_a_directory_without_a_row_fails(tmp_path):
    fake_tree(tmp_path)
    write(tmp_path, "topologies/src/graph.cpp", '#include "gputwin/common/input_error.hpp"\n')
    status, out = run_checker(tmp_path)
    assert status == 1
    assert "topologies/src/graph.cpp:1: `topologies/src` has no row in ARCHITECTURE.md's table" in out
