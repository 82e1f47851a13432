"""The per-label templates (one labelled, indexed anchor per label, `graph_queries.per_label`)
give what the single query with the unlabelled anchor gave: on random graphs, with a node of two
labels, a node without an id, facts between two named nodes, facts told twice, missing names
and shared names, for
every limit, the merged rows are a valid answer of the old query (the same ORDER BY keys in the
same order, each row one of its rows, no row more often), and all of its rows when none is cut."""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Callable, Mapping
from typing import Any

import pytest

from heirloom.domain.connections_graph import CONNECTED_MERGE, CONNECTED_STORIES
from heirloom.domain.graph_queries import TEMPLATES, finish

LEGACY, OTHER = "leg-a", "leg-b"

#: the templates as they were before the labelled anchors (their semantics the new ones keep;
#: entity_focused with the titled stories first, as since)
OLD = {
    "entity_focused": """
MATCH (e)
WHERE (e:Place OR e:Event OR e:Object) AND e.id IN $ids
MATCH (s:Story)-[r:TOOK_PLACE_AT|REFERENCES]->(e)
WHERE s.legacy_id IN $legacy_ids
RETURN s.id AS story_id, coalesce(r.name, e.name) AS entity, e.id AS entity_id, r.kind AS relationship,
       coalesce(r.in_title, false) AS topic
ORDER BY topic DESC, story_id
LIMIT $limit
""",
    "story_facts": """
MATCH (x)
WHERE (x:Person OR x:Place OR x:Event OR x:Object) AND x.id IN $ids
MATCH (x)-[f:FACT]-(y)
WHERE f.valid_to = '' AND f.legacy_id IN $legacy_ids
RETURN DISTINCT f.story_id AS story_id, f.relation AS relationship, x.id AS entity_id, x.name AS entity,
       y.name AS via, y.id IN $ids AS linked
ORDER BY linked DESC, story_id, relationship, via
LIMIT $limit
""",
    "fact_sentences": """
MATCH (x)
WHERE (x:Person OR x:Place OR x:Event OR x:Object) AND x.id IN $ids
MATCH (x)-[f:FACT]-(y)
WHERE f.valid_to = '' AND f.legacy_id IN $legacy_ids
WITH DISTINCT f, startNode(f) AS a, endNode(f) AS b
MATCH (s:Story {id: f.story_id})
RETURN a.id AS subject_id, a.name AS subject, f.relation AS predicate, b.id AS object_id,
       CASE WHEN b:Person THEN b.name ELSE coalesce(f.name, b.name) END AS object, f.verb AS verb,
       f.sentence AS sentence, f.story_id AS story_id, s.title AS title, f.conflicting AS conflicting,
       f.narrator AS narrator, f.years AS years, f.negated AS negated,
       a.legacy_id AS subject_legacy, b.legacy_id AS object_legacy
ORDER BY CASE WHEN a.id = $subject_id OR b.id = $subject_id THEN 0 ELSE 1 END, predicate, object, story_id
LIMIT $limit
""",
    "connected_stories": """
MATCH (e)
WHERE (e:Person OR e:Place OR e:Event OR e:Object) AND e.id IN $ids
MATCH (s:Story)-[r:MENTIONS|TOOK_PLACE_AT|REFERENCES]->(e)
WHERE s.legacy_id IN $legacy_ids
RETURN DISTINCT s.id AS story_id, e.id AS entity_id,
       CASE WHEN e:Person THEN e.name ELSE coalesce(r.name, e.name) END AS entity,
       CASE WHEN e:Person THEN 'Person' WHEN e:Place THEN 'Place' WHEN e:Event THEN 'Event'
            ELSE 'Object' END AS label
ORDER BY entity_id, story_id
LIMIT $limit
""",
}

Key = Callable[[Mapping[str, Any], Mapping[str, Any]], tuple[Any, ...]]

#: the old ORDER BY of each, as values (compared for equality only)
OLD_KEYS: dict[str, Key] = {
    "entity_focused": lambda r, p: (r["topic"], r["story_id"]),
    "story_facts": lambda r, p: (r["linked"], r["story_id"], r["relationship"], r["via"]),
    "fact_sentences": lambda r, p: (
        p["subject_id"] in (r["subject_id"], r["object_id"]),
        r["predicate"],
        r["object"],
        r["story_id"],
    ),
    "connected_stories": lambda r, p: (r["entity_id"], r["story_id"]),
}


