"""Every traversal and connections template starts from an indexed node: a MATCH that binds no
variable yet and picks a node by `x.id IN $...` names that node's label (an unlabelled one is a
scan of every node on FalkorDB: docs/benchmarks.md); and the merge of a per-label union orders as
openCypher does."""

from __future__ import annotations

import re

import pytest

from heirloom.domain.connections_graph import CONNECTION_TEMPLATES
from heirloom.domain.graph_queries import MERGED, TEMPLATES, Merge, finish
from heirloom.domain.graph_schema import NODE_LABELS

_CLAUSE = re.compile(r"\b(OPTIONAL\s+MATCH|MATCH|WITH|RETURN|UNWIND|ORDER\s+BY|LIMIT)\b")
_NODE = re.compile(r"\((\w+)(?::(\w+))?[^()]*\)")


def unindexed_anchors(cypher: str) -> list[str]:
    """The nodes a template finds by id without a label with an id index (`NODE_LABELS`)."""
    found = []
    for part in re.split(r"\bUNION(?:\s+ALL)?\b", cypher):
        bound: set[str] = set()
        pieces = _CLAUSE.split(part)
        for keyword, body in zip(pieces[1::2], pieces[2::2], strict=True):
            if not keyword.endswith("MATCH"):
                continue
            pattern, _, where = body.partition("WHERE")
            nodes = _NODE.findall(pattern)
            if not any(var in bound for var, _ in nodes):  # nothing to expand from: an anchor
                for var, label in nodes:
                    if label not in NODE_LABELS and re.search(rf"\b{var}\.id\s+IN\s+\$", where):
                        found.append(f"({var}{':' + label if label else ''})")
            bound |= {var for var, _ in nodes}
    return found


@pytest.mark.parametrize("name", sorted({**TEMPLATES, **CONNECTION_TEMPLATES}))
def test_every_anchor_by_id_is_labelled(name):
    assert unindexed_anchors({**TEMPLATES, **CONNECTION_TEMPLATES}[name]) == []


def test_the_rule_finds_the_unlabelled_anchor():
    old = """
MATCH (x)
WHERE (x:Person OR x:Place OR x:Event OR x:Object) AND x.id IN $ids
MATCH (x)-[f:FACT]-(y)
WHERE f.valid_to = '' AND y.id IN $ids
RETURN x.id AS id
"""
    assert unindexed_anchors(old) == ["(x)"]
    expanded = "MATCH (s:Story) WHERE s.id IN $ids MATCH (s)-[r]->(e) WHERE e.id IN $ids RETURN e"
    assert unindexed_anchors(expanded) == []
    union = "MATCH (a:Person) RETURN a UNION ALL MATCH (e) WHERE e.id IN $ids RETURN e"
    assert unindexed_anchors(union) == ["(e)"]


def test_merge_orders_as_opencypher_and_cuts():
    """Nulls last ascending and first descending, true before false descending, ties kept in
    branch order, DISTINCT before the limit."""
    merge = Merge((("flag", True), ("name", False)), distinct=True)
    rows = [
        {"flag": False, "name": "b"},
        {"flag": True, "name": None},
        {"flag": None, "name": "z"},
        {"flag": True, "name": "B"},
        {"flag": False, "name": "b"},
        {"flag": False, "name": "a"},
    ]
    assert merge.apply(rows, {"limit": 10}) == [
        {"flag": None, "name": "z"},
        {"flag": True, "name": "B"},
        {"flag": True, "name": None},
        {"flag": False, "name": "a"},
        {"flag": False, "name": "b"},
    ]
    assert merge.apply(rows, {"limit": 2}) == [{"flag": None, "name": "z"}, {"flag": True, "name": "B"}]
    ties = [{"k": 1, "i": 0}, {"k": 0, "i": 1}, {"k": 1, "i": 2}]
    assert [r["i"] for r in Merge((("k", False),)).apply(ties, {"limit": 5})] == [1, 0, 2]


def test_fact_sentences_merge_puts_the_subjects_facts_first():
    row = {"predicate": "KNEW", "object": "Ada", "story_id": "s1", "object_id": "o", "sentence": "."}
    rows = [{**row, "subject_id": "other"}, {**row, "subject_id": "p1", "predicate": "MARRIED"}]
    assert [r["subject_id"] for r in finish("fact_sentences", rows, {"subject_id": "p1", "limit": 5})] == [
        "p1",
        "other",
    ]
    assert set(MERGED) == {"entity_focused", "story_facts", "fact_sentences"}
    assert finish("facts", rows, {"limit": 1}) == rows  # a single query's rows stay as they are
