"""AccessFilter on the embedded engines: stories and "Known Connections" facts by role."""

import uuid

import pytest

from heirloom.contracts.context import (
    AccessFilterInput,
    ContextRequest,
    GraphBranch,
    GraphFact,
    GraphHit,
    GraphResults,
    KnownScope,
    QueryIntent,
    VectorBranch,
)
from heirloom.contracts.records import Person, Relationship, RelationshipType
from heirloom.errors import AccessDenied
from heirloom.steps.access_filter import filter_context
from heirloom_dev.loader import load_dataset
from tests.support.dataset import MiniDataset


@pytest.fixture
def mini(ports, tmp_path):
    data = MiniDataset()
    load_dataset(ports, data.write(tmp_path / "ds"))
    return data


def run(ports, mini, user, facts=(), hits=(), known=None):
    request = ContextRequest(legacy_id=mini.legacy, user_id=user, persona="family", query="q")
    results = GraphResults(hits=tuple(hits), facts=tuple(facts), known=known)
    graph = GraphBranch(intent=QueryIntent(), graph=results)
    return filter_context(
        AccessFilterInput(request=request, branches=(graph, VectorBranch())), ports.stories, ports.vectors
    )


def fact(mini, story_ids=(), known=False, legacy_ids=()):
    return GraphFact(
        subject_id=mini.subject,
        subject="Ada Marsh",
        predicate="LIVED_IN",
        object_id="x",
        object="County Hospital",
        story_ids=tuple(story_ids),
        known=known,
        legacy_ids=tuple(legacy_ids),
    )


def test_a_fact_only_a_private_story_supports_reaches_trusted_roles_only(ports, mini):
    private_fact = fact(mini, [mini.private_story])
    titled = private_fact.model_copy(update={"titles": ("The long illness",)})
    assert run(ports, mini, mini.creator, [private_fact]).facts == (titled,)
    admirer = run(ports, mini, mini.admirer, [private_fact])
    assert admirer.facts == () and admirer.dropped_facts == 1


def test_told_facts_survive_with_readable_stories_and_the_graphs_known_ones_never(ports, mini):
    """The graph's templates return told facts only (decision 0030); a known fact the graph (or
    a cache from before) still gives is dropped, even one a stored relationship stands behind:
    known relationships come from the store, for the `facts` template's scope alone."""
    public = fact(mini, [mini.private_story, mini.public_story])
    # the stored FAMILY_OF of the mini legacy, as an old graph (or a cache of it) gives it
    known = fact(mini, known=True, legacy_ids=[mini.legacy]).model_copy(
        update={"predicate": "FAMILY_OF", "object_id": mini.sister, "object": "Ivy", "detail": "sister"}
    )
    unsupported = fact(mini)
    out = run(ports, mini, mini.admirer, [public, known, unsupported])
    # a kept fact names only the stories the admirer may read, with their titles
    readable_only = public.model_copy(update={"story_ids": (mini.public_story,), "titles": ("The orchard",)})
    assert out.facts == (readable_only,)


def test_known_facts_of_the_persons_asked_for_are_read_from_the_store(ports, mini):
    """A cache that predates a relationship (no known fact) or outlived one (a stale known fact):
    with the `facts` template's scope, the known facts are the stored ones, told facts kept."""
    told = fact(mini, [mini.public_story])
    stale = fact(mini, known=True, legacy_ids=[mini.legacy])  # no record stands behind it
    scope = KnownScope(person_ids=(mini.subject,), subject_id=mini.subject, limit=10)
    out = run(ports, mini, mini.admirer, [told, stale], known=scope)
    sister = GraphFact(
        subject_id=mini.subject,
        subject="Ada Marsh",
        predicate="FAMILY_OF",
        object_id=mini.sister,
        object="Ivy Marsh",
        detail="sister",
        known=True,
        legacy_ids=(mini.legacy, mini.legacy),
    )
    assert out.facts == (sister, told.model_copy(update={"titles": ("The orchard",)}))
    # the template's order (subject first, then predicate) and its limit
    assert run(ports, mini, mini.admirer, [told], known=scope.model_copy(update={"limit": 1})).facts == (
        sister,
    )


