"""Typed errors, and the error contract at the Lambda boundary.

In Lambda the class name of an unhandled exception becomes the invocation's `errorType`, and
Step Functions matches `Retry` / `Catch` `ErrorEquals` against that string, never against
Python's class tree (AWS docs, "Handling errors in Step Functions workflows"). So every handler
is wrapped in `error_contract`, which reduces whatever it raises to one of the closed set
`ERROR_TYPES`; the workflows match on those names only (tests/statemachines/test_error_contract.py).
"""

from __future__ import annotations

import functools
import logging
import sys
from collections.abc import Callable
from typing import Any, TypeVar

log = logging.getLogger(__name__)


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
    """The query does not parse, fails the engine's validation (`MalformedQueryException`) or
    uses what the engine lacks (`UnsupportedOperationException`): a bug in the query."""


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


# -- the error contract -----------------------------------------------------------------------
class Retryable(HeirloomError):
    """errorType: a dependency failed in a way a later attempt can fix (graph down, slow or
    throttled; the chunk index down; a model throttled). The ingestion workflows retry it."""


class Rejected(HeirloomError):
    """errorType: a dependency refused the request itself (a query the graph will not run, a
    model request it refuses, output that fails its schema): retrying cannot help."""


class Conflict(HeirloomError):
    """errorType: the request collides with work already under way (another run of the same
    workflow, say); the workflow ends it without work rather than failing."""


class InternalError(HeirloomError):
    """errorType: anything else (a bug, a misconfiguration). Its message is only the original
    class name: an unexpected exception's text may quote stored data."""


#: the only errorType names a handler raises; `ErrorEquals` in statemachines/ name only these
#: (besides `States.*` and `Lambda.*`)
ERROR_TYPES = frozenset(
    {
        "InvalidRequest",
        "AccessDenied",
        "NotFound",
        "StoreUnavailable",
        "Retryable",
        "Rejected",
        "Conflict",
        "InternalError",
    }
)
#: first match wins: the more specific classes come before their bases
_REDUCTION: tuple[tuple[type[BaseException], type[HeirloomError]], ...] = (
    (InvalidRequest, InvalidRequest),
    (AccessDenied, AccessDenied),
    (NotFound, NotFound),
    (StoreUnavailable, StoreUnavailable),
    (GraphQueryRejected, Rejected),
    (GraphUnavailable, Retryable),
    (VectorUnavailable, Retryable),
    (Throttled, Retryable),
    (ModelError, Rejected),
    (Retryable, Retryable),
    (Rejected, Rejected),
    (Conflict, Conflict),
)


def _driver_error(exc: BaseException) -> type[HeirloomError] | None:
    """PostgreSQL driver errors that escape the adapter mid-query: a connection lost, a
    statement or lock timeout (OperationalError) is the store being unavailable; a deadlock or
    serialization failure (SQLSTATE class 40) goes away on a retry. psycopg is only looked at
    if it was imported: a function that never loaded it cannot have raised its errors."""
    psycopg = sys.modules.get("psycopg")
    if psycopg is None:
        return None
    if not isinstance(exc, psycopg.Error):
        return None
    # class 40, transaction rollback (serialization failure, deadlock): some are OperationalErrors
    if isinstance(exc, psycopg.errors.TransactionRollback) or str(exc.sqlstate or "").startswith("40"):
        return Retryable
    if isinstance(exc, psycopg.OperationalError):
        return StoreUnavailable
    return None


def reduce_error(exc: BaseException) -> HeirloomError:
    """The closed-set error `exc` crosses the Lambda boundary as: `exc` itself when its class is
    already in the set, else a new one whose message names the original class."""
    target = next((out for kind, out in _REDUCTION if isinstance(exc, kind)), None)
    target = target or _driver_error(exc) or InternalError
    if type(exc) is target:
        return exc  # type: ignore[return-value]  # exactly a closed-set class, hence a HeirloomError
    if target is InternalError:
        return InternalError(type(exc).__name__)
    return target(f"{type(exc).__name__}: {exc}")


F = TypeVar("F", bound=Callable[..., Any])


def error_contract(handler: F) -> F:
    """Wrap a Lambda handler so that every exception leaves it as one of `ERROR_TYPES`."""

    @functools.wraps(handler)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return handler(*args, **kwargs)
        except Exception as exc:
            reduced = reduce_error(exc)
            if reduced is exc:
                raise
            log.warning(
                "error_reduced", extra={"error": type(exc).__name__, "error_type": type(reduced).__name__}
            )
            raise reduced from exc

    wrapper.__heirloom_error_contract__ = True  # type: ignore[attr-defined]
    return wrapper  # type: ignore[return-value]
