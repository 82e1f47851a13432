"""A member's social edge, (member's Person)-[:REMEMBERS]->(subject's Person), follows the records
it depends on whatever order their events arrive in: the legacy (its subject), the subject's
person, the user (their person), the user's person and the membership. Each of those writes
syncs the memberships that depend on it from what is stored, under the membership's lock
(decision 0020, "Since"), so exactly one correct edge is left, and a changed person or subject
moves it. On the embedded engines, through the StoryEvents handler (also through the Neptune
adapter: `HEIRLOOM_GRAPH=neptune-local`, Makefile NEPTUNE_SUITES)."""

import json
from itertools import permutations
from pathlib import Path
from uuid import UUID, uuid4

import pytest

from heirloom.contracts.records import Legacy, Role
from heirloom.domain.graph_sync import DROP_STALE_REMEMBERS, sync_membership
from heirloom.errors import NotFound
from heirloom_dev.functions import LambdaContext, load_handler
from tests.support.containers import containers, run_until_waiting
from tests.support.services import services_with

EVENTS = Path(__file__).parents[2] / "events" / "story_events"
T1, T2, T3 = "2019-11-04T09:00:00Z", "2019-11-04T10:00:00Z", "2019-11-04T11:00:00Z"


def sample(name, when, **detail):
    event = json.loads((EVENTS / f"{name}.json").read_text())
    event["time"] = when
    for key, changes in detail.items():
        if isinstance(changes, dict):
            event["detail"][key].update(changes)
        else:
            event["detail"][key] = changes
    return event


class World:
    """Fresh ids for one legacy, its subject, one member and the member's person."""

    def __init__(self):
        self.legacy, self.subject, self.user, self.person = (str(uuid4()) for _ in range(4))

    def legacy_event(self, subject=None):
        legacy = {"id": self.legacy, "subject_person_id": subject or self.subject}
        return sample("legacy_created", T1, legacy=legacy)

    def person_event(self, person_id, name, when=T1):
        person = {"id": person_id, "legacy_id": self.legacy, "name": name, "aliases": []}
        return sample("person_created", when, person=person)

    def user_event(self, person_id):
        return sample("user_created", T1, user={"id": self.user, "person_id": person_id})

    def member_event(self, when=T1, role="admirer"):
        return sample(
            "member_added", when, member={"legacy_id": self.legacy, "user_id": self.user, "role": role}
        )

    def removed_event(self, when):
        return sample("member_removed", when, legacy_id=self.legacy, user_id=self.user)

    def events(self):
        return [
            self.legacy_event(),
            self.person_event(self.subject, "Ada Subject"),
            self.user_event(self.person),
            self.person_event(self.person, "Bo Member"),
            self.member_event(),
        ]

    def edges(self, graph):
        """Every REMEMBERS edge of the legacy, as (from, to, user, role)."""
        rows = graph.run(
            "MATCH (a:Person)-[r:REMEMBERS]->(b:Person) WHERE r.legacy_id = $legacy"
            " RETURN a.id AS a, b.id AS b, r.user_id AS user, r.role AS role, r.kind AS kind",
            {"legacy": self.legacy},
        )
        return sorted((r["a"], r["b"], r["user"], r["role"], r["kind"]) for r in rows)

    def edge(self, person=None, subject=None, role="admirer"):
        return [(person or self.person, subject or self.subject, self.user, role, "REMEMBERS")]


@pytest.fixture
def deliver(ports):
    """Deliver events to the real StoryEvents handler; one naming a record not stored yet
    raises NotFound and is delivered again after the others (EventBridge's retries), until
    every event has been applied."""
    services = services_with(ingestion=ports)
    handler = load_handler("story_events")

    def send(*events):
        pending, changes = list(events), []
        while pending:
            retry = []
            for event in pending:
                try:
                    changes.append(handler(event, LambdaContext("StoryEvents"), services=services)["change"])
                except NotFound:
                    retry.append(event)
            assert len(retry) < len(pending), f"{len(retry)} events never apply"
            pending = retry
        return changes

    return send


def test_every_delivery_order_of_the_records_ends_with_one_correct_edge(deliver, ports):
    """All 120 orders of legacy, subject's person, user, user's person and member added (each on
    its own legacy and ids), then every event delivered again."""
    for order in permutations(range(5)):
        world = World()
        events = world.events()
        deliver(*(events[i] for i in order))
        assert world.edges(ports.graph) == world.edge(), order
        assert set(deliver(*events)) <= {"unchanged", "skipped"}
        assert world.edges(ports.graph) == world.edge(), order


