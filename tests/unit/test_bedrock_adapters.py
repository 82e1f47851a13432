"""Bedrock adapters on a real `bedrock-runtime` client with botocore's Stubber (no network):
Converse with a forced tool for extraction and intent, InvokeModel for Titan v2, and the typed
errors the workflows act on."""

from __future__ import annotations

import io
import json
import math
import types
import uuid

import boto3
import pytest
from botocore.config import Config
from botocore.exceptions import ReadTimeoutError
from botocore.response import StreamingBody
from botocore.stub import ANY, Stubber

from heirloom.adapters.bedrock import (
    EXTRACTION_TOOL,
    INTENT_TOOL,
    BedrockEntityExtractor,
    BedrockIntentClassifier,
    TitanEmbedder,
)
from heirloom.contracts.context import ContextRequest, Intent, Message, Persona
from heirloom.contracts.extraction import EXTRACTION_SCHEMA_VERSION, extraction_json_schema, extraction_prompt
from heirloom.contracts.intent import intent_json_schema
from heirloom.domain.breaker import CircuitBreaker, InMemoryBreakerStore
from heirloom.domain.extraction import extract_entities
from heirloom.domain.gazetteer import Gazetteer
from heirloom.domain.intent_step import GazetteerCache, IntentRequest, analyse_intent
from heirloom.errors import (
    MalformedModelOutput,
    ModelAccessDenied,
    ModelRequestRejected,
    Throttled,
    VectorUnavailable,
    reduce_error,
)
from heirloom.steps.intent_analysis import intent_analysis_step
from heirloom.steps.vector_search import vector_search

HAIKU = "anthropic.claude-3-haiku-20240307-v1:0"
TITAN = "amazon.titan-embed-text-v2:0"
STORY = (
    "Every July we drove up to the Lake Michigan cabin. Uncle Jim, my mother's brother, kept "
    "grandfather's pocket watch on a nail by the door. At the 1985 reunion he finally let me wind "
    "it. Call him at 555-867-5309 if you want the rest of the story."
)


def client(**config):
    return boto3.client(
        "bedrock-runtime",
        region_name="us-east-1",
        aws_access_key_id="AKIDEXAMPLE",
        aws_secret_access_key="wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY",
        config=Config(retries={"mode": "standard", "total_max_attempts": 1}, **config),
    )


def converse_response(tool_input, *, name=EXTRACTION_TOOL, stop="tool_use", extra_blocks=()):
    content = [*extra_blocks]
    if tool_input is not None:
        content.append(
            {"toolUse": {"toolUseId": "tooluse_kZJMlvQmRJ6eAyJE5GIl7Q", "name": name, "input": tool_input}}
        )
    return {
        "output": {"message": {"role": "assistant", "content": content}},
        "stopReason": stop,
        "usage": {"inputTokens": 1342, "outputTokens": 287, "totalTokens": 1629},
        "metrics": {"latencyMs": 1874},
    }


EXTRACTED = {
    "people": [
        {"name": "Uncle Jim", "context": "mother's brother, phone 555-867-5309", "confidence": 0.95},
        {"name": "grandfather", "context": "owned the watch", "confidence": 0.6},
    ],
    "places": [
        {"name": "Lake Michigan cabin", "type": "Residence", "location": "Michigan", "confidence": 0.9}
    ],
    "events": [{"name": "the 1985 reunion", "type": "family gathering", "date": "1985", "confidence": 0.85}],
    "objects": [{"name": "grandfather's pocket watch", "type": "heirloom", "confidence": 0.8}],
    "time_references": [{"period": "1985", "context": "the reunion"}],
    "relationships": [
        {
            "subject": "Uncle Jim",
            "predicate": "OWNED",
            "object": "grandfather's pocket watch",
            "confidence": 0.75,
        }
    ],
    "facts": [
        {
            "source": "Uncle Jim",
            "relation": "kept",  # case coerced into the vocabulary
            "target": "grandfather's pocket watch",
            "verb": "kept",
            "sentence": "Uncle Jim, my mother's brother, kept grandfather's pocket watch on a nail by the door.",
            "confidence": 0.9,
        },
        {
            "source": "Uncle Jim",
            "relation": "ADMIRED",  # outside the vocabulary: this fact is dropped, not the answer
            "target": "Lake Michigan cabin",
            "verb": "loved",
            "sentence": "He loved the cabin.",
            "confidence": 0.9,
        },
    ],
}


