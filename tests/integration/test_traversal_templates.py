"""Every traversal template against FalkorDB: which stories come back, in what order, in the
typed shape the domain reads."""

import random
import uuid

import pytest

from heirloom.contracts.context import ContextRequest, EntityMatch, Intent, QueryEntities, QueryIntent
from heirloom.domain.personas import load_personas
from heirloom.domain.traversal import traverse
from heirloom.domain.year_keys import year_keys, year_range
from tests.support.graph_fixture import build_fixture_graph, fid, fname, run_template


@pytest.fixture
def fx(graph):
    return build_fixture_graph(graph)


def _rows(graph, name, **params):
    return run_template(graph, name, params)


def _names(values):
    return [fname(v) for v in values]


def test_legacy_context_returns_subject_and_only_active_links(graph, fx):
    rows = _rows(graph, "legacy_context", legacy_id=fx.legacy)
    assert rows == [
        {
            "subject_id": "p-subject",
            "name": "Sam Reed",
            "linked_ids": [fx.linked],
            "linked_subject_ids": ["p-brother"],
        }
    ]


def test_relational_orders_family_then_friends_then_work(graph, fx):
    rows = _rows(graph, "relational", person_id="p-subject", target_ids=[], legacy_ids=[fx.legacy], limit=10)
    assert [(r["via"], r["relationship"], sorted(_names(r["story_ids"]))) for r in rows] == [
        ("Ben Reed", "FAMILY_OF", ["s-brother", "s-watch"]),
        ("Cy Moss", "FRIENDS_WITH", ["s-friend"]),
        ("Dot Vance", "WORKED_WITH", []),
    ]


def test_relational_with_entity_filter_and_two_hops(graph, fx):
    rows = _rows(
        graph, "relational", person_id="p-subject", target_ids=["p-friend"], legacy_ids=[fx.legacy], limit=10
    )
    assert [r["via"] for r in rows] == ["Cy Moss"]
    both = [fx.legacy, fx.linked]
    two = _rows(graph, "relational_2hop", person_id="p-subject", target_ids=[], legacy_ids=both, limit=10)
    assert [(r["via"], r["through"], r["relationship"], _names(r["story_ids"])) for r in two] == [
        ("Ada Reed", "Ben Reed", "FAMILY_OF", ["s-sil"])
    ]
    # the linked legacy's story is out of reach when only the primary legacy is in scope
    only = _rows(
        graph, "relational_2hop", person_id="p-subject", target_ids=[], legacy_ids=[fx.legacy], limit=10
    )
    assert only[0]["story_ids"] == []


#: the two-hop template as first written (one pattern, stories collected for every path, then
#: sorted and cut), with the tie order the template now fixes: the semantics it must keep
RELATIONAL_2HOP_REFERENCE = """
MATCH (p:Person {id: $person_id})-[r1:FAMILY_OF|KNEW|WORKED_WITH|FRIENDS_WITH]-(m:Person)
      -[r2:FAMILY_OF|KNEW|WORKED_WITH|FRIENDS_WITH]-(c:Person)
WHERE c.id <> $person_id AND (size($target_ids) = 0 OR c.id IN $target_ids)
OPTIONAL MATCH (s:Story)-[:MENTIONS]->(c)
WHERE s.legacy_id IN $legacy_ids
WITH c, r1, m, collect(DISTINCT s.id) AS story_ids
RETURN c.id AS via_id, c.name AS via, r1.kind AS relationship, m.name AS through, story_ids
ORDER BY via, via_id, relationship, through
LIMIT $limit
"""


