"""Unit tests run with sockets blocked: domain logic with in-memory fakes only."""

import socket
from collections.abc import Iterator

# imported whole before any test: hypothesis reads sys.modules["numpy"] without importing it, and
# a background thread a test left running (the intent warm-up's training) could be halfway
# through importing numpy then ("partially initialized module 'numpy' has no attribute 'ndarray'")
import numpy  # noqa: F401
import pytest


@pytest.fixture(autouse=True)
def _no_network(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    def refuse(*_args: object, **_kwargs: object) -> None:
        raise OSError("network access in a unit test")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    yield
