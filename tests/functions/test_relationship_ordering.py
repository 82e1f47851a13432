"""Relationship changes in the one order of heirloom.domain.ordering, whatever order the story
events arrive in (EventBridge neither orders nor deduplicates): the envelope's time, then the
source's sequence; at an equal stamp a removal wins; removals are remembered, so a late older
add or update never brings a relationship back nor overwrites a newer one, in PostgreSQL and in
the graph; `heirloom load` never gives back what an event removed. On the embedded engines,
through the StoryEvents handler and the loader."""

import json
from itertools import permutations
from pathlib import Path
from uuid import UUID

import pytest

from heirloom_dev.loader import load_dataset

ROOT = Path(__file__).parents[2]
EVENTS = ROOT / "events" / "story_events"
SAMPLE = ROOT / "examples" / "sample-legacy"
ROSA = "2a7c9e1b-3d5f-4a6b-8c9d-0e1f2a3b4c5d"  # the sample Person Created's
DOMINIC = "5fc816f8-511e-4903-ac59-9661f0b7e055"  # the sample legacy's subject
T1, T2, T3 = "2019-11-04T09:00:00Z", "2019-11-04T10:00:00Z", "2019-11-04T11:00:00Z"


def sample(name):
    return json.loads((EVENTS / f"{name}.json").read_text())


def added(type_, when, detail=None, sequence=None):
    event = sample("relationship_added")
    event["time"] = when
    event["detail"]["relationship"].update(type=type_, detail=detail)
    if sequence is not None:
        event["detail"]["sequence"] = sequence
    return event


def updated(type_, previous, when, detail=None, sequence=None):
    event = sample("relationship_updated")
    event["time"] = when
    event["detail"]["relationship"].update(type=type_, detail=detail, since=None)
    event["detail"]["previous_type"] = previous
    if sequence is not None:
        event["detail"]["sequence"] = sequence
    return event


def removed(type_, when, sequence=None):
    event = sample("relationship_removed")
    event["time"] = when
    event["detail"]["type"] = type_
    if sequence is not None:
        event["detail"]["sequence"] = sequence
    return event


def stored(ports):
    """Rosa -> Dominic as PostgreSQL holds it: {type: detail}."""
    return {
        r.type.value: r.detail
        for r in ports.stories.relationships_of([UUID(ROSA)])
        if (str(r.from_person_id), str(r.to_person_id)) == (ROSA, DOMINIC)
    }


def in_graph(ports):
    """Rosa -> Dominic as the graph holds it (known edges): {type: detail}."""
    found = ports.graph.run(
        "MATCH (a:Person {id: $a})-[r]->(b:Person {id: $b}) WHERE r.known = true"
        " RETURN r.kind AS kind, r.detail AS detail",
        {"a": ROSA, "b": DOMINIC},
    )
    return {row["kind"]: row["detail"] or None for row in found}


@pytest.fixture
def rosa(send):
    for name in ("legacy_created", "person_created"):
        send(sample(name))
    return send


#: (events in the order they happened, the state they leave)
HISTORIES = {
    "added, retyped, removed": (
        [
            added("KNEW", T1),
            updated("FRIENDS_WITH", "KNEW", T2, "met at the cannery"),
            removed("FRIENDS_WITH", T3),
        ],
        {},
    ),
    "added, removed, added again": (
        [added("KNEW", T1, "neighbours"), removed("KNEW", T2), added("KNEW", T3, "met again")],
        {"KNEW": "met again"},
    ),
    "added, retyped twice": (
        [
            added("KNEW", T1),
            updated("FRIENDS_WITH", "KNEW", T2, "met at the cannery"),
            updated("WORKED_WITH", "FRIENDS_WITH", T3, "the cannery line"),
        ],
        {"WORKED_WITH": "the cannery line"},
    ),
    "added, updated, updated": (
        [added("KNEW", T1), updated("KNEW", None, T2, "second"), updated("KNEW", None, T3, "first")],
        {"KNEW": "first"},  # the newest, though it sorts before the older detail
    ),
}


