"""Local runs (heirloom eval) make the full garbage collection between runs, not inside them."""

import gc

from heirloom_dev.heap import NEVER, between_runs


class Cycle:
    def __init__(self) -> None:
        self.me = self


def _generations_collected(work) -> list[int]:
    seen: list[int] = []

    def note(phase: str, info: dict) -> None:
        if phase == "start":
            seen.append(info["generation"])

    gc.callbacks.append(note)
    try:
        work()
    finally:
        gc.callbacks.remove(note)
    return seen


def _churn() -> None:
    # objects that live on (as a run's caches and histories do) and cyclic garbage: by default
    # enough of both for full collections
    # (the interpreter makes one only once a quarter as many objects as it holds have lived on)
    kept = [Cycle() for _ in range(max(300_000, len(gc.get_objects()) // 2))]
    for _ in range(100_000):
        Cycle()
    kept.clear()


def test_inside_a_run_only_the_young_generations_are_collected_and_the_full_one_waits():
    threshold = gc.get_threshold()
    assert 2 in _generations_collected(_churn)  # the default: full collections mid-run
    with between_runs() as collect:
        assert gc.get_threshold()[2] == NEVER
        during = _generations_collected(_churn)
        assert during and 2 not in during  # young ones still run: cycles are reclaimed
        assert _generations_collected(collect) == [2]  # due, so made now, between runs
        assert _generations_collected(collect) == []  # and not again until due
    assert gc.get_threshold() == threshold
