"""A load test of the local API: the API handler behind a loopback HTTP server, concurrent users
across the sample's legacies, and an independent check of every response.

- `LocalApi`: a stdlib `ThreadingHTTPServer` on 127.0.0.1 that turns each HTTP request into an
  API Gateway REST proxy event with a Cognito-style authorizer identity and hands it to a free
  "container".
- `Containers`: N worker processes, each like one Lambda execution environment: its own API
  handler (`functions/api`), its own services over the shared engines, and its own real
  context-assembly workflow (the ASL in moto's interpreter, the real handlers; no history, as
  StartSyncExecution). Each serves one request at a time. Processes, not threads: Powertools'
  event handler keeps the current event in a class attribute (`BaseRouter.current_event`), so
  two invocations of the API handler at once in one process read each other's events (found by
  this test: a user received another user's context). Lambda never does that; neither does this.
- Identity: `Authorization: Bearer <user id>` stands for a verified Cognito token (its `sub`);
  `X-Groups: admin` adds the admin group. No header: no authorizer claims (the handler's 403).
- Every request carries two nonces that must come back in its own response: a year in the
  query (the intent step extracts it; the debug metadata returns it) and the token budget. Every
  source must be readable by the request's user per `tests/support/oracle.py`; a user asking
  about a legacy they are not a member of must get 403.

Run the long mode and record it: `python -m tests.support.loadtest --requests 1000 --concurrency 8
--containers 4 --json loadtest.json` (starts its own embedded stack in a temporary folder).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import queue
import random
import statistics
import threading
import time
import urllib.error
import urllib.request
import uuid
import warnings
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import asdict, dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

from heirloom_dev.functions import LambdaContext
from heirloom_dev.runtime import project_root

ROUTE = "/legacies/{legacy_id}/context"
#: a local-only response header naming why an execution failed (the report shows it)
DIAGNOSTIC = "X-Local-Execution-Failure"
QUESTIONS = {
    "family": ["What happened to the punch bowl when the river flooded?", "Who was Aunt Lucy?",
               "Why did the family argue about the house?"],
    "biographer": ["Tell me about his working years at the glass works.", "Who taught him to cut glass?"],
    "friend": ["Who played music with Dad, and where did they play?", "What did he do on Sundays?"],
    "colleague": ["What happened at the glass works during the strike?", "Who worked with him at the furnace?"],
}  # fmt: skip


# -- the containers and the server ------------------------------------------------------------
def load_api_handler() -> Callable[..., Any]:
    """functions/api/handler.py, loaded as Lambda loads it."""
    path = project_root() / "functions" / "api" / "handler.py"
    spec = importlib.util.spec_from_file_location(f"heirloom_api_{uuid.uuid4().hex}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    handler: Callable[..., Any] = module.handler
    return handler


@dataclass(frozen=True)
class Deployment:
    """Where a container finds the engines (picklable: it crosses into the worker processes)."""

    database_url: str
    falkor_socket: str
    graph_name: str
    graph_prefix: str
    embedding_dim: int = 64


def _container(conn: Any, deployment: Deployment) -> None:
    """One execution environment: services, the local workflows and the API handler, serving
    the events that arrive on `conn` one at a time."""
    from heirloom.adapters.embedders import HashingEmbedder
    from heirloom.adapters.falkor import FalkorGraphStore
    from heirloom.adapters.postgres import PgDatabase, PgStoryStore, PgVectorIndex
    from heirloom.adapters.tokenizer import TiktokenTokenizer
    from heirloom_dev.workflow import LocalContextWorkflow, LocalWorkflows
    from tests.support.services import services_with

    embedder = HashingEmbedder(deployment.embedding_dim)
    db = PgDatabase(deployment.database_url, embedding_dim=embedder.dimension)
    services = services_with(
        stories=PgStoryStore(db),
        vectors=PgVectorIndex(db, model_id=embedder.model_id),
        graph=FalkorGraphStore(deployment.falkor_socket, deployment.graph_name, deployment.graph_prefix),
        embedder=embedder,
        tokenizer=TiktokenTokenizer(),
    )
    warnings.filterwarnings("ignore", message="No application metrics to publish")
    handler = load_api_handler()
    with LocalWorkflows(services=services, machines=["context_assembly"]).start() as workflows:
        workflow = LocalContextWorkflow(workflows, history=False)
        conn.send("ready")
        while (event := conn.recv()) is not None:
            workflow.last = None
            try:
                result = handler(event, LambdaContext("Api"), services=services, workflow=workflow)
            except Exception as exc:  # Lambda would report the function error: API Gateway's 502
                result = {"statusCode": 502, "body": json.dumps({"message": type(exc).__name__})}
            failed = workflow.last if workflow.last and workflow.last.status != "SUCCEEDED" else None
            if failed is not None:  # for the report only (a local header, never in the body)
                cause = f"{failed.status} {failed.error}: {(failed.cause or '')[:300]}"
                result = {**result, "headers": {**(result.get("headers") or {}), DIAGNOSTIC: cause}}
            conn.send(result)


#: imported once by the fork server, so each container starts in about a second
PRELOAD = [
    "tests.support.loadtest",
    "tests.support.services",
    "heirloom_dev.workflow",
    "heirloom.services",
    "heirloom.adapters.postgres",
    "heirloom.adapters.falkor",
    "heirloom.adapters.tokenizer",
    "heirloom.domain.assembly",
    "aws_lambda_powertools.event_handler",
    "aws_xray_sdk.core",
    "boto3",
    "moto.stepfunctions.models",
    "moto.stepfunctions.parser.models",
    "moto.awslambda.models",
]


class Containers:
    """`size` container processes (forked from a server that preloaded the code); a request
    takes an idle one and holds it until its response is back."""

    def __init__(self, deployment: Deployment, size: int):
        import multiprocessing

        context = multiprocessing.get_context("forkserver")
        context.set_forkserver_preload(PRELOAD)
        self._idle: queue.Queue[Any] = queue.Queue()
        self._all: list[tuple[Any, Any]] = []
        for _ in range(size):
            parent, child = context.Pipe()
            process = context.Process(target=_container, args=(child, deployment), daemon=True)
            process.start()
            self._all.append((process, parent))
        for process, conn in self._all:
            if not conn.poll(120) or conn.recv() != "ready":
                raise RuntimeError(f"container {process.pid} did not start")
            self._idle.put(conn)

    def call(self, event: dict[str, Any]) -> dict[str, Any]:
        conn = self._idle.get()
        try:
            conn.send(event)
            result: dict[str, Any] = conn.recv()
            return result
        finally:
            self._idle.put(conn)

    def close(self) -> None:
        for _, conn in self._all:
            with suppress(OSError):
                conn.send(None)
        for process, _ in self._all:
            process.join(10)
            if process.is_alive():
                process.terminate()


def proxy_event(method: str, url: str, headers: dict[str, str], body: str) -> dict[str, Any]:
    """An API Gateway REST (v1) proxy event for the request, as the Cognito authorizer passes it."""
    parts = urlsplit(url)
    segments = parts.path.strip("/").split("/")
    path_params = None
    resource = parts.path
    if len(segments) == 3 and segments[0] == "legacies" and segments[2] == "context":
        path_params, resource = {"legacy_id": segments[1]}, ROUTE
    query = {k: v[-1] for k, v in parse_qs(parts.query).items()} or None
    auth = headers.get("authorization", "")
    claims = None
    if auth.lower().startswith("bearer ") and auth[7:].strip():
        claims = {"sub": auth[7:].strip(), "cognito:groups": headers.get("x-groups", "member")}
    return {
        "resource": resource,
        "path": parts.path,
        "httpMethod": method,
        "headers": {"Content-Type": headers.get("content-type", "application/json"), "Host": "localhost"},
        "multiValueHeaders": {},
        "queryStringParameters": query,
        "multiValueQueryStringParameters": {k: v for k, v in parse_qs(parts.query).items()} or None,
        "pathParameters": path_params,
        "stageVariables": None,
        "requestContext": {
            "resourcePath": resource,
            "httpMethod": method,
            "path": f"/local{parts.path}",
            "stage": "local",
            "requestId": str(uuid.uuid4()),
            "accountId": "123456789012",
            "apiId": "local",
            "identity": {"sourceIp": "127.0.0.1", "userAgent": headers.get("user-agent", "")},
            "authorizer": {"claims": claims} if claims else None,
        },
        "body": body,
        "isBase64Encoded": False,
    }


class LocalApi:
    """http://127.0.0.1:<port>: each request becomes a proxy event for `invoke` (a container)."""

    def __init__(self, invoke: Callable[[dict[str, Any]], dict[str, Any]]):
        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def _serve(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                body = self.rfile.read(length).decode() if length else ""
                headers = {k.lower(): v for k, v in self.headers.items()}
                result = invoke(proxy_event(self.command, self.path, headers, body))
                payload = (result.get("body") or "").encode()
                self.send_response(int(result["statusCode"]))
                for key, value in (result.get("headers") or {}).items():
                    if key.lower() != "content-length":
                        self.send_header(key, str(value))
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            do_POST = do_GET = _serve

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> LocalApi:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()


@contextmanager
def local_api(deployment: Deployment, *, containers: int) -> Iterator[LocalApi]:
    pool = Containers(deployment, containers)
    try:
        with LocalApi(pool.call) as api:
            yield api
    finally:
        pool.close()


def deployment_of(ports: Any, falkor_socket: str) -> Deployment:
    return Deployment(
        database_url=ports.stories.db.url,
        falkor_socket=falkor_socket,
        graph_name="heirloom_test",
        graph_prefix=ports.graph.prefix,
        embedding_dim=ports.embedder.dimension,
    )


# -- the load -------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Planned:
    index: int
    user: str
    legacy: str
    persona: str
    question: str
    year: int
    budget: int
    expected: int

    @property
    def query(self) -> str:
        return f"{self.question} (ref {self.year})"


@dataclass
class Outcome:
    planned: Planned
    status: int
    ms: float
    problem: str | None = None
    mixup: bool = False
    sources: int = 0


def plan(data: dict[str, list[dict[str, Any]]], n: int, seed: int = 1) -> list[Planned]:
    """`n` requests from every member across the legacies, and one in six from a user asking
    about a legacy they are not a member of (403)."""
    rng = random.Random(seed)
    users = sorted({m["user_id"] for m in data["members"]})
    legacies = [x["id"] for x in data["legacies"]]
    members = sorted((m["user_id"], m["legacy_id"]) for m in data["members"])
    outsiders = sorted((u, lid) for u in users for lid in legacies if (u, lid) not in set(members))
    out = []
    for i in range(n):
        pool = outsiders if outsiders and i % 6 == 5 else members
        user, legacy = rng.choice(pool)
        persona = rng.choice(sorted(QUESTIONS))
        out.append(
            Planned(
                index=i,
                user=user,
                legacy=legacy,
                persona=persona,
                question=rng.choice(QUESTIONS[persona]),
                year=1800 + i % 200,  # unique among any 200 consecutive requests
                budget=1000 + (i * 37) % 7000,
                expected=403 if pool is outsiders else 200,
            )
        )
    return out


def check(
    planned: Planned, status: int, body: dict[str, Any], readable: Callable[[str, str], set[str]]
) -> Outcome:
    out = Outcome(planned, status, 0.0)
    if status != planned.expected:
        out.problem = f"status {status}, expected {planned.expected}: {str(body)[:500]}"
        out.mixup = {status, planned.expected} == {200, 403}  # another user's permissions
        return out
    if status == 403:
        if body.get("error") != "AccessDenied":
            out.problem = f"403 without AccessDenied: {body}"
        return out
    debug = body.get("debug") or {}
    periods = tuple((debug.get("intent") or {}).get("entities", {}).get("time_periods", ()))
    sources = {s["story_id"] for s in body.get("sources", [])}
    out.sources = len(sources)
    if periods != (str(planned.year),) or debug.get("token_budget") != planned.budget:
        out.problem, out.mixup = f"nonce mismatch: {periods} / {debug.get('token_budget')}", True
    elif not sources <= readable(planned.user, planned.legacy):
        out.problem, out.mixup = (
            f"unreadable sources {sorted(sources - readable(planned.user, planned.legacy))}",
            True,
        )
    elif body.get("tokens", 0) > planned.budget:
        out.problem = f"{body['tokens']} tokens over a budget of {planned.budget}"
    return out


def send(base_url: str, planned: Planned, timeout_s: float) -> tuple[int, dict[str, Any]]:
    """The status and JSON body (with the local diagnostic header, if any, as `_diagnostic`)."""
    body = json.dumps({"query": planned.query, "persona": planned.persona, "token_budget": planned.budget})
    request = urllib.request.Request(
        f"{base_url}/legacies/{planned.legacy}/context?debug=true",
        data=body.encode(),
        method="POST",
        headers={
            "Content-Type": "application/json",
            "Authorization": f"Bearer {planned.user}",
            "X-Groups": "admin",
        },
    )
    try:
        with urllib.request.urlopen(request, timeout=timeout_s) as response:
            return response.status, json.loads(response.read() or b"{}")
    except urllib.error.HTTPError as exc:
        body = json.loads(exc.read() or b"{}")
        if exc.headers.get(DIAGNOSTIC):
            body["_diagnostic"] = exc.headers[DIAGNOSTIC]
        return exc.code, body


@dataclass
class Report:
    requests: int
    concurrency: int
    seconds: float
    errors: int
    mixups: int
    error_rate: float
    p50_ms: float
    p95_ms: float
    max_ms: float
    throughput_rps: float
    statuses: dict[str, int] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)

    def summary(self) -> str:
        return (
            f"{self.requests} requests, {self.concurrency} users, {self.seconds:.1f} s: "
            f"errors {self.errors} ({self.error_rate:.1%}), mix-ups {self.mixups}, "
            f"p50 {self.p50_ms:.0f} ms, p95 {self.p95_ms:.0f} ms, max {self.max_ms:.0f} ms, "
            f"{self.throughput_rps:.1f} req/s, statuses {self.statuses}"
        )


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return 0.0
    return ordered[min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))]