# -- extraction -------------------------------------------------------------------------------
def test_extraction_sends_the_schema_as_a_forced_tool_and_postprocesses_the_answer():
    bedrock = client()
    extractor = BedrockEntityExtractor(bedrock, model_id=HAIKU, max_tokens=4096)
    expected = {
        "modelId": HAIKU,
        "system": [{"text": extraction_prompt(known_names=["Jim Hale"])}],
        "messages": [{"role": "user", "content": [{"text": f"<story>\n{STORY}\n</story>"}]}],
        "toolConfig": {
            "tools": [
                {
                    "toolSpec": {
                        "name": EXTRACTION_TOOL,
                        "description": ANY,
                        "inputSchema": {"json": extraction_json_schema()},
                    }
                }
            ],
            "toolChoice": {"tool": {"name": EXTRACTION_TOOL}},
        },
        "inferenceConfig": {"maxTokens": 4096, "temperature": 0.0},
    }
    with Stubber(bedrock) as stub:
        stub.add_response("converse", converse_response(EXTRACTED), expected)
        entities = extract_entities(extractor, STORY, known_names=["Jim Hale"])
        stub.assert_no_pending_responses()
    assert entities.extractor_version == f"bedrock-{HAIKU}/prompt-v{EXTRACTION_SCHEMA_VERSION}"
    # the shared rules ran: the 0.6 guess is gone, the phone number scrubbed, types coerced
    assert [p.name for p in entities.people] == ["Uncle Jim"]
    assert "555" not in entities.people[0].context
    assert entities.places[0].type == "residence"
    assert entities.events[0].type == "family_gathering"
    assert entities.relationships[0].predicate == "OWNED"
    assert [(f.source, f.relation, f.target, f.verb) for f in entities.facts] == [
        ("Uncle Jim", "KEPT", "grandfather's pocket watch", "kept")
    ]


def test_the_tool_schema_is_self_contained_and_leaves_the_version_to_us():
    schema = extraction_json_schema()
    assert "$ref" not in json.dumps(schema) and "$defs" not in schema
    assert set(schema["properties"]) == {
        "people",
        "places",
        "events",
        "objects",
        "time_references",
        "relationships",
        "facts",
    }
    intent = intent_json_schema()
    assert "$ref" not in json.dumps(intent)
    assert set(intent["required"]) == {"intent", "confidence"}
    assert set(intent["properties"]["intent"]["enum"]) == {i.value for i in Intent}


def _with(path, value):
    data = json.loads(json.dumps(EXTRACTED))
    *parents, last = path
    node = data
    for key in parents:
        node = node[key]
    if value is KeyError:
        del node[last]
    else:
        node[last] = value
    return data


MALFORMED = {
    "text instead of a tool call": converse_response(
        None, stop="end_turn", extra_blocks=[{"text": '{"people": [{"name": "Uncle Jim"}]}'}]
    ),
    "truncated at max_tokens": converse_response(EXTRACTED, stop="max_tokens"),
    "another tool": converse_response(EXTRACTED, name="get_weather"),
    "missing confidence": converse_response(_with(("people", 0, "confidence"), KeyError)),
    "missing name": converse_response(_with(("places", 0, "name"), KeyError)),
    "list given as a string": converse_response(_with(("people",), "Uncle Jim")),
    "number given as a string": converse_response(_with(("events", 0, "confidence"), "0.85")),
    "confidence out of range": converse_response(_with(("objects", 0, "confidence"), 7)),
    "unknown field": converse_response(_with(("mood",), "nostalgic")),
    "the version is ours to set": converse_response(_with(("extractor_version",), "v999")),
    "input is not an object": converse_response(["Uncle Jim"]),
    "two tool calls": converse_response(
        EXTRACTED,
        extra_blocks=[{"toolUse": {"toolUseId": "tooluse_1", "name": EXTRACTION_TOOL, "input": EXTRACTED}}],
    ),
}


