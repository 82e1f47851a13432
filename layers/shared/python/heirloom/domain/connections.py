"""Story connections from what AccessFilter kept (docs/design.md §9): the entities a story or a
conversation names, each with the other readable stories that share it, ranked; the block an
opening instruction uses, and the "Additional Context from Connected Stories" lines a summary
uses. Every candidate here is a story the caller may read; names and titles are rendered as data
(heirloom.fencing)."""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Collection, Mapping, Sequence
from uuid import UUID

from heirloom.contracts.connections import (
    ConnectedStory,
    ConnectionsAssembleInput,
    EnrichmentLine,
    EntityConnections,
    EntityKind,
    StoryConnections,
)
from heirloom.contracts.context import Candidate, RetrievalSource
from heirloom.fencing import inline, quoted_title

OPENING_HEADER = "## Connections from This Story"
ENRICHMENT_HEADER = "## Additional Context from Connected Stories"
#: entity kinds in the order ties are broken
KIND_ORDER: dict[EntityKind, int] = {"person": 0, "place": 1, "period": 2, "event": 3, "object": 4}
#: entities in the opening block, titles named per entity, enrichment lines
MAX_BLOCK_ENTITIES = 5
MAX_TITLES = 3
MAX_LINES = 8
BROAD_WEIGHT = 0.5

_VERBS: dict[EntityKind, tuple[str, str]] = {
    "person": ("involves", "involve"),
    "place": ("takes place at", "take place at"),
    "period": ("is set in", "are set in"),
    "event": ("tells of", "tell of"),
    "object": ("mentions", "mention"),
}


def _kind(template: str) -> EntityKind | None:
    kind = template.removeprefix("connected_")
    return kind if kind in KIND_ORDER else None  # type: ignore[return-value]


def group_entities(
    candidates: Sequence[Candidate],
    seed: UUID | None,
    exclude: Collection[UUID] = (),
    named: Collection[str] = (),
) -> list[EntityConnections]:
    """Entities (node, or a period's name, and kind) -> the readable stories that share them,
    except the seed; with a seed, only the entities the seed's graph edges or its text (`named`:
    node ids) show. An entity is shown by the seed's words for it, else by the words most of its
    stories use: the candidates are readable, so never by a story the reader may not read.
    Ranked by `_weight`, then kind and name."""
    stories: dict[tuple[str, EntityKind], set[UUID]] = defaultdict(set)
    words: dict[tuple[str, EntityKind], dict[UUID, str]] = defaultdict(dict)
    by_id = {c.story_id: c for c in candidates}
    for c in candidates:
        for hit in c.graph_hits:
            kind = _kind(hit.template)
            if kind and hit.entity:
                key = (hit.entity_id or hit.entity, kind)
                stories[key].add(c.story_id)
                words[key].setdefault(c.story_id, hit.entity)
    if seed is not None:
        stories = {key: ids for key, ids in stories.items() if seed in ids or key[0] in named}
    shared: dict[UUID, int] = defaultdict(int)
    for ids in stories.values():
        for sid in ids:
            shared[sid] += 1
    out = []
    for key, ids in stories.items():
        kind, name = key[1], _shown_name(words[key], seed)
        others = [by_id[s] for s in ids if s != seed and s not in exclude]
        others.sort(key=lambda c: (-shared[c.story_id], not c.primary, c.title.casefold(), str(c.story_id)))
        out.append(
            EntityConnections(
                name=name,
                kind=kind,
                count=len(others),
                stories=tuple(
                    ConnectedStory(
                        story_id=c.story_id,
                        title=c.title,
                        legacy_id=c.legacy_id,
                        legacy_name=c.legacy_name,
                        primary=c.primary,
                        shared=shared[c.story_id],
                    )
                    for c in others
                ),
            )
        )
    out.sort(key=lambda e: (-_weight(e), KIND_ORDER[e.kind], e.name.casefold()))
    return out


def _shown_name(written: Mapping[UUID, str], seed: UUID | None) -> str:
    """The seed story's words for an entity, else the words most of its stories use (ties: the
    first in alphabetical order)."""
    if seed is not None and seed in written:
        return written[seed]
    counts = Counter(written.values())
    return min(counts, key=lambda n: (-counts[n], n.casefold(), n))