def test_known_facts_read_from_the_store_keep_the_membership_rule(ports, mini):
    """A stored relationship between two persons of a legacy the user is not a member of is not
    shown, though the persons asked for reach it; one with a person of the user's legacy is."""
    cousin = uuid.uuid4()
    ports.stories.upsert_person(Person(id=cousin, legacy_id=uuid.UUID(mini.other_legacy), name="Lou Marsh"))
    other, subject = uuid.UUID(mini.other_subject), uuid.UUID(mini.subject)
    ports.stories.upsert_relationship(
        Relationship(
            from_person_id=other, to_person_id=cousin, type=RelationshipType.FAMILY_OF, detail="cousin"
        )
    )
    ports.stories.upsert_relationship(
        Relationship(
            from_person_id=other, to_person_id=subject, type=RelationshipType.KNEW, detail="next door"
        )
    )
    scope = KnownScope(person_ids=(mini.subject, mini.other_subject), subject_id=mini.subject, limit=10)
    admirer = {(f.object, f.detail) for f in run(ports, mini, mini.admirer, known=scope).facts}
    assert admirer == {("Ivy Marsh", "sister"), ("Ada Marsh", "next door")}
    creator = {(f.object, f.detail) for f in run(ports, mini, mini.creator, known=scope).facts}
    assert creator == admirer | {("Lou Marsh", "cousin")}


def test_graph_hits_on_unreadable_stories_are_dropped_and_excerpts_fetched(ports, mini):
    hits = [
        GraphHit(story_id=s, template="general", hops=1, relationship="MENTIONS")
        for s in (mini.public_story, mini.private_story, mini.personal_story, mini.linked_story)
    ]
    out = run(ports, mini, mini.admirer, hits=hits)
    got = {str(c.story_id): c for c in out.candidates}
    assert set(got) == {mini.public_story, mini.personal_story, mini.linked_story}
    assert got[mini.public_story].chunks and got[mini.public_story].embedding_score is None
    assert got[mini.linked_story].primary is False and got[mini.linked_story].shared_via == "all"
    assert out.dropped_stories == 1


class _Reads:
    """Counts the reads a store or index is asked for."""

    def __init__(self, inner):
        self.inner, self.calls = inner, []

    def __getattr__(self, name):
        method = getattr(self.inner, name)

        def call(*args, **kwargs):
            self.calls.append(name)
            return method(*args, **kwargs)

        return call


def test_a_bridge_hit_survives_only_when_its_seed_story_is_readable(ports, mini):
    """A bridge entity found in a story the user may not read is never used (decision 0022):
    the hit goes, and the story it reached is not a candidate through it."""

    def bridge(seed):
        return GraphHit(story_id=mini.public_story, template="bridge", hops=2, relationship="MENTIONS",
                        entity="Dr. Hale", source_story_id=seed)  # fmt: skip

    out = run(ports, mini, mini.admirer, hits=[bridge(mini.private_story)])
    assert out.candidates == () and "Dr. Hale" not in out.model_dump_json()
    kept = run(ports, mini, mini.admirer, hits=[bridge(mini.private_story), bridge(mini.personal_story)])
    assert [(str(h.source_story_id), h.entity) for c in kept.candidates for h in c.graph_hits] == [
        (mini.personal_story, "Dr. Hale")
    ]
    trusted = run(ports, mini, mini.creator, hits=[bridge(mini.private_story)])
    assert [str(h.source_story_id) for c in trusted.candidates for h in c.graph_hits] == [mini.private_story]


def test_graph_only_excerpts_and_the_legacy_row_are_read_once(ports, mini):
    hits = [
        GraphHit(story_id=s, template="general", hops=1, relationship="MENTIONS")
        for s in (mini.public_story, mini.personal_story, mini.linked_story)
    ]
    request = ContextRequest(legacy_id=mini.legacy, user_id=mini.admirer, persona="family", query="q")
    graph = GraphBranch(intent=QueryIntent(), graph=GraphResults(hits=tuple(hits)))
    stories, vectors = _Reads(ports.stories), _Reads(ports.vectors)
    out = filter_context(
        AccessFilterInput(request=request, branches=(graph, VectorBranch())), stories, vectors
    )
    assert out == run(ports, mini, mini.admirer, hits=hits).model_copy(update={"latency_ms": out.latency_ms})
    assert all(c.chunks for c in out.candidates) and len(out.candidates) == 3
    assert vectors.calls == ["chunks_of_many"]
    # the primary legacy once; the linked one for its name
    assert stories.calls.count("get_legacy") == 2


