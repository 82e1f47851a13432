"""The circuit breaker: 3 failures open it, 30 s half-open it, one trial, success closes it."""

from heirloom.domain.breaker import CircuitBreaker, InMemoryBreakerStore
from heirloom.ports import BreakerRecord


class Clock:
    def __init__(self):
        self.now = 1000.0

    def __call__(self):
        return self.now


def make(store=None, clock=None):
    return CircuitBreaker(store or InMemoryBreakerStore(), clock=clock or Clock(), cache_ttl_s=0)


def test_opens_after_three_consecutive_failures_only():
    breaker = make()
    breaker.record_failure()
    breaker.record_failure()
    assert breaker.state() == "closed" and breaker.allow()
    breaker.record_success()
    breaker.record_failure()
    breaker.record_failure()
    assert breaker.state() == "closed"
    breaker.record_failure()
    assert breaker.state() == "open" and not breaker.allow()


def test_half_open_after_cooldown_allows_exactly_one_trial_across_containers():
    store, clock = InMemoryBreakerStore(), Clock()
    a, b = make(store, clock), make(store, clock)
    for _ in range(3):
        a.record_failure()
    clock.now += 29.9
    assert not a.allow() and not b.allow()
    clock.now += 0.2
    assert a.state() == "half_open"
    assert a.allow() is True
    assert b.allow() is False  # the trial is taken
    a.record_success()
    assert b.state() == "closed" and b.allow()


def test_a_failed_trial_reopens_and_restarts_the_cooldown():
    clock = Clock()
    breaker = make(clock=clock)
    for _ in range(3):
        breaker.record_failure()
    clock.now += 31
    assert breaker.allow()
    breaker.record_failure()
    assert breaker.state() == "open" and not breaker.allow()
    clock.now += 31
    assert breaker.allow()


def test_a_stale_trial_is_released_after_another_cooldown():
    clock = Clock()
    store = InMemoryBreakerStore()
    store.save("graph", BreakerRecord(state="half_open", failures=3, opened_at=clock.now, version=1), 0)
    breaker = make(store, clock)
    assert not breaker.allow()
    clock.now += 31
    assert breaker.allow()


def test_conditional_write_refuses_a_stale_version():
    store = InMemoryBreakerStore()
    assert store.save("g", BreakerRecord(version=1), 0)
    assert not store.save("g", BreakerRecord(version=2), 0)
    assert store.load("g").version == 1
