"""`heirloom smoke`: the token from admin-initiated auth, the TOTP challenge, the stack's outputs,
and the one question against an API (a loopback server standing in). Cognito is a stand-in:
moto's cognito-idp needs joserfc, which this environment does not have."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer
from typing import ClassVar

import pytest
from botocore.exceptions import ClientError

from heirloom_dev.smoke import SmokeFailed, StackOutputs, id_token, smoke, stack_outputs, totp

#: RFC 6238 appendix B: the SHA-1 secret "12345678901234567890", base32
RFC_SECRET = "GEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQ"


@pytest.mark.parametrize(("at", "code"), [(59, "287082"), (1111111109, "081804"), (1234567890, "005924")])
def test_totp_matches_rfc_6238(at, code):
    assert totp(RFC_SECRET, at) == code


class Outputs:
    def __init__(self, outputs):
        self.outputs = outputs

    def describe_stacks(self, StackName):
        return {
            "Stacks": [{"Outputs": [{"OutputKey": k, "OutputValue": v} for k, v in self.outputs.items()]}]
        }


def test_a_stack_without_the_ops_client_is_named():
    with pytest.raises(SmokeFailed, match="no output OpsClientId"):
        stack_outputs(Outputs({"ApiUrl": "https://x", "UserPoolId": "p"}), "Heirloom-dev")


class MfaPool:
    """Cognito asking for the software-token code, as the stack's pool (MFA required) does."""

    def __init__(self):
        self.responses = []

    def admin_initiate_auth(self, **kwargs):
        assert kwargs["AuthFlow"] == "ADMIN_USER_PASSWORD_AUTH"
        return {"ChallengeName": "SOFTWARE_TOKEN_MFA", "Session": "s1"}

    def admin_respond_to_auth_challenge(self, **kwargs):
        self.responses.append(kwargs)
        return {"AuthenticationResult": {"IdToken": "id-token"}}


def test_the_mfa_challenge_is_answered_with_the_current_code():
    pool = MfaPool()
    outputs = StackOutputs("https://x", "pool", "client")
    assert id_token(pool, outputs, "ops@example.org", "pw", RFC_SECRET) == "id-token"
    (sent,) = pool.responses
    assert sent["Session"] == "s1" and len(sent["ChallengeResponses"]["SOFTWARE_TOKEN_MFA_CODE"]) == 6
    with pytest.raises(SmokeFailed, match="HEIRLOOM_SMOKE_TOTP_SECRET"):
        id_token(MfaPool(), outputs, "ops@example.org", "pw")


class Api(BaseHTTPRequestHandler):
    seen: ClassVar[list] = []
    status = 200

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        Api.seen.append((self.path, self.headers["Authorization"], body))
        payload = {"context": "## Stories", "sources": [{"story_id": "s"}], "tokens": 42}
        data = json.dumps(payload if Api.status == 200 else {"error": "AccessDenied"}).encode()
        self.send_response(Api.status)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args):
        pass


@pytest.fixture
def api():
    server = HTTPServer(("127.0.0.1", 0), Api)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    Api.seen, Api.status = [], 200
    yield f"http://127.0.0.1:{server.server_port}/prod/legacies"
    server.shutdown()


class PasswordPool:
    """Cognito without MFA for this user: the password alone signs in."""

    def admin_initiate_auth(self, **kwargs):
        assert (kwargs["UserPoolId"], kwargs["ClientId"]) == ("pool", "ops-client")
        if kwargs["AuthParameters"] != {"USERNAME": "ops@example.org", "PASSWORD": "Secret-pw-123!"}:
            raise ClientError(
                {"Error": {"Code": "NotAuthorizedException", "Message": "Incorrect"}}, "AdminInitiateAuth"
            )
        return {"AuthenticationResult": {"IdToken": "header.claims.signature"}}


def test_smoke_signs_in_and_asks_one_question(api):
    stack = Outputs({"ApiUrl": api, "UserPoolId": "pool", "OpsClientId": "ops-client"})
    common = {"stack": "Heirloom-dev", "legacy_id": "L1", "username": "ops@example.org", "query": "Who?",
              "persona": "family", "cloudformation": stack, "cognito": PasswordPool()}  # fmt: skip
    summary = smoke(password="Secret-pw-123!", **common)
    assert summary.startswith("Heirloom-dev: 200 in ") and "42 tokens" in summary and "1 sources" in summary
    ((path, token, body),) = Api.seen
    assert path == "/prod/legacies/L1/context" and token == "header.claims.signature"
    assert body == {"query": "Who?", "persona": "family", "history": []}
    Api.status = 403
    with pytest.raises(SmokeFailed, match="the API answered 403"):
        smoke(password="Secret-pw-123!", **common)
    with pytest.raises(SmokeFailed, match=r"sign-in of ops@example\.org failed: ClientError"):
        smoke(password="wrong", **common)
