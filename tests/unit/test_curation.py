"""Curation's pure rules: name signals for merge suggestions, the survivor's properties after a
merge, the tier a user's role reads, the rebuild thresholds, a tier graph's names and facts, the
community section within its budget, and the in-memory curation store."""

from __future__ import annotations

import uuid
from uuid import UUID

import pytest

from heirloom.adapters.memory_curation import MemoryCurationStore
from heirloom.adapters.tokenizer import TiktokenTokenizer
from heirloom.contracts.access import Grant, ReadScope, StoryMeta
from heirloom.contracts.context import CommunityNote, Intent, QueryIntent
from heirloom.contracts.curation import CommunitySummary, EntityRef
from heirloom.contracts.records import Role, Visibility
from heirloom.domain.assembly import assemble
from heirloom.domain.communities import Fact, LegacyFacts, summarise, tier_graph
from heirloom.domain.community_notes import tier_of
from heirloom.domain.community_rebuild import rebuild_kind
from heirloom.domain.entity_merge import merged_props
from heirloom.domain.merge_suggestions import EntityInfo, name_evidence, suggest
from heirloom.domain.personas import load_personas
from tests.unit.test_assembly import filtered, request

L = uuid.UUID(int=1)
S1, S2, S3 = (str(uuid.UUID(int=i)) for i in (101, 102, 103))


def info(name: str, label: str = "Object", stories: tuple[str, ...] = (S1,), aliases=()) -> EntityInfo:
    ref = EntityRef(id=str(uuid.uuid5(L, label + name)), label=label, name=name, aliases=aliases)  # type: ignore[arg-type]
    return EntityInfo(ref=ref, stories=frozenset(stories))


@pytest.mark.parametrize(
    ("a", "b", "signal"),
    [
        ("accordion", "Papa Sal's accordion", "name contained"),
        ("wedding", "Uncle Dommie's wedding", "name contained"),
        ("flood", "flood in 1977", "name contained"),
        ("recipe box", "Mom's recipe box", "name contained"),
        ("the Vine Street house", "Vine Street house", "alias in common"),  # "the" is no part of a name
        ("Kestrel Glass Works", "Kestrel Glassworks", "similar names"),
    ],
)
def test_name_signals(a, b, signal):
    found = name_evidence(info(a), info(b))
    assert found is not None and found[1].startswith(signal)


@pytest.mark.parametrize(
    ("a", "b"),
    [("wedding", "wedding band"), ("accordion", "trumpet"), ("box", "Mom's recipe box x"), ("ox", "big ox")],
)
def test_no_signal(a, b):
    assert name_evidence(info(a), info(b)) is None


def test_suggestions_keep_labels_apart_honour_keep_apart_and_hide_unreadable_entities():
    accordion, papas = info("accordion", stories=(S1,)), info("Papa Sal's accordion", stories=(S1, S2))
    wedding_place = info("accordion", label="Place")
    secret = info("Papa Sal's accordion case", stories=(S3,))
    found = suggest(
        [accordion, papas, wedding_place, secret],
        legacy_id=L, readable={S1, S2}.__contains__, kept_apart=set(),
    )  # fmt: skip
    assert [(s.a.name, s.b.name) for s in found] == [("Papa Sal's accordion", "accordion")]
    assert found[0].evidence[1] == "mentioned together in 1 stories" and found[0].score == 0.7
    kept = {frozenset((accordion.ref.id, papas.ref.id))}
    assert suggest([accordion, papas], legacy_id=L, readable=lambda s: True, kept_apart=kept) == []


def test_merged_props_keep_every_name_once_and_union_the_years():
    survivor = {"name": "Papa Sal's accordion", "aliases": "the red accordion", "years": "|1950|", "date": ""}
    absorbed = {
        "name": "accordion",
        "aliases": "Papa Sal's Accordion; squeezebox",
        "years": "|1962|",
        "date": "1962",
    }
    assert merged_props(survivor, absorbed) == {
        "aliases": "the red accordion; accordion; squeezebox",
        "years": "|1950|1962|",
        "date": "1962",
    }


