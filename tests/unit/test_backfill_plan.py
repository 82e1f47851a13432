"""One backfill at a time: which running execution a fresh start yields to."""

from datetime import UTC, datetime, timedelta

import pytest

from heirloom.contracts.ingestion import CONTINUATION_PREFIX, ExecutionRef, RunningExecution
from heirloom.steps.backfill_plan import rival_backfill

SM = "arn:aws:states:us-east-1:123456789012:stateMachine:Heirloom-Backfill"
T0 = datetime(2026, 11, 24, 3, 0, tzinfo=UTC)


def running(name: str, minutes: float) -> RunningExecution:
    return RunningExecution(arn=f"{SM}:{name}".replace("stateMachine", "execution"), name=name,
                            start_time=T0 + timedelta(minutes=minutes))  # fmt: skip


def me(name: str, minutes: float) -> ExecutionRef:
    r = running(name, minutes)
    return ExecutionRef(id=r.arn, name=name, start_time=r.start_time, state_machine=SM)


def test_alone_it_goes_on():
    assert rival_backfill(me("nightly", 0), [running("nightly", 0)]) is None


def test_a_newer_fresh_start_yields_to_an_older_one_and_not_the_reverse():
    both = [running("a", 0), running("b", 1)]
    assert rival_backfill(me("b", 1), both).name == "a"
    assert rival_backfill(me("a", 0), both) is None


def test_same_start_time_breaks_the_tie_by_name():
    both = [running("a", 0), running("b", 0)]
    assert rival_backfill(me("b", 0), both).name == "a"
    assert rival_backfill(me("a", 0), both) is None


@pytest.mark.parametrize("minutes", [-5, 5])
def test_a_fresh_start_yields_to_a_continuation_however_old(minutes):
    chain = running(f"{CONTINUATION_PREFIX}x", minutes)
    assert rival_backfill(me("manual", 0), [running("manual", 0), chain]) == chain


@pytest.mark.parametrize(("argv", "field"), [(["--stories-per-execution", "1000"], "stories_per_execution"),
                                             (["--page-size", "0"], "page_size")])  # fmt: skip
def test_the_cli_refuses_a_bad_cursor_before_starting_anything(argv, field, capsys):
    from heirloom_dev.cli import main

    assert main(["backfill", *argv]) == 2  # no stack started: the unit tests block sockets
    assert f"heirloom backfill: {field}:" in capsys.readouterr().err
