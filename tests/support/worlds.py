"""Random docs/dataset-format.md worlds for the access property tests.

A world is a handful of legacies, persons, users, memberships, links, known relationships and
stories, written in docs/dataset-format.md's row shapes (so `tests.support.oracle` reads it) and ingested
through the production ingestion path (`heirloom.domain.ingestion`), with a scripted extractor
standing in for the model: it reads entities and person -> entity facts back from the story
text, so every graph fact's provenance is recorded by the real entity sync.

Every story carries a distinctive token in its title and content, and every place, event and
object is a distinctive single word that only the stories mentioning it contain, so a forbidden
story or fact that reaches a context as text is caught as well as one that arrives by id.
"""

from __future__ import annotations

import copy
import json
import re
import tempfile
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from hypothesis import strategies as st

from heirloom.contracts.extraction import (
    ExtractedEntities,
    ExtractedEvent,
    ExtractedFact,
    ExtractedObject,
    ExtractedPerson,
    ExtractedPlace,
    ExtractedRelationship,
    TimeReference,
)
from heirloom.contracts.records import Link, Member, Role, Story
from heirloom.domain import ingestion
from heirloom.domain.ingestion import IngestionPorts
from heirloom_dev.loader import load_dataset

FIRST = ["Abel", "Brisa", "Cosmo", "Delphine", "Ezra", "Fenna", "Gideon", "Hester", "Ignatius", "Juno",
         "Kasimir", "Leocadia", "Mordecai", "Nerys", "Octavian", "Philippa", "Quillon", "Rosamund"]  # fmt: skip
LAST = ["Ashgrove", "Blackwood", "Calloway", "Dunmore", "Everleigh", "Fairweather", "Gallowglass",
        "Hawthorne", "Inchcape", "Jessamy", "Kingsmill", "Lockhart", "Merriweather", "Northgate",
        "Oakenshaw", "Penhallow", "Quenby", "Ravenscroft"]  # fmt: skip
PLACES = ["Brackenford", "Duskmoor", "Fallowmere", "Greywater", "Hollowell", "Kestrelby", "Larkspur",
          "Mossgiel", "Northcote", "Ravensworth", "Saltash", "Thornbury"]  # fmt: skip
EVENTS = ["Emberfest", "Frostfair", "Harvestmoot", "Candlemass", "Lammastide", "Wakesweek",
          "Rushbearing", "Plough Monday"]  # fmt: skip
OBJECTS = ["Astrolabe", "Gramophone", "Harpsichord", "Samovar", "Sextant", "Lorgnette", "Chronometer",
           "Zither"]  # fmt: skip
EVENTS = [e.split()[0] for e in EVENTS]  # single words: a cut excerpt never splits a name
LEGACY_NAMES = ["Marsh", "Vale", "Crane", "Holt"]
DETAILS = ["cousin", "mentor", "neighbour", "godmother", "brother", "sister"]
#: person -> entity predicates, by entity label, and how the story text says them
FACT_VERBS = {"LIVED_IN": "lived in", "WORKED_AT": "worked at", "PARTICIPATED_IN": "took part in",
              "OWNED": "owned"}  # fmt: skip
PREDICATES_BY_LABEL = {
    "Place": ("LIVED_IN", "WORKED_AT"),
    "Event": ("PARTICIPATED_IN",),
    "Object": ("OWNED",),
}
LABEL_OF = {
    **dict.fromkeys(PLACES, "Place"),
    **dict.fromkeys(EVENTS, "Event"),
    **dict.fromkeys(OBJECTS, "Object"),
}
YEARS = {name: 1930 + 7 * i for i, name in enumerate(EVENTS)}
ROLES = ["creator", "admin", "advocate", "admirer"]
_LETTERS = "bcdfghjklmnpqrstvwxz"
T0 = datetime(2024, 5, 1, 10, 0, tzinfo=UTC)


def story_token(i: int) -> str:
    """'Zyxb', 'Zyxc', ...: one made-up word per story, found nowhere else."""
    out = ""
    i += len(_LETTERS)
    while i:
        i, r = divmod(i, len(_LETTERS))
        out = _LETTERS[r] + out
    return "Zyx" + out


def uid(namespace: str, n: int) -> str:
    return str(uuid.uuid5(uuid.NAMESPACE_URL, f"heirloom-world/{namespace}/{n}"))


def mentions(text: str, name: str) -> bool:
    return re.search(rf"(?<!\w){re.escape(name)}(?!\w)", text, re.IGNORECASE) is not None