def _weight(entity: EntityConnections) -> float:
    """A decade, or a common noun ("church", "wedding"), is shared by many stories for no other
    reason: their stories count half."""
    broad = entity.kind == "period" or entity.name[:1].islower()
    return entity.count * (BROAD_WEIGHT if broad else 1.0)


def _list(names: Sequence[str]) -> str:
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


def _titles(stories: Sequence[ConnectedStory]) -> str:
    names = [f'"{quoted_title(s.title)}"' for s in stories[:MAX_TITLES]]
    more = len(stories) - len(names)
    return _list([*names, f"{more} more"] if more else names)


def opening_block(entities: Sequence[EntityConnections]) -> str:
    """ "This story mentions ..." and, per connected entity, "3 other stories involve Uncle Ray"."""
    if not entities:
        return ""
    mentioned = _list([inline(e.name) for e in entities[:8]])
    lines = [OPENING_HEADER, f"This story mentions {mentioned}."]
    for e in [e for e in entities if e.count][:MAX_BLOCK_ENTITIES]:
        one, many = _VERBS[e.kind]
        what = "1 other story " + one if e.count == 1 else f"{e.count} other stories {many}"
        lines.append(f"- {what} {inline(e.name)}: {_titles(e.stories)}.")
    return "\n".join(lines)


def _line(entity: EntityConnections, story: ConnectedStory) -> str:
    name, title = inline(entity.name), f'"{quoted_title(story.title)}"'
    # a legacy's name is its creator's choice: quoted, so it cannot end the parenthesis
    where = "" if story.primary else f' (from "{quoted_title(story.legacy_name)}")'
    if entity.kind == "person":
        return f"- {name} also appears in {title}{where}"
    if entity.kind == "period":
        return f"- {title}{where} is also set in {name}"
    return f"- {name} connects to {title}{where}"


def surfaced(data: ConnectionsAssembleInput, candidates: Sequence[Candidate]) -> set[UUID]:
    """Stories the chat already surfaced: those the caller names, the story being evolved, and
    those whose title a message quotes."""
    said = " ".join(m.content for m in data.connections.messages).casefold()
    out = set(data.connections.surfaced_story_ids)
    if data.connections.story_id:
        out.add(data.connections.story_id)
    out |= {c.story_id for c in candidates if len(c.title) >= 4 and c.title.casefold() in said}
    return out


def enrichment_lines(entities: Sequence[EntityConnections]) -> list[EnrichmentLine]:
    """One line per story, at most MAX_LINES: each entity's best story in entity order, then each
    one's second, ... (so one busy place cannot take every line)."""
    seen: set[UUID] = set()
    lines: list[EnrichmentLine] = []
    for rank in range(max((len(e.stories) for e in entities), default=0)):
        for entity in entities:
            story = entity.stories[rank] if rank < len(entity.stories) else None
            if story is None or story.story_id in seen or len(lines) >= MAX_LINES:
                continue
            seen.add(story.story_id)
            lines.append(
                EnrichmentLine(
                    story_id=story.story_id, title=story.title, entity=entity.name, text=_line(entity, story)
                )
            )
    return lines


def assemble_connections(
    data: ConnectionsAssembleInput,
    sources_used: tuple[RetrievalSource, ...],
    degraded: tuple[RetrievalSource, ...],
) -> StoryConnections:
    conn, candidates = data.connections, data.filtered.candidates
    named = {m.node_id for m in data.filtered.intent.matches}
    if conn.kind == "opening":
        entities = group_entities(candidates, conn.story_id, named=named)
        formatted = opening_block(entities)
        lines: list[EnrichmentLine] = []
    else:
        entities = group_entities(candidates, None, surfaced(data, candidates))
        lines = enrichment_lines(entities)
        formatted = "\n".join([ENRICHMENT_HEADER, *(line.text for line in lines)]) if lines else ""
    return StoryConnections(
        kind=conn.kind,
        story_id=conn.story_id,
        story_title=data.story_title,
        entities=tuple(e for e in entities if conn.kind == "opening" or e.count),
        lines=tuple(lines),
        formatted=formatted,
        sources_used=sources_used,
        degraded=degraded,
    )
