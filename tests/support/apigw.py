"""A WSGI front for the API handler: each HTTP request becomes the API Gateway (REST, proxy)
event the Lambda receives, with a Cognito authorizer's claims, and the handler's answer becomes
the HTTP response. An exception escaping the handler is a 500, as API Gateway would answer it
(a 502 there), so HTTP-level fuzzers see it."""

from __future__ import annotations

import json
import traceback
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs

#: (event) -> the handler's proxy response
Invoke = Callable[[dict[str, Any]], dict[str, Any]]

REASONS = {200: "OK", 400: "Bad Request", 403: "Forbidden", 404: "Not Found", 500: "Internal Server Error"}


#: the API's resources (cdk/api.py), as API Gateway matches them
RESOURCES = (
    "/legacies/{legacy_id}/context",
    "/legacies/{legacy_id}/stories/{story_id}/connections",
    "/legacies/{legacy_id}/enrichment",
)


def route(path: str) -> tuple[str, dict[str, str] | None]:
    """The resource a path matches and its path parameters (the first resource and none when it
    matches none: the handler answers 404)."""
    parts = path.strip("/").split("/")
    for resource in RESOURCES:
        names = resource.strip("/").split("/")
        if len(names) == len(parts) and all(
            n == p or n.startswith("{") for n, p in zip(names, parts, strict=True)
        ):
            return resource, {n[1:-1]: p for n, p in zip(names, parts, strict=True) if n.startswith("{")}
    return RESOURCES[0], None


def proxy_event(environ: dict[str, Any], claims: dict[str, Any]) -> dict[str, Any]:
    # WSGI hands the path over as latin-1; API Gateway passes it on decoded as UTF-8
    path = environ.get("PATH_INFO", "/").encode("latin-1").decode("utf-8", "replace")
    length = int(environ.get("CONTENT_LENGTH") or 0)
    raw = environ["wsgi.input"].read(length) if length else b""
    # the API declares no binary media types, so API Gateway passes the body on as text
    body = raw.decode("utf-8", "replace")
    headers = {
        key[5:].replace("_", "-").title(): value for key, value in environ.items() if key.startswith("HTTP_")
    }
    if environ.get("CONTENT_TYPE"):
        headers["Content-Type"] = environ["CONTENT_TYPE"]
    query = parse_qs(environ.get("QUERY_STRING", ""), keep_blank_values=True)
    resource, params = route(path)
    return {
        "resource": resource,
        "path": path,
        "httpMethod": environ["REQUEST_METHOD"],
        "headers": headers,
        "multiValueHeaders": {k: [v] for k, v in headers.items()},
        "queryStringParameters": {k: v[-1] for k, v in query.items()} or None,
        "multiValueQueryStringParameters": query or None,
        "pathParameters": params,
        "stageVariables": None,
        "requestContext": {
            "resourcePath": resource,
            "httpMethod": environ["REQUEST_METHOD"],
            "path": f"/prod{path}",
            "stage": "prod",
            "requestId": "fuzz",
            "accountId": "123456789012",
            "apiId": "fuzz",
            "identity": {"sourceIp": "203.0.113.10"},
            "authorizer": {"claims": claims},
        },
        "body": body or None,
        "isBase64Encoded": False,
    }


def wsgi_app(invoke: Invoke, claims: dict[str, Any]) -> Callable[..., Iterable[bytes]]:
    def app(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        try:
            response = invoke(proxy_event(environ, claims))
            status, body = int(response["statusCode"]), response.get("body") or ""
            headers = dict(response.get("headers") or {})
            for key, values in (response.get("multiValueHeaders") or {}).items():
                headers[key] = ", ".join(values)
        except Exception as exc:  # what API Gateway turns into a 502
            status, headers = 500, {"Content-Type": "application/json"}
            body = json.dumps({"error": type(exc).__name__, "trace": traceback.format_exc()[-2000:]})
        start_response(f"{status} {REASONS.get(status, 'Status')}", list(headers.items()))
        return [body.encode("utf-8", "surrogatepass")]

    return app


#: the API's sample event (events/api.json): a Cognito-authorized REST proxy request
API_EVENT: dict[str, Any] = json.loads((Path(__file__).parents[2] / "events" / "api.json").read_text())


def legacy_caller(services: Any, legacy_id: str) -> Callable[..., tuple[int, Any]]:
    """`call(method, path, user, body=None, query=None) -> (status, JSON body)`: the API handler
    invoked with `services` for `/legacies/{legacy_id}{path}` as Cognito user `user`."""
    from heirloom_dev.functions import LambdaContext, load_handler

    def call(
        method: str, path: str, user: str, body: Any = None, query: dict[str, str] | None = None
    ) -> tuple[int, Any]:
        event = json.loads(json.dumps(API_EVENT))
        event.update(
            httpMethod=method,
            path=f"/legacies/{legacy_id}{path}",
            resource=f"/legacies/{{legacy_id}}{path}",
            pathParameters={"legacy_id": legacy_id},
            body=None if body is None else json.dumps(body),
            queryStringParameters=query,
        )
        event["requestContext"]["authorizer"]["claims"]["sub"] = user
        response = load_handler("api")(event, LambdaContext("Api"), services=services)
        return response["statusCode"], json.loads(response["body"])

    return call
