"""Numbers from a query or a cursor beyond what the store holds are a 400 with a reason, never
the database's overflow as a 500 (through the API handler on the embedded engines)."""

from __future__ import annotations

import base64
import json
import uuid

import pytest

from tests.support.apigw import legacy_caller

pytestmark = pytest.mark.integration


def cursor(*keys: str) -> str:
    """A cursor as a client could forge one (the listing's own encoding)."""
    return base64.urlsafe_b64encode(json.dumps(list(keys)).encode()).decode().rstrip("=")


@pytest.mark.parametrize("before", ["9223372036854775808", "9" * 30])
def test_a_changelog_page_before_a_change_id_past_bigint_is_400(member_api, before):
    services, mini, _ = member_api
    status, out = legacy_caller(services, mini.legacy)(
        "GET", "/changelog", mini.creator, None, {"before": before}
    )
    assert (status, out["error"]) == (400, "InvalidRequest") and "before" in out["reason"]
    status, _ = legacy_caller(services, mini.legacy)(
        "GET", "/changelog", mini.creator, None, {"before": "9223372036854775807"}
    )
    assert status == 200


@pytest.mark.parametrize("seq", ["2147483648", "9" * 30, "0", "-1"])
def test_a_forged_facts_cursor_with_a_sequence_out_of_range_is_400(member_api, seq):
    services, mini, _ = member_api
    call = legacy_caller(services, mini.legacy)
    conversation = str(uuid.uuid4())
    assert call("POST", "/conversation-memory", mini.creator, {"enabled": True})[0] == 200
    assert (
        call(
            "POST", f"/conversations/{conversation}/messages", mini.creator, {"content": "Ada married Tom."}
        )[0]
        == 200
    )
    forged = cursor(f"facts:{conversation}", seq, str(uuid.uuid4()))
    status, out = call("GET", f"/conversations/{conversation}/facts", mini.creator, None, {"cursor": forged})
    assert (status, out["error"]) == (400, "InvalidRequest") and "cursor" in out["reason"]