def test_the_subject_s_person_arriving_after_the_member_writes_the_edge(deliver, ports):
    world = World()
    deliver(
        world.legacy_event(), world.person_event(world.person, "Bo Member"), world.user_event(world.person)
    )
    deliver(world.member_event())
    assert world.edges(ports.graph) == []  # no subject's Person to point at yet
    deliver(world.person_event(world.subject, "Ada Subject"))
    assert world.edges(ports.graph) == world.edge()


def test_a_user_s_person_change_moves_the_edge(deliver, ports):
    world = World()
    deliver(*world.events())
    other = str(uuid4())
    deliver(world.person_event(other, "Bo Other"), world.user_event(other))
    assert world.edges(ports.graph) == world.edge(person=other)
    deliver(world.user_event(None))  # no person: no edge
    assert world.edges(ports.graph) == []
    deliver(world.user_event(world.person))
    assert world.edges(ports.graph) == world.edge()


def test_a_user_without_a_person_gets_the_edge_when_one_is_set_later(deliver, ports):
    world = World()
    deliver(world.legacy_event(), world.person_event(world.subject, "Ada Subject"))
    deliver(world.user_event(None), world.member_event())
    assert world.edges(ports.graph) == []
    deliver(world.person_event(world.person, "Bo Member"), world.user_event(world.person))
    assert world.edges(ports.graph) == world.edge()


def test_a_subject_change_moves_the_edge(deliver, ports):
    world = World()
    deliver(*world.events())
    other = str(uuid4())
    deliver(world.person_event(other, "Cy Subject"), world.legacy_event(subject=other))
    assert world.edges(ports.graph) == world.edge(subject=other)
    deliver(world.legacy_event(subject=world.person))  # the member became the subject: none
    assert world.edges(ports.graph) == []
    deliver(world.legacy_event())
    assert world.edges(ports.graph) == world.edge()


def test_removing_the_member_still_removes_the_moved_edge_and_nothing_brings_it_back(deliver, ports):
    world = World()
    deliver(*world.events())
    other = str(uuid4())
    deliver(world.person_event(other, "Cy Subject"), world.legacy_event(subject=other))
    assert deliver(world.removed_event(T2)) == ["deleted"]
    assert world.edges(ports.graph) == []
    assert ports.stories.role_of(UUID(world.user), UUID(world.legacy)) is None
    # the records it depended on, changed or delivered again, write no edge for an ended membership
    deliver(*world.events(), world.legacy_event(subject=other), world.person_event(other, "Cy", when=T3))
    assert world.edges(ports.graph) == []
    deliver(world.member_event(when=T3, role="advocate"))  # re-admitted later: the edge is back
    assert world.edges(ports.graph) == world.edge(subject=other, role="advocate")


def test_two_users_of_one_person_keep_an_edge_each(deliver, ports):
    """The edge is keyed by the membership (legacy and user), not by the person: one user's
    removal leaves the other's edge."""
    world = World()
    deliver(*world.events())
    second = World()
    second.legacy, second.subject, second.person = world.legacy, world.subject, world.person
    deliver(second.user_event(world.person), second.member_event(role="advocate"))
    assert world.edges(ports.graph) == sorted([*world.edge(), *second.edge(role="advocate")])
    deliver(world.removed_event(T2))
    assert world.edges(ports.graph) == second.edge(role="advocate")


def test_a_user_s_edge_re_sync_waits_for_the_membership_s_lock(deliver, db, ports):
    """The re-sync after a user write takes the membership's lock: while another writer holds
    it, the edge is not touched; once released, it is written from what is stored then."""
    world = World()
    deliver(*world.events())
    other = str(uuid4())
    deliver(world.person_event(other, "Bo Other"))
    dbs, (theirs,) = containers(db, ports, 1)
    handler = load_handler("story_events")

    def user_write():
        handler(
            world.user_event(other), LambdaContext("StoryEvents"), services=services_with(ingestion=theirs)
        )

    with ports.stories.member_lock(UUID(world.legacy), UUID(world.user)):
        run = run_until_waiting(user_write, db.url, close=dbs[0].close)
        assert run.waiting, "the user's re-sync did not wait for the membership's lock"
        assert world.edges(ports.graph) == world.edge()
    run.finish()
    assert world.edges(ports.graph) == world.edge(person=other)


