"""Keyword arguments as command-line flags (no subcommand is run, except to read the help)."""

import re

import gputwin


def test_names_values_and_switches():
    assert gputwin.flag_arguments(global_batch=1536, sp=True, fp8=False, cp=None, from_="x") == [
        "--global-batch=1536", "--sp", "--from=x"]


def test_lists_are_comma_joined_and_repeatable_flags_repeated():
    assert gputwin.flag_arguments(gpus=[64, 128], model=("gpt-22b", "gpt3-175b")) == [
        "--gpus=64,128", "--model=gpt-22b,gpt3-175b"]
    assert gputwin.flag_arguments(set=["a=b", "c=d"], fail_nic=["0:1"]) == ["--set=a=b", "--set=c=d",
                                                                            "--fail-nic=0:1"]


def test_a_value_that_starts_with_a_dash_stays_a_value():
    assert gputwin.flag_arguments(tp=-1) == ["--tp=-1"]


def test_every_repeatable_flag_of_the_help_is_known():
    for name, _ in gputwin.subcommands():
        for line in gputwin.help(name).splitlines():
            match = re.match(r"\s+(--[a-z0-9-]+)\b.*\(repeatable", line)
            if match:
                assert match.group(1) in gputwin.REPEATABLE_FLAGS, (name, line)
