"""Mixture of experts from Python: the expert flags as keyword arguments, the report's "moe" figures, and bad expert
plans as gputwin.InputError with the command line's one-line message."""

import pytest

import gputwin

SMALL = dict(model="mixtral-8x7b", layers=2, seq_len=1024, cluster="dgx-h100", nodes=1, ep=8, dp=8, global_batch=16,
             zero=1)


def test_imbalance_is_slower_and_names_the_slow_rank():
    balanced = gputwin.simulate(**SMALL)
    skewed = gputwin.simulate(**SMALL, moe_imbalance=0.3, moe_seed=2)
    assert skewed["iteration_time_s"] > balanced["iteration_time_s"]
    assert balanced["moe"]["max_rank_load"] == 1
    assert skewed["moe"]["max_rank_load"] > 1
    assert 0 <= skewed["moe"]["slowest_rank"] < 8
    assert skewed["moe"]["busiest_link_kind"]


def test_an_expert_count_ep_does_not_divide_is_an_input_error():
    with pytest.raises(gputwin.InputError, match="--ep: 8 experts"):
        gputwin.simulate(**dict(SMALL, ep=3, dp=6))