@dataclass(frozen=True)
class Event:
    """A story event: "story" / "move" (a story row), "delete" ({id, legacy_id}), "link" (a
    link row), "unmember" / "member" (a membership row), and when it happened."""

    kind: str
    value: dict[str, Any]
    at: datetime


@dataclass
class World:
    legacies: list[dict[str, Any]] = field(default_factory=list)
    persons: list[dict[str, Any]] = field(default_factory=list)
    users: list[dict[str, Any]] = field(default_factory=list)
    members: list[dict[str, Any]] = field(default_factory=list)
    relationships: list[dict[str, Any]] = field(default_factory=list)
    links: list[dict[str, Any]] = field(default_factory=list)
    stories: list[dict[str, Any]] = field(default_factory=list)
    #: token of each story id (its title and content carry it)
    tokens: dict[str, str] = field(default_factory=dict)
    #: the state before the events (the dataset, loaded first)
    initial: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    #: what happens after the first load, as story events
    events: list[Event] = field(default_factory=list)
    #: the order the events are delivered in (indexes into `events`; some twice)
    deliveries: list[int] = field(default_factory=list)
    #: the dataset is loaded again before this delivery (None: never)
    reload_at: int | None = None

    def data(self) -> dict[str, list[dict[str, Any]]]:
        """The final state in docs/dataset-format.md row shapes (what the oracle reads)."""
        return {
            "legacies": self.legacies,
            "persons": self.persons,
            "members": self.members,
            "links": self.links,
            "stories": self.stories,
            "relationships": self.relationships,
        }

    def person_names(self) -> dict[str, str]:
        return {p["id"]: p["name"] for p in self.persons}

    def facts(self) -> list[dict[str, Any]]:
        """Every fact the graph should hold: known relationships, and person -> entity facts
        with the stories of the person's legacy whose text states them."""
        out = [
            {
                "a": r["from_person_id"],
                "b": r["to_person_id"],
                "predicate": r["type"],
                "detail": r["detail"],
                "known": True,
                "story_ids": [],
            }
            for r in self.relationships
        ]
        names = self.person_names()
        home = {p["id"]: p["legacy_id"] for p in self.persons}
        for pid, name in names.items():
            for entity, label in LABEL_OF.items():
                for predicate in PREDICATES_BY_LABEL[label]:
                    sentence = f"{name} {FACT_VERBS[predicate]} {entity}."
                    support = [
                        s["id"]
                        for s in self.stories
                        if s["legacy_id"] == home[pid] and sentence in s["content"]
                    ]
                    if support:
                        out.append({"a": pid, "b": entity, "predicate": predicate, "detail": None,
                                    "known": False, "story_ids": support})  # fmt: skip
        return out


class ScriptedExtractor:
    """The model stand-in: the people, places, events, objects, years and person -> entity
    facts that the story text names, with the confidences a model would give."""

    version = "scripted-1"

    def __init__(self, person_names: list[str]):
        self.person_names = person_names

    def extract(self, text: str, *, known_names: Any = ()) -> ExtractedEntities:
        people = [n for n in self.person_names if mentions(text, n)]
        found = [e for e in LABEL_OF if mentions(text, e)]
        relationships = []
        facts = []  # a told fact (decision 0012) quoting the story's sentence, for every "owned"
        for person in people:
            for entity in found:
                for predicate in PREDICATES_BY_LABEL[LABEL_OF[entity]]:
                    sentence = f"{person} {FACT_VERBS[predicate]} {entity}."
                    if sentence in text:
                        relationships.append(
                            ExtractedRelationship(
                                subject=person, predicate=predicate, object=entity, confidence=0.9
                            )  # type: ignore[arg-type]
                        )
                        if predicate == "OWNED":
                            facts.append(
                                ExtractedFact(
                                    source=person,
                                    relation="KEPT",
                                    target=entity,
                                    verb="owned",
                                    sentence=sentence,
                                    confidence=0.9,
                                )
                            )
        return ExtractedEntities(
            people=tuple(ExtractedPerson(name=n, confidence=0.95) for n in people),
            places=tuple(ExtractedPlace(name=e, confidence=0.9) for e in found if LABEL_OF[e] == "Place"),
            events=tuple(
                ExtractedEvent(name=e, date=str(YEARS[e]), confidence=0.9)
                for e in found
                if LABEL_OF[e] == "Event"
            ),
            objects=tuple(ExtractedObject(name=e, confidence=0.9) for e in found if LABEL_OF[e] == "Object"),
            time_references=tuple(
                TimeReference(period=y) for y in dict.fromkeys(re.findall(r"\b19\d\d\b", text))
            ),
            relationships=tuple(relationships),
            facts=tuple(facts),
            extractor_version=self.version,
        )


