"""The embedded stack: up is idempotent, down leaves no process behind."""

import psutil

from heirloom.local.stack import LocalStack
from tests.support.stack import stack_home


def test_up_twice_then_down_leaves_nothing_running():
    stack = LocalStack(stack_home() / "s")
    first = stack.up()
    second = stack.up()
    assert first.running and second == first
    pids = [first.postgres_pid, first.falkor_pid]
    stack.down()
    assert not stack.status().running
    for pid in pids:
        assert pid is not None
        if psutil.pid_exists(pid):  # a zombie of our own child is gone once reaped
            assert psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    assert stack.status().postgres_pid is None and stack.status().falkor_pid is None
