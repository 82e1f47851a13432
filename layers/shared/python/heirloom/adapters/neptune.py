"""Amazon Neptune over its openCypher HTTPS endpoint, signed with SigV4 (IAM auth).

Each query is one `POST {endpoint}/openCypher` with the form fields `query` (already carrying
the environment prefix, see `adapters.cypher`) and `parameters` (a JSON object). Neptune answers
`{"results": [row, ...]}` with nodes as `{"~id", "~entityType": "node", "~labels", "~properties"}`
and relationships as `{"~id", "~entityType": "relationship", "~start", "~end", "~type",
"~properties"}`; they are normalised to exactly what `FalkorGraphStore` returns (a dict of
properties with logical `_labels` / `_type`).

Errors arrive as `{"code", "detailedMessage", "requestId"}` with an HTTP status and become the
typed errors of `heirloom.errors` (all `GraphUnavailable`, so callers fall back to no graph).
Retried, with bounded exponential backoff and jitter: the codes Neptune documents as
retryable load shedding or conflicts (`RETRYABLE_CODES`, and any HTTP 429), connections that were
never established, and a dropped connection on a read-only query. Never retried: malformed or
bad requests, access denied, read timeouts (the caller's budget is already spent), internal
failures. Logs carry codes, statuses and request ids, never query text, parameters or
Neptune's detailed message.
"""

from __future__ import annotations

import json
import logging
import random
import re
import threading
import time
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from functools import lru_cache
from typing import Any, Protocol

import requests
from requests.adapters import HTTPAdapter
from urllib3.exceptions import ConnectTimeoutError

from heirloom.adapters.cypher import logical_name, prefix_query, validate_prefix
from heirloom.domain.graph_schema import NODE_LABELS
from heirloom.errors import (
    GraphProtocolError,
    GraphQueryRejected,
    GraphRequestError,
    GraphThrottled,
    GraphTimeout,
    GraphUnavailable,
    MalformedGraphQuery,
)

log = logging.getLogger(__name__)

SERVICE = "neptune-db"
#: error codes Neptune documents as "OK to retry" that a short backoff can fix
RETRYABLE_CODES = frozenset(
    {
        "ConcurrentModificationException",
        # a 400, but "OK to retry": a parallel modification broke an integrity constraint
        "ConstraintViolationException",
        "ThrottlingException",
        "TooManyRequestsException",
        "QueryLimitExceededException",
        "MemoryLimitExceededException",
    }
)
#: the query itself is wrong for Neptune: it does not parse, fails validation (a list property
#: value) or uses a construct Neptune's openCypher lacks (AWS docs, "Graph engine error messages
#: and codes")
MALFORMED_CODES = frozenset({"MalformedQueryException", "ParsingException", "UnsupportedOperationException"})
_WRITE_CLAUSE = re.compile(r"\b(CREATE|MERGE|SET|DELETE|REMOVE|DETACH|FOREACH|LOAD)\b", re.IGNORECASE)


class FrozenCredentials(Protocol):
    """botocore's `ReadOnlyCredentials` (or anything with these three attributes)."""

    @property
    def access_key(self) -> str: ...
    @property
    def secret_key(self) -> str: ...
    @property
    def token(self) -> str | None: ...


#: returns the credentials to sign the next request with (botocore's frozen credentials)
CredentialSource = Callable[[], FrozenCredentials]


def botocore_credentials(credentials: Any = None) -> CredentialSource:
    """botocore credentials (by default the default chain: the Lambda role's environment
    credentials), frozen again before every request, so botocore's refresh of refreshable
    credentials and a rotation are picked up by the next request."""
    import botocore.session

    if credentials is None:
        credentials = botocore.session.get_session().get_credentials()
    if credentials is None:
        raise GraphUnavailable("no AWS credentials to sign Neptune requests with")

    def frozen() -> FrozenCredentials:
        current: FrozenCredentials = credentials.get_frozen_credentials()
        return current

    return frozen


@lru_cache(maxsize=1)
def shared_session() -> requests.Session:
    """One pooled HTTP session per container (keep-alive connections to the cluster)."""
    session = requests.Session()
    # the cluster is reached inside the VPC: no proxies or .netrc from the environment (reading
    # them costs a millisecond a request)
    session.trust_env = False
    # retries are ours (they know Neptune's error codes); urllib3's stay off
    adapter = HTTPAdapter(pool_connections=4, pool_maxsize=16, max_retries=0)
    session.mount("https://", adapter)
    session.mount("http://", adapter)
    return session


