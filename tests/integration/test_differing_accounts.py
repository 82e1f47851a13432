"""Differing accounts on the embedded engines (issue 18 item 6): three narrators date one wedding
differently in stories of different visibility; each user sees side by side only the accounts it
may read, credited, and a user who may read one account gets it as a plain fact, with no trace
of the others (leak probe)."""

from __future__ import annotations

import dataclasses
import re
import uuid

import pytest

from heirloom.adapters.tokenizer import TiktokenTokenizer
from heirloom.contracts.context import (
    AccessFilterInput,
    ContextRequest,
    GraphBranch,
    Intent,
    QueryIntent,
    VectorBranch,
)
from heirloom.domain.assembly import assemble
from heirloom.domain.personas import load_personas
from heirloom.domain.traversal import traverse
from heirloom.steps.access_filter import filter_context
from heirloom_dev.loader import load_dataset
from tests.support.dataset import MiniDataset

pytestmark = pytest.mark.integration

WALT, LOU, MAX = str(uuid.uuid4()), str(uuid.uuid4()), str(uuid.uuid4())
TOLD = re.compile(r"(Ada Marsh married Walt Hale in (\d{4})\.)")


class _WeddingExtractor:
    """A story that says when Ada married Walt tells that fact; others tell nothing."""

    def extract(self, text, *, known_names=()):
        from heirloom.contracts.extraction import ExtractedEntities, ExtractedFact, ExtractedPerson

        found = TOLD.search(text)
        if not found:
            return ExtractedEntities()
        return ExtractedEntities(
            people=(
                ExtractedPerson(name="Ada Marsh", confidence=0.95),
                ExtractedPerson(name="Walt Hale", confidence=0.95),
            ),
            facts=(
                ExtractedFact(
                    source="Ada Marsh",
                    relation="MARRIED",
                    target="Walt Hale",
                    verb="married",
                    sentence=found.group(1),
                    confidence=0.9,
                ),
            ),
        )


@pytest.fixture
def world(ports, tmp_path):
    data = MiniDataset()
    files = data.files()
    t = "2024-05-01T10:00:00Z"

    def story(sid, title, year, visibility, author):
        return {
            "id": sid, "legacy_id": data.legacy, "author_user_id": author, "title": title,
            "content": f"Ada Marsh married Walt Hale in {year}. The church was full.",
            "visibility": visibility, "created_at": t, "updated_at": t,
        }  # fmt: skip

    overrides = {
        "persons": [
            *files["persons"],
            {
                "id": WALT,
                "legacy_id": data.legacy,
                "name": "Walt Hale",
                "aliases": [],
                "birth_year": 1928,
                "death_year": 1990,
            },
        ],
        "users": [
            *files["users"],
            {"id": LOU, "name": "Lou Marsh", "person_id": None},
            {"id": MAX, "name": "Max Pell", "person_id": None},
        ],
        "members": [
            *files["members"],
            {"legacy_id": data.legacy, "user_id": LOU, "role": "admin"},
            {"legacy_id": data.legacy, "user_id": MAX, "role": "admirer"},
        ],
        "stories": [
            story(data.public_story, "Wedding bells", 1951, "public", data.creator),  # Tom
            story(data.private_story, "What Mother said", 1953, "private", LOU),
            story(data.personal_story, "Kay's own notes", 1955, "personal", data.admirer),
        ],
    }
    p = dataclasses.replace(ports, extractor=_WeddingExtractor(), extractor_version="scripted-wedding")
    load_dataset(p, data.write(tmp_path / "ds", overrides))
    return data


def context(ports, data, user):
    request = ContextRequest(
        legacy_id=data.legacy, user_id=user, persona="family", query="when did Ada marry Walt"
    )
    intent = QueryIntent(intent=Intent.ENTITY_FOCUSED)
    found = traverse(ports.graph, request, intent, load_personas()["family"].traversal)
    filtered = filter_context(
        AccessFilterInput(
            request=request, branches=(GraphBranch(intent=intent, graph=found), VectorBranch())
        ),
        ports.stories,
        ports.vectors,
    )
    return assemble(request, filtered, load_personas()["family"], TiktokenTokenizer(), fence="f00d")


def _accounts(out):
    return [(a.narrator, a.title, a.sentence) for g in out.accounts for a in g.accounts]


def test_each_user_sees_side_by_side_only_the_accounts_it_may_read(ports, world):
    creator = context(ports, world, world.creator)  # reads public + private
    assert sorted(_accounts(creator)) == [
        ("Lou Marsh", "What Mother said", "Ada Marsh married Walt Hale in 1953."),
        ("Tom", "Wedding bells", "Ada Marsh married Walt Hale in 1951."),
    ]
    text = creator.formatted_context
    assert "## Differing Accounts\n- " in text
    assert '"Tom" recalls (story "Wedding bells"): "Ada Marsh married Walt Hale in 1951."' in text
    assert '"Lou Marsh" recalls (story "What Mother said"): "Ada Marsh married Walt Hale in 1953."' in text
    assert "1955" not in text and "Kay" not in text  # the admirer's personal note

    kay = context(ports, world, world.admirer)  # reads public + her own personal note
    assert sorted(_accounts(kay)) == [
        ("Kay", "Kay's own notes", "Ada Marsh married Walt Hale in 1955."),
        ("Tom", "Wedding bells", "Ada Marsh married Walt Hale in 1951."),
    ]
    assert "1953" not in kay.formatted_context and "Lou" not in kay.formatted_context


def test_one_readable_account_is_a_plain_fact_with_no_trace_of_the_others(ports, world):
    out = context(ports, world, MAX)  # an admirer: the public story only
    assert out.accounts == ()
    text = out.formatted_context
    assert '"Ada Marsh married Walt Hale in 1951." (from "Wedding bells")' in text
    dump = out.model_dump_json()
    for trace in ("Differing", "differ", "1953", "1955", "Lou", "Kay", "What Mother said", "own notes"):
        assert trace not in dump, trace
    assert str(world.private_story) not in dump and str(world.personal_story) not in dump