def test_relational_2hop_returns_the_rows_of_the_unbounded_pattern(graph):
    """Anchored on the subject and cut before the stories are collected, the template still
    gives the reference's rows in its order: on a random social graph with edges both ways,
    parallel edges of several kinds, paths back to the subject, shared names and every limit."""
    rng = random.Random(11)
    people = [f"p{i}" for i in range(14)]
    names = ["Ann Lee", "Bo Lee", "Cal Ng", "Ann Lee", "Di Fox", "Ed Fox", "Flo Ng"]
    for i, pid in enumerate(people):
        graph.run("CREATE (:Person {id: $id, name: $name})", {"id": pid, "name": names[i % len(names)]})
    kinds = ["FAMILY_OF", "KNEW", "WORKED_WITH", "FRIENDS_WITH"]
    edges = [(*rng.sample(people, 2), rng.choice(kinds)) for _ in range(40)]
    edges += [(b, a, rng.choice(kinds)) for a, b, _ in edges[::2]]  # pairs joined twice
    for a, b, kind in edges:
        graph.run(
            f"MATCH (a:Person {{id: $a}}) MATCH (b:Person {{id: $b}}) CREATE (a)-[:{kind} {{kind: $k}}]->(b)",
            {"a": a, "b": b, "k": kind},
        )
    for i in range(30):
        graph.run(
            "MATCH (c:Person {id: $c}) CREATE (:Story {id: $id, legacy_id: $l})-[:MENTIONS]->(c)",
            {"c": rng.choice(people), "id": f"s{i}", "l": rng.choice(["L1", "L2"])},
        )
    checked = 0
    for pid in people:
        for limit in (1, 3, 50):
            for targets in ([], rng.sample(people, 4)):
                params = {"person_id": pid, "target_ids": targets, "legacy_ids": ["L1"], "limit": limit}
                expected = graph.run(RELATIONAL_2HOP_REFERENCE, params)
                got = _rows(graph, "relational_2hop", **params)
                assert [{**r, "story_ids": sorted(r["story_ids"])} for r in got] == [
                    {**r, "story_ids": sorted(r["story_ids"])} for r in expected
                ], params
                checked += bool(expected)
    assert checked > 30


def test_person_mentions_entity_focused_and_spatial(graph, fx):
    rows = _rows(graph, "person_mentions", ids=["p-brother"], legacy_ids=[fx.legacy], limit=10)
    assert sorted((fname(r["story_id"]), r["relationship"], r["topic"]) for r in rows) == [
        ("s-brother", "MENTIONS", True),  # its title names him (decision 0024)
        ("s-watch", "MENTIONS", False),
    ]
    rows = _rows(
        graph, "entity_focused", ids=["event-flood", "object-watch"], legacy_ids=[fx.legacy], limit=10
    )
    assert sorted((fname(r["story_id"]), r["entity"], r["relationship"], r["topic"]) for r in rows) == [
        ("s-flood", "the flood", "REFERENCES", True),
        ("s-watch", "pocket watch", "REFERENCES", False),
    ]
    rows = _rows(graph, "spatial", ids=[], names=["heron"], legacy_ids=[fx.legacy], limit=10)
    assert [(r["entity"], _names(r["story_ids"]), r["people"]) for r in rows] == [
        ("Heron Lake", ["s-lake"], ["Sam Reed"])
    ]


@pytest.mark.parametrize(
    ("template", "label", "edge"),
    [("person_mentions", "Person", "MENTIONS"), ("entity_focused", "Object", "REFERENCES")],
)
def test_a_story_about_the_entity_is_never_cut_by_the_limit(graph, template, label, edge):
    # more stories than the limit name the entity; the one titled with it has the largest id
    legacy, node = str(uuid.uuid4()), str(uuid.uuid4())
    graph.run(f"CREATE (:{label} {{id: $id, name: 'Jim', legacy_id: $l}})", {"id": node, "l": legacy})
    stories = sorted(str(uuid.uuid4()) for _ in range(4))
    for i, sid in enumerate(stories):
        graph.run(
            f"MATCH (x:{label} {{id: $x}}) CREATE (s:Story {{id: $s, legacy_id: $l}})-[:{edge} "
            "{kind: $kind, in_title: $titled}]->(x)",
            {"x": node, "s": sid, "l": legacy, "kind": edge, "titled": i == len(stories) - 1},
        )
    rows = _rows(graph, template, ids=[node], legacy_ids=[legacy], limit=2)
    assert len(rows) == 2
    assert (stories[-1], True) in {(r["story_id"], r["topic"]) for r in rows}


