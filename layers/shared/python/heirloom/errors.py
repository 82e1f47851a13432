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
    """The graph store failed or is behind an open breaker; callers fall back to no graph.
    Every graph adapter error is this class or one of the subclasses below."""


class GraphTimeout(GraphUnavailable):
    """The graph store did not answer within the read timeout."""


class GraphProtocolError(GraphUnavailable):
    """The graph store answered with something that is not a result (not JSON, no `results`)."""


class GraphRequestError(GraphUnavailable):
    """The graph store answered with an error body. `code` is the service's error code
    (`ThrottlingException`, ...), `status` the HTTP status; `detail` (the service's message,
    which may quote the query) is kept out of `str()` so it never reaches logs by accident."""

    def __init__(self, message: str, *, code: str, status: int, request_id: str = "", detail: str = ""):
        super().__init__(message)
        self.code = code
        self.status = status
        self.request_id = request_id
        self.detail = detail


class GraphThrottled(GraphRequestError):
    """A retryable error (throttling, HTTP 429, concurrent modification, query or memory limit)
    that was still there after every retry."""


class GraphQueryRejected(GraphRequestError):
    """The graph store refused the request (bad request, access denied, ...): retrying cannot help."""


class MalformedGraphQuery(GraphQueryRejected):
    """The query text does not parse or compile (`MalformedQueryException`): a bug in the query."""


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


class BackfillAlreadyRunning(HeirloomError):
    """Another backfill execution is running: this one stops before planning anything (the
    workflow ends it as skipped, not failed)."""