# -- generation -------------------------------------------------------------------------------
@st.composite
def story_text(draw: st.DrawFn, token: str, persons: list[str], entities: list[str]) -> tuple[str, str]:
    """(title, content) of a story: its token, some of its legacy's persons and entities, and
    some person -> entity facts stated in the fixed form the extractor reads."""
    said = draw(st.lists(st.sampled_from(entities), max_size=3, unique=True)) if entities else []
    named = draw(st.lists(st.sampled_from(persons), max_size=2, unique=True)) if persons else []
    sentences = [f"This is the {token} memory."]
    sentences += [f"{p} was there that day." for p in named]
    for entity in said:
        label = LABEL_OF[entity]
        if named and draw(st.booleans()):
            verb = FACT_VERBS[draw(st.sampled_from(PREDICATES_BY_LABEL[label]))]
            sentences.append(f"{draw(st.sampled_from(named))} {verb} {entity}.")
        else:
            sentences.append(f"Everyone still talks about {entity}.")
        if label == "Event" and draw(st.booleans()):
            sentences.append(f"That was in {YEARS[entity]}.")
    cut = draw(st.integers(1, len(sentences)))
    content = " ".join(sentences[:cut]) + ("\n\n" + " ".join(sentences[cut:]) if sentences[cut:] else "")
    title = f"{token} {draw(st.sampled_from(['days', 'summer', 'letters', 'winter', 'years']))}"
    return title, content


