"""Communities on the embedded engines: impact recorded by ingestion and merges, the rebuild
thresholds (partial 20, full 100), a partial rebuild keeping the components that did not change,
summaries per visibility tier, and the `general` intent's community section holding only what
the asking user may read."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime
from uuid import UUID

import pytest

from heirloom.adapters.postgres.curation import PgCurationStore
from heirloom.contracts.access import ReadScope
from heirloom.contracts.context import ContextRequest, Intent
from heirloom.contracts.extraction import (
    ExtractedEntities,
    ExtractedEvent,
    ExtractedObject,
    ExtractedPerson,
    ExtractedPlace,
    ExtractedRelationship,
)
from heirloom.domain import community_notes
from heirloom.domain.community_rebuild import CommunityPorts, rebuild_kind, rebuild_legacy
from heirloom.domain.format import COMMUNITIES_HEADER
from heirloom_dev.loader import load_dataset
from tests.integration.test_curation import ScriptedExtractor
from tests.support import pipeline
from tests.support.dataset import MiniDataset
from tests.support.services import context_services

pytestmark = pytest.mark.integration


def _things(names: list[tuple[str, str]]) -> dict[str, tuple[object, ...]]:
    kinds = {"Place": [], "Event": [], "Object": []}
    for label, name in names:
        kinds[label].append(name)
    return {
        "places": tuple(ExtractedPlace(name=n, type="other", confidence=0.9) for n in kinds["Place"]),
        "events": tuple(ExtractedEvent(name=n, type="other", confidence=0.9) for n in kinds["Event"]),
        "objects": tuple(ExtractedObject(name=n, type="other", confidence=0.9) for n in kinds["Object"]),
    }


#: the public story: Ivy with the orchard, the cider press and the harvest fair
PUBLIC = ExtractedEntities(
    people=(ExtractedPerson(name="Ivy Marsh", confidence=0.9),),
    **_things([("Place", "the river orchard"), ("Object", "cider press"), ("Event", "harvest fair")]),
    relationships=(ExtractedRelationship(subject="Ivy Marsh", predicate="OWNED", object="cider press", confidence=0.9),),
)  # fmt: skip
#: the private story: a hospital, a ward and an iron lung nobody outside the family knows of
PRIVATE = ExtractedEntities(
    people=(ExtractedPerson(name="Ivy Marsh", confidence=0.9),),
    **_things([("Place", "Saltash Infirmary"), ("Place", "Ward Nine"), ("Object", "iron lung")]),
)  # fmt: skip
#: the admirer's personal story: only she may read what it names
PERSONAL = ExtractedEntities(
    **_things([("Object", "secret diary"), ("Place", "hay loft"), ("Event", "midnight swim")])
)
SECRETS = ("Saltash Infirmary", "Ward Nine", "iron lung", "The long illness")


@pytest.fixture
def world(ports, tmp_path):
    mini = MiniDataset()
    extractor = ScriptedExtractor({"apple": PUBLIC, "lung": PRIVATE, "herself": PERSONAL})
    curation = PgCurationStore(ports.stories.db)
    p = dataclasses.replace(ports, extractor=extractor, extractor_version="scripted-1", curation=curation)
    load_dataset(p, mini.write(tmp_path / "ds"))
    return p, mini, curation


def test_thresholds():
    assert [rebuild_kind(n) for n in (0, 19, 20, 99, 100, 500)] == [
        "none",
        "none",
        "partial",
        "partial",
        "full",
        "full",
    ]
    assert rebuild_kind(5, partial=5, full=10) == "partial"


def test_impact_is_recorded_and_spent_by_a_rebuild(world):
    ports, mini, curation = world
    legacy = UUID(mini.legacy)
    impact = curation.impact(legacy).impact
    assert impact >= 10  # what the three stories of the legacy wrote
    cports = CommunityPorts(ports.graph, ports.stories, curation)
    below = rebuild_legacy(cports, legacy, partial=impact + 1, full=impact + 2)
    assert below.kind == "none" and curation.communities(legacy, "private") == []
    partial = rebuild_legacy(cports, legacy, partial=impact, full=impact + 1)
    assert partial.kind == "partial" and partial.communities["private"] >= 1
    assert curation.impact(legacy).impact == 0 and curation.impact(legacy).last_build == "partial"
    # nothing changed: a forced partial rebuild keeps every component's communities
    before = {tier: curation.communities(legacy, tier) for tier in ("public", "private")}
    again = rebuild_legacy(cports, legacy, force="partial")
    assert again.kept_components >= 2  # at least one component per tier, none detected again
    assert {tier: curation.communities(legacy, tier) for tier in ("public", "private")} == before
    full = rebuild_legacy(cports, legacy, partial=1, full=1, force=None)
    assert full.kind == "none"  # the impact was spent
    curation.record_impact(legacy, 100)
    assert rebuild_legacy(cports, legacy).kind == "full" and curation.impact(legacy).impact == 0


def test_summaries_per_tier_hold_only_their_tier_s_facts(world):
    ports, mini, curation = world
    legacy = UUID(mini.legacy)
    rebuild_legacy(CommunityPorts(ports.graph, ports.stories, curation), legacy, force="full")
    public = " ".join(c.summary for c in curation.communities(legacy, "public"))
    private = " ".join(c.summary for c in curation.communities(legacy, "private"))
    assert "cider press" in public and "Saltash Infirmary" in private
    assert not any(name in public for name in SECRETS)
    # personal stories belong to no tier
    assert not any(name in public + private for name in ("secret diary", "hay loft", "midnight swim"))
    cited = {s for c in curation.communities(legacy, "public") for s in c.story_ids}
    assert cited == {UUID(mini.public_story)}


def _ask(ports, curation, mini, user: str) -> str:
    services = context_services(ports, curation=curation,
    )  # fmt: skip
    request = ContextRequest(
        legacy_id=mini.legacy, user_id=user, persona="biographer", query="Sum up her life."
    )
    return str(pipeline.assemble(services, request, Intent.GENERAL)["formatted_context"])


def test_the_general_intent_shows_each_user_only_summaries_they_may_read(world, monkeypatch):
    ports, mini, curation = world
    rebuild_legacy(CommunityPorts(ports.graph, ports.stories, curation), UUID(mini.legacy), force="full")
    creator = _ask(ports, curation, mini, mini.creator)
    admirer = _ask(ports, curation, mini, mini.admirer)
    assert COMMUNITIES_HEADER in creator and "Saltash Infirmary" in creator
    assert COMMUNITIES_HEADER in admirer and "cider press" in admirer.split(COMMUNITIES_HEADER)[1]
    assert not any(name in admirer for name in SECRETS)
    # given the private tier's summaries, the admirer still sees none of them: each cited story
    # is checked against her read scope
    monkeypatch.setattr(community_notes, "tier_of", lambda scope: "private")
    assert not any(name in _ask(ports, curation, mini, mini.admirer) for name in SECRETS)
    # and that check is what holds: without it the private tier's names reach her
    monkeypatch.setattr(ReadScope, "allows", lambda self, story: True)
    assert any(name in _ask(ports, curation, mini, mini.admirer) for name in SECRETS)


def test_a_summary_citing_a_story_the_user_may_not_read_is_dropped(world):
    ports, mini, curation = world
    legacy = UUID(mini.legacy)
    rebuild_legacy(CommunityPorts(ports.graph, ports.stories, curation), legacy, force="full")
    public = curation.communities(legacy, "public")
    tampered = [c.model_copy(update={"story_ids": (*c.story_ids, UUID(mini.private_story))}) for c in public]
    curation.save_communities(legacy, "public", tampered)
    assert COMMUNITIES_HEADER not in _ask(ports, curation, mini, mini.admirer)
    curation.save_communities(legacy, "public", public)
    assert COMMUNITIES_HEADER in _ask(ports, curation, mini, mini.admirer)


#: a cave only the late story names, with the orchard and the press (so in their community)
LATE = ExtractedEntities(
    people=(ExtractedPerson(name="Ivy Marsh", confidence=0.9),),
    **_things([("Place", "the river orchard"), ("Object", "cider press"), ("Place", "smuggler's cave")]),
)  # fmt: skip
LATE_STORY = "ffffffff-ffff-4fff-bfff-ffffffffffff"  # its id sorts after every other story's


def test_a_summary_is_checked_against_every_story_it_was_built_from_not_only_those_it_cites(ports, tmp_path):
    """A community of more than 8 stories cites 8 of them; a story beyond those 8 that the user
    may not read (written after `as_of`, or made personal since the build) still drops it."""
    mini = MiniDataset()
    extractor = ScriptedExtractor({"cave": LATE, "apple": PUBLIC, "lung": PRIVATE, "herself": PERSONAL})
    curation = PgCurationStore(ports.stories.db)
    p = dataclasses.replace(ports, extractor=extractor, extractor_version="scripted-1", curation=curation)
    files = mini.files()

    def story(sid: str, content: str, at: str) -> dict[str, object]:
        return {"id": sid, "legacy_id": mini.legacy, "author_user_id": mini.creator, "title": f"Day {sid[:4]}",
                "content": content, "visibility": "public", "created_at": at, "updated_at": at}  # fmt: skip

    more = [
        story(str(UUID(int=i + 1)), f"On apple day {i} the press ran late.", "2024-05-01T10:00:00Z")
        for i in range(8)
    ]
    late = story(LATE_STORY, "They hid the cider in a cave by the orchard.", "2024-07-01T10:00:00Z")
    load_dataset(p, mini.write(tmp_path / "ds", {"stories": [*files["stories"], *more, late]}))
    rebuild_legacy(CommunityPorts(p.graph, p.stories, curation), UUID(mini.legacy), force="full")
    public = curation.communities(UUID(mini.legacy), "public")
    assert any("smuggler's cave" in c.summary for c in public)
    now = ContextRequest(
        legacy_id=mini.legacy, user_id=mini.admirer, persona="biographer", query="Sum up her life."
    )
    services = context_services(p, curation=curation)
    shown = str(pipeline.assemble(services, now, Intent.GENERAL)["formatted_context"])
    assert "smuggler's cave" in shown
    # the citation stays at 8 titles (provenance), whatever the number of stories checked
    block = shown.split(COMMUNITIES_HEADER)[1].split("\n\n## ", maxsplit=1)[0]
    assert block.count('"Day ') == 8, block
    before = now.model_copy(update={"as_of": datetime(2024, 6, 1, tzinfo=UTC)})
    text = str(pipeline.assemble(services, before, Intent.GENERAL)["formatted_context"])
    assert "cave" not in text
