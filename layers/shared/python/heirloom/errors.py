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


class ModelError(HeirloomError):
    """A hosted model (Bedrock) call failed. Subclasses say whether a retry can help."""

    def __init__(self, message: str, *, code: str = ""):
        super().__init__(message)
        #: the service's error code (ThrottlingException, ValidationException, ...) when there is one
        self.code = code


class Throttled(ModelError):
    """Throttled, unavailable or too slow (ThrottlingException, ServiceUnavailableException,
    ModelTimeoutException, read/connect timeouts): retryable. The ingestion workflow's Retry
    blocks name this error; the context workflow falls back (rule-based intent, no chunks)."""


class ModelRequestRejected(ModelError):
    """The service refused the request itself (ValidationException, unknown model, model
    error): not retryable."""


class ModelAccessDenied(ModelError):
    """The role may not invoke the model (AccessDeniedException) or the model is not enabled
    for the account: not retryable."""


class MalformedModelOutput(ModelError):
    """The model answered, but not with what was asked: no tool call, another tool, a stop
    reason other than tool_use, or input that fails the schema. Never trusted, not retried."""