@pytest.mark.parametrize("case", MALFORMED)
def test_malformed_extraction_output_is_rejected_without_quoting_the_story(case, caplog):
    bedrock = client()
    with Stubber(bedrock) as stub:
        stub.add_response("converse", MALFORMED[case])
        with pytest.raises(MalformedModelOutput) as raised:
            BedrockEntityExtractor(bedrock, model_id=HAIKU).extract(STORY)
    for text in (str(raised.value), caplog.text):
        assert "Uncle Jim" not in text and "555" not in text and "cabin" not in text


ERRORS = [
    ("ThrottlingException", 429, Throttled),
    ("ServiceUnavailableException", 503, Throttled),
    ("ModelTimeoutException", 408, Throttled),
    ("ModelNotReadyException", 429, Throttled),
    ("InternalServerException", 500, Throttled),
    ("ValidationException", 400, ModelRequestRejected),
    ("ResourceNotFoundException", 404, ModelRequestRejected),
    ("AccessDeniedException", 403, ModelAccessDenied),
]


@pytest.mark.parametrize(("code", "status", "error"), ERRORS)
def test_service_errors_become_typed_errors_with_the_reason_logged(code, status, error, caplog):
    bedrock = client()
    with Stubber(bedrock) as stub:
        stub.add_client_error(
            "converse", service_error_code=code, service_message=f"{code} says no", http_status_code=status
        )
        with pytest.raises(error) as raised:
            BedrockEntityExtractor(bedrock, model_id=HAIKU).extract(STORY)
    assert raised.value.code == code
    # the workflow sees the class name: the ingest ASL retries exactly `Throttled`
    assert type(raised.value).__name__ == error.__name__
    assert any(getattr(r, "code", None) == code and f"{code} says no" in r.reason for r in caplog.records)
    assert "Uncle Jim" not in caplog.text


def test_a_read_timeout_is_throttled():
    bedrock = client(read_timeout=0.5)

    def time_out(request, **kwargs):
        raise ReadTimeoutError(endpoint_url=request.url)

    bedrock.meta.events.register("before-send.bedrock-runtime.Converse", time_out)
    with pytest.raises(Throttled) as raised:
        BedrockEntityExtractor(bedrock, model_id=HAIKU).extract(STORY)
    assert raised.value.code == "ReadTimeoutError"


def test_ingest_workflow_retries_the_error_name_throttling_raises():
    from pathlib import Path

    asl = json.loads((Path(__file__).parents[2] / "statemachines" / "ingest_story.asl.json").read_text())
    branches = asl["States"]["Process"]["Branches"]
    for state in (b["States"][b["StartAt"]] for b in branches):
        retried = {name for r in state["Retry"] for name in r["ErrorEquals"]}
        # the name a handler raises for it (the error contract), not the adapter's class name
        assert type(reduce_error(Throttled("ThrottlingException"))).__name__ in retried
        for refused in (MalformedModelOutput("x"), ModelRequestRejected("x"), ModelAccessDenied("x")):
            assert type(reduce_error(refused)).__name__ not in retried


# -- intent -----------------------------------------------------------------------------------
SUBJECT = "Edith Marlowe"
LEGACY = str(uuid.UUID(int=1))


@pytest.fixture(scope="module")
def gazetteer() -> Gazetteer:
    return Gazetteer.build(
        [
            ("p0", "Person", SUBJECT, ["Grandma Edie"]),
            ("p1", "Person", "Jim Hale", ["Uncle Jim"]),
            ("p2", "Person", "Rose Hale", ["Aunt Rose"]),
            ("pl1", "Place", "Lake Michigan cabin", ["the lake house"]),
            ("e1", "Event", "the 1985 reunion", []),
        ]
    )


def intent_answer(intent="relational", confidence=0.86, **entities):
    return {"intent": intent, "entities": entities, "confidence": confidence}


def ask(gazetteer, query, history=()):
    return IntentRequest(query, tuple(history), gazetteer, SUBJECT, LEGACY)


def test_intent_model_gets_the_gazetteer_matches_as_hints(gazetteer):
    bedrock = client()
    classifier = BedrockIntentClassifier(bedrock, model_id=HAIKU, max_tokens=512)
    query = "How did Uncle Jim and Grandma Edie get along at the lake house?"
    answer = intent_answer(people=["Uncle Jim"], places=["the lake house"])
    with Stubber(bedrock) as stub:
        stub.add_response("converse", converse_response(answer, name=INTENT_TOOL))
        intent = analyse_intent(ask(gazetteer, query), classifier)
        stub.assert_no_pending_responses()
    assert intent.source == "llm" and intent.intent == Intent.RELATIONAL and intent.confidence == 0.86
    assert {m.node_id for m in intent.matches} == {"p1", "pl1"}  # never the subject (p0)
    assert intent.entities.people == ("Jim Hale",) and "Lake Michigan cabin" in intent.entities.places