def test_unknown_legacy_and_non_member_are_typed_errors(ports, mini):
    with pytest.raises(AccessDenied):
        run(ports, mini, str(uuid.uuid4()))
    request = ContextRequest(legacy_id=uuid.uuid4(), user_id=mini.creator, persona="family", query="q")
    with pytest.raises(AccessDenied, match="is not a member of legacy"):  # as for a non-member
        filter_context(
            AccessFilterInput(request=request, branches=(VectorBranch(),)), ports.stories, ports.vectors
        )


def test_debug_metadata_is_computed_after_filtering_from_what_the_user_may_read(ports, mini):
    """Intent matches listed entities found only in unreadable stories, and traversal counts were
    taken before filtering: debug output hinted at what the user may not read."""
    from heirloom.adapters.tokenizer import TiktokenTokenizer
    from heirloom.contracts.context import EntityMatch, QueryEntities, TraversalStat
    from heirloom.domain.assembly import assemble
    from heirloom.domain.personas import load_personas

    illness = EntityMatch(mention="hospital", node_id="e-ill", label="Event", name="Lung Illness")
    orchard = EntityMatch(mention="orchard", node_id="p-orch", label="Place", name="Orchard")
    intent = QueryIntent(
        intent="entity_focused",
        entities=QueryEntities(places=("Orchard",), events=("Lung Illness", "Picnic")),
        matches=(illness, orchard),
    )
    hits = (
        GraphHit(story_id=mini.private_story, template="entity_focused", hops=1, entity="Lung Illness"),
        GraphHit(story_id=mini.public_story, template="spatial", hops=1, entity="Orchard"),
    )
    stats = tuple(TraversalStat(template=t, results=1, latency_ms=1.0) for t in ("entity_focused", "spatial"))
    graph = GraphResults(
        hits=hits,
        facts=(fact(mini, [mini.private_story]),),
        traversals=(*stats, TraversalStat(template="facts", results=1, latency_ms=1.0)),
    )

    def debug_of(user):
        request = ContextRequest(
            legacy_id=mini.legacy, user_id=user, persona="family", query="the hospital, the orchard, a picnic"
        )
        data = AccessFilterInput(
            request=request, branches=(GraphBranch(intent=intent, graph=graph), VectorBranch())
        )
        filtered = filter_context(data, ports.stories, ports.vectors)
        meta = assemble(request, filtered, load_personas()[request.persona], TiktokenTokenizer()).metadata
        assert (meta.intent, meta.traversals) == (filtered.intent, filtered.traversals)
        return meta.intent, {s.template: s.results for s in meta.traversals}

    intent_out, counts = debug_of(mini.admirer)  # may not read the private story
    assert intent_out.matches == (orchard,)
    assert intent_out.entities.events == ("Picnic",) and intent_out.entities.places == ("Orchard",)
    assert counts == {"entity_focused": 0, "spatial": 1, "facts": 0}
    intent_out, counts = debug_of(mini.creator)  # may read everything
    assert intent_out == intent and counts == {"entity_focused": 1, "spatial": 1, "facts": 1}


class _FactExtractor:
    """The private story tells a fact about the subject; every other story tells nothing."""

    def extract(self, text, *, known_names=()):
        from heirloom.contracts.extraction import (
            ExtractedEntities,
            ExtractedFact,
            ExtractedObject,
            ExtractedPerson,
        )

        if "illness" not in text:
            return ExtractedEntities()
        return ExtractedEntities(
            people=(ExtractedPerson(name="Ada Marsh", confidence=0.95),),
            objects=(ExtractedObject(name="blue quilt", type="textile", confidence=0.9),),
            facts=(
                ExtractedFact(
                    source="Ada Marsh",
                    relation="MADE",
                    target="blue quilt",
                    verb="sewed",
                    sentence="Ada Marsh sewed the blue quilt in the hospital ward.",
                    confidence=0.9,
                ),
            ),
        )