def test_entity_focused_keeps_the_story_about_an_entity_across_its_labels(graph):
    # the union of the per-label branches is cut once more: a titled story is not cut there either
    legacy, thing, event = str(uuid.uuid4()), str(uuid.uuid4()), str(uuid.uuid4())
    titled, *others = sorted((str(uuid.uuid4()) for _ in range(3)), reverse=True)
    graph.run("CREATE (:Object {id: $id, name: 'watch', legacy_id: $l})", {"id": thing, "l": legacy})
    graph.run("CREATE (:Event {id: $id, name: 'flood', legacy_id: $l})", {"id": event, "l": legacy})
    for sid, node, label, in_title in (
        (titled, thing, "Object", True),
        *((o, event, "Event", False) for o in others),
    ):
        graph.run(
            f"MATCH (x:{label} {{id: $x}}) CREATE (s:Story {{id: $s, legacy_id: $l}})-[:REFERENCES "
            "{kind: 'REFERENCES', in_title: $titled}]->(x)",
            {"x": node, "s": sid, "l": legacy, "titled": in_title},
        )
    rows = _rows(graph, "entity_focused", ids=[thing, event], legacy_ids=[legacy], limit=2)
    assert [(r["story_id"], r["topic"]) for r in rows] == [(titled, True), (min(others), False)]


def test_temporal_finds_story_years_and_dated_events(graph, fx):
    rows = _rows(graph, "temporal", legacy_ids=[fx.legacy], years=year_keys(1960, 1979), limit=10)
    assert sorted(_names(r["story_id"] for r in rows)) == ["s-flood", "s-sixties"]
    assert year_range("the 1970s") == (1970, 1979) == year_range("in the seventies")
    assert year_range("summer of 1962") == (1962, 1962) and year_range("long ago") is None


def test_temporal_matches_the_years_a_story_names_not_the_span_between_them(graph, fx):
    """`years` is a set of years, not a range: a story naming 1965 and 1968 is not about 1966."""
    assert year_keys(1966, 1967) == ["|1966|", "|1967|"]
    assert _rows(graph, "temporal", legacy_ids=[fx.legacy], years=year_keys(1966, 1967), limit=10) == []
    rows = _rows(graph, "temporal", legacy_ids=[fx.legacy], years=year_keys(1968, 1968), limit=10)
    assert _names(r["story_id"] for r in rows) == ["s-sixties"]


def _dated_stories(graph, legacy, dates):
    """Stories of `legacy` told on `dates` (ISO, the local date first as graph sync writes it)."""
    ids = {}
    for day in dates:
        ids[day] = sid = str(uuid.uuid4())
        graph.run("CREATE (:Story {id: $s, legacy_id: $l, created_at: $at})",
                  {"s": sid, "l": legacy, "at": f"{day}T19:00:00+01:00"})  # fmt: skip
    return ids


def test_told_in_finds_the_stories_told_within_the_window(graph):
    legacy, other = str(uuid.uuid4()), str(uuid.uuid4())
    ids = _dated_stories(
        graph, legacy, ["2023-12-03", "2023-12-10", "2023-12-11", "2023-12-20", "2023-12-21"]
    )
    _dated_stories(graph, other, ["2023-12-12"])  # another legacy's story of those days
    rows = _rows(graph, "told_in", legacy_ids=[legacy], start="2023-12-11", end="2023-12-21", limit=10)
    assert sorted(r["story_id"] for r in rows) == sorted([ids["2023-12-11"], ids["2023-12-20"]])
    assert {r["relationship"] for r in rows} == {"TOLD_IN"}


