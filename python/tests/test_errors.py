"""Bad input from Python is the command line's one-line error, raised as gputwin.InputError (a ValueError)."""

import contextlib
import io
import re

import pytest

import gputwin


def cli_error(cli, *args):
    """The one-line message the CLI prints after 'error: ', with exit status 2."""
    status, _, err = cli(*args)
    assert status == 2
    match = re.fullmatch(r"gputwin \S+: error: (.*)\n", err.splitlines(keepends=True)[-1])
    assert match, err
    return match.group(1)


def test_bad_flag_value_is_the_cli_message(cli):
    with pytest.raises(gputwin.InputError) as raised:
        gputwin.simulate(model="gpt-22b", tp="x")
    message = str(raised.value)
    assert isinstance(raised.value, ValueError)
    assert "\n" not in message and "--tp" in message
    assert message == cli_error(cli, "simulate", "--model", "gpt-22b", "--tp", "x", "--json")


def test_unknown_keyword_is_the_cli_unknown_flag(cli):
    with pytest.raises(gputwin.InputError) as raised:
        gputwin.simulate(model="gpt-22b", no_such_flag=3)
    message = str(raised.value)
    assert "\n" not in message and "--no-such-flag" in message
    assert message == cli_error(cli, "simulate", "--model", "gpt-22b", "--no-such-flag=3", "--json")


def test_a_value_for_a_switch_names_the_switch():
    with pytest.raises(gputwin.InputError, match="^--sp: takes no value"):
        gputwin.simulate(model="gpt-22b", sp="yes")


def test_unknown_subcommand():
    with pytest.raises(gputwin.InputError, match="unknown subcommand 'simulat'"):
        gputwin.run("simulat")


def test_notes_go_to_sys_stderr():
    notes = io.StringIO()
    with contextlib.redirect_stderr(notes):
        gputwin.memory(model="gpt-22b", tp=8)
    assert "gputwin memory: note: --global-batch not given" in notes.getvalue()


def test_a_process_still_works_after_an_error():
    with pytest.raises(gputwin.InputError):
        gputwin.memory(model="no-such-model")
    assert gputwin.memory(model="gpt-22b", tp=8, global_batch=8)["plan"]["tp"] == 8


def test_a_block_scaled_precision_on_hopper_is_the_cli_message(cli):
    with pytest.raises(gputwin.InputError) as raised:
        gputwin.simulate(model="llama3-8b", cluster="dgx-h100", tp=8, precision="nvfp4")
    assert str(raised.value).startswith("--precision nvfp4: the h100-sxm5-80gb of dgx-h100 (generation hopper)")
    assert str(raised.value) == cli_error(cli, "simulate", "--model", "llama3-8b", "--cluster", "dgx-h100", "--tp",
                                          "8", "--precision", "nvfp4", "--json")