def normalise_value(value: Any, prefix: str) -> Any:
    """Neptune's JSON entities become plain dicts of their properties with logical `_labels` /
    `_type` (the FalkorDB adapter's shape); lists and maps are normalised element-wise."""
    if isinstance(value, list):
        return [normalise_value(item, prefix) for item in value]
    if isinstance(value, dict):
        kind = value.get("~entityType")
        if kind == "node":
            labels = [logical_name(prefix, str(label)) for label in value.get("~labels") or []]
            return {**(value.get("~properties") or {}), "_labels": [label for label in labels if label]}
        if kind == "relationship":
            rel_type = str(value.get("~type", ""))
            return {**(value.get("~properties") or {}), "_type": logical_name(prefix, rel_type) or rel_type}
        return {key: normalise_value(item, prefix) for key, item in value.items()}
    return value


def _never_sent(exc: requests.exceptions.ConnectionError) -> bool:
    """True when the connection was never established (refused, unresolvable, connect timeout),
    so the request cannot have reached Neptune and retrying is safe even for a write."""
    if isinstance(exc, requests.exceptions.ConnectTimeout):
        return True
    reason = getattr(exc.args[0], "reason", None) if exc.args else None
    return isinstance(reason, ConnectTimeoutError)


class NeptuneGraphStore:
    """The `GraphStore` port on Neptune's openCypher HTTPS endpoint."""

    def __init__(
        self,
        endpoint: str,
        region: str,
        prefix: str,
        *,
        connect_timeout_s: float = 1.0,
        read_timeout_s: float = 3.0,
        max_retries: int = 2,
        iam_auth: bool = True,
        credentials: CredentialSource | None = None,
        session: requests.Session | None = None,
        clock: Callable[[], datetime] | None = None,
        backoff_s: float = 0.05,
        max_backoff_s: float = 1.0,
        sleep: Callable[[float], None] = time.sleep,
    ):
        self.prefix = validate_prefix(prefix)
        self.url = endpoint.rstrip("/") + "/openCypher"
        self.region = region
        self.timeout = (connect_timeout_s, read_timeout_s)
        self.max_retries = max_retries
        self.iam_auth = iam_auth
        self._credentials = credentials
        self._session = session or shared_session()
        self._clock = clock or (lambda: datetime.now(UTC))
        self._backoff_s = backoff_s
        self._max_backoff_s = max_backoff_s
        self._sleep = sleep
        self._lock = threading.Lock()
        self._auth: Any = None
        self._auth_key: tuple[str, str, str | None] | None = None

    # -- signing --------------------------------------------------------------------------------
    def _signer(self) -> Any:
        """An `AWS4Auth` for the current credentials, re-created when they rotate."""
        from requests_aws4auth import AWS4Auth

        if self._credentials is None:
            self._credentials = botocore_credentials()
        frozen = self._credentials()
        key = (frozen.access_key, frozen.secret_key, frozen.token)
        if key != self._auth_key:
            self._auth = AWS4Auth(
                frozen.access_key, frozen.secret_key, self.region, SERVICE, session_token=frozen.token or None
            )
            self._auth_key = key
        return self._auth

    def _prepare(self, cypher: str, params: Mapping[str, Any] | None) -> requests.PreparedRequest:
        form = {"query": cypher}
        if params:
            form["parameters"] = json.dumps(dict(params), separators=(",", ":"))
        headers = {"Accept": "application/json"}
        if not self.iam_auth:
            return self._session.prepare_request(
                requests.Request("POST", self.url, data=form, headers=headers)
            )
        # the signing time comes from our clock; AWS4Auth signs the x-amz-date it finds
        headers["x-amz-date"] = self._clock().astimezone(UTC).strftime("%Y%m%dT%H%M%SZ")
        with self._lock:  # AWS4Auth re-keys itself on a new day: one signer at a time
            request = requests.Request("POST", self.url, data=form, headers=headers, auth=self._signer())
            return self._session.prepare_request(request)

    # -- transport ------------------------------------------------------------------------------
    def _backoff(self, attempt: int) -> None:
        cap = min(self._max_backoff_s, self._backoff_s * (2**attempt))
        self._sleep(cap * random.uniform(0.5, 1.0))  # noqa: S311 - jitter, not cryptography

    def _raw(self, cypher: str, params: Mapping[str, Any] | None = None) -> list[dict[str, Any]]:
        """Send an already-prefixed query; rows normalised to the FalkorDB adapter's shape."""
        read_only = _WRITE_CLAUSE.search(cypher) is None
        attempt = 0
        while True:
            prepared = self._prepare(cypher, params)  # signed afresh: new date, current credentials
            try:
                response = self._session.send(prepared, timeout=self.timeout)
            except requests.exceptions.ReadTimeout as exc:
                log.warning("neptune_timeout", extra={"read_timeout_s": self.timeout[1]})
                raise GraphTimeout(f"Neptune did not answer within {self.timeout[1]} s") from exc
            except requests.exceptions.ConnectionError as exc:
                retryable = _never_sent(exc) or read_only
                if (
                    retryable
                    and attempt < self.max_retries
                    and not isinstance(exc, requests.exceptions.SSLError)
                ):
                    log.warning("neptune_retry", extra={"reason": type(exc).__name__, "attempt": attempt + 1})
                    self._backoff(attempt)
                    attempt += 1
                    continue
                raise GraphUnavailable(f"Neptune unreachable: {type(exc).__name__}") from exc
            except requests.exceptions.RequestException as exc:
                raise GraphUnavailable(f"Neptune request failed: {type(exc).__name__}") from exc
            if response.status_code == 200:
                return self._rows(response)
            error = self._error(response)
            if isinstance(error, GraphThrottled) and attempt < self.max_retries:
                log.warning(
                    "neptune_retry",
                    extra={"code": error.code, "status": error.status, "request_id": error.request_id,
                           "attempt": attempt + 1},
                )  # fmt: skip
                self._backoff(attempt)
                attempt += 1
                continue
            log.warning(
                "neptune_error",
                extra={"code": error.code, "status": error.status, "request_id": error.request_id},
            )
            raise error

    def _rows(self, response: requests.Response) -> list[dict[str, Any]]:
        try:
            body = response.json()
        except ValueError as exc:
            raise GraphProtocolError("Neptune answered 200 with a body that is not JSON") from exc
        results = body.get("results") if isinstance(body, dict) else None
        if not isinstance(results, list) or not all(isinstance(row, dict) for row in results):
            raise GraphProtocolError("Neptune answered 200 without a `results` list of rows")
        return [
            {str(name): normalise_value(value, self.prefix) for name, value in row.items()} for row in results
        ]

    @staticmethod
    def _error(response: requests.Response) -> GraphRequestError:
        status = response.status_code
        try:
            body = response.json()
        except ValueError:
            body = None
        if not isinstance(body, dict):
            body = {}
        code = str(body.get("code") or f"HTTP{status}")
        request_id = str(body.get("requestId") or response.headers.get("x-amzn-RequestId") or "")
        detail = str(body.get("detailedMessage") or "")
        message = f"Neptune {code} (HTTP {status}" + (f", request {request_id})" if request_id else ")")
        kind: type[GraphRequestError]
        if code in RETRYABLE_CODES or status == 429:
            kind = GraphThrottled
        elif code in MALFORMED_CODES:
            kind = MalformedGraphQuery
        elif 400 <= status < 500:
            kind = GraphQueryRejected
        else:
            kind = GraphRequestError
        return kind(message, code=code, status=status, request_id=request_id, detail=detail)

    # -- GraphStore -----------------------------------------------------------------------------
    def run(self, cypher: str, params: Mapping[str, Any] | None = None) -> list[dict[str, Any]]:
        return self._raw(prefix_query(cypher, self.prefix), params)

    def ensure_indexes(self) -> None:
        """Nothing to do: Neptune indexes every label, property and edge itself, and openCypher
        on Neptune has no CREATE INDEX."""

    def count_nodes(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for row in self._raw("MATCH (n) UNWIND labels(n) AS label RETURN label, count(*) AS c"):
            name = logical_name(self.prefix, str(row["label"]))
            if name:
                counts[name] = counts.get(name, 0) + int(row["c"])
        return counts

    def count_edges(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for row in self._raw("MATCH ()-[r]->() RETURN type(r) AS t, count(*) AS c"):
            name = logical_name(self.prefix, str(row["t"]))
            if name:
                counts[name] = counts.get(name, 0) + int(row["c"])
        return counts

    def delete_all(self) -> None:
        """Remove this prefix's nodes and edges (other prefixes are untouched)."""
        for label in sorted(NODE_LABELS):
            self.run(f"MATCH (n:{label}) DETACH DELETE n")