def test_traverse_reads_a_named_date_as_a_named_entity(graph, fx):
    ids = _dated_stories(graph, fx.legacy, ["2023-12-17", "2023-12-24"])
    request = ContextRequest(legacy_id=fx.legacy, user_id=uuid.uuid4(), persona="friend",
                             query="What happened at the church in mid-December 2023?")  # fmt: skip
    for kind in (Intent.TEMPORAL, Intent.SPATIAL):  # whatever the intent says
        result = traverse(graph, request, _intent(kind), load_personas()["friend"].traversal)
        told = [h for h in result.hits if h.template == "told_in"]
        assert [str(h.story_id) for h in told] == [ids["2023-12-17"]]
        assert told[0].entity_match and told[0].entity == "2023-12-11/2023-12-21"
    undated = ContextRequest(legacy_id=fx.legacy, user_id=uuid.uuid4(), persona="friend",
                             query="What happened at the church in 2023?")  # fmt: skip
    result = traverse(graph, undated, _intent(Intent.TEMPORAL), load_personas()["friend"].traversal)
    assert not [h for h in result.hits if h.template == "told_in"]  # a year alone is no window


def test_a_month_of_told_stories_does_not_crowd_out_the_intents_own_hits(graph, fx):
    config = load_personas()["friend"].traversal
    months = ["2023-10", "2023-11", "2023-12"]
    _dated_stories(
        graph, fx.legacy, [f"{m}-{d:02d}" for m in months for d in range(1, config.max_graph_results + 1)]
    )
    request = ContextRequest(legacy_id=fx.legacy, user_id=uuid.uuid4(), persona="friend",
                             query="What happened in October 2023, November 2023 and December 2023?")  # fmt: skip
    result = traverse(graph, request, _intent(Intent.TEMPORAL, time_periods=("the sixties",)), config)
    assert "s-sixties" in {fname(h.story_id) for h in result.hits if h.template == "temporal"}
    assert len([h for h in result.hits if h.template == "told_in"]) >= config.max_graph_results


def test_cross_legacy_only_follows_active_links(graph, fx):
    rows = _rows(graph, "cross_legacy", legacy_id=fx.legacy, ids=["p-sil"], limit=10)
    assert [(fname(r["story_id"]), r["matched"]) for r in rows] == [("s-sil", 1), ("s-linked", 0)]


def test_general_is_the_subject_neighbourhood_stories_first(graph, fx):
    rows = _rows(graph, "general", person_id="p-subject", limit=20)
    kinds = [r["label"] == "Story" for r in rows]
    assert kinds == sorted(kinds, reverse=True)  # stories first
    assert sorted(_names(r["node_id"] for r in rows if r["label"] == "Story")) == [
        "s-lake", "s-linked", "s-revoked", "s-sixties"
    ]  # fmt: skip


def test_facts_are_the_told_ones_with_provenance_and_legacies(graph, fx):
    """Known relationships (the brother, FAMILY_OF, known) are not read from the graph:
    AccessFilter reads them from the store (decision 0030)."""
    rows = _rows(graph, "facts", person_ids=["p-subject"], subject_id="p-subject", limit=20)
    got = {(r["subject"], r["predicate"], r["object"]): r for r in rows}
    lived = got[("Sam Reed", "LIVED_IN", "Heron Lake")]
    assert _names(lived["story_ids"]) == ["s-lake"] and not lived["known"]
    assert lived["subject_legacy"] == fx.legacy
    assert [k for k, r in got.items() if r["known"]] == []
    assert ("Sam Reed", "FAMILY_OF", "Ben Reed") not in got