def scope(role: Role, visibilities: set[Visibility]) -> ReadScope:
    return ReadScope(
        user_id=uuid.uuid4(), legacy_id=L, role=role,
        grants=(Grant(legacy_id=L, visibilities=frozenset(visibilities), own_personal=True),),
    )  # fmt: skip


def test_the_tier_follows_what_the_role_reads():
    assert tier_of(scope(Role.ADMIRER, {Visibility.PUBLIC})) == "public"
    assert tier_of(scope(Role.ADVOCATE, {Visibility.PUBLIC, Visibility.PRIVATE})) == "private"


def test_thresholds_at_their_edges():
    assert [rebuild_kind(n) for n in (19, 20, 99, 100)] == ["none", "partial", "partial", "full"]


def meta(sid: str, visibility: Visibility) -> StoryMeta:
    return StoryMeta(id=UUID(sid), legacy_id=L, author_user_id=uuid.uuid4(), visibility=visibility)


def test_a_tier_graph_holds_its_stories_facts_and_names_things_as_its_stories_do():
    pub, priv = str(uuid.UUID(int=10)), str(uuid.UUID(int=11))
    facts = LegacyFacts(
        names={"p": "Ada", "x": "Papa Sal's accordion", "y": "orchard", "z": "iron lung"},
        labels={"p": "Person", "x": "Object", "y": "Place", "z": "Object"},
        used={(pub, "x"): "accordion", (priv, "x"): "Papa Sal's accordion"},
    )
    facts.story_things.update({pub: {"p", "x", "y"}, priv: {"p", "x", "z"}})
    facts.facts.append(Fact("p", "OWNED", "x", pub))
    facts.facts.append(Fact("p", "OWNED", "z", priv))
    metas = [meta(pub, Visibility.PUBLIC), meta(priv, Visibility.PRIVATE)]
    public = tier_graph(facts, metas, "public", exclude=set())
    assert public.names["x"] == "accordion"  # the name its public story gives it
    assert set(public.weights) == {("p", "x"), ("p", "y"), ("x", "y")}
    assert [f.obj for f in public.facts] == ["x"]
    summary = summarise(public, {"p", "x", "y"}, legacy_id=L, tier="public", number=0, key="k")
    assert summary is not None
    assert (
        summary.summary
        == "people: Ada; places: orchard; things: accordion: together in 1 stories; Ada owned accordion."
    )
    assert summary.story_ids == (UUID(pub),)
    private = tier_graph(facts, metas, "private", exclude={"p"})
    assert private.names["x"] == "Papa Sal's accordion" and ("p", "x") not in private.weights


def test_the_community_section_fits_its_share_and_says_where_it_comes_from():
    notes = tuple(
        CommunityNote(
            summary=f"people: Ada; things: item {i}", story_ids=(uuid.uuid4(),), titles=(f"Story {i}",)
        )
        for i in range(40)
    )
    tok = TiktokenTokenizer()
    out = assemble(
        request(budget=1000), filtered(intent=QueryIntent(intent=Intent.GENERAL), communities=notes),
        load_personas()["family"], tok,
    )  # fmt: skip
    section = out.formatted_context.split("## Circles in the Stories\n", 1)[1]
    assert section.startswith(
        '- people: Ada; things: item 0\nSource: community summary, from the stories "Story 0"'
    )
    assert 0 < section.count("\n- ") + 1 < 40
    assert tok.count("## Circles in the Stories\n" + section) <= 80  # min(300, 8 % of 1,000)


def test_the_memory_store_keeps_merges_pairs_impact_and_communities():
    store = MemoryCurationStore()
    store.keep_apart(L, "b", "a", uuid.uuid4())
    assert store.kept_apart(L) == {frozenset({"a", "b"})}
    store.record_impact(L, 30)
    store.record_impact(L, 0)
    assert store.impact(L).impact == 30
    store.spend_impact(L, 25, "partial")
    assert (store.impact(L).impact, store.impact(L).last_build) == (5, "partial")
    c = CommunitySummary(legacy_id=L, tier="public", number=0, component_key="k", member_ids=("a",), summary="s",
                         story_ids=())  # fmt: skip
    store.save_communities(L, "public", [c])
    assert store.communities(L, "public") == [c] and store.communities(L, "private") == []
