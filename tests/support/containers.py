"""Several Lambda containers over one embedded stack, who is waiting on a lock, and work run
until it waits on one: for the tests that deliver events concurrently or hold a record's lock."""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

import psycopg

from heirloom.adapters.postgres import PgDatabase, PgStoryStore, PgVectorIndex
from heirloom.adapters.postgres.conversations import PgConversationStore


def containers(db: Any, ports: Any, n: int) -> tuple[list[PgDatabase], list[Any]]:
    """`n` sets of ports as `n` Lambda containers would hold them: a connection each, one graph."""
    dbs = [PgDatabase(db.url, embedding_dim=64) for _ in range(n)]
    return dbs, [
        replace(
            ports,
            stories=PgStoryStore(d),
            vectors=PgVectorIndex(d, model_id=ports.vectors.model_id),
            conversations=PgConversationStore(d),
        )
        for d in dbs
    ]


def waiting_backends(url: str) -> int:
    """How many of the database's sessions wait on a lock."""
    with psycopg.connect(url, autocommit=True) as conn:
        row = conn.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'"
        ).fetchone()
    return int(row[0]) if row else 0


@dataclass
class Waiting:
    """Work started on a thread by `run_until_waiting`: `waiting` while it has not ended."""

    thread: threading.Thread
    done: threading.Event
    errors: list[BaseException] = field(default_factory=list)

    @property
    def waiting(self) -> bool:
        return not self.done.is_set()

    def finish(self, timeout_s: float = 60.0) -> None:
        """Waits for the work to end; it must not have raised."""
        self.thread.join(timeout_s)
        assert not self.errors, self.errors


def run_until_waiting(
    work: Callable[[], object], url: str, *, close: Callable[[], None], polls: int = 3000
) -> Waiting:
    """`work` on its own thread (`close` after it, e.g. its container's connection), returned once
    a session of the database waits on a lock or the work has ended: the caller holding a lock
    then asserts `waiting` and that nothing was written yet."""
    done = threading.Event()
    errors: list[BaseException] = []

    def target() -> None:
        try:
            work()
        except BaseException as exc:
            errors.append(exc)
        finally:
            close()
            done.set()

    thread = threading.Thread(target=target)
    thread.start()
    for _ in range(polls):
        if done.is_set() or waiting_backends(url):
            break
        threading.Event().wait(0.01)
    return Waiting(thread, done, errors)
