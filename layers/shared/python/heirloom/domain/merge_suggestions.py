"""Likely duplicate entities within a legacy, with their evidence, for an admin to merge or keep
apart: the same label and a name signal (an alias in common, one name contained in the other as
its head noun, "accordion" in "Papa Sal's accordion", or a fuzzy match), ranked up by the
stories and people the two share. Only entities some story the requester may read points at are
considered, only readable stories are cited, and only people a readable story ties to both are
named; a pair kept apart is never suggested again."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from difflib import SequenceMatcher
from uuid import UUID

from heirloom.contracts.curation import EntityLabel, EntityRef, MergeSuggestion
from heirloom.domain.graph_schema import DISPLAY_SEPARATOR
from heirloom.domain.names import name_key, one_of_many
from heirloom.ports import GraphStore

LABELS: tuple[EntityLabel, ...] = ("Place", "Event", "Object")
FUZZY_MIN = 0.85
#: a shorter name followed by one of these in the longer is its head ("flood" / "flood in 1977")
QUALIFIERS = frozenset({"in", "of", "at", "on", "from", "for"})

ENTITIES = """
MATCH (e:{label})
WHERE e.legacy_id = $legacy
OPTIONAL MATCH (s:Story)-[r]->(e)
RETURN e.id AS id, e.name AS name, e.aliases AS aliases, collect(DISTINCT s.id) AS stories
"""
#: the other names stories wrote on their edge to an entity (a merged one's, an owner written
#: another way), with the story that wrote each: an alias is shown only to its story's readers
WRITTEN = """
MATCH (s:Story)-[r]->(e:{label})
WHERE e.legacy_id = $legacy AND r.name IS NOT NULL
RETURN DISTINCT e.id AS id, s.id AS story, r.name AS name
"""
#: the people tied to each entity, with the story each tie comes from (`story_id`)
NEIGHBOURS = """
MATCH (p:Person)-[r]->(e:{label})
WHERE e.legacy_id = $legacy
RETURN DISTINCT e.id AS id, p.id AS person, p.name AS name, r.story_id AS story
"""


@dataclass
class EntityInfo:
    ref: EntityRef
    stories: frozenset[str]
    #: person id -> name, for the people some story ties to the entity
    people: dict[str, str] = field(default_factory=dict)
    #: person id -> the stories that tie them to it (a tie no readable story makes is no evidence)
    ties: dict[str, frozenset[str]] = field(default_factory=dict)
    #: name key of an alias -> the stories that write it on their edge
    written: dict[str, frozenset[str]] = field(default_factory=dict)

    @property
    def keys(self) -> set[str]:
        return {k for k in (name_key(n) for n in (self.ref.name, *self.ref.aliases)) if k}


def read_entities(graph: GraphStore, legacy_id: UUID) -> list[EntityInfo]:
    found: list[EntityInfo] = []
    for label in LABELS:
        params = {"legacy": str(legacy_id)}
        names: dict[str, dict[str, str]] = defaultdict(dict)
        ties: dict[str, dict[str, set[str]]] = defaultdict(lambda: defaultdict(set))
        for r in graph.run(NEIGHBOURS.format(label=label), params):
            entity, person = str(r["id"]), str(r["person"])
            names[entity][person] = str(r.get("name") or "")
            if r.get("story"):
                ties[entity][person].add(str(r["story"]))
        written: dict[str, dict[str, set[str]]] = defaultdict(lambda: defaultdict(set))
        for r in graph.run(WRITTEN.format(label=label), params):
            written[str(r["id"])][name_key(str(r["name"]))].add(str(r["story"]))
        for row in graph.run(ENTITIES.format(label=label), params):
            aliases = tuple(a for a in str(row.get("aliases") or "").split(DISPLAY_SEPARATOR) if a)
            entity = str(row["id"])
            found.append(
                EntityInfo(
                    ref=EntityRef(id=entity, label=label, name=str(row["name"]), aliases=aliases),
                    stories=frozenset(str(s) for s in row.get("stories") or () if s),
                    people=names.get(entity, {}),
                    ties={p: frozenset(xs) for p, xs in ties.get(entity, {}).items()},
                    written={k: frozenset(xs) for k, xs in written.get(entity, {}).items()},
                )
            )
    return found


def _contained(short: list[str], long: list[str]) -> bool:
    n = len(short)
    if not 0 < n < len(long) or len("".join(short)) < 3:
        return False
    return long[-n:] == short or (long[:n] == short and long[n] in QUALIFIERS)


def name_evidence(a: EntityInfo, b: EntityInfo) -> tuple[float, str] | None:
    """The strongest name signal between two entities: (score, words), or None."""
    common = a.keys & b.keys
    if common:
        return 0.9, f"alias in common: {sorted(common)[0]!r}"
    best: tuple[float, str] | None = None
    for ka in sorted(a.keys):
        for kb in sorted(b.keys):
            short, long = sorted((ka, kb), key=lambda k: (len(k.split()), k))
            if _contained(short.split(), long.split()):
                return 0.6, f"name contained: {short!r} in {long!r}"
            ratio = SequenceMatcher(None, ka, kb).ratio()
            if ratio >= FUZZY_MIN and (best is None or ratio * 0.8 > best[0]):
                best = (round(ratio * 0.8, 3), f"similar names: {ka!r} ~ {kb!r} ({ratio:.2f})")
    return best


def suggest(
    entities: Iterable[EntityInfo],
    *,
    legacy_id: UUID,
    readable: Callable[[str], bool],
    kept_apart: set[frozenset[str]],
    limit: int = 50,
) -> list[MergeSuggestion]:
    """Pairs of likely duplicates, best first. `readable(story_id)`: may the requester read it."""
    visible = []
    for info in entities:
        stories = frozenset(s for s in info.stories if readable(s))
        # a person counts only through a tie a readable story makes
        tied = {p: n for p, n in info.people.items() if any(readable(s) for s in info.ties.get(p, ()))}
        # an alias only an unreadable story writes (a merged entity's name) is not shown
        aliases = tuple(a for a in info.ref.aliases if any(map(readable, info.written.get(name_key(a), ()))))
        if stories:  # an entity only unreadable stories support is not shown
            visible.append(EntityInfo(info.ref.model_copy(update={"aliases": aliases}), stories, tied))
    out: list[MergeSuggestion] = []
    for i, a in enumerate(visible):
        for b in visible[i + 1 :]:
            if a.ref.label != b.ref.label or frozenset((a.ref.id, b.ref.id)) in kept_apart:
                continue
            if one_of_many(a.ref.label, a.ref.name) and one_of_many(b.ref.label, b.ref.name):
                continue  # two stories' "the wedding": nothing says they are one (decision 0041)
            named = name_evidence(a, b)
            if named is None:
                continue
            score, words = named
            evidence = [words]
            shared = sorted(a.stories & b.stories)
            if shared:
                score += 0.1 * min(len(shared), 2)
                evidence.append(f"mentioned together in {len(shared)} stories")
            people = sorted(set(a.people) & set(b.people))
            if people:
                score += 0.05 * min(len(people), 2)
                evidence.append("shared people: " + ", ".join(sorted(a.people[p] for p in people)))
            first, second = sorted((a, b), key=lambda e: (len(e.ref.name), e.ref.name))
            out.append(
                MergeSuggestion(
                    legacy_id=legacy_id,
                    a=second.ref,  # the longer, more specific name first: the natural survivor
                    b=first.ref,
                    score=round(min(score, 1.0), 3),
                    evidence=tuple(evidence),
                    shared_story_ids=tuple(UUID(s) for s in shared),
                )
            )
    out.sort(key=lambda s: (-s.score, s.a.name, s.b.name))
    return out[:limit]
