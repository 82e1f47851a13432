"""The graph circuit breaker (docs/design.md §10), its state shared through a `BreakerStore`.

closed --3 consecutive failures--> open --30 s--> half_open (one trial) --success--> closed
                                                                      --failure--> open
Transitions are compare-and-set on a version number, so across containers exactly one caller
wins the half-open trial.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from heirloom.ports import BreakerRecord, BreakerStore, State


class CircuitBreaker:
    def __init__(
        self,
        store: BreakerStore,
        name: str = "graph",
        *,
        failure_threshold: int = 3,
        cooldown_s: float = 30.0,
        cache_ttl_s: float = 1.0,
        clock: Callable[[], float] = time.time,
    ):
        self.store = store
        self.name = name
        self.failure_threshold = failure_threshold
        self.cooldown_s = cooldown_s
        self.cache_ttl_s = cache_ttl_s
        self.clock = clock
        self._cached: tuple[float, BreakerRecord] | None = None

    def _load(self, fresh: bool = False) -> BreakerRecord:
        now = self.clock()
        if not fresh and self._cached and now - self._cached[0] < self.cache_ttl_s:
            return self._cached[1]
        record = self.store.load(self.name)
        self._cached = (now, record)
        return record

    def _save(self, current: BreakerRecord, **changes: object) -> bool:
        updated = current.model_copy(update={**changes, "version": current.version + 1})
        ok = self.store.save(self.name, updated, current.version)
        self._cached = (self.clock(), updated) if ok else None
        return ok

    def state(self) -> State:
        """The state as callers should see it: an open breaker past its cooldown reads half_open."""
        record = self._load()
        if record.state == "open" and self.clock() - record.opened_at >= self.cooldown_s:
            return "half_open"
        return record.state

    def allow(self) -> bool:
        """May the graph be called now? Claims the half-open trial when the cooldown is over."""
        record = self._load()
        if record.state == "closed":
            return True
        now = self.clock()
        if record.state == "open" and now - record.opened_at < self.cooldown_s:
            return False
        if record.state == "half_open" and now - record.opened_at < self.cooldown_s:
            return False  # a trial is already in flight
        record = self._load(fresh=True)
        if record.state == "closed":
            return True
        # open past cooldown, or a stale trial: one caller wins the trial
        return self._save(record, state="half_open", opened_at=now)

    def record_success(self) -> None:
        record = self._load()
        if record.state == "closed" and record.failures == 0:
            return
        record = self._load(fresh=True)
        self._save(record, state="closed", failures=0, opened_at=0.0)

    def record_failure(self) -> None:
        for _ in range(3):
            record = self._load(fresh=True)
            failures = record.failures + 1
            if record.state == "half_open" or failures >= self.failure_threshold:
                ok = self._save(record, state="open", failures=failures, opened_at=self.clock())
            else:
                ok = self._save(record, failures=failures)
            if ok:
                return


class InMemoryBreakerStore:
    def __init__(self) -> None:
        self._records: dict[str, BreakerRecord] = {}

    def load(self, name: str) -> BreakerRecord:
        return self._records.get(name, BreakerRecord())

    def save(self, name: str, record: BreakerRecord, expected_version: int) -> bool:
        if self._records.get(name, BreakerRecord()).version != expected_version:
            return False
        self._records[name] = record
        return True
