"""Services wired to test ports (the handlers' `services=` injection point)."""

from __future__ import annotations

from typing import Any

from heirloom.services import Services
from heirloom.settings import settings_from_env

#: for tests that assert what retrieval finds, not how fast: the production budgets (300 ms
#: traversal, 500 ms intent) are measured by `heirloom bench` and the budget tests, and a loaded
#: 2-core CI machine can pass them, which turns a content check into a timing check
UNHURRIED = {"TRAVERSAL_BUDGET_MS": "10000", "INTENT_BUDGET_MS": "10000"}


def services_with(env: dict[str, str] | None = None, **ports: Any) -> Services:
    """A Services whose named ports (stories, graph, ingestion, ...) are the given objects."""
    services = Services(settings_from_env(env or {}))
    for name, value in ports.items():
        services.__dict__[name] = value  # pre-fills the cached_property
    return services


def context_services(ports: Any, env: dict[str, str] | None = None, **more: Any) -> Services:
    """Services over a test stack's context ports (stories, vectors, graph, embedder, tokenizer),
    unhurried (`UNHURRIED`, then `env`), with `more` ports."""
    return services_with(
        {**UNHURRIED, **(env or {})},
        stories=ports.stories,
        vectors=ports.vectors,
        graph=ports.graph,
        embedder=ports.embedder,
        tokenizer=ports.tokenizer,
        **more,
    )
