"""gputwin from Python: the ``gputwin`` subcommands as functions that return their JSON reports.

    import gputwin
    r = gputwin.simulate(model="gpt3-175b", plan="paper", sp=True, recompute="selective")
    r["iteration_time_s"], r["plan"]["tp"]
    points = gputwin.sweep(model="gpt-22b", gpus=[8, 16, 32])   # a list, one dict per point

Keyword arguments are the command line's flags: ``global_batch=1536`` is ``--global-batch 1536``, ``sp=True`` is
``--sp`` (False and None leave a flag out), a list or tuple is comma-joined (``gpus=[64, 128]``) except for the
repeatable flags, which are repeated (``set=["a=b", "c=d"]`` is ``--set a=b --set c=d``); a trailing underscore is
dropped (``from_=`` is ``--from``). ``--json`` is always added. Positional arguments (``replay``'s traces) are
passed as ``*args``.

Each call runs the subcommand in a forked child process (SimGrid builds one platform per process), so calls are
independent of each other and a call's memory goes back when it returns; the interpreter's lock is released
while the child runs, and Ctrl-C stops it. What the command line prints on stderr (notes such as the attention
kernel chosen for the GPU, warnings such as a skipped sweep point) is written to ``sys.stderr``, so
``contextlib.redirect_stderr`` captures or silences it.

Errors: bad input raises ``InputError`` (a ``ValueError``) whose message is the command line's one-line message
after ``error:`` (it names the flag or file); an internal error or a failed run raises ``RuntimeError``.
"""

import importlib.machinery
import importlib.util
import json
import os
import sys

__all__ = ["InputError", "run", "simulate", "memory", "search", "sweep", "collective", "goodput", "topo",
           "replay", "subcommands"]

# The flags that may be given several times (ArgParser's `repeatable`): a list value repeats them.
REPEATABLE_FLAGS = frozenset({"--set", "--degrade-link", "--fail-link", "--fail-nic", "--slow-gpu", "--slow-node"})


class InputError(ValueError):
    """Bad input (a flag, a model or cluster file, a trace): the command line's one-line message."""


def _load_extension():
    """The compiled module ``_gputwin``: from $GPUTWIN_BUILD_DIR, this package's directory, or <repo>/build/python."""
    here = os.path.dirname(os.path.realpath(__file__))
    repo = os.path.dirname(os.path.dirname(here))
    places = []
    build_dir = os.environ.get("GPUTWIN_BUILD_DIR")
    if build_dir:
        places += [build_dir, os.path.join(build_dir, "python")]
    places += [here, os.path.join(repo, "build", "python")]
    for place in places:
        for suffix in importlib.machinery.EXTENSION_SUFFIXES:
            path = os.path.join(place, "_gputwin" + suffix)
            if os.path.isfile(path):
                spec = importlib.util.spec_from_file_location(__name__ + "._gputwin", path)
                module = importlib.util.module_from_spec(spec)
                spec.loader.exec_module(module)
                return module
    others = sorted(os.path.join(place, name) for place in places if os.path.isdir(place)
                    for name in os.listdir(place) if name.startswith("_gputwin") and name.endswith(".so"))
    raise ImportError(
        "gputwin: the compiled module _gputwin (_gputwin%s) was not found in %s%s; build it from the repository "
        "root with `cmake -S . -B build && cmake --build build --target _gputwin` (needs the Debian packages "
        "python3-dev and python3-pybind11; ./scripts/test.sh installs them and builds everything), or set "
        "GPUTWIN_BUILD_DIR to the build directory"
        % (importlib.machinery.EXTENSION_SUFFIXES[0], ", ".join(places),
           "; found only modules for another Python: " + ", ".join(others) if others else ""))


_gputwin = _load_extension()
__version__ = _gputwin.__version__


def _flag_text(value):
    if isinstance(value, os.PathLike):
        return os.fspath(value)
    return str(value)


def flag_arguments(**kw):
    """The command-line arguments that the keyword arguments stand for (without --json), in their order."""
    args = []
    for key, value in kw.items():
        if value is None or value is False:
            continue
        flag = "--" + (key[:-1] if key.endswith("_") else key).replace("_", "-")
        if value is True:
            args.append(flag)
        elif isinstance(value, (list, tuple)):
            items = [_flag_text(item) for item in value]
            if flag in REPEATABLE_FLAGS:
                args += [flag + "=" + item for item in items]
            else:
                args.append(flag + "=" + ",".join(items))
        else:
            # --flag=value: a value that starts with '-' is never taken for a flag.
            args.append(flag + "=" + _flag_text(value))
    return args


def _run_text(subcommand, args):
    """Runs ``gputwin SUBCOMMAND ARGS...`` in a child; returns its report's text, its notes on sys.stderr."""
    names = [name for name, _ in _gputwin.subcommands()]
    if subcommand not in names:
        raise InputError("unknown subcommand '%s' (expected one of %s)" % (subcommand, ", ".join(names)))
    outcome, exit_status, text, notes = _gputwin.run_subcommand(subcommand, args)
    if notes:
        sys.stderr.write(notes.decode("utf-8", errors="replace"))
        sys.stderr.flush()
    text = text.decode("utf-8", errors="replace")
    if outcome == "input_error":
        raise InputError(text)
    if outcome == "internal_error":
        raise RuntimeError("gputwin %s: internal error: %s" % (subcommand, text))
    if outcome != "report":
        raise RuntimeError("gputwin %s: failed: %s" % (subcommand, text))
    if exit_status != 0:
        raise RuntimeError("gputwin %s exited with status %d" % (subcommand, exit_status))
    return text


def run(subcommand, *args, **kw):
    """Runs ``gputwin SUBCOMMAND ARGS... --flags... --json``; returns the parsed JSON report (a dict, or a list for
    search and sweep), or the report's text where the subcommand printed something else."""
    kw.pop("json", None)
    text = _run_text(subcommand, [_flag_text(a) for a in args] + flag_arguments(**kw) + ["--json"])
    try:
        return json.loads(text)
    except ValueError:
        return text


def simulate(**kw):
    """``gputwin simulate``: one training iteration on a simulated cluster (iteration_time_s, tokens_per_s, mfu...)."""
    return run("simulate", **kw)


def memory(**kw):
    """``gputwin memory``: per-GPU memory of the busiest pipeline stage."""
    return run("memory", **kw)


def search(**kw):
    """``gputwin search``: the plans that fit memory, ranked, the best ``top`` simulated in full (a list)."""
    return run("search", **kw)


def sweep(**kw):
    """``gputwin sweep``: the best plan at every (model, cluster, GPU count) point (a list, one dict per point)."""
    return run("sweep", **kw)


def collective(**kw):
    """``gputwin collective``: time, algbw and busbw of one NCCL collective per size."""
    return run("collective", **kw)


def goodput(**kw):
    """``gputwin goodput``: time to train under failures and checkpoint/restart."""
    return run("goodput", **kw)


def topo(**kw):
    """``gputwin topo``: a cluster's graph summary."""
    return run("topo", **kw)


def replay(*traces, **kw):
    """``gputwin replay TRACE``: a captured trace re-simulated on a cluster, beside its measured time."""
    return run("replay", *traces, **kw)


def help(subcommand):  # noqa: A001 -- the CLI's word
    """The text of ``gputwin SUBCOMMAND --help``: every flag, that is every keyword argument, of the subcommand."""
    return _run_text(subcommand, ["--help"])


def subcommands():
    """The subcommands as (name, one-line summary) pairs, in the order ``gputwin --help`` lists them."""
    return [tuple(pair) for pair in _gputwin.subcommands()]
