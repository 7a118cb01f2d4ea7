#!/usr/bin/env python3
"""Checks every #include "gputwin/..." and <simgrid/...> against ARCHITECTURE.md's table "directory | may include".

A header belongs to the directory whose include/ folder holds it (sim/estimator for
sim/estimator/include/gputwin/sim/dag_executor.hpp), <simgrid/...> to `SimGrid`; a source file belongs to the
longest table row that is a folder above it (`sim/*` rows: the folder under sim/ it is in). Prints one line per
include the table does not allow, per file in no row, per header no include/ folder provides and per table entry
naming a directory that does not exist, and exits 1 if there is any.

Usage: scripts/check-dependencies.py [--root DIR]   (DIR: the repository, default this script's parent's parent)
"""

import argparse
import fnmatch
import os
import re
import sys

SOURCE_SUFFIXES = (".cpp", ".hpp", ".h", ".cc", ".cu", ".cuh", ".inc")
INCLUDE = re.compile(r'^\s*#\s*include\s*[<"]((?:gputwin|simgrid)/[^">]+)[">]')
SIMGRID = "SimGrid"
TABLE_NAME = "ARCHITECTURE.md's table"


def parse_table(path):
    """The rows of the first markdown table headed `directory | may include`: [(line, directory, [allowed, ...])]."""
    rows, in_table = [], False
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            cells = [c.strip() for c in line.strip().strip("|").split("|")] if line.lstrip().startswith("|") else []
            if not in_table:
                in_table = len(cells) >= 2 and cells[0].lower() == "directory" and cells[1].lower() == "may include"
                continue
            if not cells:
                break
            if set(cells[0]) <= set("-: "):
                continue  # the header's separator row
            names = re.findall(r"`([^`]+)`", cells[0])
            if not names:
                raise SystemExit("%s:%d: expected a `directory` in the first column" % (path, number))
            rows.append((number, names[0], re.findall(r"`([^`]+)`", cells[1])))
    if not rows:
        raise SystemExit("%s: no dependency table (expected a markdown table `| directory | may include |`)" % path)
    return rows


def source_files(root):
    """Every C++/CUDA source under `root`, relative, skipping hidden folders and build trees."""
    for folder, subfolders, files in os.walk(root):
        subfolders[:] = sorted(
            d for d in subfolders
            if not d.startswith(".") and not d.startswith("build") and d != "_deps"
            and not os.path.exists(os.path.join(folder, d, "CMakeCache.txt")))
        for name in sorted(files):
            if name.endswith(SOURCE_SUFFIXES):
                yield os.path.relpath(os.path.join(folder, name), root).replace(os.sep, "/")


def providers(files):
    """Header path after include/ ("gputwin/sim/flow_set.hpp") -> the directories whose include/ holds it."""
    found = {}
    for path in files:
        head, sep, header = path.partition("/include/")
        if sep and header.startswith("gputwin/"):
            found.setdefault(header, []).append(head)
    return found


def directory_of(path, rows):
    """The table directory `path` belongs to: the longest row above it; under a `X/*` row, X's child folder."""
    best = None
    for _, name, _ in rows:
        if name.endswith("/*"):
            prefix = name[:-1]
            if path.startswith(prefix) and "/" in path[len(prefix):]:
                candidate = prefix + path[len(prefix):].split("/")[0]
            else:
                continue
        elif path.startswith(name + "/"):
            candidate = name
        else:
            continue
        if best is None or len(candidate) > len(best) or (len(candidate) == len(best) and not name.endswith("/*")):
            best = candidate
    return best


def allowed_for(directory, rules):
    """The `may include` list of `directory`: its own row, else the `parent/*` row."""
    if directory in rules:
        return rules[directory]
    parent = directory.rsplit("/", 1)[0] if "/" in directory else ""
    return rules.get(parent + "/*")


def allows(entries, directory, target):
    return target == directory or any(
        e == target or (e != SIMGRID and target != SIMGRID and fnmatch.fnmatchcase(target, e)) for e in entries)


def check(root):
    problems = []
    architecture = os.path.join(root, "ARCHITECTURE.md")
    rows = parse_table(architecture)
    for number, name, entries in rows:
        for entry in [name] + entries:
            if entry in (SIMGRID, "*", "nothing"):
                continue
            folder = entry[:-2] if entry.endswith("/*") else entry
            if not os.path.isdir(os.path.join(root, folder)):
                problems.append("ARCHITECTURE.md:%d: `%s` names a directory that does not exist" % (number, entry))
    rules = {name: entries for _, name, entries in rows}
    files = list(source_files(root))
    headers = providers(files)
    for path in files:
        with open(os.path.join(root, path), encoding="utf-8", errors="replace") as f:
            lines = [(n, m.group(1)) for n, line in enumerate(f, 1) for m in [INCLUDE.match(line)] if m]
        if not lines:
            continue
        directory = directory_of(path, rows)
        entries = allowed_for(directory, rules) if directory else None
        if entries is None:
            problems.append("%s:%d: `%s` has no row in %s" % (path, lines[0][0], directory or os.path.dirname(path),
                                                            TABLE_NAME))
            continue
        for number, header in lines:
            if header.startswith("simgrid/"):
                targets = [SIMGRID]
            else:
                targets = [directory_of(p + "/", rows) or p for p in headers.get(header, [])]
                if not targets:
                    problems.append("%s:%d: `%s` includes `%s`, which no */include/ directory provides" %
                                    (path, number, directory, header))
                    continue
            if not any(allows(entries, directory, t) for t in targets):
                problems.append("%s:%d: `%s` includes `%s` of `%s`, not in %s" %
                                (path, number, directory, header, targets[0], TABLE_NAME))
    return problems


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", default=os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                        help="the repository to check (default: this script's repository)")
    problems = check(os.path.abspath(parser.parse_args().root))
    for p in problems:
        print(p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
