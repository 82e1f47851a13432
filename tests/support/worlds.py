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
import re
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from hypothesis import strategies as st

from heirloom.contracts.extraction import (
    ExtractedEntities,
    ExtractedEvent,
    ExtractedObject,
    ExtractedPerson,
    ExtractedPlace,
    ExtractedRelationship,
    TimeReference,
)
from heirloom.contracts.records import Legacy, Link, Member, Person, Relationship, Story, User
from heirloom.domain import ingestion
from heirloom.domain.ingestion import IngestionPorts

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
    #: what happens after the first load: ("story", row) | ("delete", id) | ("link", row) | ("unmember", row)
    changes: list[tuple[str, Any]] = field(default_factory=list)
    #: the state before the changes (what is loaded first)
    initial: dict[str, list[dict[str, Any]]] = field(default_factory=dict)

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
        for person in people:
            for entity in found:
                for predicate in PREDICATES_BY_LABEL[LABEL_OF[entity]]:
                    if f"{person} {FACT_VERBS[predicate]} {entity}." in text:
                        relationships.append(
                            ExtractedRelationship(
                                subject=person, predicate=predicate, object=entity, confidence=0.9
                            )  # type: ignore[arg-type]
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
    # later changes: a story rewritten (other entities, maybe another visibility), a story
    # deleted, a link changing state, a member leaving
    for n in range(draw(st.integers(0, 3))):
        kind = draw(st.sampled_from(["story", "delete", "link", "unmember"]))
        if kind == "story" and w.stories:
            old = draw(st.sampled_from(w.stories))
            title, content = draw(story_text(w.tokens[old["id"]], by_legacy[old["legacy_id"]],
                                             entities[old["legacy_id"]]))  # fmt: skip
            when = (T0 + timedelta(days=n + 1)).isoformat()
            new = {**old, "title": title, "content": content, "updated_at": when,
                   "visibility": draw(st.sampled_from(["public", "private", "personal"]))}  # fmt: skip
            w.stories = [new if s["id"] == old["id"] else s for s in w.stories]
            w.changes.append(("story", new))
        elif kind == "delete" and len(w.stories) > 1:
            old = draw(st.sampled_from(w.stories))
            w.stories = [s for s in w.stories if s["id"] != old["id"]]
            w.changes.append(("delete", old["id"]))
        elif kind == "link" and w.links:
            old = draw(st.sampled_from(w.links))
            new = {**old, "status": draw(st.sampled_from(["active", "pending", "revoked"])),
                   "share_mode": draw(st.sampled_from(["all", "selective"]))}  # fmt: skip
            w.links = [new if x["id"] == old["id"] else x for x in w.links]
            w.changes.append(("link", new))
        elif kind == "unmember" and w.members:
            old = draw(st.sampled_from(w.members))
            w.members = [m for m in w.members if m is not old]
            w.changes.append(("unmember", old))
    return w


def ingest(ports: IngestionPorts, world: World) -> None:
    """Load the world's first state record by record through the production ingestion path,
    then apply its changes the way story events do."""
    first = world.initial
    for row in first["legacies"]:
        ingestion.apply_legacy(ports, Legacy.model_validate(row))
    for row in first["persons"]:
        ingestion.apply_person(ports, Person.model_validate(row))
    for row in world.users:
        ingestion.apply_user(ports, User.model_validate(row))
    for row in first["members"]:
        ingestion.apply_member(ports, Member.model_validate(row))
    for row in first["relationships"]:
        ingestion.apply_relationship(ports, Relationship.model_validate(row))
    for row in first["links"]:
        ingestion.apply_link(ports, Link.model_validate(row))
    for row in first["stories"]:
        ingestion.apply_story(ports, Story.model_validate(row))
    for kind, value in world.changes:
        if kind == "story":
            ingestion.apply_story(ports, Story.model_validate(value))
        elif kind == "delete":
            ingestion.delete_story(ports, uuid.UUID(value), T0 + timedelta(days=30))
        elif kind == "link":
            ingestion.apply_link(ports, Link.model_validate(value))
        elif kind == "unmember":
            ingestion.remove_member(ports, uuid.UUID(value["legacy_id"]), uuid.UUID(value["user_id"]))
