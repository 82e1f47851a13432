"""Persons, memberships and links end in the same PostgreSQL and graph state whatever order their
story events arrive in, redelivered or delivered by several containers at once: each graph write
is made from the record as stored, under a lock keyed by what it writes (the person, the
(legacy, user) membership, the link), so the last writer writes the current state (decision
0020). On the embedded engines, through the StoryEvents handler."""

import json
import threading
from datetime import UTC, datetime
from itertools import permutations
from pathlib import Path
from uuid import UUID, uuid4

import pytest

from heirloom.contracts.records import Link, LinkStatus, ShareMode
from heirloom.domain import ingestion
from heirloom.domain.graph_rebuild import rebuild_graph
from heirloom.domain.graph_sync import DROP_MOVED_LINK, sync_link
from heirloom_dev.functions import LambdaContext, load_handler
from tests.support.containers import containers, run_until_waiting
from tests.support.services import services_with

ROOT = Path(__file__).parents[2]
EVENTS = ROOT / "events" / "story_events"
SAMPLE = ROOT / "examples" / "sample-legacy"
T1, T2, T3 = "2019-11-04T09:00:00Z", "2019-11-04T10:00:00Z", "2019-11-04T11:00:00Z"


def sample(name, when):
    event = json.loads((EVENTS / f"{name}.json").read_text())
    event["time"] = when
    return event


def rows(name):
    return [json.loads(line) for line in (SAMPLE / f"{name}.jsonl").read_text().splitlines() if line.strip()]


ROSA = sample("person_created", T1)["detail"]["person"]
NEW_LEGACY = sample("legacy_created", T1)["detail"]["legacy"]["id"]
SAMPLE_LEGACY = rows("legacies")[0]["id"]
CAROL = next(u for u in rows("users") if u["name"] == "Carol Yates")  # an advocate with a person
LINK = sample("link_created", T1)["detail"]["link"]


def person(when, **changes):
    event = sample("person_created", when)
    event["detail"]["person"].update(changes)
    return event


def member(when, role_=None):
    if role_ is None:
        event = sample("member_removed", when)
        event["detail"].update(legacy_id=SAMPLE_LEGACY, user_id=CAROL["id"])
        return event
    event = sample("member_added", when)
    event["detail"]["member"].update(legacy_id=SAMPLE_LEGACY, user_id=CAROL["id"], role=role_)
    return event


def link(when, kind, status="active", **changes):
    if kind == "removed":
        return sample("link_removed", when)
    event = sample(f"link_{kind}", when)
    event["detail"]["link"].update(status=status, **changes)
    return event


def person_state(ports):
    stored = ports.stories.get_person(UUID(ROSA["id"]))
    graph = ports.graph.run(
        "MATCH (p:Person {id: $id})-[:BELONGS_TO]->(l:Legacy)"
        " RETURN p.name AS name, p.aliases AS aliases, p.legacy_id AS legacy, l.id AS belongs",
        {"id": ROSA["id"]},
    )
    return (stored and (stored.name, str(stored.legacy_id))), graph


def member_state(ports):
    role = ports.stories.role_of(UUID(CAROL["id"]), UUID(SAMPLE_LEGACY))
    graph = ports.graph.run(
        "MATCH (:Person {id: $id})-[r:REMEMBERS]->(:Person) WHERE r.legacy_id = $legacy RETURN r.role AS role",
        {"id": CAROL["person_id"], "legacy": SAMPLE_LEGACY},
    )
    return (role.value if role else None), [r["role"] for r in graph]


def link_state(ports):
    stored = ports.stories.get_link(UUID(LINK["id"]))
    graph = ports.graph.run(
        "MATCH (a:Legacy)-[r:LINKED_TO]->(b:Legacy) WHERE r.link_id = $id"
        " RETURN a.id AS a, b.id AS b, r.status AS status, r.share_mode AS share_mode",
        {"id": LINK["id"]},
    )
    return (stored and (stored.status.value, stored.share_mode.value)), graph


def _edge(status, share_mode):
    return [{"a": LINK["legacy_a_id"], "b": LINK["legacy_b_id"], "status": status, "share_mode": share_mode}]


def _node(name, legacy):
    return [{"name": name, "aliases": "Nonna Rosa", "legacy": legacy, "belongs": legacy}]