def test_ambient_gives_the_facts_about_named_places_events_and_objects(graph, fx):
    rows = _rows(graph, "ambient", node_ids=[fx.lake, fx.watch, fx.flood], limit=10)
    assert [(r["subject"], r["predicate"], r["object"], _names(r["story_ids"]), r["object_legacy"]) for r in rows] == [
        ("Sam Reed", "LIVED_IN", "Heron Lake", ["s-lake"], fx.legacy)
    ]  # fmt: skip
    assert _rows(graph, "ambient", node_ids=[fx.watch], limit=10) == []  # no one owned it
    named = _intent(
        Intent.SPATIAL, [EntityMatch(mention="heron lake", node_id=fx.lake, label="Place", name="Heron Lake")]
    )
    result = traverse(graph, _request(fx), named, load_personas()["family"].traversal)
    assert [(f.subject, f.predicate, f.object) for f in result.ambient_facts] == [
        ("Sam Reed", "LIVED_IN", "Heron Lake")
    ]
    assert "ambient" in [t.template for t in result.traversals]


def _request(fx, persona="family"):
    return ContextRequest(legacy_id=fx.legacy, user_id=uuid.uuid4(), persona=persona, query="q")


def _intent(kind, matches=(), **entities):
    return QueryIntent(
        intent=kind, matches=tuple(matches), entities=QueryEntities(**entities), confidence=0.9
    )


def test_traverse_relational_family_persona_reaches_two_hops_across_the_link(graph, fx):
    result = traverse(graph, _request(fx), _intent(Intent.RELATIONAL), load_personas()["family"].traversal)
    assert result.status == "ok"
    assert [t.template for t in result.traversals] == [
        "legacy_context",
        "described",
        "relational",
        "relational_2hop",
        "facts",
        "fact_sentences",
    ]
    got = {(fname(h.story_id), h.template, h.hops, h.relationship) for h in result.hits}
    assert got == {
        ("s-brother", "relational", 1, "FAMILY_OF"),
        ("s-watch", "relational", 1, "FAMILY_OF"),
        ("s-friend", "relational", 1, "FRIENDS_WITH"),
        ("s-sil", "relational_2hop", 2, "FAMILY_OF"),
    }
    assert result.known is not None and result.known.person_ids == ("p-subject",)
    assert not any(f.known for f in result.facts)  # AccessFilter reads them from the store


def test_a_connection_the_message_describes_is_followed_like_a_named_one(graph, fx):
    request = ContextRequest(
        legacy_id=fx.legacy, user_id=uuid.uuid4(), persona="biographer", query="What did her brother build?"
    )
    result = traverse(graph, request, _intent(Intent.GENERAL), load_personas()["biographer"].traversal)
    described = {fname(h.story_id) for h in result.hits if h.template == "described"}
    assert "s-brother" in described
    assert all(h.entity_match and h.entity == "Ben Reed" for h in result.hits if h.template == "described")
    plain = traverse(graph, _request(fx, "biographer"), _intent(Intent.GENERAL),
                     load_personas()["biographer"].traversal)  # fmt: skip
    assert not any(h.template == "described" for h in plain.hits)


def test_an_open_question_gets_the_broadest_stories_of_the_legacy(graph, fx):
    rows = _rows(graph, "overview", legacy_ids=[fx.legacy], limit=2)
    assert [(fname(r["story_id"]), r["breadth"]) for r in rows] == [("s-lake", 2), ("s-watch", 2)]
    result = traverse(graph, _request(fx, "colleague"), _intent(Intent.GENERAL),
                      load_personas()["colleague"].traversal)  # fmt: skip
    overview = {fname(h.story_id) for h in result.hits if h.template == "overview"}
    assert {"s-lake", "s-watch"} <= overview and "s-sil" not in overview  # primary legacy only
    relational = traverse(
        graph, _request(fx), _intent(Intent.RELATIONAL), load_personas()["family"].traversal
    )
    assert "overview" not in {t.template for t in relational.traversals}


