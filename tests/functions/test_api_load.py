"""A load test of the local API (tests/support/loadtest.py): the API handler behind a loopback
HTTP server, in Lambda-like container processes, each with the real context workflow (ASL in
moto's interpreter, real handlers) over the embedded engines holding the sample legacy;
concurrent users across the three legacies.

Small by default (40 requests, 4 users, 2 containers); `HEIRLOOM_LONG=1` runs the long mode
(1000 requests, 8 users, 4 containers), also available as `python -m tests.support.loadtest`
(see docs/reliability.md). HEIRLOOM_LOAD_REQUESTS / _USERS / _CONTAINERS override each figure.
"""

import os

import pytest

from tests.support import oracle
from tests.support.loadtest import Planned, check, deployment_of, local_api, plan, proxy_event, run_load
from tests.support.sample import SAMPLE

DATA = oracle.load(SAMPLE)
LONG = os.environ.get("HEIRLOOM_LONG") == "1"
REQUESTS = int(os.environ.get("HEIRLOOM_LOAD_REQUESTS", "1000" if LONG else "40"))
CONCURRENCY = int(os.environ.get("HEIRLOOM_LOAD_USERS", "8" if LONG else "4"))
#: Lambda-like container processes serving them (the machine has 2 cores)
CONTAINERS = int(os.environ.get("HEIRLOOM_LOAD_CONTAINERS", "4" if LONG else "2"))


def readable(user: str, legacy: str) -> set[str]:
    return oracle.readable(DATA, user, legacy)


def test_concurrent_users_get_their_own_permitted_answers(sample_ports, local_stack):
    requests = plan(DATA, REQUESTS)
    assert {r.legacy for r in requests} == {x["id"] for x in DATA["legacies"]}
    assert {r.expected for r in requests} == {200, 403}
    with local_api(deployment_of(sample_ports, local_stack.falkor_socket), containers=CONTAINERS) as api:
        report = run_load(api.url, requests, CONCURRENCY, readable)
    print("\n" + report.summary())
    assert report.requests == REQUESTS
    assert report.mixups == 0, report.problems
    assert report.errors == 0, report.problems
    # a behavioural bound (no request stuck behind another), not a benchmark
    assert report.max_ms < 30_000


def test_the_checker_catches_a_response_meant_for_someone_else():
    mine, theirs = plan(DATA, 2)
    other = next(r for r in plan(DATA, 40) if r.expected == 200 and r.user != mine.user)
    body = {"sources": [], "tokens": 10, "debug": {"intent": {"entities": {"time_periods": [str(theirs.year)]}},
                                                   "token_budget": theirs.budget}}  # fmt: skip
    assert check(mine, 200, body, readable).mixup
    forbidden = sorted({s["id"] for s in DATA["stories"]} - readable(other.user, other.legacy))
    body = {"sources": [{"story_id": forbidden[0]}], "tokens": 10,
            "debug": {"intent": {"entities": {"time_periods": [str(other.year)]}}, "token_budget": other.budget}}  # fmt: skip
    assert check(other, 200, body, readable).mixup
    outsider = Planned(0, mine.user, mine.legacy, "family", "q", 1900, 1000, expected=403)
    assert check(outsider, 200, {}, readable).mixup


@pytest.mark.parametrize(
    "auth,claims", [("Bearer abc", {"sub": "abc", "cognito:groups": "member"}), ("", None)]
)
def test_the_server_passes_the_verified_identity_as_authorizer_claims(auth, claims):
    event = proxy_event("POST", "/legacies/L/context?debug=true", {"authorization": auth}, "{}")
    assert event["pathParameters"] == {"legacy_id": "L"} and event["queryStringParameters"] == {
        "debug": "true"
    }
    assert (event["requestContext"]["authorizer"] or {}).get("claims") == claims