def run_load(
    base_url: str,
    requests: list[Planned],
    concurrency: int,
    readable: Callable[[str, str], set[str]],
    *,
    timeout_s: float = 30.0,
) -> Report:
    """Send `requests` from `concurrency` threads (each a user session taking the next request)."""
    pending: queue.Queue[Planned] = queue.Queue()
    for item in requests:
        pending.put(item)
    outcomes: list[Outcome] = []
    lock = threading.Lock()

    def user() -> None:
        while True:
            try:
                planned = pending.get_nowait()
            except queue.Empty:
                return
            started = time.perf_counter()
            try:
                status, body = send(base_url, planned, timeout_s)
                outcome = check(planned, status, body, readable)
            except Exception as exc:  # a dropped connection or a timeout is an error, not a crash
                outcome = Outcome(planned, 0, 0.0, problem=f"{type(exc).__name__}: {exc}")
            outcome.ms = (time.perf_counter() - started) * 1000
            with lock:
                outcomes.append(outcome)

    started = time.perf_counter()
    threads = [threading.Thread(target=user, name=f"user-{i}") for i in range(concurrency)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    seconds = time.perf_counter() - started
    latencies = [o.ms for o in outcomes]
    errors = [o for o in outcomes if o.problem]
    return Report(
        requests=len(outcomes),
        concurrency=concurrency,
        seconds=round(seconds, 2),
        errors=len(errors),
        mixups=sum(o.mixup for o in outcomes),
        error_rate=round(len(errors) / max(1, len(outcomes)), 4),
        p50_ms=round(statistics.median(latencies), 1) if latencies else 0.0,
        p95_ms=round(percentile(latencies, 0.95), 1),
        max_ms=round(max(latencies, default=0.0), 1),
        throughput_rps=round(len(outcomes) / seconds, 2) if seconds else 0.0,
        statuses=dict(sorted(Counter(str(o.status) for o in outcomes).items())),
        problems=[f"#{o.planned.index} {o.problem}" for o in errors[:10]],
    )


# -- the script ---------------------------------------------------------------------------------
def main(argv: list[str] | None = None) -> int:
    import shutil

    import conftest  # noqa: F401 - the tests' environment: region, fake credentials, Powertools
    from heirloom.adapters.embedders import HashingEmbedder
    from heirloom_dev.loader import load_dataset
    from heirloom_dev.stack import LocalStack
    from tests.support import oracle
    from tests.support.sample import SAMPLE, fresh_ports
    from tests.support.stack import stack_home

    parser = argparse.ArgumentParser(
        prog="python -m tests.support.loadtest", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--requests", type=int, default=1000)
    parser.add_argument("--concurrency", type=int, default=8, help="concurrent users (threads)")
    parser.add_argument("--containers", type=int, default=4, help="container processes serving them")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--json", help="write the report here")
    args = parser.parse_args(argv)

    data = oracle.load(SAMPLE)
    home = stack_home()
    stack = LocalStack(home)
    try:
        status = stack.up()
        with fresh_ports(status, embedder=HashingEmbedder(64), name="load") as ports:
            load_dataset(ports, SAMPLE)
            with local_api(
                deployment_of(ports, status.falkor_socket or ""), containers=args.concurrency
            ) as api:
                report = run_load(
                    api.url,
                    plan(data, args.requests, args.seed),
                    args.concurrency,
                    lambda user, legacy: oracle.readable(data, user, legacy),
                )
    finally:
        stack.down()
        shutil.rmtree(home, ignore_errors=True)
    print(report.summary())
    for problem in report.problems:
        print("  ", problem)
    if args.json:
        Path(args.json).write_text(json.dumps(asdict(report), indent=2))
    return 0 if report.errors == 0 else 1


if __name__ == "__main__":
    raise SystemExit(main())