#: (what each history needs first, its events in the order they happened, how to read the
#: state, the state they leave in PostgreSQL and in the graph)
HISTORIES = {
    "person renamed, moved, renamed": (
        ["legacy_created"],
        [
            person(T1),
            person(T2, legacy_id=SAMPLE_LEGACY),
            person(T3, name="Rosa Bianchi", legacy_id=SAMPLE_LEGACY),
        ],
        person_state,
        (("Rosa Bianchi", SAMPLE_LEGACY), _node("Rosa Bianchi", SAMPLE_LEGACY)),
    ),
    "member raised, removed, readmitted": (
        [],
        [member(T1, "admin"), member(T2), member(T3, "admirer")],
        member_state,
        ("admirer", ["admirer"]),
    ),
    "member raised, lowered, removed": (
        [],
        [member(T1, "admin"), member(T2, "advocate"), member(T3)],
        member_state,
        (None, []),
    ),
    "link created, activated, narrowed": (
        ["legacy_created"],
        [link(T1, "created", "pending"), link(T2, "updated"), link(T3, "updated", share_mode="selective")],
        link_state,
        (("active", "selective"), _edge("active", "selective")),
    ),
    "link created, activated, removed": (
        ["legacy_created"],
        [link(T1, "created", "pending"), link(T2, "updated"), link(T3, "removed")],
        link_state,
        (("revoked", "selective"), []),
    ),
}


@pytest.mark.parametrize("order", list(permutations(range(3))))
@pytest.mark.parametrize("history", list(HISTORIES))
def test_every_delivery_order_of_a_record_s_changes_ends_in_the_same_state(send, ports, history, order):
    setup, events, state, expected = HISTORIES[history]
    for name in setup:
        send(sample(name, T1))
    for i in order:
        send(events[i])
    assert state(ports) == expected
    for i in order:  # at-least-once: each delivered again
        assert send(events[i]) in ("unchanged", "skipped")
    assert state(ports) == expected


