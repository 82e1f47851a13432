"""A local stand-in for Neptune's openCypher HTTPS endpoint, backed by the embedded FalkorDB.

`POST /openCypher` with form fields `query` and `parameters` (JSON), as Neptune takes them;
answers `{"results": [...]}` with nodes and relationships in Neptune's JSON shape (`~id`,
`~entityType`, `~labels` / `~type`, `~start`, `~end`, `~properties`) and errors as Neptune's
error body `{"requestId", "code", "detailedMessage"}` with its HTTP status (400
`MalformedQueryException` for a query that does not compile, 403 `AccessDeniedException`
without a valid signature, ...).

It is no more lenient than Neptune: before a query reaches FalkorDB, `neptune_rules` refuses
what Neptune's openCypher refuses (list or map property values, `shortestPath`, `EXISTS { }`,
predicate functions, `MANDATORY MATCH`, non-literal SKIP / LIMIT, ...) with Neptune's 400 codes;
`strict=False` turns that off.

Queries arrive already prefixed (the adapter adds `GRAPH_ENV_PREFIX`) and run as they are, so
labels come back physical, as Neptune's would. Every request must carry a SigV4 `Authorization`
header for service `neptune-db`; given `credentials` (access key -> secret key), the server
recomputes the signature and refuses a mismatch, as Neptune with IAM auth does.

For tests, `inject(Fault(...))` makes the next requests fail (an error body, a slow answer, a
body that is not JSON) and `requests` records what arrived. Local use only (127.0.0.1); never
shipped to Lambda. `python -m heirloom_dev.neptune_server --socket PATH` serves by hand.
"""

from __future__ import annotations

import argparse
import hashlib
import hmac
import json
import re
import threading
import time
import uuid
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, cast
from urllib.parse import parse_qsl, quote, urlsplit

from heirloom_dev.neptune_rules import refusal

SERVICE = "neptune-db"
_AUTH = re.compile(
    r"AWS4-HMAC-SHA256\s+Credential=(?P<credential>[^,\s]+),\s*SignedHeaders=(?P<signed>[^,\s]+),"
    r"\s*Signature=(?P<signature>[0-9a-f]{64})"
)
#: FalkorDB messages for queries that do not parse or compile (Neptune: MalformedQueryException)
_MALFORMED = ("errMsg: Invalid input", "not defined", "Unknown function", "Invalid input", "syntax error")


# -- SigV4, written out from the specification (checked against AWS's published examples) --------
def _hmac(key: bytes, msg: str) -> bytes:
    return hmac.new(key, msg.encode("utf-8"), hashlib.sha256).digest()


def signing_key(secret_key: str, date: str, region: str, service: str) -> bytes:
    key = _hmac(("AWS4" + secret_key).encode("utf-8"), date)
    return _hmac(_hmac(_hmac(key, region), service), "aws4_request")


def canonical_request(
    method: str, path: str, query: str, headers: Mapping[str, str], signed: list[str], payload: bytes
) -> str:
    canonical_query = "&".join(
        f"{quote(k, safe='-_.~')}={quote(v, safe='-_.~')}"
        for k, v in sorted(parse_qsl(query, keep_blank_values=True))
    )
    lowered = {name.lower(): value for name, value in headers.items()}
    canonical_headers = "".join(f"{name}:{' '.join(lowered.get(name, '').split())}\n" for name in signed)
    return "\n".join(
        [
            method.upper(),
            quote(path or "/", safe="/~"),
            canonical_query,
            canonical_headers,
            ";".join(signed),
            hashlib.sha256(payload).hexdigest(),
        ]
    )


def sigv4_signature(
    secret_key: str,
    *,
    method: str,
    path: str,
    query: str,
    headers: Mapping[str, str],
    signed: list[str],
    payload: bytes,
    amz_date: str,
    region: str,
    service: str,
) -> str:
    """The hex SigV4 signature of a request (headers must include every name in `signed`)."""
    scope = f"{amz_date[:8]}/{region}/{service}/aws4_request"
    request = canonical_request(method, path, query, headers, signed, payload)
    to_sign = "\n".join(
        ["AWS4-HMAC-SHA256", amz_date, scope, hashlib.sha256(request.encode("utf-8")).hexdigest()]
    )
    return hmac.new(
        signing_key(secret_key, amz_date[:8], region, service), to_sign.encode("utf-8"), hashlib.sha256
    ).hexdigest()