def test_traverse_colleague_stays_in_the_primary_legacy(graph, fx):
    result = traverse(graph, _request(fx, "colleague"), _intent(Intent.RELATIONAL),
                      load_personas()["colleague"].traversal)  # fmt: skip
    assert "relational_2hop" not in {t.template for t in result.traversals}
    assert "s-sil" not in {fname(h.story_id) for h in result.hits}


def test_a_cross_legacy_question_asked_as_colleague_stays_in_the_primary_legacy(graph, fx):
    ada = EntityMatch(mention="Ada", node_id=fx.sister_in_law, label="Person", name="Ada Reed")
    intent = _intent(Intent.CROSS_LEGACY, matches=(ada,), people=("Ada Reed",))
    family = traverse(graph, _request(fx), intent, load_personas()["family"].traversal)
    assert "s-sil" in {fname(h.story_id) for h in family.hits}  # the persona reaches the link
    colleague = traverse(graph, _request(fx, "colleague"), intent, load_personas()["colleague"].traversal)
    assert "s-sil" not in {fname(h.story_id) for h in colleague.hits}  # the intent does not widen it


def test_a_linked_legacys_subject_named_is_a_path_not_evidence(graph, fx):
    """Ben Reed is the linked legacy's subject: his own stories say "I"; a story that names him
    is someone else's about him, so its mention carries no entity bonus where the persona reads
    his legacy, and does where it stays home."""
    ben = EntityMatch(mention="Ben", node_id=fx.brother, label="Person", name="Ben Reed")
    intent = _intent(Intent.ENTITY_FOCUSED, [ben], people=("Ben Reed",))
    family = traverse(graph, _request(fx), intent, load_personas()["family"].traversal)
    mentions = [h for h in family.hits if h.template == "person_mentions"]
    assert {fname(h.story_id) for h in mentions} == {"s-brother", "s-watch"}
    assert not any(h.entity_match or h.topic for h in mentions)
    colleague = traverse(graph, _request(fx, "colleague"), intent, load_personas()["colleague"].traversal)
    home = [h for h in colleague.hits if h.template == "person_mentions"]
    assert home and all(h.entity_match for h in home)


def test_traverse_entity_matches_carry_the_entity_bonus(graph, fx):
    match = EntityMatch(mention="the flood", node_id="event-flood", label="Event", name="the flood")
    intent = _intent(Intent.ENTITY_FOCUSED, [match], events=("the flood",))
    result = traverse(graph, _request(fx), intent, load_personas()["biographer"].traversal)
    flood = [h for h in result.hits if fname(h.story_id) == "s-flood"]
    assert flood and all(h.entity_match and h.entity == "the flood" for h in flood)


def test_traverse_temporal_and_spatial(graph, fx):
    temporal = traverse(graph, _request(fx), _intent(Intent.TEMPORAL, time_periods=("the sixties",)),
                        load_personas()["biographer"].traversal)  # fmt: skip
    assert {fname(h.story_id) for h in temporal.hits} == {"s-sixties"}
    spatial = traverse(graph, _request(fx), _intent(Intent.SPATIAL, places=("Heron Lake",)),
                       load_personas()["friend"].traversal)  # fmt: skip
    assert {fname(h.story_id) for h in spatial.hits} == {"s-lake"}


@pytest.mark.parametrize("concurrency", [1, 4])
def test_traverse_stops_issuing_queries_when_the_budget_is_spent(graph, fx, concurrency, monkeypatch):
    ticks = iter(range(0, 10_000, 200))  # each clock read advances 200 ms
    sent, original = [], graph.run
    monkeypatch.setattr(
        graph, "run", lambda cypher, params=None: sent.append(cypher) or original(cypher, params)
    )
    result = traverse(graph, _request(fx), _intent(Intent.RELATIONAL), load_personas()["family"].traversal,
                      budget_ms=300, clock=lambda: next(ticks) / 1000, concurrency=concurrency)  # fmt: skip
    assert result.status == "timeout"
    # past the deadline nothing more is sent, prefetched or not
    assert len(sent) == len(result.traversals) < 4


