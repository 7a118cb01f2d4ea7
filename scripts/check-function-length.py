#!/usr/bin/env python3
"""Lists every C++/CUDA function body longer than a limit (default 120 lines) in the project's sources.

A function body is found as a top-level brace block (outside namespaces, classes and structs) whose opening line
looks like a function head: `name(...)` on the lines before its brace. Lambdas and nested blocks count toward the
function that holds them. Exit status 1 when any function is too long, so CI can run it.
usage: scripts/check-function-length.py [--limit N] [PATH...]   (default: every source directory)
"""
import argparse
import os
import re
import sys

SOURCE_DIRS = ["common", "traces", "models", "topologies", "sim", "engine", "tests", "python"]
EXTENSIONS = (".cpp", ".hpp", ".cu", ".cuh", ".h")


def strip(text):
    """The text with comments, string and character literals blanked (line structure kept)."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif text.startswith('R"', i):
            m = re.match(r'R"([^(\s]*)\(', text[i:])
            if m:
                end = text.find(")" + m.group(1) + '"', i)
                j = n if end < 0 else end + len(m.group(1)) + 2
                out.append(re.sub(r"[^\n]", " ", text[i:j]))
                i = j
            else:
                out.append(c)
                i += 1
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            out.append(" " * (min(j + 1, n) - i))
            i = j + 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def functions(path):
    text = strip(open(path, encoding="utf-8", errors="replace").read())
    stack = []  # (kind, start line)
    line = 1
    head_start = 0
    for i, c in enumerate(text):
        if c == "\n":
            line += 1
        elif c == "{":
            head = text[head_start:i]
            in_function = any(kind == "function" for kind, _ in stack)
            if in_function:
                kind = "block"
            elif re.search(r"\b(namespace|class|struct|union|enum)\b[^;{}()]*$", head) or re.search(r"=\s*$", head):
                kind = "scope"
            elif re.search(r"\)\s*(const|noexcept|override|final|mutable|->[^;{}]*|\s)*$", head):
                kind = "function"
            else:
                kind = "scope"
            stack.append((kind, line))
            head_start = i + 1
        elif c == "}":
            if stack:
                kind, start = stack.pop()
                if kind == "function":
                    yield start, line
            head_start = i + 1
        elif c == ";":
            head_start = i + 1


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--limit", type=int, default=120)
    parser.add_argument("paths", nargs="*")
    args = parser.parse_args()
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    paths = args.paths or [os.path.join(root, d) for d in SOURCE_DIRS]
    too_long = []
    for top in paths:
        files = [top] if os.path.isfile(top) else [
            os.path.join(d, f) for d, _, fs in os.walk(top) for f in fs if f.endswith(EXTENSIONS)]
        for f in sorted(files):
            for start, end in functions(f):
                if end - start + 1 > args.limit:
                    too_long.append((end - start + 1, os.path.relpath(f, root), start))
    for length, f, start in sorted(too_long, reverse=True):
        print(f"{f}:{start}: function of {length} lines (limit {args.limit})")
    return 1 if too_long else 0


if __name__ == "__main__":
    sys.exit(main())
