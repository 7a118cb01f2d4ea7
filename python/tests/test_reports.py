"""The Python module's reports are the command line's: the same JSON for the same flags, call after call."""

import os

import pytest

import gputwin
from conftest import REPO

PAPER = dict(model="gpt3-175b", plan="paper", sp=True, recompute="selective")


def without_wall_time(report):
    """The report without the one field that is the simulator's own wall time."""
    return {key: value for key, value in report.items() if key != "sim_wall_time_s"}


def test_simulate_equals_the_cli(cli_json):
    from_python = gputwin.simulate(**PAPER)
    from_cli = cli_json("simulate", "--model", "gpt3-175b", "--plan", "paper", "--sp", "--recompute", "selective")
    assert from_python["iteration_time_s"] == from_cli["iteration_time_s"]
    assert from_python["plan"] == from_cli["plan"]
    assert without_wall_time(from_python) == without_wall_time(from_cli)


def test_two_simulations_in_one_process_are_independent(cli_json):
    # SimGrid builds one platform per process: every call runs in its own child, so a second call (another
    # cluster, another plan) works and is not changed by the first.
    first = gputwin.simulate(model="gpt-22b", tp=8, global_batch=8)
    second = gputwin.simulate(model="gpt-22b", tp=4, pp=2, global_batch=8, cluster="dgx-h100")
    assert first["plan"]["tp"] == 8 and second["plan"]["pp"] == 2
    assert second["cluster"]["name"] == "dgx-h100"
    assert second["iteration_time_s"] == cli_json("simulate", "--model", "gpt-22b", "--tp", "4", "--pp", "2",
                                                  "--global-batch", "8", "--cluster", "dgx-h100")["iteration_time_s"]


def test_simulate_is_deterministic():
    first = gputwin.simulate(model="gpt-22b", tp=8, global_batch=8)
    second = gputwin.simulate(model="gpt-22b", tp=8, global_batch=8)
    assert without_wall_time(first) == without_wall_time(second)


def test_memory_equals_the_cli(cli_json):
    report = gputwin.memory(model="gpt-22b", tp=8, global_batch=8, sp=True, recompute="selective")
    assert report == cli_json("memory", "--model", "gpt-22b", "--tp", "8", "--global-batch", "8", "--sp",
                              "--recompute", "selective")
    assert report["plan"]["sp"] is True


def test_recompute_modules_are_a_keyword(cli_json):
    # Megatron-Core's --recompute-modules as recompute_modules="...": the plan says so and memory drops.
    plan = dict(model="gpt-22b", tp=8, global_batch=8, sp=True, attention="flash")
    plain = gputwin.memory(**plan)
    report = gputwin.memory(recompute_modules="core_attn,mlp", **plan)
    assert report == cli_json("memory", "--model", "gpt-22b", "--tp", "8", "--global-batch", "8", "--sp",
                              "--attention", "flash", "--recompute-modules", "core_attn,mlp")
    assert report["plan"]["recompute"] == "selective"
    assert report["plan"]["recompute_modules"] == "core_attn,mlp"
    assert report["activation_bytes_per_layer"] < plain["activation_bytes_per_layer"]


def test_collective_equals_the_cli(cli_json):
    report = gputwin.collective(op="all-reduce", ranks=8, sweep="1M:16M")
    assert report == cli_json("collective", "--op", "all-reduce", "--ranks", "8", "--sweep", "1M:16M")
    assert [r["bytes"] for r in report["results"]] == [1 << 20, 2 << 20, 4 << 20, 8 << 20, 16 << 20]


def test_search_returns_the_best_plan():
    plans = gputwin.search(model="gpt-22b", cluster="dgx-a100", gpus=16, top=1)
    assert isinstance(plans, list) and plans
    best = plans[0]
    plan = best["plan"]
    assert plan["tp"] * plan["pp"] * plan["dp"] * plan["cp"] == 16
    assert best["iteration_time_s"] > 0 and best["peak_memory_bytes"] > 0


def test_sweep_takes_a_list_of_gpu_counts(cli_json):
    points = gputwin.sweep(model="gpt-22b", layers=12, gpus=[8, 16])
    assert [p["gpus"] for p in points] == [8, 16]
    assert points == cli_json("sweep", "--model", "gpt-22b", "--layers", "12", "--gpus", "8,16")


def test_goodput_and_topo():
    report = gputwin.topo(cluster="dgx-h100", nodes=2)
    assert report["gpus"] == 16
    # A list for a repeatable flag repeats it: two --set overrides.
    changed = gputwin.topo(cluster="dgx-h100", set=["node.nvlink.gbytes_per_s=250", "nodes=4"])
    assert changed["gpus"] == 32 and changed["nvlink_gbps_per_gpu"] == 250
    goodput = gputwin.goodput(model="gpt-22b", tp=8, global_batch=8, tokens=1e9, mtbf_gpu_hours=50000,
                             checkpoint_write_gbps=10, restart_s=600)
    assert 0 < goodput["goodput_fraction"] <= 1 and goodput["restart_s"] == 600


def test_subcommands_are_the_cli_table(cli):
    _, out, _ = cli("--help")
    listed = out.split("subcommands:\n", 1)[1].split("\n\n", 1)[0]
    assert [tuple(line.split(None, 1)) for line in listed.splitlines()] == gputwin.subcommands()
    assert gputwin.help("simulate") == cli("simulate", "--help")[1]


def test_replay_takes_the_trace_as_a_positional_argument(cli_json):
    trace = os.path.join(REPO, "tests", "data", "traces", "cpu-tp1.json")
    report = gputwin.replay(trace)
    assert without_wall_time(report) == without_wall_time(cli_json("replay", trace))
    with pytest.raises(gputwin.InputError, match="no-such-trace.json"):
        gputwin.replay(os.path.join(REPO, "no-such-trace.json"))


def test_precision_keyword_reports_the_precision_and_its_peak(cli_json):
    # precision="nvfp4" is --precision nvfp4: on dgx-b200 the linear GEMMs at the FP4 peak (9000 TF/s dense).
    llama = dict(model="llama3-8b", cluster="dgx-b200", tp=8, sp=True, attention="flash")
    report = gputwin.simulate(precision="nvfp4", **llama)
    assert report["mfu_precision"] == "nvfp4"
    assert report["mfu_peak_flops_per_gpu"] == 9000e12
    assert report["plan"]["precision"] == "nvfp4"
    assert without_wall_time(report) == without_wall_time(
        cli_json("simulate", "--model", "llama3-8b", "--cluster", "dgx-b200", "--tp", "8", "--sp", "--attention",
                 "flash", "--precision", "nvfp4"))
    assert without_wall_time(gputwin.simulate(precision="fp8", **llama)) == without_wall_time(
        gputwin.simulate(fp8=True, **llama))