@st.composite
def worlds(draw: st.DrawFn, max_stories: int = 9) -> World:
    w = World()
    n_legacies = draw(st.integers(2, 4))
    legacy_ids = [uid("legacy", i) for i in range(n_legacies)]
    person_no = 0
    by_legacy: dict[str, list[str]] = {}
    for li, lid in enumerate(legacy_ids):
        names = []
        for _ in range(draw(st.integers(1, 3))):
            pid = uid("person", person_no)
            name = f"{FIRST[person_no]} {LAST[person_no]}"
            w.persons.append({"id": pid, "legacy_id": lid, "name": name, "aliases": [], "birth_year": None,
                              "death_year": None})  # fmt: skip
            names.append(name)
            person_no += 1
        by_legacy[lid] = names
        subject = next(p["id"] for p in w.persons if p["legacy_id"] == lid)
        w.legacies.append(
            {"id": lid, "name": f"{names[0]} ({LEGACY_NAMES[li]})", "subject_person_id": subject}
        )
    # each legacy's entities; a few names are shared by two legacies (two nodes, one name)
    pool = PLACES + EVENTS + OBJECTS
    entities = {
        lid: draw(st.lists(st.sampled_from(pool), min_size=1, max_size=5, unique=True)) for lid in legacy_ids
    }

    user_ids = [uid("user", i) for i in range(draw(st.integers(2, 5)))]
    w.users = [{"id": u, "name": f"User {i}", "person_id": None} for i, u in enumerate(user_ids)]
    for u in user_ids:
        for lid in legacy_ids:
            role = draw(st.sampled_from([None, None, *ROLES]))
            if role:
                w.members.append({"legacy_id": lid, "user_id": u, "role": role})

    persons = [p["id"] for p in w.persons]
    seen_rel: set[tuple[str, str, str]] = set()
    for _ in range(draw(st.integers(0, 4))):
        a, b = (
            draw(st.lists(st.sampled_from(persons), min_size=2, max_size=2, unique=True))
            if len(persons) > 1
            else (None, None)
        )
        if a is None:
            break
        kind = draw(st.sampled_from(["FAMILY_OF", "KNEW", "WORKED_WITH", "FRIENDS_WITH"]))
        if (a, b, kind) in seen_rel:
            continue
        seen_rel.add((a, b, kind))
        detail = draw(st.sampled_from(DETAILS)) if kind == "FAMILY_OF" and draw(st.booleans()) else None
        w.relationships.append({"from_person_id": a, "to_person_id": b, "type": kind, "detail": detail,
                                "since": None, "until": None})  # fmt: skip

    n_stories = draw(st.integers(2, max_stories))
    story_ids = [uid("story", i) for i in range(n_stories)]
    for i, sid in enumerate(story_ids):
        lid = draw(st.sampled_from(legacy_ids))
        token = story_token(i)
        title, content = draw(story_text(token, by_legacy[lid], entities[lid]))
        w.tokens[sid] = token
        w.stories.append({"id": sid, "legacy_id": lid, "author_user_id": draw(st.sampled_from(user_ids)),
                          "title": title, "content": content,
                          "visibility": draw(st.sampled_from(["public", "private", "personal"])),
                          "created_at": T0.isoformat(), "updated_at": T0.isoformat()})  # fmt: skip

    for li, a in enumerate(legacy_ids):
        for b in legacy_ids[li + 1 :]:
            for n in range(draw(st.integers(0, 2))):
                w.links.append({
                    "id": uid(f"link/{a}/{b}", n), "legacy_a_id": a, "legacy_b_id": b,
                    "status": draw(st.sampled_from(["active", "active", "pending", "revoked"])),
                    "share_mode": draw(st.sampled_from(["all", "selective"])),
                    "shared_story_ids": draw(st.lists(st.sampled_from(story_ids), unique=True, max_size=4)),
                })  # fmt: skip

    w.initial = copy.deepcopy(w.data())

    # later changes, as story events bring them: a story rewritten (maybe another visibility) or
    # moved to another legacy (its text then names that legacy's people and things), a story
    # deleted, a link changing status, mode or share list, a member leaving, a role changing.
    # Story versions get distinct times; membership and link changes one of four hours of one
    # day, so changes of one record often share a time (a tie).
    def hour() -> datetime:
        return T0 + timedelta(days=1, hours=draw(st.integers(0, 3)))

    live = [s["id"] for s in w.stories]
    for n in range(draw(st.integers(0, 6))):
        kind = draw(st.sampled_from(["story", "move", "delete", "link", "link", "unmember", "member"]))
        when = T0 + timedelta(days=2 + n)
        if kind in ("story", "move") and live:
            picked = draw(st.sampled_from(live))
            old = next(s for s in w.stories if s["id"] == picked)
            others = [x for x in legacy_ids if x != old["legacy_id"]]
            home = draw(st.sampled_from(others)) if kind == "move" else old["legacy_id"]
            title, content = draw(story_text(w.tokens[old["id"]], by_legacy[home], entities[home]))
            new = {**old, "legacy_id": home, "title": title, "content": content, "updated_at": when.isoformat(),
                   "visibility": draw(st.sampled_from(["public", "private", "personal"]))}  # fmt: skip
            w.stories = [new if s["id"] == old["id"] else s for s in w.stories]
            w.events.append(Event(kind, new, when))
        elif kind == "delete" and len(live) > 1:
            gone = draw(st.sampled_from(live))
            live.remove(gone)
            first = next(s["legacy_id"] for s in w.initial["stories"] if s["id"] == gone)
            w.events.append(Event("delete", {"id": gone, "legacy_id": first}, when))
        elif kind == "link" and w.initial["links"]:
            old = draw(st.sampled_from(w.initial["links"]))
            at = hour()
            tie = tie_with(draw, w.events, ("link",))  # often: the same link at the same time
            if tie is not None:
                old, at = next(x for x in w.initial["links"] if x["id"] == tie.value["id"]), tie.at
            new = {**old, "status": draw(st.sampled_from(["active", "pending", "revoked"])),
                   "share_mode": draw(st.sampled_from(["all", "selective"])),
                   "shared_story_ids": draw(st.lists(st.sampled_from(story_ids), unique=True, max_size=4))}  # fmt: skip
            w.events.append(Event("link", new, at))
        elif kind in ("unmember", "member") and w.initial["members"]:
            member, at = dict(draw(st.sampled_from(w.initial["members"]))), hour()
            if kind == "member" and draw(st.booleans()):  # someone joins
                member = {
                    "legacy_id": draw(st.sampled_from(legacy_ids)),
                    "user_id": draw(st.sampled_from(user_ids)),
                }
            tie = tie_with(draw, w.events, ("member", "unmember"))  # often: the same membership, same time
            if tie is not None:
                member, at = {"legacy_id": tie.value["legacy_id"], "user_id": tie.value["user_id"]}, tie.at
            if kind == "member":
                member["role"] = draw(st.sampled_from(ROLES))
            w.events.append(Event(kind, member, at))
    w.stories = [s for s in w.stories if s["id"] in live]
    w.links = [final_link(x, [c for c in w.events if c.kind == "link" and c.value["id"] == x["id"]])
               for x in w.initial["links"]]  # fmt: skip
    w.members = final_members(w.initial["members"], w.events)
    # delivery: every event once in any order, a few of them again (redelivered), and the dataset
    # maybe loaded again at some point (`heirloom load` after the events)
    again = draw(st.lists(st.integers(0, max(len(w.events) - 1, 0)), max_size=3)) if w.events else []
    w.deliveries = draw(st.permutations([*range(len(w.events)), *again]))
    w.reload_at = draw(st.none() | st.integers(0, len(w.deliveries)))
    return w