@pytest.mark.parametrize("history", list(HISTORIES))
def test_concurrent_deliveries_of_a_record_s_changes_end_in_the_same_state(send, db, ports, history):
    """Three containers deliver a history's three events at once, twice over."""
    setup, events, state, expected = HISTORIES[history]
    for name in setup:
        send(sample(name, T1))
    dbs, fleet = containers(db, ports, len(events))
    # one handler module per container, loaded before the threads (Powertools' Logger setup is
    # not thread-safe)
    handlers = [load_handler("story_events") for _ in events]
    errors: list[BaseException] = []
    start = threading.Barrier(len(events))

    def deliver(event, handler, p):
        try:
            for _ in range(2):
                start.wait()
                handler(event, LambdaContext("StoryEvents"), services=services_with(ingestion=p))
        except BaseException as exc:
            errors.append(exc)
            start.abort()

    threads = [
        threading.Thread(target=deliver, args=args) for args in zip(events, handlers, fleet, strict=True)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    for d in dbs:
        d.close()
    assert not errors, errors
    assert state(ports) == expected


LOCKS = {
    "person": (
        lambda stories: stories.person_lock(UUID(ROSA["id"])),
        person(T2, name="Rosa Bianchi"),
        person_state,
        (("Rosa Bianchi", NEW_LEGACY), _node("Rosa Bianchi", NEW_LEGACY)),
    ),
    "member": (
        lambda stories: stories.member_lock(UUID(SAMPLE_LEGACY), UUID(CAROL["id"])),
        member(T2, "admirer"),
        member_state,
        ("admirer", ["admirer"]),
    ),
    "link": (
        lambda stories: stories.link_lock(UUID(LINK["id"])),
        link(T2, "created", share_mode="selective"),
        link_state,
        (("active", "selective"), _edge("active", "selective")),
    ),
}


@pytest.mark.parametrize("kind", list(LOCKS))
def test_a_delivery_waits_while_another_writer_holds_the_record_s_lock(send, db, ports, kind):
    """Deterministic half of the test above: while one writer holds the record's lock, a
    delivery of a change to it blocks before writing anything, then writes the stored state."""
    lock, event, state, expected = LOCKS[kind]
    send(sample("legacy_created", T1))
    before = state(ports)
    dbs, (theirs,) = containers(db, ports, 1)
    handler = load_handler("story_events")

    def deliver():
        handler(event, LambdaContext("StoryEvents"), services=services_with(ingestion=theirs))

    with lock(ports.stories):
        run = run_until_waiting(deliver, db.url, close=dbs[0].close)
        assert run.waiting, f"the delivery did not wait for the {kind}'s lock"
        assert state(ports) == before
    run.finish()
    assert state(ports) == expected


def test_a_graph_rebuild_waits_for_a_record_s_lock_and_writes_what_is_stored_then(send, db, ports):
    """A rebuild (`heirloom backfill --rebuild-graph`) reads each record again under its lock: a
    membership removed while the rebuild waits for it leaves no edge behind."""
    assert member_state(ports) == ("advocate", ["advocate"])  # the sample's, as loaded
    dbs, (theirs,) = containers(db, ports, 1)

    def rebuild():
        rebuild_graph(theirs, ports.stories.legacy_ids())

    with ports.stories.member_lock(UUID(SAMPLE_LEGACY), UUID(CAROL["id"])):
        run = run_until_waiting(rebuild, db.url, close=dbs[0].close)
        assert run.waiting, "the rebuild did not wait for the membership's lock"
        # the holder removes the member meanwhile (the lock is re-entrant on its connection)
        ingestion.remove_member(
            ports, UUID(SAMPLE_LEGACY), UUID(CAROL["id"]), datetime(2019, 11, 4, tzinfo=UTC)
        )
        assert member_state(ports) == (None, [])
    run.finish()
    assert member_state(ports) == (None, [])
    assert person_state(ports)[1] == []  # Rosa was never created; the rest was rebuilt
    assert ports.graph.run("MATCH (p:Person) RETURN count(p) AS n")[0]["n"] > 0


class TwoLinks:
    """Link X (now from legacy L1 to L2) with LINKED_TO edges its earlier ends left, and link Y
    with edges between the same legacies, X's kept pair included; `others` more links."""

    def __init__(self, graph, others=0):
        self.x, self.y, self.l1, self.l2, self.l3, self.l4 = (str(uuid4()) for _ in range(6))
        legacies = [self.l1, self.l2, self.l3, self.l4]
        edges = [
            (self.l1, self.l2, self.x),  # the one kept
            (self.l1, self.l3, self.x),  # its earlier second legacy
            (self.l3, self.l2, self.x),  # its earlier first legacy
            (self.l4, self.l3, self.x),  # both ends changed since it was written
            (self.l1, self.l2, self.y),  # another link between the same legacies
            (self.l1, self.l3, self.y),
            (self.l4, self.l3, self.y),
        ]
        for _ in range(others):
            a, b = str(uuid4()), str(uuid4())
            legacies += [a, b]
            edges.append((a, b, str(uuid4())))
        graph.run("UNWIND $ids AS id MERGE (:Legacy {id: id})", {"ids": legacies})
        for a, b, link_id in edges:
            graph.run(
                "MATCH (a:Legacy {id: $a}) MATCH (b:Legacy {id: $b})"
                " CREATE (a)-[r:LINKED_TO]->(b) SET r = $props",
                {"a": a, "b": b, "props": {"link_id": link_id, "kind": "LINKED_TO", "status": "pending"}},
            )

    def sync_x(self, graph, status=LinkStatus.ACTIVE):
        link = Link(
            id=UUID(self.x),
            legacy_a_id=UUID(self.l1),
            legacy_b_id=UUID(self.l2),
            status=status,
            share_mode=ShareMode.ALL,
        )
        sync_link(graph, link)

    @staticmethod
    def edges(graph):
        rows = graph.run(
            "MATCH (a:Legacy)-[r:LINKED_TO]->(b:Legacy) RETURN a.id AS a, b.id AS b, r.link_id AS link, r.status AS s"
        )
        return sorted((r["a"], r["b"], r["link"], r["s"]) for r in rows)


def test_a_link_sync_drops_its_moved_edges_and_no_other_link_s(graph):
    world = TwoLinks(graph)
    before = TwoLinks.edges(graph)
    world.sync_x(graph)
    assert [e for e in TwoLinks.edges(graph) if e[2] == world.x] == [(world.l1, world.l2, world.x, "active")]
    assert [e for e in TwoLinks.edges(graph) if e[2] != world.x] == [e for e in before if e[2] != world.x]
    world.sync_x(graph, LinkStatus.REVOKED)  # a revoked link joins nothing
    assert [e for e in TwoLinks.edges(graph) if e[2] == world.x] == []
    assert TwoLinks.edges(graph) == [e for e in before if e[2] != world.x]


def test_a_link_s_edge_drops_read_only_its_own_edges(graph, local_stack):
    """FalkorDB's plan (the engine the tests and the bench run on; Neptune looks properties up
    by its own indexes): no operation of either drop (moved, revoked) produces more rows than
    link X has edges, though the graph holds many more links (decision 0035)."""
    from falkordb import FalkorDB

    from heirloom.adapters.cypher import prefix_query
    from tests.support.neptune import GRAPH_NAME

    world = TwoLinks(graph, others=30)
    x_edges = sum(1 for e in TwoLinks.edges(graph) if e[2] == world.x)
    client = FalkorDB(unix_socket_path=local_stack.falkor_socket).select_graph(GRAPH_NAME)
    drops, plans = [], []

    class Profiled:
        """The graph, with the link's edge drops run under GRAPH.PROFILE (which runs them)."""

        def run(self, cypher, params=None):
            if "DELETE" not in cypher:
                return graph.run(cypher, params)
            drops.append(cypher)
            plans.append(client.profile(prefix_query(cypher, graph.prefix), params))
            return []

    world.sync_x(Profiled())
    world.sync_x(Profiled(), LinkStatus.REVOKED)
    assert drops[:2] == [DROP_MOVED_LINK, DROP_MOVED_LINK] and len(drops) == 3  # then the revoked one

    def produced(op):
        yield op.name, op.records_produced
        for child in op.children:
            yield from produced(child)

    for plan in plans:
        rows = dict(produced(plan.structured_plan))
        assert "Edge By Index Scan" in rows and max(rows.values()) <= x_edges, rows
    assert [e for e in TwoLinks.edges(graph) if e[2] == world.x] == []