# -- Neptune's JSON shape --------------------------------------------------------------------
def to_neptune_json(value: Any) -> Any:
    """A FalkorDB result value in Neptune's openCypher JSON shape."""
    from falkordb.edge import Edge
    from falkordb.node import Node
    from falkordb.path import Path

    if isinstance(value, Node):
        return {
            "~id": str(value.id),
            "~entityType": "node",
            "~labels": list(value.labels or []),
            "~properties": {k: to_neptune_json(v) for k, v in value.properties.items()},
        }
    if isinstance(value, Edge):
        return {
            "~id": str(value.id),
            "~entityType": "relationship",
            "~start": str(getattr(value.src_node, "id", value.src_node)),
            "~end": str(getattr(value.dest_node, "id", value.dest_node)),
            "~type": value.relation,
            "~properties": {k: to_neptune_json(v) for k, v in value.properties.items()},
        }
    if isinstance(value, Path):  # not used by the project's queries: nodes and edges in order
        items: list[Any] = []
        for i, node in enumerate(value.nodes()):
            items.append(to_neptune_json(node))
            if i < value.edge_count():
                items.append(to_neptune_json(value.get_edge(i)))
        return items
    if isinstance(value, list | tuple):
        return [to_neptune_json(item) for item in value]
    if isinstance(value, Mapping):
        return {str(k): to_neptune_json(v) for k, v in value.items()}
    return value


@dataclass(frozen=True)
class Fault:
    """What the server does instead of (or before) answering a request."""

    status: int = 500
    code: str = "InternalFailureException"
    message: str = "injected fault"
    #: a raw body instead of Neptune's error JSON (e.g. b"<html>" for a proxy error page)
    body: bytes | None = None
    #: seconds to wait first; with `then_answer`, the query then runs normally
    delay_s: float = 0.0
    then_answer: bool = False
    #: close the connection without answering (a connection dropped mid-request)
    drop: bool = False


@dataclass(frozen=True)
class RecordedRequest:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes
    status: int = 0


class _ServerError(Exception):
    def __init__(self, status: int, code: str, message: str):
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message


