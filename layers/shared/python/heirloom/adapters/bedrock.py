"""Bedrock adapters: Titan Text Embeddings v2 (InvokeModel) and Claude Haiku through the Converse
API with a forced tool call, for entity extraction and intent classification.

Structured output: the tool's `inputSchema.json` is the pydantic model's JSON schema,
`toolChoice` names the tool, and the tool input the model sends back is validated by the same
model. Anything else (text instead of a tool call, another tool, a stop reason other than
`tool_use`, input failing the schema) raises `MalformedModelOutput`; it is never trusted.

Errors are typed (heirloom.errors): throttling, unavailability and timeouts are `Throttled`
(the ingestion workflow retries it; the context workflow falls back), a refused request is
`ModelRequestRejected`, a missing permission `ModelAccessDenied`. What is logged is the error
code, the service's message and the request id: never story text, prompts or credentials.
"""

from __future__ import annotations

import json
import logging
import math
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from functools import lru_cache
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from heirloom.contracts.context import EntityMatch, Message, QueryIntent
from heirloom.contracts.extraction import (
    EXTRACTION_SCHEMA_VERSION,
    ExtractedEntities,
    extraction_json_schema,
    extraction_prompt,
)
from heirloom.contracts.intent import (
    INTENT_SCHEMA_VERSION,
    IntentClassification,
    intent_json_schema,
    intent_prompt,
    intent_user_message,
)
from heirloom.domain.extraction import DEFAULT_LIMITS, ExtractionLimits
from heirloom.domain.intent_step import IntentRequest, classification_intent
from heirloom.errors import (
    MalformedModelOutput,
    ModelAccessDenied,
    ModelError,
    ModelRequestRejected,
    Throttled,
)
from heirloom.fencing import untag
from heirloom.settings import INTENT_BUDGET_MS, TITAN_DIMENSIONS

log = logging.getLogger(__name__)

#: error codes after which a later attempt can succeed
RETRYABLE_CODES = frozenset(
    {
        "ThrottlingException",
        "TooManyRequestsException",
        "ServiceUnavailableException",
        "ServiceQuotaExceededException",
        "ModelTimeoutException",
        "ModelNotReadyException",
        "InternalServerException",
    }
)
ACCESS_CODES = frozenset({"AccessDeniedException", "UnrecognizedClientException", "ExpiredTokenException"})
EXTRACTION_TOOL = "record_entities"
INTENT_TOOL = "classify_intent"

_M = TypeVar("_M", bound=BaseModel)


# --------------------------------------------------------------------------------------------
# client and errors


@lru_cache(maxsize=8)
def bedrock_client(
    region: str = "",
    *,
    connect_timeout_s: float = 2.0,
    read_timeout_s: float = 30.0,
    max_attempts: int = 3,
    retry_mode: str = "standard",
) -> Any:
    """One `bedrock-runtime` client per container (per distinct configuration)."""
    import boto3
    from botocore.config import Config

    config = Config(
        connect_timeout=connect_timeout_s,
        read_timeout=read_timeout_s,
        retries={"mode": retry_mode, "total_max_attempts": max_attempts},
        tcp_keepalive=True,
    )
    return boto3.client("bedrock-runtime", region_name=region or None, config=config)


def model_error(exc: Exception, *, operation: str, model_id: str) -> ModelError:
    """The typed error for a botocore exception, with its reason logged."""
    from botocore.exceptions import (
        ClientError,
        ConnectionClosedError,
        ConnectTimeoutError,
        EndpointConnectionError,
        NoCredentialsError,
        PartialCredentialsError,
        ReadTimeoutError,
    )

    if isinstance(exc, ClientError):
        error = exc.response.get("Error", {})
        meta = exc.response.get("ResponseMetadata", {})
        code = str(error.get("Code", "Unknown"))
        reason = str(error.get("Message", ""))[:300]
        log.warning(
            "bedrock_error",
            extra={
                "operation": operation,
                "model_id": model_id,
                "code": code,
                "status": meta.get("HTTPStatusCode"),
                "request_id": meta.get("RequestId"),
                "reason": reason,
            },
        )
        message = f"{operation} on {model_id}: {code}: {reason}"
        if code in RETRYABLE_CODES:
            return Throttled(message, code=code)
        if code in ACCESS_CODES:
            return ModelAccessDenied(message, code=code)
        return ModelRequestRejected(message, code=code)
    if isinstance(
        exc, ReadTimeoutError | ConnectTimeoutError | EndpointConnectionError | ConnectionClosedError
    ):
        code = type(exc).__name__
        log.warning("bedrock_unreachable", extra={"operation": operation, "model_id": model_id, "code": code})
        return Throttled(f"{operation} on {model_id}: {code}", code=code)
    if isinstance(exc, NoCredentialsError | PartialCredentialsError):
        code = type(exc).__name__
        log.warning(
            "bedrock_no_credentials", extra={"operation": operation, "model_id": model_id, "code": code}
        )
        return ModelAccessDenied(f"{operation} on {model_id}: {code}", code=code)
    raise exc