def tie_with(draw: st.DrawFn, events: list[Event], kinds: tuple[str, ...]) -> Event | None:
    """Half the time, an earlier event of these kinds to share a record and a time with."""
    earlier = [e for e in events if e.kind in kinds]
    return draw(st.sampled_from(earlier)) if earlier and draw(st.booleans()) else None


# -- the ordering rules, written a second time (deliberately simply) for the expected state --
STATUS_ORDER = ["active", "pending", "revoked"]  # least to most restrictive
ROLE_ORDER = ["admirer", "advocate", "admin", "creator"]  # least to most privileged


def final_link(initial: dict[str, Any], changes: list[Event]) -> dict[str, Any]:
    """The latest change wins; changes of the latest time together give the most restrictive
    status and only what all of their share lists hold (selective if any is)."""
    if not changes:
        return initial
    latest = max(c.at for c in changes)
    last = [c.value for c in changes if c.at == latest]
    selective = [x for x in last if x["share_mode"] == "selective"]
    lists = [set(x["shared_story_ids"]) for x in (selective or last)]
    return {
        **initial,
        "status": max((x["status"] for x in last), key=STATUS_ORDER.index),
        "share_mode": "selective" if selective else "all",
        "shared_story_ids": sorted(set.intersection(*lists)),
    }


def final_members(initial: list[dict[str, Any]], events: list[Event]) -> list[dict[str, Any]]:
    """Per membership, the latest change wins; at the latest time a removal wins, else the
    least privileged role."""
    out = {(m["legacy_id"], m["user_id"]): m for m in initial}
    keys = {(c.value["legacy_id"], c.value["user_id"]) for c in events if c.kind in ("member", "unmember")}
    for key in keys:
        mine = [
            c
            for c in events
            if c.kind in ("member", "unmember") and (c.value["legacy_id"], c.value["user_id"]) == key
        ]
        latest = max(c.at for c in mine)
        last = [c for c in mine if c.at == latest]
        if any(c.kind == "unmember" for c in last):
            out.pop(key, None)
        else:
            role = min((c.value["role"] for c in last), key=ROLE_ORDER.index)
            out[key] = {"legacy_id": key[0], "user_id": key[1], "role": role}
    return list(out.values())


def ingest(ports: IngestionPorts, world: World) -> None:
    """Load the world's first state with `heirloom load`'s code, then deliver its changes the
    way story events do (in `world.deliveries` order, duplicates included), loading the dataset
    again at `world.reload_at` if set."""
    # a dataset names only members who may write them as authors (decision 0028); the world's
    # other first stories arrive as story events do (their producer is trusted), right after
    roles = {(m["legacy_id"], m["user_id"]): Role(m["role"]) for m in world.initial.get("members", [])}
    first = [Story.model_validate(x) for x in world.initial.get("stories", [])]
    evented = [
        x for x in first if ingestion.author_refusal(x, roles.get((str(x.legacy_id), str(x.author_user_id))))
    ]
    data = {**world.initial, "users": world.users}
    data["stories"] = [
        x for x in data.get("stories", []) if uuid.UUID(x["id"]) not in {e.id for e in evented}
    ]
    with tempfile.TemporaryDirectory(prefix="heirloom-world-") as folder:
        root = Path(folder)
        for name, items in data.items():
            (root / f"{name}.jsonl").write_text("".join(json.dumps(x) + "\n" for x in items))
        load_dataset(ports, root)
        for story in evented:
            ingestion.apply_story(ports, story, may_move=True)
        for i, n in enumerate(world.deliveries):
            if world.reload_at == i:
                load_dataset(ports, root)
            deliver(ports, world.events[n])
        if world.reload_at == len(world.deliveries):
            load_dataset(ports, root)


def deliver(ports: IngestionPorts, change: Event) -> None:
    if change.kind in ("story", "move"):  # as StoryEvents does: a story event may move a story
        ingestion.apply_story(ports, Story.model_validate(change.value), may_move=True)
    elif change.kind == "delete":
        story_id, legacy_id = uuid.UUID(change.value["id"]), uuid.UUID(change.value["legacy_id"])
        ingestion.delete_story(ports, story_id, change.at, legacy_id)
    elif change.kind == "link":
        ingestion.apply_link(ports, Link.model_validate(change.value), change.at)
    elif change.kind == "unmember":
        value = change.value
        ingestion.remove_member(ports, uuid.UUID(value["legacy_id"]), uuid.UUID(value["user_id"]), change.at)
    elif change.kind == "member":
        ingestion.apply_member(ports, Member.model_validate(change.value), change.at)
