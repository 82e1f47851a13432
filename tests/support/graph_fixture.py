"""A small knowledge graph with every node and edge kind the traversal templates read."""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from heirloom.domain.entity_sync import years_property
from heirloom.domain.graph_queries import TEMPLATES, finish
from heirloom.ports import GraphStore


def run_template(graph: GraphStore, name: str, params: Mapping[str, Any]) -> list[dict[str, Any]]:
    """One template's rows as the traversal reads them (a per-label union's merged: `finish`)."""
    return finish(name, graph.run(TEMPLATES[name], params), params)


def fid(name: str) -> str:
    """A stable UUID for a fixture name (stories and legacies need UUID ids)."""
    return str(uuid.uuid5(uuid.NAMESPACE_URL, f"heirloom-fixture/{name}"))


def fname(value: object) -> str:
    """The fixture name behind a `fid`."""
    for name in _NAMES:
        if fid(name) == str(value):
            return name
    return str(value)


_NAMES = ["L", "M", "R", "s-brother", "s-friend", "s-sil", "s-lake", "s-flood", "s-watch", "s-linked",
          "s-revoked", "s-sixties"]  # fmt: skip


@dataclass(frozen=True)
class FixtureGraph:
    legacy: str = fid("L")
    linked: str = fid("M")
    revoked: str = fid("R")
    subject: str = "p-subject"
    brother: str = "p-brother"
    sister_in_law: str = "p-sil"
    friend: str = "p-friend"
    coworker: str = "p-coworker"
    lake: str = "place-lake"
    flood: str = "event-flood"
    watch: str = "object-watch"


#: stories whose title names their first entity
TITLED = frozenset({"s-brother", "s-flood"})


def build_fixture_graph(graph: GraphStore) -> FixtureGraph:
    g = FixtureGraph()
    for lid, name, subject in ((g.legacy, "Sam Reed", g.subject), (g.linked, "Ben Reed", g.brother),
                               (g.revoked, "Old Friend", g.friend)):  # fmt: skip
        graph.run("MERGE (l:Legacy {id: $id}) SET l.name = $name, l.subject_person_id = $s",
                  {"id": lid, "name": name, "s": subject})  # fmt: skip
    for a, b, status in ((g.legacy, g.linked, "active"), (g.legacy, g.revoked, "revoked")):
        graph.run(
            "MATCH (a:Legacy {id: $a}) MATCH (b:Legacy {id: $b}) "
            "MERGE (a)-[r:LINKED_TO]->(b) SET r.kind = 'LINKED_TO', r.status = $status",
            {"a": a, "b": b, "status": status},
        )
    persons = [(g.subject, "Sam Reed", g.legacy), (g.brother, "Ben Reed", g.legacy),
               (g.sister_in_law, "Ada Reed", g.linked), (g.friend, "Cy Moss", g.legacy),
               (g.coworker, "Dot Vance", g.legacy)]  # fmt: skip
    for pid, name, legacy in persons:
        graph.run("MERGE (p:Person {id: $id}) SET p.name = $name, p.legacy_id = $l, p.known = true",
                  {"id": pid, "name": name, "l": legacy})  # fmt: skip
    social = [(g.subject, g.brother, "FAMILY_OF", "brother"), (g.brother, g.sister_in_law, "FAMILY_OF", "wife"),
              (g.subject, g.friend, "FRIENDS_WITH", ""), (g.subject, g.coworker, "WORKED_WITH", "foreman")]  # fmt: skip
    for a, b, kind, detail in social:
        graph.run(
            f"MATCH (a:Person {{id: $a}}) MATCH (b:Person {{id: $b}}) MERGE (a)-[r:{kind}]->(b) "
            "SET r.kind = $kind, r.detail = $detail, r.known = true",
            {"a": a, "b": b, "kind": kind, "detail": detail},
        )
    for eid, label, name, extra in ((g.lake, "Place", "Heron Lake", {}), (g.flood, "Event", "the flood",
                                    {"years": years_property([1972])}), (g.watch, "Object", "pocket watch", {})):  # fmt: skip
        graph.run(f"MERGE (e:{label} {{id: $id}}) SET e.name = $name, e.legacy_id = $l SET e += $extra",
                  {"id": eid, "name": name, "l": g.legacy, "extra": extra})  # fmt: skip
    stories = {
        "s-brother": (g.legacy, [("MENTIONS", g.brother)], []),
        "s-friend": (g.legacy, [("MENTIONS", g.friend)], []),
        "s-sil": (g.linked, [("MENTIONS", g.sister_in_law)], []),
        "s-lake": (g.legacy, [("TOOK_PLACE_AT", g.lake), ("MENTIONS", g.subject)], [1980]),
        "s-flood": (g.legacy, [("REFERENCES", g.flood)], []),
        "s-watch": (g.legacy, [("REFERENCES", g.watch), ("MENTIONS", g.brother)], []),
        "s-linked": (g.linked, [("MENTIONS", g.subject)], []),
        "s-revoked": (g.revoked, [("MENTIONS", g.subject)], []),
        "s-sixties": (g.legacy, [("MENTIONS", g.subject)], [1965, 1968]),
    }
    for day, (name, (legacy, edges, years)) in enumerate(stories.items(), start=1):
        sid = fid(name)
        graph.run(
            "MATCH (l:Legacy {id: $l}) MERGE (s:Story {id: $id}) SET s.legacy_id = $l, s.title = $id, s.years = $y, "
            "s.created_at = $at MERGE (s)-[r:BELONGS_TO]->(l) SET r.kind = 'BELONGS_TO'",
            {"id": sid, "l": legacy, "y": years_property(years), "at": f"2024-01-{day:02d}T19:00:00+00:00"},
        )
        for kind, target in edges:
            # the story named after its first entity is about it (`in_title`, decision 0024)
            graph.run(
                f"MATCH (s:Story {{id: $s}}) MATCH (t {{id: $t}}) MERGE (s)-[r:{kind}]->(t) SET r.kind = $kind"
                " SET r.in_title = $about",
                {"s": sid, "t": target, "kind": kind, "about": name in TITLED and (kind, target) == edges[0]},
            )
    graph.run(
        "MATCH (p:Person {id: $p}) MATCH (e:Place {id: $e}) MERGE (p)-[r:LIVED_IN {story_id: $s}]->(e) "
        "SET r.kind = 'LIVED_IN'",
        {"p": g.subject, "e": g.lake, "s": fid("s-lake")},
    )
    return g