@dataclass
class _State:
    graph: Any
    region: str | None
    credentials: dict[str, str] | None
    require_auth: bool
    #: refuse what Neptune refuses (`neptune_rules`) before running a query on FalkorDB
    strict: bool = True
    #: seconds every query waits before it runs (a stand-in for the network and Neptune's own
    #: work: the bench's `--graph-http` rows)
    latency_s: float = 0.0
    faults: deque[Fault] = field(default_factory=deque)
    requests: deque[RecordedRequest] = field(default_factory=lambda: deque(maxlen=500))
    #: requests answered since the start (`requests` keeps only the last 500)
    count: int = 0
    record_lock: threading.Lock = field(default_factory=threading.Lock)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as the adapter's pooled session expects
    disable_nagle_algorithm = True  # else headers and body wait on a delayed ACK (40 ms a query)

    def log_message(self, format: str, *args: Any) -> None:  # quiet: no query text anywhere
        return

    def do_GET(self) -> None:
        self._handle("GET")

    def do_POST(self) -> None:
        self._handle("POST")

    def _handle(self, method: str) -> None:
        state = cast(_Server, self.server).state
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        answer = self._answer(state, method, body)
        status, payload, content_type = answer or (0, b"", "")
        with state.record_lock:  # recorded before the answer leaves: a client never sees it first
            state.count += 1
            state.requests.append(
                RecordedRequest(method, self.path, dict(self.headers.items()), body, status)
            )
        if answer is None:
            self.close_connection = True
            return
        try:
            self._send(status, payload, content_type)
        except (BrokenPipeError, ConnectionResetError):  # the client gave up (read timeout)
            return

    def _answer(self, state: _State, method: str, body: bytes) -> tuple[int, bytes, str] | None:
        url = urlsplit(self.path)
        try:
            if url.path != "/openCypher":
                raise _ServerError(400, "BadRequestException", f"unknown path {url.path}")
            if state.require_auth:
                self._check_signature(state, method, url.path, url.query, body)
            fault = state.faults.popleft() if state.faults else None
            if fault is not None:
                time.sleep(fault.delay_s)
                if fault.drop:
                    return None
                if fault.body is not None and not fault.then_answer:
                    return fault.status, fault.body, "text/plain"
                if not fault.then_answer:
                    raise _ServerError(fault.status, fault.code, fault.message)
            query, params = self._read_query(method, url.query, body)
            time.sleep(state.latency_s)
            refused = refusal(query, params) if state.strict else None
            if refused is not None:  # Neptune refuses it: nothing runs, nothing is written
                raise _ServerError(400, refused.code, refused.message)
            payload = json.dumps({"results": self._execute(state, query, params)}).encode("utf-8")
            return 200, payload, "application/json;charset=UTF-8"
        except _ServerError as exc:
            error = {"requestId": str(uuid.uuid4()), "code": exc.code, "detailedMessage": exc.message}
            return exc.status, json.dumps(error).encode("utf-8"), "application/x-amz-json-1.0"

    def _send(self, status: int, payload: bytes, content_type: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def _check_signature(self, state: _State, method: str, path: str, query: str, body: bytes) -> None:
        header = self.headers.get("Authorization")
        if not header:
            raise _ServerError(403, "AccessDeniedException", "Missing Authentication Token")
        match = _AUTH.fullmatch(header.strip())
        amz_date = self.headers.get("x-amz-date", "")
        if match is None or not re.fullmatch(r"\d{8}T\d{6}Z", amz_date):
            raise _ServerError(403, "AccessDeniedException", "Authorization header is not SigV4")
        parts = match["credential"].split("/")
        if len(parts) != 5 or parts[3] != SERVICE or parts[4] != "aws4_request" or parts[1] != amz_date[:8]:
            raise _ServerError(403, "AccessDeniedException", f"credential scope is not for {SERVICE}")
        access_key, _date, region = parts[0], parts[1], parts[2]
        if state.region and region != state.region:
            raise _ServerError(403, "AccessDeniedException", f"credential scope is for region {region}")
        signed = match["signed"].split(";")
        token = self.headers.get("x-amz-security-token")
        if (
            "host" not in signed
            or "x-amz-date" not in signed
            or (token and "x-amz-security-token" not in signed)
        ):
            raise _ServerError(403, "AccessDeniedException", "host, x-amz-date and the token must be signed")
        if state.credentials is None:
            return
        secret = state.credentials.get(access_key)
        if secret is None:
            raise _ServerError(
                403, "AccessDeniedException", "The security token included in the request is invalid"
            )
        expected = sigv4_signature(
            secret,
            method=method,
            path=path,
            query=query,
            headers=dict(self.headers.items()),
            signed=signed,
            payload=body,
            amz_date=amz_date,
            region=region,
            service=SERVICE,
        )
        if not hmac.compare_digest(expected, match["signature"]):
            raise _ServerError(
                403,
                "AccessDeniedException",
                "The request signature we calculated does not match the signature you provided",
            )

    def _read_query(self, method: str, query: str, body: bytes) -> tuple[str, dict[str, Any]]:
        content_type = (self.headers.get("Content-Type") or "").split(";")[0].strip().lower()
        fields = dict(parse_qsl(query, keep_blank_values=True))
        if method == "POST" and content_type == "application/opencypher":
            fields["query"] = body.decode("utf-8")
        elif method == "POST":
            fields.update(parse_qsl(body.decode("utf-8"), keep_blank_values=True))
        cypher = fields.get("query", "").strip()
        if not cypher:
            raise _ServerError(400, "MissingParameterException", "missing the `query` parameter")
        try:
            params = json.loads(fields["parameters"]) if fields.get("parameters") else {}
        except ValueError as exc:
            raise _ServerError(400, "InvalidParameterException", f"parameters are not JSON: {exc}") from exc
        if not isinstance(params, dict):
            raise _ServerError(400, "InvalidParameterException", "parameters must be a JSON object")
        return cypher, params

    @staticmethod
    def _execute(state: _State, cypher: str, params: dict[str, Any]) -> list[dict[str, Any]]:
        import redis.exceptions

        try:
            # no lock: Neptune runs a client's queries side by side, and so does FalkorDB (reads
            # in parallel, writes one at a time); the client's connection pool is thread-safe
            result = state.graph.query(cypher, params)
        except redis.exceptions.ResponseError as exc:
            message = str(exc)
            if any(marker in message for marker in _MALFORMED):
                raise _ServerError(400, "MalformedQueryException", message) from exc
            if "timed out" in message.lower():
                raise _ServerError(500, "TimeLimitExceededException", message) from exc
            raise _ServerError(400, "BadRequestException", message) from exc
        except (redis.exceptions.ConnectionError, redis.exceptions.TimeoutError, OSError) as exc:
            raise _ServerError(500, "InternalFailureException", f"graph engine unavailable: {exc}") from exc
        columns = [col[1] if isinstance(col, list | tuple) else col for col in (result.header or [])]
        return [
            {str(name): to_neptune_json(value) for name, value in zip(columns, row, strict=True)}
            for row in result.result_set
        ]


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    state: _State

    def handle_error(self, request: Any, client_address: Any) -> None:  # a client gone mid-answer
        return


class LocalNeptuneServer:
    """Serve one FalkorDB graph as Neptune's openCypher endpoint on 127.0.0.1 (random port)."""

    def __init__(
        self,
        falkor_socket: str,
        graph_name: str = "heirloom",
        *,
        port: int = 0,
        region: str | None = None,
        credentials: Mapping[str, str] | None = None,
        require_auth: bool = True,
        strict: bool = True,
        latency_ms: float = 0.0,
    ):
        from falkordb import FalkorDB

        graph = FalkorDB(unix_socket_path=falkor_socket).select_graph(graph_name)
        self._httpd = _Server(("127.0.0.1", port), _Handler)
        self._httpd.state = _State(
            graph=graph,
            region=region,
            credentials=dict(credentials) if credentials is not None else None,
            require_auth=require_auth,
            strict=strict,
            latency_s=latency_ms / 1000.0,
        )
        self._thread: threading.Thread | None = None

    @property
    def endpoint(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host!s}:{port}"

    @property
    def requests(self) -> deque[RecordedRequest]:
        """The last 500 requests, oldest first."""
        return self._httpd.state.requests

    @property
    def request_count(self) -> int:
        """Requests answered since the start."""
        return self._httpd.state.count

    def requests_since(self, count: int) -> list[RecordedRequest]:
        """The requests answered after `request_count` was `count`."""
        with self._httpd.state.record_lock:
            new = self._httpd.state.count - count
            return list(self._httpd.state.requests)[-new:] if new > 0 else []

    def inject(self, fault: Fault, times: int = 1) -> None:
        """The next `times` requests get `fault` (after the signature check)."""
        self._httpd.state.faults.extend([fault] * times)

    def clear_faults(self) -> None:
        self._httpd.state.faults.clear()

    def start(self) -> LocalNeptuneServer:
        self._thread = threading.Thread(target=self._httpd.serve_forever, name="neptune-local", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self) -> LocalNeptuneServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Neptune's openCypher endpoint over the local FalkorDB")
    parser.add_argument("--socket", required=True, help="FalkorDB unix socket (heirloom local status)")
    parser.add_argument("--graph", default="heirloom")
    parser.add_argument("--port", type=int, default=8182)
    parser.add_argument(
        "--no-auth", action="store_true", help="accept unsigned requests (NEPTUNE_IAM_AUTH=false)"
    )
    parser.add_argument("--latency-ms", type=float, default=0.0, help="added to every query (a network)")
    args = parser.parse_args(argv)
    server = LocalNeptuneServer(
        args.socket, args.graph, port=args.port, require_auth=not args.no_auth, latency_ms=args.latency_ms
    ).start()
    print(f"NEPTUNE_ENDPOINT={server.endpoint}", flush=True)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        server.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
