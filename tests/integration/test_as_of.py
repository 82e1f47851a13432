"""A context "as of" a time, on the embedded engines through the real handlers: a story created
after `as_of`, and the graph facts only it supports, are in no part of the context; the same
request without `as_of` sees them (so the check can fail). Bad `as_of` values are refused."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime, timedelta
from uuid import UUID, uuid4

import pytest
from pydantic import ValidationError

from heirloom.contracts.context import ContextRequest, Intent
from heirloom.contracts.extraction import (
    ExtractedEntities,
    ExtractedObject,
    ExtractedPerson,
    ExtractedPlace,
    ExtractedRelationship,
)
from heirloom.contracts.records import Story, Visibility
from heirloom.domain import ingestion
from heirloom.domain.context_api import ContextBody
from heirloom_dev.loader import load_dataset
from tests.integration.test_curation import ScriptedExtractor
from tests.support import pipeline
from tests.support.dataset import MiniDataset
from tests.support.services import context_services

pytestmark = pytest.mark.integration

OLD = ExtractedEntities(
    people=(ExtractedPerson(name="Ada", confidence=0.9),),
    objects=(ExtractedObject(name="apple press", type="tool", confidence=0.9),),
    relationships=(
        ExtractedRelationship(subject="Ada", predicate="OWNED", object="apple press", confidence=0.9),
    ),
)
NEW = ExtractedEntities(
    people=(ExtractedPerson(name="Ada", confidence=0.9),),
    places=(ExtractedPlace(name="Gull Point lighthouse", type="landmark", confidence=0.9),),
    relationships=(
        ExtractedRelationship(
            subject="Ada", predicate="WORKED_AT", object="Gull Point lighthouse", confidence=0.9
        ),
    ),
)
#: the dataset's stories are created at 2024-05-01T10:00Z; this one a year later
LATER = datetime(2025, 5, 1, 10, 0, tzinfo=UTC)


@pytest.fixture
def world(ports, tmp_path):
    mini = MiniDataset()
    p = dataclasses.replace(
        ports, extractor=ScriptedExtractor({"apple": OLD, "lighthouse": NEW}), extractor_version="scripted-1"
    )
    load_dataset(p, mini.write(tmp_path / "ds"))
    later = Story(
        id=uuid4(),
        legacy_id=UUID(mini.legacy),
        author_user_id=UUID(mini.creator),
        title="The keeper's year",
        content="Ada kept the Gull Point lighthouse for a year and wrote to the family each week.",
        visibility=Visibility.PUBLIC,
        created_at=LATER,
        updated_at=LATER,
    )
    ingestion.apply_story(p, later)
    services = context_services(p)
    return services, mini, later


def ask(services, mini, query: str, as_of: datetime | None, intent: Intent) -> dict:
    request = ContextRequest(
        legacy_id=mini.legacy, user_id=mini.creator, persona="biographer", query=query, as_of=as_of
    )
    return pipeline.assemble(services, request, intent)


@pytest.mark.parametrize("intent", [Intent.SPATIAL, Intent.ENTITY_FOCUSED, Intent.GENERAL, Intent.RELATIONAL])
def test_a_story_created_after_as_of_is_not_seen_nor_its_facts(world, intent):
    services, mini, later = world
    query = "Where did Ada work, the Gull Point lighthouse?"
    now = ask(services, mini, query, None, intent)
    assert str(later.id) in now["ranked_story_ids"]  # the control: seen without as_of
    then = ask(services, mini, query, LATER - timedelta(days=1), intent)
    assert str(later.id) not in then["ranked_story_ids"]
    assert then["ranked_story_ids"]  # the older stories are still there
    assert "keeper" not in then["formatted_context"].casefold()
    assert "lighthouse" not in then["formatted_context"].casefold()
    assert all(s["story_id"] != str(later.id) for s in then["metadata"]["sources"])


def test_as_of_before_every_story_sees_none_and_at_its_creation_sees_it(world):
    services, mini, later = world
    query = "Tell me about Ada's apple press and the lighthouse."
    before = ask(services, mini, query, datetime(2024, 1, 1, tzinfo=UTC), Intent.ENTITY_FOCUSED)
    assert before["ranked_story_ids"] == []
    assert (
        "apple press" not in before["formatted_context"] and "lighthouse" not in before["formatted_context"]
    )
    at = ask(services, mini, query, LATER, Intent.ENTITY_FOCUSED)
    assert str(later.id) in at["ranked_story_ids"]


@pytest.mark.parametrize(
    "value",
    [
        "2999-01-01T00:00:00Z",
        "2020-01-31",
        "2020-01-31T12:00:00",
        "yesterday",
        1580472000,
        "2020-13-01T00:00:00Z",
    ],
)
def test_bad_as_of_values_are_refused(value):
    with pytest.raises(ValidationError):
        ContextBody(query="q", persona="family", as_of=value)


def test_as_of_now_or_past_is_taken():
    past = ContextBody(query="q", persona="family", as_of="2020-01-31T12:00:00+02:00")
    assert past.as_of == datetime(2020, 1, 31, 10, 0, tzinfo=UTC)
    assert ContextBody(query="q", persona="family", as_of=None).as_of is None