@pytest.mark.parametrize("kind", list(Intent))
def test_concurrent_traversal_gives_the_sequential_result(graph, fx, kind):
    """The queries go out together (docs/decisions/0019); hits, facts, ambient facts and the
    order of the stats are the sequential run's."""
    matches = (
        EntityMatch(mention="Ada", node_id=fx.sister_in_law, label="Person", name="Ada Reed"),
        EntityMatch(mention="Heron Lake", node_id=fx.lake, label="Place", name="Heron Lake"),
    )
    intent = _intent(kind, matches, places=("Heron Lake",), time_periods=("the 1960s",))
    config = load_personas()["family"].traversal
    one, four = (
        traverse(graph, _request(fx), intent, config, budget_ms=60_000, concurrency=n) for n in (1, 4)
    )
    drop = {"latency_ms": 0.0}
    assert four.model_copy(update=drop).model_dump(exclude={"traversals"}) == one.model_copy(
        update=drop
    ).model_dump(exclude={"traversals"})
    assert [(t.template, t.results) for t in four.traversals] == [
        (t.template, t.results) for t in one.traversals
    ]
    assert one.hits or one.facts


def test_unknown_legacy_gives_empty_results(graph, fx):
    request = ContextRequest(legacy_id=uuid.uuid4(), user_id=uuid.uuid4(), persona="family", query="q")
    result = traverse(graph, request, _intent(Intent.GENERAL), load_personas()["family"].traversal)
    assert result.hits == () and result.facts == ()
    assert fid("L") != str(request.legacy_id)


def test_the_neighbourhood_cache_answers_repeat_traversals_without_the_graph(graph, fx, monkeypatch):
    from heirloom.domain.traversal import NeighbourhoodCache

    now = [0.0]
    cache = NeighbourhoodCache(ttl_s=300, clock=lambda: now[0])
    config = load_personas()["family"].traversal
    first = traverse(graph, _request(fx), _intent(Intent.RELATIONAL), config, cache=cache)
    sent = []
    original = graph.run
    monkeypatch.setattr(graph, "run", lambda q, p=None: sent.append(q) or original(q, p))
    second = traverse(graph, _request(fx), _intent(Intent.RELATIONAL), config, cache=cache)
    assert second.hits == first.hits and second.facts == first.facts
    assert sent == []  # every template of this intent is a neighbourhood template
    now[0] += 301
    traverse(graph, _request(fx), _intent(Intent.RELATIONAL), config, cache=cache)
    assert len(sent) == 6  # expired: asked again


def test_spatial_names_only_contained_in_a_place_are_weaker_evidence_on_the_word_path(graph, fx):
    friend = load_personas()["friend"].traversal
    named = traverse(graph, _request(fx), _intent(Intent.SPATIAL, places=("Heron Lake",)), friend)
    word = traverse(graph, _request(fx), _intent(Intent.SPATIAL, places=("lake",)), friend)
    spatial = [h for h in named.hits if h.template == "spatial"]
    assert spatial and all(h.entity == "Heron Lake" and h.entity_match for h in spatial)
    spatial = [h for h in word.hits if h.template == "spatial"]
    assert {fname(h.story_id) for h in spatial} == {"s-lake"}
    assert all(h.entity == "lake" and h.via == "Heron Lake" and not h.entity_match for h in spatial)


