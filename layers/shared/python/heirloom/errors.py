"""Typed errors. In Lambda the class name becomes the error type, which the workflow's Catch
blocks and the API map to outcomes (a 4xx with a reason, a fallback, or a failed execution)."""

from __future__ import annotations


class HeirloomError(Exception):
    """Base of every error this service raises on purpose."""


class InvalidRequest(HeirloomError):
    """The input does not match its contract (400)."""


class AccessDenied(HeirloomError):
    """The user is not a member of the legacy (403)."""


class NotFound(HeirloomError):
    """The legacy or story does not exist (404)."""


class GraphUnavailable(HeirloomError):
    """The graph store failed or is behind an open breaker; callers fall back to no graph."""


class VectorUnavailable(HeirloomError):
    """The vector index failed; callers fall back to no chunks."""


class StoreUnavailable(HeirloomError):
    """PostgreSQL is unreachable; requests that need access checks fail closed."""