def test_a_told_fact_shows_its_sentence_only_to_those_who_may_read_its_story(ports, tmp_path):
    """Leak probe for the fact sentences of the known-connections block: a fact told only by a
    private story reaches the trusted roles, quoted with its story; an admirer gets no trace."""
    import dataclasses

    from heirloom.contracts.context import Intent
    from heirloom.domain.format import fact_sentences
    from heirloom.domain.personas import load_personas
    from heirloom.domain.traversal import traverse

    data = MiniDataset()
    p = dataclasses.replace(ports, extractor=_FactExtractor(), extractor_version="scripted-1")
    load_dataset(p, data.write(tmp_path / "ds"))
    request = ContextRequest(legacy_id=data.legacy, user_id=data.creator, persona="family", query="the quilt")
    found = traverse(
        ports.graph, request, QueryIntent(intent=Intent.ENTITY_FOCUSED), load_personas()["family"].traversal
    )
    told = [f for f in found.facts if f.sentence]
    assert [(f.predicate, f.object, f.story_ids) for f in told] == [
        ("MADE", "blue quilt", (data.private_story,))
    ]
    sentence = "Ada Marsh sewed the blue quilt in the hospital ward."

    def visible(user):
        request = ContextRequest(legacy_id=data.legacy, user_id=user, persona="family", query="the quilt")
        graph = GraphBranch(intent=QueryIntent(), graph=found)
        out = filter_context(
            AccessFilterInput(request=request, branches=(graph, VectorBranch())), ports.stories, ports.vectors
        )
        return " ".join(fact_sentences(out.facts))

    assert f'"{sentence}" (from "The long illness")' in visible(data.creator)
    shown = visible(data.admirer)
    assert "quilt" not in shown and "long illness" not in shown


class _MetExtractor:
    """The private story tells that Ivy met Ada; the public story names Ada; nothing else."""

    def extract(self, text, *, known_names=()):
        from heirloom.contracts.extraction import ExtractedEntities, ExtractedFact, ExtractedPerson

        ada = ExtractedPerson(name="Ada Marsh", confidence=0.95)
        if "illness" in text:
            ivy = ExtractedPerson(name="Ivy Marsh", confidence=0.95)
            met = ExtractedFact(source="Ivy Marsh", relation="MET", target="Ada Marsh", verb="met",
                                sentence="Ivy Marsh met Ada Marsh at the ward.", confidence=0.9)  # fmt: skip
            return ExtractedEntities(people=(ada, ivy), facts=(met,))
        return ExtractedEntities(people=(ada,)) if "apple trees" in text else ExtractedEntities()


def test_a_second_hop_through_a_fact_only_an_unreadable_story_tells_leads_nowhere(ports, tmp_path):
    """Found by an audit: `fact_neighbours` went from a named person through a fact to the
    stories of the person at its other end, and AccessFilter checked only those stories. An
    admirer got the public story through a fact only the private story tells ("told fact
    (MET)"). The hit now carries the fact's story, which is checked like the story reached."""
    import dataclasses

    from heirloom.contracts.context import EntityMatch, Intent
    from heirloom.domain.personas import load_personas
    from heirloom.domain.traversal import traverse

    data = MiniDataset()
    p = dataclasses.replace(ports, extractor=_MetExtractor(), extractor_version="scripted-met")
    load_dataset(p, data.write(tmp_path / "ds"))
    ivy = EntityMatch(mention="Ivy", node_id=data.sister, label="Person", name="Ivy Marsh")
    intent = QueryIntent(intent=Intent.ENTITY_FOCUSED, matches=(ivy,))

    def reached(user):
        request = ContextRequest(legacy_id=data.legacy, user_id=user, persona="family", query="Ivy?")
        found = traverse(ports.graph, request, intent, load_personas()["family"].traversal)
        second = [h for h in found.hits if h.template == "fact_neighbours"]
        assert second and {str(h.source_story_id) for h in second} == {data.private_story}
        out = filter_context(
            AccessFilterInput(
                request=request, branches=(GraphBranch(intent=intent, graph=found), VectorBranch())
            ),
            ports.stories,
            ports.vectors,
        )
        return {
            str(c.story_id) for c in out.candidates for h in c.graph_hits if h.template == "fact_neighbours"
        }

    assert data.public_story in reached(data.creator)  # may read the fact's story
    assert reached(data.admirer) == set()
