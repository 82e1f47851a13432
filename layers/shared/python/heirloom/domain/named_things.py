"""Names a legacy has established (docs/design.md §2, docs/decisions/0040-names-a-legacy-has-established.md).

A story that says what a name is ("our cat Biscuit", 'sang "Danny Boy"') establishes it: an
animal or a work. The legacy's other stories that write the name alone ("Biscuit hid in the
cupboard") link the same thing when their graph is written, whatever extractor read them. Pure:
no model, no I/O."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from uuid import UUID

from heirloom.contracts.access import StoryMeta
from heirloom.contracts.extraction import ExtractedEntities, ExtractedObject, NamedThing
from heirloom.contracts.records import Story, Visibility
from heirloom.domain.names import name_key

#: the kinds of thing a story names with a cue that says what the name is
ESTABLISHED_TYPES = frozenset({"animal", "work"})
#: the confidence of a thing linked because another story established its name (the rules' own)
RECALLED_CONFIDENCE = 0.8


def established(entities: ExtractedEntities) -> tuple[NamedThing, ...]:
    """The names this extraction gives an animal or a work, one per name key, in key order."""
    out: dict[str, NamedThing] = {}
    for thing in entities.objects:
        if thing.type in ESTABLISHED_TYPES and thing.name[:1].isupper():
            out.setdefault(name_key(thing.name), NamedThing(name=thing.name, type=thing.type))
    return tuple(out[k] for k in sorted(out))


def writes(text: str, name: str) -> bool:
    """Does `text` write `name` as a whole name, with its case ("Biscuit", not "biscuits")?"""
    return re.search(rf"(?<![\w-]){re.escape(name)}(?![\w-])", text) is not None


def recall(
    entities: ExtractedEntities,
    text: str,
    others: Iterable[NamedThing],
    mentions: Mapping[str, str],
    unresolved: Sequence[str],
) -> tuple[ExtractedEntities, list[str]]:
    """`entities` with the things other stories named that `text` writes, and `unresolved`
    without those names (an animal's name is no unknown person's). Not a name the story already
    has as a thing, nor one written as a known person's (`mentions`: written -> person id)."""
    have = {name_key(o.name) for o in entities.objects} | {name_key(m) for m in mentions}
    added: list[ExtractedObject] = []
    for thing in others:
        key = name_key(thing.name)
        if key in have or not writes(text, thing.name):
            continue
        have.add(key)
        added.append(ExtractedObject(name=thing.name, type=thing.type, confidence=RECALLED_CONFIDENCE))
    if not added:
        return entities, list(unresolved)
    keys = {name_key(o.name) for o in added}
    return (
        entities.model_copy(update={"objects": (*entities.objects, *added)}),
        [u for u in unresolved if name_key(u) not in keys],
    )


def carries(source: StoryMeta, target: Story) -> bool:
    """May a name `source` established be linked in `target`? Only when everyone who reads
    `target` reads `source` too (docs/decisions/0040): the kind of thing a name is was learnt
    from `source`'s words. A public story's names reach every story; a private story's reach
    private stories and its author's personal ones; a personal story's only its author's."""
    if source.visibility is Visibility.PUBLIC:
        return True
    if target.visibility is Visibility.PERSONAL:
        return source.author_user_id == target.author_user_id
    return source.visibility is Visibility.PRIVATE and target.visibility is Visibility.PRIVATE


def others_of(
    named: Mapping[UUID, Sequence[NamedThing]], sources: Mapping[UUID, StoryMeta], story: Story
) -> tuple[NamedThing, ...]:
    """The names the legacy's other stories (`sources`: their metadata) established that may be
    linked in `story`, one per name key."""
    out: dict[str, NamedThing] = {}
    for sid, things in sorted(named.items(), key=lambda kv: str(kv[0])):
        source = sources.get(sid)
        if sid != story.id and source is not None and carries(source, story):
            for thing in things:
                out.setdefault(name_key(thing.name), thing)
    return tuple(out[k] for k in sorted(out))


def changed(before: Sequence[NamedThing], after: Sequence[NamedThing]) -> tuple[NamedThing, ...]:
    """The names a story gave or stopped giving when its own went from `before` to `after`: the
    stories that write them may link them differently now."""
    was = {name_key(t.name): t for t in before}
    now = {name_key(t.name): t for t in after}
    moved = {k: t for k, t in (*was.items(), *now.items()) if (k in was) != (k in now)}
    return tuple(moved[k] for k in sorted(moved))


def stories_writing(stories: Iterable[Story], things: Sequence[NamedThing]) -> list[Story]:
    """The stories whose title or text writes one of the names."""
    return [s for s in stories if any(writes(s.content, t.name) or writes(s.title, t.name) for t in things)]
