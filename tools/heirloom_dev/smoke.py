"""`heirloom smoke`: one question against a deployed stack, as a user, from a terminal.

The stack's outputs name the API, the user pool and the ops client (admin-initiated auth, an
IAM-signed call: the operator's AWS credentials, no SRP). A user with MFA answers the TOTP
challenge from the secret in HEIRLOOM_SMOKE_TOTP_SECRET. Passwords and secrets come from the
environment only, never the command line (shell history, process lists).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import struct
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from typing import Any


class SmokeFailed(RuntimeError):
    """The smoke test could not get a token or the API did not answer 200."""


def totp(secret_b32: str, at: float | None = None, *, step: int = 30, digits: int = 6) -> str:
    """RFC 6238 time-based one-time password (HMAC-SHA1), as authenticator apps compute it."""
    key = base64.b32decode(secret_b32.replace(" ", "").upper() + "=" * (-len(secret_b32) % 8))
    counter = int((time.time() if at is None else at) // step)
    digest = hmac.new(key, struct.pack(">Q", counter), hashlib.sha1).digest()
    offset = digest[-1] & 0x0F
    code = (struct.unpack(">I", digest[offset : offset + 4])[0] & 0x7FFFFFFF) % 10**digits
    return str(code).zfill(digits)


@dataclass(frozen=True)
class StackOutputs:
    api_url: str
    user_pool_id: str
    ops_client_id: str


def outputs_of(cloudformation: Any, stack: str) -> dict[str, str]:
    """The CloudFormation outputs of `stack` (ApiUrl, UserPoolId, EventBusName, ...)."""
    try:
        (described,) = cloudformation.describe_stacks(StackName=stack)["Stacks"]
    except Exception as exc:
        raise SmokeFailed(f"stack {stack}: {exc}") from None
    return {o["OutputKey"]: o["OutputValue"] for o in described.get("Outputs", [])}


def stack_outputs(cloudformation: Any, stack: str) -> StackOutputs:
    outputs = outputs_of(cloudformation, stack)
    missing = [k for k in ("ApiUrl", "UserPoolId", "OpsClientId") if k not in outputs]
    if missing:
        raise SmokeFailed(
            f"stack {stack} has no output {', '.join(missing)} (deployed before the ops client?)"
        )
    return StackOutputs(outputs["ApiUrl"], outputs["UserPoolId"], outputs["OpsClientId"])


def id_token(cognito: Any, outputs: StackOutputs, username: str, password: str, totp_secret: str = "") -> str:
    """ADMIN_USER_PASSWORD_AUTH, then the software-token MFA challenge if the pool asks."""
    try:
        response = cognito.admin_initiate_auth(
            UserPoolId=outputs.user_pool_id,
            ClientId=outputs.ops_client_id,
            AuthFlow="ADMIN_USER_PASSWORD_AUTH",
            AuthParameters={"USERNAME": username, "PASSWORD": password},
        )
        challenge = response.get("ChallengeName")
        if challenge == "SOFTWARE_TOKEN_MFA":
            if not totp_secret:
                raise SmokeFailed("the user pool asks for a TOTP code: set HEIRLOOM_SMOKE_TOTP_SECRET")
            response = cognito.admin_respond_to_auth_challenge(
                UserPoolId=outputs.user_pool_id,
                ClientId=outputs.ops_client_id,
                ChallengeName=challenge,
                Session=response["Session"],
                ChallengeResponses={"USERNAME": username, "SOFTWARE_TOKEN_MFA_CODE": totp(totp_secret)},
            )
        elif challenge:
            raise SmokeFailed(f"unexpected challenge {challenge} (a new user must set a password first)")
    except SmokeFailed:
        raise
    except Exception as exc:  # botocore ClientError: NotAuthorizedException, ...
        raise SmokeFailed(f"sign-in of {username} failed: {type(exc).__name__}: {exc}") from None
    token: str = response["AuthenticationResult"]["IdToken"]
    return token


def ask(
    api_url: str, legacy_id: str, token: str, query: str, persona: str, timeout_s: float = 30.0
) -> dict[str, Any]:
    """POST <ApiUrl>/<legacy>/context; the parsed 200 body, else SmokeFailed with the status."""
    body = json.dumps({"query": query, "persona": persona, "history": []}).encode()
    request = urllib.request.Request(  # noqa: S310 - the stack's own https URL
        f"{api_url.rstrip('/')}/{legacy_id}/context",
        data=body,
        method="POST",
        headers={"Authorization": token, "Content-Type": "application/json"},
    )
    try:
        with urllib.request.urlopen(request, timeout=timeout_s) as response:  # noqa: S310
            answer: dict[str, Any] = json.loads(response.read())
            return answer
    except urllib.error.HTTPError as exc:
        raise SmokeFailed(
            f"the API answered {exc.code}: {exc.read()[:300].decode(errors='replace')}"
        ) from None
    except (urllib.error.URLError, TimeoutError) as exc:
        raise SmokeFailed(f"the API did not answer: {exc}") from None


def smoke(
    *,
    stack: str,
    legacy_id: str,
    username: str,
    password: str,
    query: str,
    persona: str,
    totp_secret: str = "",
    cloudformation: Any = None,
    cognito: Any = None,
) -> str:
    """One question end to end; a one-line summary of the answer."""
    if cloudformation is None or cognito is None:
        import boto3

        cloudformation = cloudformation or boto3.client("cloudformation")
        cognito = cognito or boto3.client("cognito-idp")
    outputs = stack_outputs(cloudformation, stack)
    token = id_token(cognito, outputs, username, password, totp_secret)
    started = time.monotonic()
    answer = ask(outputs.api_url, legacy_id, token, query, persona)
    seconds = time.monotonic() - started
    # ContextResponse: context, sources, tokens
    return (
        f"{stack}: 200 in {seconds:.1f} s, {answer.get('tokens', 0)} tokens of context from "
        f"{len(answer.get('sources', []))} sources"
    )