def _new(graph: Any, name: str, params: dict[str, Any]) -> list[dict[str, Any]]:
    if name == "connected_stories":
        return CONNECTED_MERGE.apply(graph.run(CONNECTED_STORIES, params), params)
    return finish(name, graph.run(TEMPLATES[name], params), params)


def _frozen(row: Mapping[str, Any]) -> str:
    return repr(sorted(row.items()))


def _build(graph: Any, rng: random.Random) -> list[str]:
    """A random graph of named nodes (one with two labels, some without a name; one more without
    an id), stories in two legacies mentioning them, and FACT edges between them (current and
    superseded, some told by two stories, some between the same pair twice); the named ids."""
    labels = ["Person", "Place", "Event", "Object"]
    names = ["Ada", "Ben", "Cy", "Dot", None]
    nodes: list[str] = []
    for i in range(14):
        label = labels[i % 4]
        nid = f"n{i:02d}"
        graph.run(
            f"CREATE (n:{label} {{id: $id, legacy_id: $l}}) SET n.name = $name",
            {"id": nid, "l": LEGACY, "name": rng.choice(names)},
        )
        nodes.append(nid)
    graph.run("CREATE (n:Person:Place {id: 'both', legacy_id: $l, name: 'Twin'})", {"l": LEGACY})
    nodes.append("both")
    stories = [f"s{i:02d}" for i in range(10)]
    for sid in stories:
        legacy = rng.choice([LEGACY, LEGACY, OTHER])
        graph.run(
            "CREATE (s:Story {id: $id, legacy_id: $l, title: $t})", {"id": sid, "l": legacy, "t": "T" + sid}
        )
    for _ in range(40):
        sid, target = rng.choice(stories), rng.choice(nodes)
        kind = rng.choice(["MENTIONS", "TOOK_PLACE_AT", "REFERENCES"])
        graph.run(
            f"MATCH (s:Story {{id: $s}}) MATCH (t {{id: $t}}) CREATE (s)-[r:{kind}]->(t) SET r.kind = $kind "
            "SET r.name = $name, r.in_title = $in_title",
            {
                "s": sid,
                "t": target,
                "kind": kind,
                "name": rng.choice([None, None, "alias"]),
                "in_title": rng.choice([None, False, True]),  # None: an edge written before topic evidence
            },
        )
    graph.run("CREATE (n:Person {legacy_id: $l, name: 'Anon'})", {"l": LEGACY})  # a node without an id
    for _ in range(45):
        a, b = rng.choice(nodes), rng.choice([*nodes, "anon"])
        graph.run(
            "MATCH (a {id: $a}) MATCH (b) WHERE b.id = $b OR ($b = 'anon' AND b.name = 'Anon') "
            "CREATE (a)-[f:FACT]->(b) "
            "SET f.valid_to = $to, f.legacy_id = $l, f.story_id = $s, f.relation = $rel, f.name = $name, "
            "f.verb = 'v', f.sentence = $sentence, f.conflicting = false, f.narrator = '', f.years = '', "
            "f.negated = false",
            {
                "a": a,
                "b": b,
                "to": rng.choice(["", "", "", "2001"]),
                "l": rng.choice([LEGACY, LEGACY, OTHER]),
                "s": rng.choice(stories),
                "rel": rng.choice(["MARRIED", "GAVE", "KNEW"]),
                "name": rng.choice([None, "alias"]),
                "sentence": rng.choice(["one.", "two."]),
            },
        )
    return nodes


@pytest.mark.parametrize("seed", [1, 2])
def test_per_label_templates_answer_as_the_unlabelled_anchor_did(graph, seed):
    rng = random.Random(seed)
    nodes = _build(graph, rng)
    checked = Counter[str]()
    for _ in range(12):
        ids = sorted(rng.sample(nodes, rng.randint(1, 5)) + (["both"] if rng.random() < 0.4 else []))
        params = {
            "ids": sorted(set(ids)),
            "legacy_ids": rng.choice([[LEGACY], [LEGACY, OTHER]]),
            "subject_id": rng.choice(ids),
        }
        for name, old in OLD.items():
            full = graph.run(old, {**params, "limit": 1000})
            for limit in (1, 2, 3, 5, 8, 1000):
                given = {**params, "limit": limit}
                new = _new(graph, name, given)
                key = OLD_KEYS[name]
                assert len(new) == min(limit, len(full)), (name, given)
                assert [key(r, given) for r in new] == [key(r, given) for r in full[:limit]], (name, given)
                assert not Counter(map(_frozen, new)) - Counter(map(_frozen, full)), (name, given)
            checked[name] += len(full)
    assert all(checked[name] > 0 for name in OLD), checked  # every template answered some rows