class TwoLegacies:
    """Legacy A (subject S1, now S2) and legacy B, one user a member of both (person P1, now P2),
    with every kind of stale REMEMBERS edge in both; `others` more members of B."""

    def __init__(self, graph, others=0):
        self.a, self.b, self.user, self.p1, self.p2, self.s1, self.s2, self.sb, self.q, self.u2 = (
            str(uuid4()) for _ in range(10)
        )
        people = [self.p1, self.p2, self.s1, self.s2, self.sb, self.q]
        graph.run("UNWIND $ids AS id MERGE (:Person {id: id})", {"ids": people})
        edges = [
            (self.p1, self.s1, self.a, self.user),  # both ends changed since it was written
            (self.p1, self.s2, self.a, self.user),  # the user's earlier person
            (self.p2, self.s1, self.a, self.user),  # the legacy's earlier subject
            (self.p2, self.s2, self.a, self.user),  # the one kept
            (self.q, self.s2, self.a, self.u2),  # another member's
            (self.p2, self.s2, self.a, None),  # written before edges carried the user
            (self.p1, self.s2, self.a, None),  # ... by another person: kept
            (self.p1, self.s1, self.b, self.user),
            (self.p2, self.sb, self.b, self.user),
            (self.p2, self.sb, self.b, None),
        ]
        for i in range(others):
            member = str(uuid4())
            graph.run("MERGE (:Person {id: $id})", {"id": member})
            edges.append((member, self.sb, self.b, str(uuid4())))
        for a, b, legacy, user in edges:
            props = {"legacy_id": legacy, "kind": "REMEMBERS", "role": "admirer"}
            props |= {"user_id": user} if user else {}
            graph.run(
                "MATCH (a:Person {id: $a}) MATCH (b:Person {id: $b}) CREATE (a)-[r:REMEMBERS]->(b) SET r = $props",
                {"a": a, "b": b, "props": props},
            )

    def sync_a(self, graph, role=Role.ADVOCATE):
        legacy = Legacy(id=UUID(self.a), name="A", subject_person_id=UUID(self.s2))
        sync_membership(graph, legacy, UUID(self.user), UUID(self.p2), role)

    @staticmethod
    def edges(graph):
        rows = graph.run(
            "MATCH (a:Person)-[r:REMEMBERS]->(b:Person)"
            " RETURN a.id AS a, b.id AS b, r.legacy_id AS legacy, r.user_id AS user, r.role AS role"
        )
        return sorted((r["a"], r["b"], r["legacy"], r["user"] or "", r["role"]) for r in rows)


def test_a_membership_sync_drops_its_legacy_s_stale_edges_and_no_other_legacy_s(graph):
    world = TwoLegacies(graph)
    before = TwoLegacies.edges(graph)
    world.sync_a(graph)
    a, b, user = world.a, world.b, world.user
    assert [e for e in TwoLegacies.edges(graph) if e[2] == a] == sorted(
        [
            (world.p2, world.s2, a, user, "advocate"),
            (world.q, world.s2, a, world.u2, "admirer"),
            (world.p1, world.s2, a, "", "admirer"),
        ]
    )
    assert [e for e in TwoLegacies.edges(graph) if e[2] != a] == [e for e in before if e[2] == b]
    world.sync_a(graph, role=None)  # the membership ended: none of its edges left
    assert {(e[2], e[3]) for e in TwoLegacies.edges(graph) if e[2] == a} == {(a, world.u2), (a, "")}


def test_the_stale_edge_drop_reads_only_its_legacy_s_edges(graph, local_stack):
    """FalkorDB's plan (the engine the tests and the bench run on; Neptune looks properties up
    by its own indexes): no operation of the drop produces more rows than legacy A has edges,
    though B has many more."""
    from falkordb import FalkorDB

    from heirloom.adapters.cypher import prefix_query
    from tests.support.neptune import GRAPH_NAME

    world = TwoLegacies(graph, others=30)
    a_edges = sum(1 for e in TwoLegacies.edges(graph) if e[2] == world.a)
    client = FalkorDB(unix_socket_path=local_stack.falkor_socket).select_graph(GRAPH_NAME)
    plans = []

    class Profiled:
        """The graph, with the stale-edge drop run under GRAPH.PROFILE (which runs it)."""

        def run(self, cypher, params=None):
            if cypher != DROP_STALE_REMEMBERS:
                return graph.run(cypher, params)
            plans.append(client.profile(prefix_query(cypher, graph.prefix), params))
            return []

    world.sync_a(Profiled())
    assert len(plans) == 1

    def produced(op):
        yield op.name, op.records_produced
        for child in op.children:
            yield from produced(child)

    rows = dict(produced(plans[0].structured_plan))
    assert max(rows.values()) <= a_edges, rows
    assert [e[:2] for e in TwoLegacies.edges(graph) if e[2] == world.a and e[3] == world.user] == [
        (world.p2, world.s2)
    ]