@pytest.mark.parametrize("order", list(permutations(range(3))))
@pytest.mark.parametrize("history", list(HISTORIES))
def test_every_delivery_order_of_a_relationship_s_changes_ends_in_the_same_state(rosa, ports, history, order):
    events, state = HISTORIES[history]
    for i in order:
        rosa(events[i])
    assert stored(ports) == state
    assert in_graph(ports) == state
    for i in order:  # at-least-once: each delivered again
        assert rosa(events[i]) in ("unchanged", "skipped")
    assert stored(ports) == state and in_graph(ports) == state


def test_a_late_add_never_undoes_a_removal(rosa, ports):
    """The defect: Relationship Removed, then its own older Relationship Added delivered late."""
    assert rosa(removed("KNEW", T2)) == "unchanged"
    assert rosa(added("KNEW", T1)) == "skipped"
    assert stored(ports) == {} and in_graph(ports) == {}
    assert rosa(added("KNEW", T3, "met again")) == "created"  # a newer add does
    assert stored(ports) == {"KNEW": "met again"} == in_graph(ports)


def test_an_older_update_never_overwrites_a_newer_one(rosa, ports):
    rosa(added("KNEW", T1))
    assert rosa(updated("KNEW", None, T3, "newer")) == "updated"
    assert rosa(updated("KNEW", None, T2, "older")) == "skipped"
    assert stored(ports) == {"KNEW": "newer"} == in_graph(ports)


@pytest.mark.parametrize("first", [0, 1])
def test_at_the_same_time_a_removal_wins_and_two_versions_end_the_same_whatever_the_order(rosa, ports, first):
    pair = [added("KNEW", T1), removed("KNEW", T1)]
    rosa(pair[first])
    rosa(pair[1 - first])
    assert stored(ports) == {} and in_graph(ports) == {}
    versions = [updated("FRIENDS_WITH", None, T2, "a"), updated("FRIENDS_WITH", None, T2, "b")]
    rosa(versions[first])
    rosa(versions[1 - first])
    assert stored(ports) == {"FRIENDS_WITH": "b"} == in_graph(ports)


def test_the_source_sequence_orders_changes_of_the_same_second(rosa, ports):
    assert rosa(added("KNEW", T1, "kept", sequence=2)) == "created"
    assert rosa(removed("KNEW", T1, sequence=1)) == "skipped"  # older, though a removal
    assert stored(ports) == {"KNEW": "kept"} == in_graph(ports)
    assert rosa(removed("KNEW", T1, sequence=3)) == "deleted"
    assert rosa(added("KNEW", T1, "kept", sequence=2)) == "skipped"
    assert stored(ports) == {} and in_graph(ports) == {}


def rows(name):
    return [json.loads(line) for line in (SAMPLE / f"{name}.jsonl").read_text().splitlines() if line.strip()]


def test_reloading_the_dataset_never_gives_back_a_relationship_an_event_removed(send, ports):
    """`heirloom load` treats relationship removals as it treats membership removals."""
    lines = rows("relationships")
    gone, changed = lines[0], lines[1]
    removal = removed(gone["type"], T1)
    removal["detail"].update(from_person_id=gone["from_person_id"], to_person_id=gone["to_person_id"])
    update = updated(changed["type"], None, T1, "stepfather")
    update["detail"]["relationship"].update(
        from_person_id=changed["from_person_id"], to_person_id=changed["to_person_id"]
    )
    assert [send(removal), send(update)] == ["deleted", "updated"]

    report = load_dataset(ports, SAMPLE)
    kept = {
        (str(r.to_person_id), r.type.value): r.detail
        for r in ports.stories.relationships_of([UUID(gone["from_person_id"])])
        if str(r.from_person_id) == gone["from_person_id"]
    }
    assert (gone["to_person_id"], gone["type"]) not in kept
    assert kept[(changed["to_person_id"], changed["type"])] == "stepfather"
    assert report.changed == 0
    assert sorted(report.skipped) == [
        "relationships.jsonl:1: a story event changed or removed this relationship; kept as it left it",
        "relationships.jsonl:2: a story event changed or removed this relationship; kept as it left it",
    ]
    edge = ports.graph.run(
        "MATCH (a:Person {id: $a})-[r:FAMILY_OF]->(b:Person {id: $b}) RETURN r.detail AS d",
        {"a": gone["from_person_id"], "b": gone["to_person_id"]},
    )
    assert edge == []