def test_intent_request_carries_hints_history_and_a_forced_tool(gazetteer):
    bedrock = client()
    classifier = BedrockIntentClassifier(bedrock, model_id=HAIKU, max_tokens=512)
    captured = {}

    def capture(params, **kwargs):
        captured.update(params)

    bedrock.meta.events.register("provide-client-params.bedrock-runtime.Converse", capture)
    history = [
        Message(role="user", content="Tell me about Aunt Rose."),
        Message(role="assistant", content="She baked."),
    ]
    with Stubber(bedrock) as stub:
        stub.add_response(
            "converse", converse_response(intent_answer(people=["Aunt Rose"]), name=INTENT_TOOL)
        )
        intent = analyse_intent(ask(gazetteer, "What did she bake for Uncle Jim?", history), classifier)
    system = captured["system"][0]["text"]
    assert "Person: Jim Hale (written as 'Uncle Jim')" in system and SUBJECT in system
    user = captured["messages"][0]["content"][0]["text"]
    assert (
        "user: Tell me about Aunt Rose." in user
        and "<message>\nWhat did she bake for Uncle Jim?\n</message>" in user
    )
    assert captured["toolConfig"]["toolChoice"] == {"tool": {"name": INTENT_TOOL}}
    assert captured["toolConfig"]["tools"][0]["toolSpec"]["inputSchema"]["json"] == intent_json_schema()
    # the model resolved "she": its name is matched against the gazetteer too
    assert {"p1", "p2"} <= {m.node_id for m in intent.matches}


@pytest.mark.parametrize(
    "failure",
    [
        {"error": ("ThrottlingException", 429)},
        {"error": ("ServiceUnavailableException", 503)},
        {"error": ("ValidationException", 400)},
        {"response": converse_response(None, stop="end_turn", extra_blocks=[{"text": "It is relational."}])},
        {"response": converse_response(intent_answer(intent="nostalgic"), name=INTENT_TOOL)},
        {"response": converse_response({"entities": {}}, name=INTENT_TOOL)},
        {"response": converse_response(intent_answer(), name=EXTRACTION_TOOL)},
        {"response": converse_response(intent_answer(intent="spatial", confidence=0.3), name=INTENT_TOOL)},
    ],
)
def test_any_intent_model_failure_keeps_the_rule_based_result(gazetteer, failure):
    bedrock = client()
    query = "What happened at the 1985 reunion?"
    rules = analyse_intent(ask(gazetteer, query))
    assert rules.source == "rules"
    with Stubber(bedrock) as stub:
        if "error" in failure:
            code, status = failure["error"]
            stub.add_client_error("converse", service_error_code=code, http_status_code=status)
        else:
            stub.add_response("converse", failure["response"])
        intent = analyse_intent(ask(gazetteer, query), BedrockIntentClassifier(bedrock, model_id=HAIKU))
        stub.assert_no_pending_responses()
    assert intent.model_copy(update={"latency_ms": 0}) == rules.model_copy(update={"latency_ms": 0})


def test_intent_step_with_a_timed_out_model_answers_from_the_rules(gazetteer):
    bedrock = client(read_timeout=0.5)
    bedrock.meta.events.register(
        "before-send.bedrock-runtime.Converse",
        lambda request, **_: (_ for _ in ()).throw(ReadTimeoutError(endpoint_url=request.url)),
    )
    legacy = uuid.UUID(int=1)
    cache = GazetteerCache()
    cache.get(legacy, lambda: (gazetteer, SUBJECT))
    request = ContextRequest(
        legacy_id=legacy, user_id=uuid.uuid4(), persona=Persona.FAMILY, query="Tell me about Uncle Jim"
    )
    intent = intent_analysis_step(
        request,
        None,
        None,
        CircuitBreaker(InMemoryBreakerStore()),
        cache,
        BedrockIntentClassifier(bedrock, model_id=HAIKU),
    )
    assert intent.source == "rules" and intent.breaker_state == "closed"
    assert [m.node_id for m in intent.matches] == ["p1"]