def _call(client: Any, operation: str, model_id: str, **params: Any) -> dict[str, Any]:
    from botocore.exceptions import BotoCoreError, ClientError

    try:
        response: dict[str, Any] = getattr(client, operation)(modelId=model_id, **params)
    except (ClientError, BotoCoreError) as exc:
        raise model_error(exc, operation=operation, model_id=model_id) from exc
    return response


def _malformed(operation: str, model_id: str, what: str) -> MalformedModelOutput:
    log.warning(
        "bedrock_malformed_output", extra={"operation": operation, "model_id": model_id, "what": what}
    )
    return MalformedModelOutput(f"{operation} on {model_id}: {what}")


def _schema_errors(exc: ValidationError) -> str:
    """Where and how the input failed, without the input values (they may quote a story)."""
    return "; ".join(f"{'.'.join(map(str, e['loc'])) or '<root>'}: {e['type']}" for e in exc.errors()[:8])


# --------------------------------------------------------------------------------------------
# Converse with a forced tool


def tool_config(name: str, description: str, schema: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "tools": [{"toolSpec": {"name": name, "description": description, "inputSchema": {"json": schema}}}],
        "toolChoice": {"tool": {"name": name}},
    }


def tool_input(
    response: Mapping[str, Any],
    *,
    tool: str,
    model: type[_M],
    model_id: str,
    schema: Mapping[str, Any] | None = None,
) -> _M:
    """The validated input of the one `tool` call in a Converse response. With `schema`, a
    top-level field the tool schema does not offer is refused even where the model has it
    (`extractor_version` is ours to set, never the model's)."""
    stop = response.get("stopReason")
    if stop != "tool_use":
        raise _malformed("converse", model_id, f"stopReason {stop!r}, not 'tool_use'")
    content = response.get("output", {}).get("message", {}).get("content", [])
    calls = [block["toolUse"] for block in content if isinstance(block, dict) and "toolUse" in block]
    if not calls:
        raise _malformed("converse", model_id, "no tool call in the answer")
    if len(calls) > 1:
        raise _malformed("converse", model_id, f"{len(calls)} tool calls, expected one")
    (call,) = calls
    if call.get("name") != tool:
        raise _malformed("converse", model_id, f"called tool {call.get('name')!r}, not {tool!r}")
    raw = call.get("input")
    if not isinstance(raw, dict):
        raise _malformed("converse", model_id, f"tool input is {type(raw).__name__}, not an object")
    offered = set((schema or {}).get("properties", {}))
    if offered and (unknown := sorted(set(raw) - offered)):
        raise _malformed("converse", model_id, f"tool input has fields outside the schema: {len(unknown)}")
    try:
        # strict: "0.9" is not a number and a string is not a list; unknown fields are refused
        return model.model_validate_json(json.dumps(raw), strict=True)
    except ValidationError as exc:
        raise _malformed("converse", model_id, f"tool input fails the schema: {_schema_errors(exc)}") from exc


def converse_tool(
    client: Any,
    *,
    model_id: str,
    system: str,
    user: str,
    tool: str,
    description: str,
    schema: Mapping[str, Any],
    model: type[_M],
    max_tokens: int,
) -> _M:
    response = _call(
        client,
        "converse",
        model_id,
        system=[{"text": system}],
        messages=[{"role": "user", "content": [{"text": user}]}],
        toolConfig=tool_config(tool, description, schema),
        inferenceConfig={"maxTokens": max_tokens, "temperature": 0.0},
    )
    usage = response.get("usage", {})
    log.debug(
        "bedrock_converse",
        extra={
            "model_id": model_id,
            "tool": tool,
            "input_tokens": usage.get("inputTokens"),
            "output_tokens": usage.get("outputTokens"),
            "latency_ms": response.get("metrics", {}).get("latencyMs"),
        },
    )
    return tool_input(response, tool=tool, model=model, model_id=model_id, schema=schema)


# --------------------------------------------------------------------------------------------
# Titan Text Embeddings v2


#: Titan Text Embeddings v2's input limits, and the fewest characters a token is assumed to hold
TITAN_MAX_TOKENS = 8192
TITAN_MAX_CHARS = 50_000
TITAN_CHARS_PER_TOKEN = 3