def test_story_connections_from_a_story_its_years_and_the_names_given(graph, fx):
    from heirloom.domain.connections_graph import traverse_connections

    config = load_personas()["family"].traversal
    request = ContextRequest(legacy_id=fx.legacy, user_id=uuid.uuid4(), persona="family", query="q",
                             purpose="connections", linked_story_id=fid("s-watch"))  # fmt: skip
    result = traverse_connections(graph, request, QueryIntent(), config)
    by_entity: dict[str, set[str]] = {}
    for hit in result.hits:
        by_entity.setdefault(f"{hit.template}:{hit.entity}", set()).add(str(hit.story_id))
    # the watch story's own entities, each with every story linked to it (the seed's too)
    assert by_entity == {
        "connected_object:pocket watch": {fid("s-watch")},
        "connected_person:Ben Reed": {fid("s-watch"), fid("s-brother")},
    }
    lake = request.model_copy(update={"linked_story_id": uuid.UUID(fid("s-lake"))})
    hits = traverse_connections(graph, lake, QueryIntent(), config).hits
    assert {(h.template, h.entity) for h in hits} >= {("connected_place", "Heron Lake"),
                                                       ("connected_period", "the 1980s")}  # fmt: skip
    # the subject is every story's: never a connection
    assert not any(h.entity == "Sam Reed" or h.template == "connected_person" for h in hits)
    # names alone (an enrichment): across the active link when the persona reaches it
    ada = QueryIntent(
        matches=(EntityMatch(mention="Ada", node_id=fx.sister_in_law, label="Person", name="Ada Reed"),)
    )
    named = request.model_copy(update={"linked_story_id": None})
    assert {str(h.story_id) for h in traverse_connections(graph, named, ada, config).hits} == {fid("s-sil")}
    colleague = load_personas()["colleague"].traversal  # include_cross_legacy: false
    assert traverse_connections(graph, named, ada, colleague).hits == ()


def test_dated_events_anchor_the_life_timeline(graph, fx):
    from heirloom.domain.entity_sync import years_property
    from heirloom.domain.life_timeline import DATED_EVENTS, anchor_years, parse_year_keys

    graph.run(
        "MERGE (e:Event {id: 'e-retired'}) SET e.legacy_id = $l, e.name = 'the retirement party', e.years = $y",
        {"l": fx.legacy, "y": years_property([1999, 2000])},
    )
    rows = graph.run(DATED_EVENTS, {"legacy_id": fx.legacy})
    assert anchor_years((r["name"], parse_year_keys(r["years"])) for r in rows) == {"retirement": 1999}
    assert graph.run(DATED_EVENTS, {"legacy_id": fx.linked}) == []  # the other legacy's events: none


def test_bridge_finds_the_specific_entities_of_the_seed_stories(graph, fx):
    """From s-watch (which names the watch and Ben), Ben is a bridge to s-brother; an entity
    the question names, the subject, or one mentioned by more stories than `max_reach` is not."""
    params = {"seed_ids": [fid("s-watch")], "legacy_ids": [fx.legacy], "limit": 10}
    rows = _rows(graph, "bridge", ids=[fx.watch, fx.subject], max_reach=4, **params)
    assert [(fname(r["source_id"]), r["entity"], sorted(_names(r["story_ids"]))) for r in rows] == [
        ("s-watch", "Ben Reed", ["s-brother", "s-watch"])
    ]
    assert _rows(graph, "bridge", ids=[fx.watch, fx.brother], max_reach=4, **params) == []
    assert _rows(graph, "bridge", ids=[fx.watch], max_reach=1, **params) == []


def test_traverse_adds_bridge_hits_with_their_seed_only_when_asked(graph, fx):
    watch = EntityMatch(mention="pocket watch", node_id=fx.watch, label="Object", name="pocket watch")
    intent = QueryIntent(intent=Intent.ENTITY_FOCUSED, matches=(watch,), confidence=0.9)
    config = load_personas()["family"].traversal
    plain = traverse(graph, _request(fx), intent, config)
    assert not [h for h in plain.hits if h.template == "bridge"]
    found = traverse(graph, _request(fx), intent, config, bridge=True)
    bridges = [
        (fname(h.story_id), h.entity, fname(h.source_story_id)) for h in found.hits if h.template == "bridge"
    ]
    assert bridges == [("s-brother", "Ben Reed", "s-watch")]
    assert any(s.template == "bridge" for s in found.traversals)