# -- Titan v2 ---------------------------------------------------------------------------------
def titan_body(vector, tokens=12):
    data = json.dumps(
        {"embedding": vector, "inputTextTokenCount": tokens, "embeddingsByType": {"float": vector}}
    ).encode()
    return {"body": StreamingBody(io.BytesIO(data), len(data)), "contentType": "application/json"}


def unit_vector(n, seed=1.0):
    raw = [math.sin(seed * (i + 1)) for i in range(n)]
    norm = math.sqrt(sum(v * v for v in raw))
    return [v / norm for v in raw]


@pytest.mark.parametrize("dimension", [256, 512, 1024])
def test_titan_asks_for_the_configured_dimension(dimension):
    bedrock = client()
    embedder = TitanEmbedder(bedrock, model_id=TITAN, dimension=dimension)
    texts = ["Summer at the Lake House", "Meeting Uncle Jim"]
    with Stubber(bedrock) as stub:
        for i, text in enumerate(texts):
            stub.add_response(
                "invoke_model",
                titan_body(unit_vector(dimension, seed=i + 1)),
                {
                    "modelId": TITAN,
                    "body": json.dumps({"inputText": text, "dimensions": dimension, "normalize": True}),
                    "contentType": "application/json",
                    "accept": "application/json",
                },
            )
        embedder._concurrency = 1  # the Stubber answers in order
        vectors = embedder.embed(texts)
        stub.assert_no_pending_responses()
    assert [len(v) for v in vectors] == [dimension, dimension]
    assert vectors[0] == pytest.approx(unit_vector(dimension, seed=1))
    assert embedder.dimension == dimension and embedder.model_id == f"{TITAN}@{dimension}"


def test_titan_refuses_a_dimension_it_does_not_make():
    with pytest.raises(ValueError, match="256, 512 or 1024"):
        TitanEmbedder(client(), dimension=384)


@pytest.mark.parametrize(
    "body",
    [
        titan_body(unit_vector(512)),  # asked for 1024
        titan_body(["0.1"] * 1024),
        {"body": StreamingBody(io.BytesIO(b"<html>busy</html>"), 17), "contentType": "text/html"},
    ],
)
def test_titan_output_of_the_wrong_shape_is_rejected(body):
    bedrock = client()
    with Stubber(bedrock) as stub:
        stub.add_response("invoke_model", body)
        with pytest.raises(MalformedModelOutput):
            TitanEmbedder(bedrock, model_id=TITAN, dimension=1024).embed(["a question"])


class _Store:
    """Just enough StoryStore for a read scope."""

    def get_legacy(self, legacy_id):
        return types.SimpleNamespace(subject_person_id=uuid.uuid4())

    def get_person(self, person_id):
        return None

    def role_of(self, user_id, legacy_id):
        return "admirer"

    def links_of(self, legacy_id):
        return []

    def member_legacy_ids(self, user_id):
        return []


class _Index:
    """Just enough VectorIndex: the words search (run while the query is embedded) finds nothing,
    and the embedding search is never reached."""

    def search_text(self, text, scope, k):
        return []

    def search(self, embedding, scope, k, *, also=()):
        raise AssertionError("searched without a query embedding")


def test_a_throttled_query_embedding_is_vector_unavailable():
    bedrock = client()
    request = ContextRequest(
        legacy_id=uuid.uuid4(),
        user_id=uuid.uuid4(),
        persona=Persona.FRIEND,
        query="Who taught her to sail on the lake?",
    )
    with Stubber(bedrock) as stub:
        stub.add_client_error("invoke_model", service_error_code="ThrottlingException", http_status_code=429)
        with pytest.raises(VectorUnavailable) as raised:
            vector_search(request, _Store(), _Index(), TitanEmbedder(bedrock, model_id=TITAN, dimension=1024))
    assert isinstance(raised.value.__cause__, Throttled)


def test_titan_fits_within_its_documented_input_limits():
    embedder = TitanEmbedder(client(), model_id=TITAN)
    assert embedder.fits("a" * (8192 * 3)) and not embedder.fits("a" * (8192 * 3 + 1))