class TitanEmbedder:
    """amazon.titan-embed-text-v2:0: one InvokeModel per text (the model takes one input),
    a few in flight at once, normalised vectors of 256, 512 or 1024 dimensions."""

    def __init__(
        self,
        client: Any,
        *,
        model_id: str = "amazon.titan-embed-text-v2:0",
        dimension: int = 1024,
        concurrency: int = 4,
    ):
        if dimension not in TITAN_DIMENSIONS:
            raise ValueError(
                f"Titan Text Embeddings v2 makes {', '.join(map(str, TITAN_DIMENSIONS[:-1]))} or {TITAN_DIMENSIONS[-1]} dimensions, not {dimension}"
            )
        self._client = client
        self._model = model_id
        self.dimension = dimension
        #: the index key: vectors of another size are another model as far as the index goes
        self.model_id = f"{model_id}@{dimension}"
        self._concurrency = max(1, concurrency)

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        if len(texts) <= 1:
            return [self._one(t) for t in texts]
        with ThreadPoolExecutor(max_workers=min(self._concurrency, len(texts))) as pool:
            return list(pool.map(self._one, texts))

    def fits(self, text: str) -> bool:
        """Within Titan v2's input limits: 8,192 tokens or 50,000 characters
        (https://docs.aws.amazon.com/bedrock/latest/userguide/titan-embedding-models.html). No
        local tokenizer counts its tokens: at most TITAN_CHARS_PER_TOKEN characters a token is
        assumed (the page gives 4.7 on average for English)."""
        return len(text) <= min(TITAN_MAX_CHARS, TITAN_MAX_TOKENS * TITAN_CHARS_PER_TOKEN)

    def _one(self, text: str) -> list[float]:
        body = json.dumps({"inputText": text, "dimensions": self.dimension, "normalize": True})
        response = _call(
            self._client,
            "invoke_model",
            self._model,
            body=body,
            contentType="application/json",
            accept="application/json",
        )
        try:
            payload = json.loads(response["body"].read())
        except (KeyError, ValueError) as exc:
            raise _malformed("invoke_model", self._model, "body is not JSON") from exc
        vector = payload.get("embedding") if isinstance(payload, dict) else None
        if not isinstance(vector, list) or len(vector) != self.dimension:
            size = len(vector) if isinstance(vector, list) else type(vector).__name__
            raise _malformed(
                "invoke_model", self._model, f"embedding of {size}, expected {self.dimension} numbers"
            )
        if not all(
            isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v) for v in vector
        ):
            raise _malformed("invoke_model", self._model, "embedding holds non-numbers")
        return [float(v) for v in vector]


# --------------------------------------------------------------------------------------------
# Claude: entity extraction


def _story_message(text: str) -> str:
    """The story between the tags the prompt names; no `<` or `>` of any case or look-alike in it
    (heirloom.fencing), so it can neither close `<story>` nor open a tag of its own."""
    return "<story>\n" + untag(text) + "\n</story>"


class BedrockEntityExtractor:
    """Claude Haiku with the versioned extraction prompt (shared with the local extractor's
    contract) and a forced `record_entities` tool. Returns raw candidates with confidences;
    `heirloom.domain.extraction.postprocess` applies the shared rules afterwards."""

    def __init__(
        self,
        client: Any,
        *,
        model_id: str,
        max_tokens: int = 4096,
        limits: ExtractionLimits = DEFAULT_LIMITS,
    ):
        self._client = client
        self.model_id = model_id
        self._max_tokens = max_tokens
        self._limits = limits
        self._schema = extraction_json_schema()

    @property
    def version(self) -> str:
        return f"bedrock-{self.model_id}/prompt-v{EXTRACTION_SCHEMA_VERSION}"

    def extract(self, text: str, *, known_names: Sequence[str] = ()) -> ExtractedEntities:
        limits = self._limits
        system = extraction_prompt(
            known_names=list(known_names),
            max_people=limits.people,
            max_places=limits.places,
            max_events=limits.events,
            max_objects=limits.objects,
        )
        entities = converse_tool(
            self._client,
            model_id=self.model_id,
            system=system,
            user=_story_message(text),
            tool=EXTRACTION_TOOL,
            description="Record the entities mentioned in the story.",
            schema=self._schema,
            model=ExtractedEntities,
            max_tokens=self._max_tokens,
        )
        return entities.model_copy(update={"extractor_version": self.version})


# --------------------------------------------------------------------------------------------
# Claude: intent classification


class BedrockIntentClassifier:
    """Claude Haiku with the versioned intent prompt and a forced `classify_intent` tool. It is
    given the gazetteer's matches as hints; `heirloom.domain.intent_step` runs the rule-based
    classifier first and keeps its result whenever this one fails."""

    def __init__(
        self,
        client: Any,
        *,
        model_id: str,
        max_tokens: int = 512,
        budget_s: float = INTENT_BUDGET_MS / 1000,
    ):
        self._client = client
        self.model_id = model_id
        self._max_tokens = max_tokens
        self._schema = intent_json_schema()
        #: the intent budget (the factory passes INTENT_BUDGET_MS): the caller abandons a slower
        #: call (`analyse_intent`)
        self.budget_s: float | None = budget_s

    @property
    def version(self) -> str:
        return f"bedrock-{self.model_id}/prompt-v{INTENT_SCHEMA_VERSION}"

    def ask(
        self, query: str, history: Sequence[Message], *, subject_name: str, hints: Sequence[EntityMatch] = ()
    ) -> IntentClassification:
        return converse_tool(
            self._client,
            model_id=self.model_id,
            system=intent_prompt(subject_name=subject_name, matches=hints),
            user=intent_user_message(query, history),
            tool=INTENT_TOOL,
            description="Record the intent of the message and the entities it mentions.",
            schema=self._schema,
            model=IntentClassification,
            max_tokens=self._max_tokens,
        )

    def classify(self, request: IntentRequest) -> QueryIntent:
        """The `IntentClassifier` port (heirloom.domain.intent_step)."""
        answer = self.ask(
            request.query, request.history, subject_name=request.subject_name, hints=request.matches
        )
        return classification_intent(answer, request)
