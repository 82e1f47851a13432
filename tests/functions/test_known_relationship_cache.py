"""A known relationship added, updated, removed or retyped through the StoryEvents handler shows
in the next context as stored, though the neighbourhood cache of the same container still holds
the rows it had: AccessFilter reads the known relationships of the persons the `facts` template
asked for from the store (decision 0030). On the embedded engines (either graph back end),
through the real handlers and one Services (so one cache)."""

import json
import random
import re
from pathlib import Path
from uuid import UUID

import pytest

from heirloom.contracts.context import ContextRequest, Intent
from heirloom.domain import budget
from heirloom_dev.functions import LambdaContext, load_handler
from heirloom_dev.loader import load_dataset
from tests.support import pipeline
from tests.support.services import context_services

ROOT = Path(__file__).parents[2]
EVENTS = ROOT / "events" / "story_events"
SAMPLE = ROOT / "examples" / "sample-legacy"
DOMINIC_LEGACY = UUID("f8156de7-80fc-4f32-a0b0-5596b12c22c1")
CREATOR = UUID("f9f73f65-a2af-4fbd-ae39-c336dfc8126b")
ROSA, DOMINIC = "2a7c9e1b-3d5f-4a6b-8c9d-0e1f2a3b4c5d", "5fc816f8-511e-4903-ac59-9661f0b7e055"
T1, T2 = "2019-11-04T09:00:00Z", "2019-11-04T10:00:00Z"


def event(name, when=None, **detail):
    body = json.loads((EVENTS / f"{name}.json").read_text())
    if when:
        body["time"] = when
    for key, value in detail.items():
        if key == "relationship":
            body["detail"]["relationship"].update(value)
        else:
            body["detail"][key] = value
    return body


@pytest.fixture
def bare_world(ports, monkeypatch):
    """(services, send): the sample legacy and Rosa (another legacy), not yet related. Known
    Connections may take 400 tokens (10 %) here: Dominic's ten family and friends fill the usual 200
    before his KNEW fact, and what these tests watch is the cache, not the cap."""
    monkeypatch.setattr(budget, "CONNECTIONS_MAX_TOKENS", 400)
    monkeypatch.setattr(budget, "CONNECTIONS_MAX_SHARE", 0.1)
    load_dataset(ports, SAMPLE)
    services = context_services(ports, ingestion=ports)
    handler = load_handler("story_events")

    def send(body):
        return handler(body, LambdaContext("StoryEvents"), services=services)["change"]

    send(event("legacy_created"))
    send(event("person_created"))
    return services, send


@pytest.fixture
def world(bare_world):
    """(services, send): as `bare_world`, and Rosa KNEW Dominic."""
    services, send = bare_world
    send(event("relationship_added", T1, relationship={"type": "KNEW", "detail": "the cannery foreman"}))
    return services, send


def context(services):
    request = ContextRequest(
        legacy_id=DOMINIC_LEGACY, user_id=CREATOR, persona="biographer", query="Who did Dominic know?"
    )
    return str(pipeline.assemble(services, request, Intent.RELATIONAL)["formatted_context"])


def test_an_added_known_relationship_is_in_the_next_context_though_the_cache_is_warm(bare_world):
    services, send = bare_world
    assert "Rosa Ferraro" not in context(services)  # the neighbourhood is cached without her
    assert (
        send(event("relationship_added", T1, relationship={"type": "KNEW", "detail": "the cannery foreman"}))
        == "created"
    )
    text = context(services)
    assert "Rosa Ferraro" in text and "the cannery foreman" in text


def test_a_removed_known_relationship_leaves_the_next_context_though_the_cache_holds_it(world):
    services, send = world
    assert "the cannery foreman" in context(services)  # shown, and now in the cache
    assert send(event("relationship_removed", T2, type="KNEW")) == "deleted"
    assert "Rosa Ferraro" not in context(services)


def test_a_retyped_known_relationship_shows_its_new_type_only(world):
    services, send = world
    assert "the cannery foreman" in context(services)
    change = send(
        event(
            "relationship_updated",
            T2,
            relationship={"type": "FRIENDS_WITH", "detail": "met at the cannery"},
            previous_type="KNEW",
        )
    )
    assert change in {"updated", "created"}
    text = context(services)
    assert "the cannery foreman" not in text


def test_an_updated_known_relationship_reads_as_stored_now(world):
    services, send = world
    assert "the cannery foreman" in context(services)
    send(
        event(
            "relationship_updated",
            T2,
            relationship={"type": "KNEW", "detail": "the night watchman"},
            previous_type=None,
        )
    )
    text = context(services)
    assert "the night watchman" in text
    assert "the cannery foreman" not in text


TYPES = ("KNEW", "FRIENDS_WITH", "WORKED_WITH")


def request():
    return ContextRequest(
        legacy_id=DOMINIC_LEGACY, user_id=CREATOR, persona="biographer", query="Who did Dominic know?"
    )


def known_facts(services):
    """The known facts AccessFilter passes on, through the real steps (graph branch, no vector)."""
    req = request().model_dump(mode="json")
    plan = {**pipeline.call("intent_analysis", {"request": req}, services), "intent": Intent.RELATIONAL.value}
    graph = pipeline.call("graph_traversal", {"request": req, "intent": plan}, services)
    vector = {"kind": "vector", "status": "skipped"}
    filtered = pipeline.call("access_filter", {"request": req, "branches": [graph, vector]}, services)
    return {
        (f["subject_id"], f["predicate"], f["object_id"], f["detail"])
        for f in filtered["facts"]
        if f["known"]
    }


def same(text):
    """The context without its per-render story fence nonces."""
    return re.sub(r"story-\d+", "story-N", text)


def stored_known(ports):
    """Every stored relationship of Dominic's, as (from, type, to, detail)."""
    return {
        (str(r.from_person_id), r.type.value, str(r.to_person_id), r.detail)
        for r in ports.stories.relationships_of([UUID(DOMINIC)])
    }


@pytest.mark.parametrize("seed", range(4))
def test_after_any_run_of_changes_the_context_shows_what_the_store_holds(bare_world, ports, seed):
    """Random adds, retypes, updates and removals of Rosa -> Dominic, a context after each (the
    cache warm from the first): the known facts passed on are exactly the stored ones, and the
    context is the one a cold container (a new cache) assembles."""
    services, send = bare_world
    rng = random.Random(seed)
    assert known_facts(services) == stored_known(ports)  # warm, Rosa not related yet
    shown_ever = set()
    for step in range(10):
        when = f"2019-11-05T{step:02d}:00:00Z"
        kind, type_, detail = (
            rng.choice(("add", "add", "update", "remove")),
            rng.choice(TYPES),
            f"detail {seed}-{step}",
        )
        if kind == "add":
            send(event("relationship_added", when, relationship={"type": type_, "detail": detail}))
        elif kind == "update":
            previous = rng.choice((None, *TYPES))
            body = event("relationship_updated", when, relationship={"type": type_, "detail": detail})
            body["detail"]["previous_type"] = previous
            send(body)
        else:
            send(event("relationship_removed", when, type=type_))
        stored = stored_known(ports)
        assert known_facts(services) == stored, (kind, type_)
        assert same(context(services)) == same(context(context_services(ports))), (kind, type_)
        shown_ever |= {fact for fact in stored if fact[0] == ROSA}
    assert shown_ever  # the check saw Rosa's facts, not only their absence
