"""The Neptune adapter against the local openCypher server: SigV4 signatures checked against
independent implementations, credential rotation, Neptune's wire format, error mapping,
retries and timeouts -- all over real HTTP."""

from __future__ import annotations

import hashlib
import json
import logging
import socket
import time
import uuid
from collections import namedtuple
from datetime import UTC, datetime, timedelta
from unittest import mock
from urllib.parse import parse_qs

import pytest
import requests

from heirloom.adapters.neptune import NeptuneGraphStore, botocore_credentials
from heirloom.errors import (
    GraphProtocolError,
    GraphQueryRejected,
    GraphRequestError,
    GraphThrottled,
    GraphTimeout,
    GraphUnavailable,
    MalformedGraphQuery,
)
from heirloom_dev.neptune_server import Fault, LocalNeptuneServer, sigv4_signature
from tests.support.neptune import REGION

Creds = namedtuple("Creds", "access_key secret_key token")
FIRST = Creds("AKIDEXAMPLE", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY", "FQoGZXIvYXdzEXAMPLETOKEN1")
ROTATED = Creds("ASIAROTATEDEXAMPLE", "rotatedSecretKeyEXAMPLE0123456789abcdef", "FQoGZXIvYXdzEXAMPLETOKEN2")
FROZEN = datetime(2024, 5, 1, 12, 0, 0, tzinfo=UTC)


@pytest.fixture(scope="module")
def strict_server(local_stack):
    """A server that knows only FIRST and ROTATED and recomputes every signature."""
    credentials = {c.access_key: c.secret_key for c in (FIRST, ROTATED)}
    with LocalNeptuneServer(local_stack.falkor_socket, "heirloom_test", region=REGION,
                            credentials=credentials) as server:  # fmt: skip
        yield server


class Holder:
    """A credential source whose answer the test changes (a rotation)."""

    def __init__(self, creds):
        self.creds = creds

    def __call__(self):
        return self.creds


def _store(server, **kw):
    kw.setdefault("credentials", Holder(FIRST))
    kw.setdefault("clock", lambda: FROZEN)
    return NeptuneGraphStore(server.endpoint, REGION, "sig", **kw)


def _auth_parts(header: str) -> dict[str, str]:
    algorithm, _, rest = header.partition(" ")
    assert algorithm == "AWS4-HMAC-SHA256"
    return dict(part.strip().split("=", 1) for part in rest.split(","))


# -- signing ----------------------------------------------------------------------------------
def test_the_servers_verifier_reproduces_awss_published_example():
    """AWS's SigV4 documentation example (S3 GetObject, 2013-05-24): the strict server's own
    implementation gives the published signature, so it is a fair judge of the adapter's."""
    headers = {
        "Host": "examplebucket.s3.amazonaws.com",
        "Range": "bytes=0-9",
        "x-amz-content-sha256": hashlib.sha256(b"").hexdigest(),
        "x-amz-date": "20130524T000000Z",
    }
    signature = sigv4_signature(
        "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", method="GET", path="/test.txt", query="",
        headers=headers, signed=["host", "range", "x-amz-content-sha256", "x-amz-date"], payload=b"",
        amz_date="20130524T000000Z", region="us-east-1", service="s3",
    )  # fmt: skip
    assert signature == "f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41"


def test_requests_carry_the_signature_botocore_computes_for_them(strict_server):
    from botocore.auth import SigV4Auth
    from botocore.awsrequest import AWSRequest
    from botocore.credentials import Credentials

    store = _store(strict_server)
    params = {"id": "p1", "names": ["Ada", "Zoë"]}
    assert store.run("MATCH (p:Person {id: $id}) RETURN p.name AS name", params) == []
    sent = strict_server.requests[-1]
    assert sent.status == 200  # the strict server recomputed the signature and accepted it
    headers = {k.lower(): v for k, v in sent.headers.items()}

    # the wire format: POST /openCypher, form-encoded query (prefixed) and JSON parameters
    assert sent.method == "POST" and sent.path == "/openCypher"
    assert headers["content-type"] == "application/x-www-form-urlencoded"
    form = parse_qs(sent.body.decode("utf-8"))
    assert form["query"] == ["MATCH (p:`sig-Person` {id: $id}) RETURN p.name AS name"]
    assert json.loads(form["parameters"][0]) == params

    # the exact headers SigV4 needs, from the frozen clock and the fixed credentials
    assert headers["x-amz-date"] == "20240501T120000Z"
    assert headers["x-amz-security-token"] == FIRST.token
    assert headers["x-amz-content-sha256"] == hashlib.sha256(sent.body).hexdigest()
    auth = _auth_parts(headers["authorization"])
    assert auth["Credential"] == "AKIDEXAMPLE/20240501/us-east-1/neptune-db/aws4_request"
    assert auth["SignedHeaders"] == "content-type;host;x-amz-content-sha256;x-amz-date;x-amz-security-token"

    # botocore signs the same request (same body, the headers the adapter signed) independently
    expected = AWSRequest(
        method="POST",
        url=strict_server.endpoint + "/openCypher",
        data=sent.body,
        headers={
            "Content-Type": headers["content-type"],
            "X-Amz-Content-SHA256": hashlib.sha256(sent.body).hexdigest(),
        },
    )
    with mock.patch("botocore.auth.get_current_datetime", return_value=FROZEN.replace(tzinfo=None)):
        SigV4Auth(Credentials(*FIRST), "neptune-db", REGION).add_auth(expected)
    assert expected.headers["X-Amz-Date"] == "20240501T120000Z"
    assert headers["authorization"] == expected.headers["Authorization"]


def test_a_wrong_secret_or_a_missing_signature_is_refused(strict_server):
    forged = _store(strict_server, credentials=Holder(FIRST._replace(secret_key="not-the-secret")))
    with pytest.raises(GraphQueryRejected) as refused:
        forged.run("MATCH (p:Person) RETURN p")
    assert refused.value.code == "AccessDeniedException" and refused.value.status == 403
    unsigned = _store(strict_server, iam_auth=False)
    with pytest.raises(GraphQueryRejected) as missing:
        unsigned.run("MATCH (p:Person) RETURN p")
    assert missing.value.code == "AccessDeniedException"
    assert "authorization" not in {k.lower() for k in strict_server.requests[-1].headers}


def test_rotated_credentials_sign_the_next_request(strict_server):
    holder = Holder(FIRST)
    clock = [FROZEN]
    store = _store(strict_server, credentials=holder, clock=lambda: clock[0])
    seen = []
    for creds, moment in ((FIRST, FROZEN), (ROTATED, FROZEN), (ROTATED, FROZEN + timedelta(days=1))):
        holder.creds, clock[0] = creds, moment
        store.run("MATCH (p:Person) RETURN count(p) AS n")
        sent = strict_server.requests[-1]
        assert sent.status == 200  # the server accepts each: signed with the credentials of the moment
        headers = {k.lower(): v for k, v in sent.headers.items()}
        seen.append((_auth_parts(headers["authorization"]), headers["x-amz-security-token"]))
    (first, token1), (rotated, token2), (next_day, _) = seen
    assert first["Credential"].startswith("AKIDEXAMPLE/20240501/")
    assert rotated["Credential"].startswith("ASIAROTATEDEXAMPLE/20240501/")
    assert (token1, token2) == (FIRST.token, ROTATED.token)
    assert len({first["Signature"], rotated["Signature"], next_day["Signature"]}) == 3
    assert next_day["Credential"].startswith("ASIAROTATEDEXAMPLE/20240502/")  # a new day, a new key


def test_botocore_refreshable_credentials_are_refreshed_before_signing(strict_server):
    from botocore.credentials import RefreshableCredentials

    issued = iter([FIRST, ROTATED, ROTATED])

    def refresh():
        creds = next(issued)
        soon = (datetime.now(UTC) + timedelta(seconds=5)).isoformat()  # inside the mandatory window
        return {"access_key": creds.access_key, "secret_key": creds.secret_key, "token": creds.token,
                "expiry_time": soon}  # fmt: skip

    credentials = RefreshableCredentials.create_from_metadata(refresh(), refresh, "test")
    store = _store(strict_server, credentials=botocore_credentials(credentials))
    store.run("MATCH (p:Person) RETURN count(p) AS n")
    headers = {k.lower(): v for k, v in strict_server.requests[-1].headers.items()}
    assert headers["authorization"].split("Credential=")[1].startswith("ASIAROTATEDEXAMPLE/")
    assert strict_server.requests[-1].status == 200


# -- the wire format ---------------------------------------------------------------------------
def test_the_server_answers_in_neptunes_json_shape(neptune_server, neptune_graph):
    neptune_graph.run(
        "MERGE (a:Person {id: 'a'}) MERGE (b:Person {id: 'b'}) MERGE (a)-[r:FAMILY_OF]->(b) SET r.detail = 'sister'"
    )
    signed = neptune_graph._prepare(
        f"MATCH (a:`{neptune_graph.prefix}-Person` {{id: 'a'}})-[r]->(b) RETURN a, r, b.id AS b", None
    )
    body = requests.Session().send(signed, timeout=5).json()
    (row,) = body["results"]
    a, r = row["a"], row["r"]
    assert a["~entityType"] == "node" and a["~labels"] == [f"{neptune_graph.prefix}-Person"]
    assert a["~properties"] == {"id": "a"} and isinstance(a["~id"], str)
    assert r["~entityType"] == "relationship" and r["~type"] == f"{neptune_graph.prefix}-FAMILY_OF"
    assert r["~start"] == a["~id"] and isinstance(r["~end"], str) and r["~properties"] == {"detail": "sister"}
    assert row["b"] == "b"
    bad = requests.Session().send(neptune_graph._prepare("MATCH (n RETURN n", None), timeout=5)
    assert bad.status_code == 400
    assert set(bad.json()) == {"requestId", "code", "detailedMessage"}
    assert bad.json()["code"] == "MalformedQueryException"


# -- errors and retries ------------------------------------------------------------------------
class Sleeps(list):
    def __call__(self, seconds):
        self.append(seconds)


def _fresh(server, **kw):
    kw.setdefault("sleep", Sleeps())
    return NeptuneGraphStore(server.endpoint, REGION, f"e{uuid.uuid4().hex[:10]}", max_retries=2, **kw)


def test_a_malformed_query_is_its_own_error_sent_once_and_kept_out_of_logs(neptune_server, caplog):
    store = _fresh(neptune_server)
    before = neptune_server.request_count
    with caplog.at_level(logging.DEBUG), pytest.raises(MalformedGraphQuery) as caught:
        store.run("MATCH (p:Person {id: $secret}) RETURN q", {"secret": "a story about Aunt Lucy"})
    error = caught.value
    assert isinstance(error, GraphUnavailable)  # callers fall back as for any graph failure
    assert (error.code, error.status) == ("MalformedQueryException", 400) and error.request_id
    assert "not defined" in error.detail  # Neptune's message is kept, but out of str()
    assert neptune_server.request_count == before + 1 and store._sleep == []  # never retried
    for text in (str(error), caplog.text):
        assert "Aunt Lucy" not in text and "MATCH" not in text and "not defined" not in text


@pytest.mark.parametrize(
    "fault",
    [Fault(500, "ThrottlingException"), Fault(429, "TooManyRequestsException"),
     Fault(500, "ConcurrentModificationException"), Fault(500, "QueryLimitExceededException"),
     Fault(400, "ConstraintViolationException")],
)  # fmt: skip
def test_retryable_errors_are_retried_with_bounded_backoff(neptune_server, neptune_graph, fault):
    store = _fresh(neptune_server)
    neptune_server.inject(fault, times=2)  # two failures, then the real answer
    assert store.run("MERGE (p:Person {id: 'r'}) RETURN p.id AS id") == [{"id": "r"}]
    assert len(store._sleep) == 2 and store._sleep[0] <= 0.05 and store._sleep[1] <= 0.1
    neptune_server.inject(fault, times=3)  # one more than the retries
    before = neptune_server.request_count
    with pytest.raises(GraphThrottled) as caught:
        store.run("MATCH (p:Person) RETURN p.id AS id")
    assert caught.value.code == fault.code and caught.value.status == fault.status
    assert neptune_server.request_count == before + 3


@pytest.mark.parametrize(
    "fault,kind",
    [(Fault(400, "BadRequestException"), GraphQueryRejected),
     (Fault(400, "UnsupportedOperationException"), MalformedGraphQuery),
     (Fault(403, "AccessDeniedException"), GraphQueryRejected),
     (Fault(500, "InternalFailureException"), GraphRequestError),
     (Fault(500, "TimeLimitExceededException"), GraphRequestError),
     (Fault(502, body=b"<html>Bad Gateway</html>"), GraphRequestError),
     (Fault(200, body=b"{not json"), GraphProtocolError),
     (Fault(200, body=b'{"head": []}'), GraphProtocolError)],
)  # fmt: skip
def test_other_errors_are_typed_and_not_retried(neptune_server, fault, kind):
    store = _fresh(neptune_server)
    neptune_server.inject(fault)
    before = neptune_server.request_count
    with pytest.raises(kind) as caught:
        store.run("MATCH (p:Person) RETURN p.id AS id")
    assert type(caught.value) is kind and isinstance(caught.value, GraphUnavailable)
    assert not isinstance(caught.value, GraphThrottled)
    if isinstance(caught.value, GraphRequestError):
        assert caught.value.code == (fault.code if fault.body is None else f"HTTP{fault.status}")
    assert neptune_server.request_count == before + 1 and store._sleep == []


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_a_refused_connection_is_retried_then_graph_unavailable_quickly():
    sleeps = Sleeps()
    store = NeptuneGraphStore(f"http://127.0.0.1:{_closed_port()}", REGION, "err", max_retries=2,
                              credentials=Holder(FIRST), sleep=sleeps)  # fmt: skip
    started = time.monotonic()
    with pytest.raises(GraphUnavailable) as caught:
        store.run("MERGE (p:Person {id: 'x'})")  # a write: safe, the connection never opened
    assert type(caught.value) is GraphUnavailable
    assert len(sleeps) == 2 and time.monotonic() - started < 1.0


def test_a_dropped_connection_is_retried_for_reads_only(neptune_server):
    store = _fresh(neptune_server)
    neptune_server.inject(Fault(drop=True))
    assert store.run("MATCH (p:Person {id: 'nobody'}) RETURN p.id AS id") == []
    assert len(store._sleep) == 1  # the read was sent again
    neptune_server.inject(Fault(drop=True))
    before = neptune_server.request_count
    with pytest.raises(GraphUnavailable) as caught:
        store.run("MERGE (p:Person {id: 'once'})")  # it may have run: a write is not repeated
    assert type(caught.value) is GraphUnavailable and neptune_server.request_count == before + 1
    assert store.run("MATCH (p:Person {id: 'once'}) RETURN p.id AS id") == []
    assert len(store._sleep) == 1


def test_a_slow_answer_is_a_timeout_within_the_read_timeout(neptune_server):
    store = _fresh(neptune_server, read_timeout_s=0.2)
    neptune_server.inject(Fault(delay_s=1.5, then_answer=True))
    started = time.monotonic()
    with pytest.raises(GraphTimeout):
        store.run("MATCH (p:Person) RETURN p.id AS id")
    # cut at the read timeout, not after the delayed answer; the budget is spent: no retry
    assert time.monotonic() - started < 1.5 and store._sleep == []


def test_the_traversal_step_falls_back_and_counts_the_failure(neptune_server):
    from heirloom.contracts.context import ContextRequest, GraphTraversalInput, Intent, QueryIntent
    from heirloom.domain.breaker import CircuitBreaker, InMemoryBreakerStore
    from heirloom.steps.graph_traversal import graph_traversal_step

    breaker = CircuitBreaker(InMemoryBreakerStore(), failure_threshold=1, cooldown_s=30)
    request = ContextRequest(legacy_id=uuid.uuid4(), user_id=uuid.uuid4(), persona="family", query="q")
    data = GraphTraversalInput(request=request, intent=QueryIntent(intent=Intent.GENERAL, confidence=0.5))
    neptune_server.inject(Fault(500, "ThrottlingException"), times=3)
    with pytest.raises(GraphUnavailable):
        graph_traversal_step(data, _fresh(neptune_server), breaker)
    assert breaker.state() == "open"
