"""Unit tests run with sockets blocked: domain logic with in-memory fakes only."""

import socket
from collections.abc import Iterator

import pytest


@pytest.fixture(autouse=True)
def _no_network(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    def refuse(*_args: object, **_kwargs: object) -> None:
        raise OSError("network access in a unit test")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    yield
